"""Creating tensors: from data, filled, ranges, identity and triangles, DLPack."""

from __future__ import annotations

import builtins
import operator
from typing import Any, NoReturn

from .. import _dtypes as dt
from .._autograd import Function
from .._registry import _state, default_device, resolve_device
from .._tensor import Tensor, _new_tensor, check_tensor
from .._typing import DeviceLike, DTypeLike
from ..backend import Device
from . import manipulation as _m

__all__ = [
    "asarray", "tensor", "zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like",
    "arange", "linspace", "eye", "tril", "triu", "from_dlpack", "meshgrid",
]  # fmt: skip


# Python types that hold no number: NumPy would make an object or string array of them.
_NOT_NUMBERS = (type(None), str, bytes, bytearray, dict, set, frozenset)
# Protocols through which an object can hand over numbers (NumPy scalars, buffers, other arrays).
_ARRAY_PROTOCOLS = ("__dlpack__", "__array__", "__array_interface__", "__array_struct__", "__buffer__")
_ACCEPTED = (
    "a Tensor, an array (DLPack, __array__ or a buffer), or (nested lists of) Python bool, int, float or complex"
)


def _reject(obj: Any, where: str = "") -> NoReturn:
    raise TypeError(
        f"asarray: got {type(obj).__name__}{where}, which holds no number Lucid has a dtype for; expected {_ACCEPTED}"
    )


def _holds_numbers(o: Any) -> builtins.bool:
    """Whether ``o`` (not a list or tuple) may convert to numbers: scalars, arrays, number-like objects."""
    if isinstance(o, _NOT_NUMBERS):
        return False
    if isinstance(o, (builtins.bool, int, float, complex, Tensor)):
        return True
    if builtins.any(hasattr(o, p) for p in _ARRAY_PROTOCOLS):
        return True
    # number-like objects (Fraction, Decimal, NumPy scalars) and other sequences (range)
    return builtins.any(hasattr(o, p) for p in ("__index__", "__float__", "__complex__", "__len__"))


def _infer_dtype(obj: Any) -> dt.DType | None:
    """Lucid's dtype for Python data: bool, int64, float32 (the default float) or complex64.

    Raises TypeError for elements that hold no number (None, strings, dicts, sets, bare objects).
    """
    kind = 0  # 0 bool, 1 int, 2 float, 3 complex
    seen = False
    known = True
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, (list, tuple)):
            stack.extend(o)
            continue
        seen = True
        if isinstance(o, builtins.bool):
            continue
        if isinstance(o, int):
            kind = builtins.max(kind, 1)
        elif isinstance(o, float):
            kind = builtins.max(kind, 2)
        elif isinstance(o, complex):
            kind = 3
        elif not _holds_numbers(o):
            _reject(o, " inside a " + type(obj).__name__ if o is not obj else "")
        else:
            known = False  # e.g. NumPy scalars or tensors inside a list: let the backend decide
    if not known:
        return None
    if not seen:
        return dt.default_float
    return (dt.bool, dt.default_int, dt.default_float, dt.default_complex)[kind]


def _native_owner(obj: Any) -> Any:
    """The loaded backend whose native array type ``obj`` is, if any."""
    for b in _state.backends.values():
        if b._devices is not None and b.array_types and isinstance(obj, b.array_types):
            return b
    return None


def asarray(
    obj: Any,
    /,
    *,
    dtype: DTypeLike = None,
    device: DeviceLike = None,
    copy: bool | None = None,
    requires_grad: bool = False,
) -> Tensor:
    """A Tensor from a Tensor, a native array, a DLPack/buffer object, or (nested) Python scalars.

    Python floats become float32 (the default float dtype), ints int64. A native array keeps
    its dtype and its backend unless ``device`` says otherwise. ``copy=False`` forbids copying.
    """
    target = None if dtype is None else dt.as_dtype(dtype)
    if isinstance(obj, Tensor):
        out = obj
        if device is not None:
            dev = resolve_device(device)
            if dev is not out._device:
                if copy is False:
                    raise ValueError(f"asarray: copy=False, but moving from {out.device} to {dev} needs a copy")
                out = _m.to_device(out, dev)
        if target is not None and target is not out.dtype:
            if copy is False:
                raise ValueError(f"asarray: copy=False, but casting {out.dtype.name} to {target.name} needs a copy")
            out = _m.astype(out, target)
        if copy and out is obj:
            out = _m.clone(obj)
    else:
        dev = None if device is None else resolve_device(device)
        owner = _native_owner(obj)
        if owner is not None:
            if dev is None:
                dev = owner.device_of(obj) if hasattr(owner, "device_of") else owner.default_device
            if dev.backend is owner:
                data = owner.asarray(obj, target, dev, copy)
            else:
                if copy is False:
                    raise ValueError(f"asarray: copy=False, but moving a {owner.name} array to {dev} needs a copy")
                data = dev.backend.from_foreign(obj, owner, dev)
                if target is not None:
                    data = dev.xp.astype(data, dev.backend.native_dtype(target))
        else:
            if dev is None:
                dev = default_device()
            if isinstance(obj, (list, tuple)) or not _holds_numbers(obj):
                inferred = _infer_dtype(obj)  # raises for data with no Lucid dtype
                target = inferred if target is None else target
            elif target is None and isinstance(obj, (builtins.bool, int, float, complex)):
                target = _infer_dtype(obj)
            if isinstance(obj, (list, tuple)) and obj and _has_tensor(obj):
                obj = _tensors_to_lists(obj)
            try:
                data = dev.backend.asarray(obj, target, dev, copy)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"asarray: cannot make a tensor from {type(obj).__name__}: {exc}") from None
        data = dev.backend.canonical(data)
        _check_native_dtype(data, dev, obj)
        out = _new_tensor(data, dev)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _check_native_dtype(data: Any, dev: Device, obj: Any) -> None:
    """An array whose dtype Lucid lacks (NumPy object, string, datetime) fails here, not at first use."""
    native = getattr(data, "dtype", None)
    try:
        dev.backend.lucid_dtype(native)
    except TypeError:
        raise TypeError(
            f"asarray: got {type(obj).__name__} whose data has dtype {native!r} on {dev}, which no Lucid dtype "
            f"holds; expected {_ACCEPTED} (dtypes: {', '.join(d.name for d in dev.backend.dtypes)})"
        ) from None


def _has_tensor(obj: Any) -> builtins.bool:
    return builtins.any(isinstance(o, Tensor) or (isinstance(o, (list, tuple)) and _has_tensor(o)) for o in obj)


def _tensors_to_lists(obj: Any) -> Any:
    if isinstance(obj, Tensor):
        return obj.tolist()
    if isinstance(obj, (list, tuple)):
        return [_tensors_to_lists(o) for o in obj]
    return obj


def tensor(
    data: Any, *, dtype: DTypeLike = None, device: DeviceLike = None, requires_grad: builtins.bool = False
) -> Tensor:
    """A new tensor that owns a copy of ``data`` (PyTorch's ``torch.tensor``)."""
    out = asarray(data, dtype=dtype, device=device, copy=True)
    if isinstance(data, Tensor):
        out = out.detach()
    if requires_grad:
        out.requires_grad_(True)
    return out


def _shape(shape: Any, name: str) -> tuple[int, ...]:
    if isinstance(shape, int) or (hasattr(shape, "__index__") and not hasattr(shape, "__len__")):
        shape = (shape,)
    try:
        out = tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(f"{name}: shape must be an int or a sequence of ints, got {shape!r}") from None
    for s in out:
        if s < 0:
            raise ValueError(f"{name}: negative dimension in shape {out}")
    return out


def _varshape(dims: tuple[Any, ...], shape: Any, name: str) -> tuple[int, ...]:
    # accept randn(2, 3) as well as randn((2, 3)) and randn(shape=(2, 3))
    if shape is not None:
        if dims:
            raise TypeError(f"{name}: got the shape both positionally {dims} and as shape={shape!r}; give one")
        return _shape(shape, name)
    shape = dims
    if len(shape) == 1 and not isinstance(shape[0], int) and hasattr(shape[0], "__len__"):
        return _shape(shape[0], name)
    return _shape(shape, name)


def _shape_arg(shape: Any, dims: tuple[Any, ...], name: str) -> tuple[int, ...]:
    """The shape of ``zeros(shape)`` (the standard), ``zeros((2, 3))`` or ``zeros(2, 3)`` (PyTorch)."""
    if shape is None:
        if dims:
            raise TypeError(f"{name}: got dimensions {dims} after shape=None; give the shape as one tuple")
        return ()
    if not dims:
        return _shape(shape, name)
    if not hasattr(shape, "__index__") or builtins.any(not hasattr(d, "__index__") for d in dims):
        raise TypeError(f"{name}: give the shape as one tuple or as ints, got {(shape, *dims)!r}")
    return _shape((shape, *dims), name)


def _dev_dtype(dtype: DTypeLike, device: DeviceLike, default: dt.DType | None = None) -> tuple[Device, dt.DType]:
    """The device and dtype of a new tensor; ``default`` None is the default float, read now (set_default_dtype)."""
    dev = default_device() if device is None else resolve_device(device)
    if dtype is None:
        return dev, dt.default_float if default is None else default
    return dev, dt.as_dtype(dtype)


def _filled(
    kind: str, shape: tuple[int, ...], dtype: DTypeLike, device: DeviceLike, requires_grad: builtins.bool
) -> Tensor:
    dev, d = _dev_dtype(dtype, device)
    native = dev.backend.native_dtype(d)
    data = getattr(dev.xp, kind)(shape, dtype=native)
    t = _new_tensor(data, dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


def zeros(
    shape: Any = None,
    *dims: int,
    dtype: DTypeLike = None,
    device: DeviceLike = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    """A tensor of zeros (``zeros((2, 3))``, ``zeros(shape=(2, 3))`` or ``zeros(2, 3)``)."""
    return _filled("zeros", _shape_arg(shape, dims, "zeros"), dtype, device, requires_grad)


def ones(
    shape: Any = None,
    *dims: int,
    dtype: DTypeLike = None,
    device: DeviceLike = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    """A tensor of ones (the shape as in :func:`zeros`)."""
    return _filled("ones", _shape_arg(shape, dims, "ones"), dtype, device, requires_grad)


def empty(
    shape: Any = None,
    *dims: int,
    dtype: DTypeLike = None,
    device: DeviceLike = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    """An uninitialised tensor (its values are whatever the backend leaves)."""
    return _filled("empty", _shape_arg(shape, dims, "empty"), dtype, device, requires_grad)


def full(
    shape: Any,
    fill_value: Any,
    *,
    dtype: DTypeLike = None,
    device: DeviceLike = None,
    requires_grad: builtins.bool = False,
) -> Tensor:
    """A tensor filled with ``fill_value`` (its dtype inferred from the value when not given)."""
    shape = _shape(shape, "full")
    if dtype is None:
        dtype = _infer_dtype(fill_value) if not isinstance(fill_value, Tensor) else fill_value.dtype
    dev, d = _dev_dtype(dtype, device)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    data = dev.xp.full(shape, fill_value, dtype=dev.backend.native_dtype(d))
    t = _new_tensor(data, dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


_like = check_tensor  # the ``*_like`` functions' input


def zeros_like(x: Tensor, /, *, dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """Zeros with ``x``'s shape, dtype and device."""
    _like(x, "zeros_like")
    if dtype is None and device is None and type(x._data) is x._device.array_type:  # (not a vmap wrapper)
        return _new_tensor(x._device.xp.zeros_like(x._data), x._device)
    return zeros(x.shape, dtype=dtype or x.dtype, device=device or x._device)


def ones_like(x: Tensor, /, *, dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """Ones with ``x``'s shape, dtype and device."""
    _like(x, "ones_like")
    if dtype is None and device is None and type(x._data) is x._device.array_type:  # (not a vmap wrapper)
        return _new_tensor(x._device.xp.ones_like(x._data), x._device)
    return ones(x.shape, dtype=dtype or x.dtype, device=device or x._device)


def empty_like(x: Tensor, /, *, dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """Uninitialised, with ``x``'s shape, dtype and device."""
    _like(x, "empty_like")
    return empty(x.shape, dtype=dtype or x.dtype, device=device or x._device)


def full_like(x: Tensor, /, fill_value: Any, *, dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """``fill_value`` everywhere, with ``x``'s shape, dtype and device."""
    _like(x, "full_like")
    return full(x.shape, fill_value, dtype=dtype or x.dtype, device=device or x._device)


def _plain_int(v: Any) -> Any:
    """An int subclass (such as ``x.size``) as a plain int: some libraries (MLX) accept only exact ints."""
    return int(v) if isinstance(v, int) and type(v) is not int and not isinstance(v, builtins.bool) else v


def arange(
    start: Any, /, stop: Any = None, step: Any = 1, *, dtype: DTypeLike = None, device: DeviceLike = None
) -> Tensor:
    """Evenly spaced values in [start, stop); ints give int64, floats the default float."""
    if stop is None:
        start, stop = 0, start
    start, stop, step = _plain_int(start), _plain_int(stop), _plain_int(step)
    if step == 0:
        raise ValueError("arange: step must not be zero")
    if dtype is None:
        dtype = dt.default_int if all(isinstance(v, int) for v in (start, stop, step)) else dt.default_float
    dev, d = _dev_dtype(dtype, device)
    return _new_tensor(dev.xp.arange(start, stop, step, dtype=dev.backend.native_dtype(d)), dev)


def linspace(
    start: float,
    stop: float,
    /,
    num: int,
    *,
    dtype: DTypeLike = None,
    device: DeviceLike = None,
    endpoint: builtins.bool = True,
) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop``."""
    num = _plain_int(num)
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative, got {num}")
    dev, d = _dev_dtype(dtype, device)
    return _new_tensor(dev.xp.linspace(start, stop, num, dtype=dev.backend.native_dtype(d), endpoint=endpoint), dev)


def eye(
    n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: DTypeLike = None, device: DeviceLike = None
) -> Tensor:
    """A 2-D tensor with ones on diagonal ``k``."""
    dev, d = _dev_dtype(dtype, device)
    n_rows, n_cols, k = _plain_int(n_rows), _plain_int(n_cols), _plain_int(k)
    return _new_tensor(dev.xp.eye(n_rows, n_cols, k=k, dtype=dev.backend.native_dtype(d)), dev)


class _Triangle(Function):
    native = True
    linear = True  # forward mode: the op itself on the tangents
    kernel = "tril"

    @staticmethod
    def forward(ctx, x, k):
        return getattr(ctx.xp, ctx.kernel)(x, k=k)

    @staticmethod
    def backward(ctx, gy):
        return type(ctx).apply(gy, ctx.inputs[1]), None


class Tril(_Triangle):
    __slots__ = ()
    kernel = "tril"


class Triu(_Triangle):
    __slots__ = ()
    kernel = "triu"


def tril(x: Tensor, /, *, k: int = 0) -> Tensor:
    """The lower triangle (on and below diagonal ``k``) of the last two axes; zeros elsewhere."""
    if _like(x, "tril").ndim < 2:
        raise ValueError(f"tril: needs at least 2 dimensions, got shape {x.shape}")
    return Tril.apply(x, k)


def triu(x: Tensor, /, *, k: int = 0) -> Tensor:
    """The upper triangle (on and above diagonal ``k``) of the last two axes; zeros elsewhere."""
    if _like(x, "triu").ndim < 2:
        raise ValueError(f"triu: needs at least 2 dimensions, got shape {x.shape}")
    return Triu.apply(x, k)


def from_dlpack(x: Any, /, *, device: DeviceLike = None, copy: builtins.bool | None = None) -> Tensor:
    """A tensor sharing memory with any object that implements ``__dlpack__``."""
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: {type(x).__name__} does not implement __dlpack__")
    if isinstance(x, Tensor):
        return asarray(x, device=device, copy=copy)

    dev = default_device() if device is None else resolve_device(device)
    return _new_tensor(dev.backend.canonical(dev.xp.from_dlpack(x)), dev)


def meshgrid(*arrays: Tensor, indexing: str = "xy") -> tuple[Tensor, ...]:
    """Coordinate grids from 1-D tensors (``indexing="xy"`` or ``"ij"``), as a tuple (2025.12, PyTorch)."""

    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    n = len(arrays)
    sizes = [a.size for a in arrays]
    if indexing == "xy" and n >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, a in enumerate(arrays):
        pos = i
        if indexing == "xy" and n >= 2 and i < 2:
            pos = 1 - i
        shape = [1] * n
        shape[pos] = a.size
        out.append(_m.broadcast_to(_m.reshape(a, shape), tuple(sizes)))
    return tuple(out)
