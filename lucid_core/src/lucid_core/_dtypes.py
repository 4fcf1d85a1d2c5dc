"""Lucid's dtypes: backend-independent objects that each backend maps to its native dtypes.

Promotion follows the Array API standard's table (integers and floats do not mix; the
standard leaves that case open, and Lucid, like PyTorch, gives the default float dtype).
"""

from __future__ import annotations

__all__ = [
    "DType",
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "FLOAT8_DTYPES",
    "result_type",
    "can_cast",
    "isdtype",
    "finfo",
    "iinfo",
    "default_float",
    "default_int",
    "default_complex",
    "get_default_dtype",
    "set_default_dtype",
]

import builtins
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._typing import DTypeLike


class DType:
    """A Lucid dtype: a name, a kind (``b``, ``i``, ``u``, ``f``, ``c``) and a width in bits."""

    __slots__ = ("bits", "kind", "name")

    def __init__(self, name: str, kind: str, bits: int) -> None:
        self.name = name
        self.kind = kind
        self.bits = bits

    def __repr__(self) -> str:
        return f"lucid_core.{self.name}"

    __str__ = __repr__

    def __reduce__(self) -> str:
        return self.name

    @property
    def is_floating_point(self) -> builtins.bool:
        """Whether the dtype is real or complex floating point."""
        return self.kind in "fc"

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self.bits // 8


bool = DType("bool", "b", 8)  # noqa: A001 - the Array API names it so
int8 = DType("int8", "i", 8)
int16 = DType("int16", "i", 16)
int32 = DType("int32", "i", 32)
int64 = DType("int64", "i", 64)
uint8 = DType("uint8", "u", 8)
uint16 = DType("uint16", "u", 16)
uint32 = DType("uint32", "u", 32)
uint64 = DType("uint64", "u", 64)
float16 = DType("float16", "f", 16)
# bfloat16: float32's 8 exponent bits with 7 mantissa bits (Google Brain's format, PyTorch's torch.bfloat16)
bfloat16 = DType("bfloat16", "f", 16)
float32 = DType("float32", "f", 32)
float64 = DType("float64", "f", 64)
complex64 = DType("complex64", "c", 64)
complex128 = DType("complex128", "c", 128)
# 8-bit floats (the OCP / AMD formats PyTorch names so): storage and cast dtypes, for quantized weights and
# scales. e4m3fn: 4 exponent, 3 mantissa bits, no infinities (max 448); e5m2: IEEE-like (max 57344, infs);
# "fnuz": no infinities, no negative zero, one NaN; e8m0fnu: exponent only, powers of two (MX block scales).
float8_e4m3fn = DType("float8_e4m3fn", "f", 8)
float8_e4m3fnuz = DType("float8_e4m3fnuz", "f", 8)
float8_e5m2 = DType("float8_e5m2", "f", 8)
float8_e5m2fnuz = DType("float8_e5m2fnuz", "f", 8)
float8_e8m0fnu = DType("float8_e8m0fnu", "f", 8)
FLOAT8_DTYPES: tuple[DType, ...] = (float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu)

ALL_DTYPES: tuple[DType, ...] = (
    bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float16, bfloat16, float32, float64, complex64, complex128, *FLOAT8_DTYPES,
)  # fmt: skip
BY_NAME: dict[str, DType] = {d.name: d for d in ALL_DTYPES}
# Lucid's dtypes that the Array API standard does not define (not listed by ``__array_namespace_info__``)
EXTENSION_DTYPES: tuple[DType, ...] = (float16, bfloat16, *FLOAT8_DTYPES)

# the defaults are read at call time (``dt.default_float``), so set_default_dtype reaches every factory
default_float = float32
default_int = int64
default_complex = complex64

_SIGNED = (int8, int16, int32, int64)
_UNSIGNED = (uint8, uint16, uint32, uint64)
_FLOATS = (float16, bfloat16, float32, float64)
_COMPLEX = (complex64, complex128)


def _promote_pair(a: DType, b: DType) -> DType:
    if a is b:
        return a
    if a in FLOAT8_DTYPES or b in FLOAT8_DTYPES:  # as PyTorch: no 8-bit float promotes, cast explicitly
        raise TypeError(f"Promotion for Float8 Types is not supported, attempted to promote {a.name} and {b.name}")
    ka, kb = a.kind, b.kind
    if ka == "b" or kb == "b":
        # the standard leaves bool-with-number open; like PyTorch, the number's dtype wins
        return b if ka == "b" else a
    if ka in "iu" and kb in "iu":
        if ka == kb:
            return a if a.bits >= b.bits else b
        signed, unsigned = (a, b) if ka == "i" else (b, a)
        if signed.bits > unsigned.bits:
            return signed
        if unsigned.bits == 64:
            raise TypeError(f"result_type: no integer dtype holds both {a.name} and {b.name}")
        return {8: int16, 16: int32, 32: int64}[unsigned.bits]
    if ka in "iu" or kb in "iu":
        # mixed integer/float kinds: the standard leaves this open; the float side wins
        # (default float when it is an integer-only promotion), as in PyTorch.
        return a if ka in "fc" else b
    # both floating (real or complex)
    if ka == "c" or kb == "c":
        bits = max(a.bits if ka == "f" else a.bits // 2, b.bits if kb == "f" else b.bits // 2)
        return complex128 if bits == 64 else complex64
    if a.bits == b.bits:  # float16 with bfloat16: neither holds the other (range vs precision), so float32
        return float32
    return a if a.bits > b.bits else b


def _dtype_of(x: Any) -> Any:
    """A tensor's dtype (anything whose ``dtype`` is a Lucid DType), else ``x`` itself.

    Duck-typed so this module, the bottom of the core, needs no import of the Tensor above it.
    """
    d = getattr(x, "dtype", None)
    return d if isinstance(d, DType) else x


def result_type(*arrays_and_dtypes: Any) -> DType:
    """The dtype that results from combining the given tensors, dtypes and Python scalars."""
    dtypes: list[DType] = []
    scalars: list[Any] = []
    for x in map(_dtype_of, arrays_and_dtypes):
        if isinstance(x, DType):
            dtypes.append(x)
        elif isinstance(x, (builtins.bool, int, float, complex)):
            scalars.append(x)
        else:
            raise TypeError(f"result_type: expected tensors, dtypes or Python scalars, got {type(x).__name__}")
    if not dtypes:
        if not scalars:
            raise ValueError("result_type: at least one tensor or dtype is required")
        dtypes.append(scalar_dtype(scalars[0]))
        scalars = scalars[1:]
    out = dtypes[0]
    for d in dtypes[1:]:
        out = _promote_pair(out, d)
    for s in scalars:
        out = promote_with_scalar(out, s)
    return out


def scalar_dtype(value: Any) -> DType:
    """The dtype a lone Python scalar becomes: bool, the default int, float or complex."""
    if isinstance(value, builtins.bool):
        return bool
    if isinstance(value, int):
        return default_int
    if isinstance(value, float):
        return default_float
    if isinstance(value, complex):
        return default_complex
    raise TypeError(f"expected a Python scalar, got {type(value).__name__}")


def get_default_dtype() -> DType:
    """The dtype of new floating-point tensors made from Python floats or without a dtype (float32 at start)."""
    return default_float


def set_default_dtype(d: DType) -> None:
    """Make ``d`` (a real floating dtype) the default floating-point dtype, as ``torch.set_default_dtype``.

    Factories without a dtype (``zeros``, ``rand``, ``arange`` with float bounds), Python floats
    (``tensor(1.0)``) and int-to-float promotion follow it; Python complex numbers get the complex dtype of
    the same precision (complex128 for float64). Integer data stays int64.
    """
    global default_float, default_complex
    if not isinstance(d, DType) or d.kind != "f":
        raise TypeError(f"only floating-point types are supported as the default type, got {d!r}")
    default_float = d
    default_complex = complex128 if d is float64 else complex64


def promote_with_scalar(dtype: DType, value: Any) -> DType:
    """The dtype of ``tensor <op> scalar``: the scalar adopts the tensor's dtype when its kind fits."""
    k = dtype.kind
    if isinstance(value, builtins.bool):
        return dtype
    if isinstance(value, int):
        return default_int if k == "b" else dtype
    if isinstance(value, float):
        return dtype if k in "fc" else default_float
    if isinstance(value, complex):
        if k == "c":
            return dtype
        if k == "f":
            return complex128 if dtype is float64 else complex64
        return default_complex
    raise TypeError(f"expected a Python scalar, got {type(value).__name__}")


def can_cast(from_: Any, to: DType, /) -> builtins.bool:
    """Whether ``from_`` casts to ``to`` under the standard's promotion rules (no loss of kind)."""
    src = _dtype_of(from_)
    if src is to:
        return True
    try:
        return _promote_pair(src, to) is to
    except TypeError:
        return False


_KIND_NAMES = {
    "bool": ("b",),
    "signed integer": ("i",),
    "unsigned integer": ("u",),
    "integral": ("i", "u"),
    "real floating": ("f",),
    "complex floating": ("c",),
    "numeric": ("i", "u", "f", "c"),
}


def isdtype(dtype: DType, kind: Any) -> builtins.bool:
    """Whether ``dtype`` is of ``kind``: a dtype, a kind name (``"real floating"``, ...) or a tuple of them."""
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, DType):
        return dtype is kind
    if isinstance(kind, str):
        try:
            return dtype.kind in _KIND_NAMES[kind]
        except KeyError:
            raise ValueError(f"isdtype: unknown kind {kind!r}; expected one of {sorted(_KIND_NAMES)}") from None
    raise TypeError(f"isdtype: kind must be a dtype, a kind name or a tuple, got {type(kind).__name__}")


@dataclass(frozen=True)
class finfo_object:  # noqa: N801 - the standard's name
    """Machine limits of a floating-point dtype (the Array API's ``finfo`` result)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: DType

    @property
    def tiny(self) -> float:
        """PyTorch's name for ``smallest_normal``."""
        return self.smallest_normal

    @property
    def resolution(self) -> float:
        """``10 ** -precision``, the decimal resolution PyTorch reports (1e-06 for float32)."""
        import math

        return 10.0 ** -math.floor(-math.log10(self.eps))


@dataclass(frozen=True)
class iinfo_object:  # noqa: N801
    """Limits of an integer dtype (the Array API's ``iinfo`` result)."""

    bits: int
    max: int
    min: int
    dtype: DType


#: (eps, max, smallest normal) of each real floating dtype
_FINFO = {
    "float16": (2.0**-10, 65504.0, 2.0**-14),
    "bfloat16": (2.0**-7, (2 - 2.0**-7) * 2.0**127, 2.0**-126),
    "float32": (2.0**-23, (2 - 2.0**-23) * 2.0**127, 2.0**-126),
    "float64": (2.0**-52, (2 - 2.0**-52) * 2.0**1023, 2.0**-1022),
    "float8_e4m3fn": (2.0**-3, 448.0, 2.0**-6),
    "float8_e4m3fnuz": (2.0**-3, 240.0, 2.0**-7),
    "float8_e5m2": (2.0**-2, 57344.0, 2.0**-14),
    "float8_e5m2fnuz": (2.0**-3, 57344.0, 2.0**-15),
    "float8_e8m0fnu": (1.0, 2.0**127, 2.0**-127),
}
#: dtypes whose ``finfo.min`` is not ``-max`` (e8m0fnu has no sign: its smallest value is 2**-127)
_FINFO_MIN = {"float8_e8m0fnu": 2.0**-127}


def finfo(type: Any, /) -> finfo_object:  # noqa: A002 - the standard's parameter name
    """Limits of a floating-point dtype (or of a tensor's dtype).

    For a complex dtype these are the limits of its real and imaginary parts, and ``dtype`` is the
    real floating dtype of the same precision (complex64 gives float32's info), as the standard says.
    """
    dtype = _dtype_of(type)
    if not isinstance(dtype, DType) or dtype.kind not in "fc":
        raise TypeError(f"finfo: expected a floating-point dtype, got {dtype!r}")
    real = dtype if dtype.kind == "f" else {64: float32, 128: float64}[dtype.bits]
    eps, mx, tiny = _FINFO[real.name]
    return finfo_object(real.bits, eps, mx, _FINFO_MIN.get(real.name, -mx), tiny, real)


def iinfo(type: Any, /) -> iinfo_object:  # noqa: A002
    """Limits of an integer dtype (or of a tensor's dtype)."""
    dtype = _dtype_of(type)
    if not isinstance(dtype, DType) or dtype.kind not in "iu":
        raise TypeError(f"iinfo: expected an integer dtype, got {dtype!r}")
    if dtype.kind == "u":
        return iinfo_object(dtype.bits, 2**dtype.bits - 1, 0, dtype)
    return iinfo_object(dtype.bits, 2 ** (dtype.bits - 1) - 1, -(2 ** (dtype.bits - 1)), dtype)


def as_dtype(dtype: DTypeLike) -> DType:
    """Accept a Lucid dtype or its name; anything else is a clear TypeError."""
    if isinstance(dtype, DType):
        return dtype
    if isinstance(dtype, str) and dtype in BY_NAME:
        return BY_NAME[dtype]
    if dtype is builtins.float:
        return default_float
    if dtype is builtins.int:
        return default_int
    if dtype is builtins.bool:
        return bool
    if dtype is builtins.complex:
        return default_complex
    raise TypeError(f"expected a lucid_core dtype (e.g. lucid_core.float32) or its name, got {dtype!r}")
