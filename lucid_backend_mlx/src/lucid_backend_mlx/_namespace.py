"""An Array API namespace over ``mlx.core``: MLX's own functions where they agree with the
standard, and small adapters where they do not (names, signatures, dtypes, data-dependent
shapes, float64 accuracy).

One namespace is made per device. On a machine with a single MLX device the functions are
MLX's own (no wrapper at all); with several, each is bound to its device's stream.
"""

from __future__ import annotations

import builtins
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import mlx.core as mx

from ._float64 import cos64, erf32, erf64, exp64, logaddexp64, logsumexp64, sigmoid64, sin64
from ._linalg_fft import make_fft, make_linalg

__all__ = ["MLXNamespace", "check_index_bounds", "expand_bool_keys", "nonzero"]

_FLOAT64 = mx.float64
_INT64 = mx.int64
_NARROW_INTS = (mx.bool_, mx.int8, mx.int16, mx.int32, mx.uint8, mx.uint16, mx.uint32)
_UNSIGNED = (mx.uint8, mx.uint16, mx.uint32, mx.uint64)

#: MLX dtypes by their NumPy / Lucid name, to keep a host array's dtype (MLX would narrow float64).
DTYPES_BY_NAME: dict[str, Any] = {
    "bool": mx.bool_, "int8": mx.int8, "int16": mx.int16, "int32": mx.int32, "int64": mx.int64,
    "uint8": mx.uint8, "uint16": mx.uint16, "uint32": mx.uint32, "uint64": mx.uint64,
    "float16": mx.float16, "bfloat16": mx.bfloat16, "float32": mx.float32, "float64": mx.float64,
    "complex64": mx.complex64,
}  # fmt: skip


def _is_f64(x: Any) -> bool:
    return getattr(x, "dtype", None) == _FLOAT64


def _axes(axis: Any) -> Any:
    return list(axis) if isinstance(axis, tuple) else axis


# -- element-wise ------------------------------------------------------------------------------


def exp(x: Any) -> Any:
    return exp64(x) if _is_f64(x) else mx.exp(x)


def sin(x: Any) -> Any:
    if _is_f64(x):
        return sin64(x)
    # MLX's sin loses the sign of -0.0; the standard keeps it
    return mx.where(x == 0, x, mx.sin(x)) if mx.issubdtype(x.dtype, mx.floating) else mx.sin(x)


def cos(x: Any) -> Any:
    return cos64(x) if _is_f64(x) else mx.cos(x)


def erf(x: Any) -> Any:
    if _is_f64(x):
        return erf64(x)
    return erf32(x) if x.dtype == mx.float32 else mx.erf(x)


def sigmoid(x: Any) -> Any:
    return sigmoid64(x) if _is_f64(x) else mx.sigmoid(x)


def logaddexp(x1: Any, x2: Any) -> Any:
    if _is_f64(x1) or _is_f64(x2):
        return logaddexp64(x1, x2)
    return mx.logaddexp(x1, x2)


def sign(x: Any) -> Any:
    """MLX's sign gives 0 for NaN; the standard says NaN."""
    s = mx.sign(x)
    if mx.issubdtype(x.dtype, mx.inexact):
        s = mx.where(mx.isnan(x), x, s)
    return s


_VIEW_INT = {mx.float16: mx.int16, mx.bfloat16: mx.int16, mx.float32: mx.int32, mx.float64: mx.int64}


def signbit(x: Any) -> Any:
    """Whether the sign bit is set (true for -0.0 and negative NaNs)."""
    it = _VIEW_INT.get(x.dtype)
    if it is None:
        return x < 0
    return mx.view(x, it) < 0


def copysign(x1: Any, x2: Any) -> Any:
    a = mx.abs(x1)
    b = x2 if isinstance(x2, mx.array) else mx.array(x2, dtype=x1.dtype)
    return mx.where(signbit(b), -a, a)


def hypot(x1: Any, x2: Any) -> Any:
    """sqrt(x1**2 + x2**2) without overflow (scaled by the larger magnitude)."""
    a, b = mx.abs(x1), mx.abs(x2)
    m = mx.maximum(a, b)
    n = mx.minimum(a, b)
    safe = mx.where(m == 0, 1.0, m)
    r = n / safe
    out = m * mx.sqrt(1.0 + r * r)
    return mx.where(mx.isinf(a) | mx.isinf(b), mx.inf, out)


def _int_like(x: Any) -> bool:
    return x.dtype in _NARROW_INTS or x.dtype in (mx.int64, mx.uint64)


def matmul(x1: Any, x2: Any) -> Any:
    """MLX multiplies only floats; integer products go through float64 on the CPU (exact below 2**53)."""
    if _int_like(x1) or _int_like(x2):
        dt = mx.result_type(x1, x2)
        if dt == mx.bool_:
            return mx.matmul(x1.astype(_FLOAT64, stream=mx.cpu), x2.astype(_FLOAT64, stream=mx.cpu), stream=mx.cpu) > 0
        out = mx.matmul(x1.astype(_FLOAT64, stream=mx.cpu), x2.astype(_FLOAT64, stream=mx.cpu), stream=mx.cpu)
        return mx.round(out, stream=mx.cpu).astype(dt, stream=mx.cpu)
    return mx.matmul(x1, x2)


def einsum(subscripts: str, *operands: Any) -> Any:
    if builtins.any(_int_like(o) for o in operands):
        dt = mx.result_type(*operands)
        out = mx.einsum(subscripts, *[o.astype(_FLOAT64, stream=mx.cpu) for o in operands], stream=mx.cpu)
        return mx.round(out, stream=mx.cpu).astype(dt, stream=mx.cpu)
    return mx.einsum(subscripts, *operands)


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Any:
    if _int_like(x1) or _int_like(x2):
        dt = mx.result_type(x1, x2)
        a, b = x1.astype(_FLOAT64, stream=mx.cpu), x2.astype(_FLOAT64, stream=mx.cpu)
        out = mx.tensordot(a, b, axes=axes, stream=mx.cpu)
        return mx.round(out, stream=mx.cpu).astype(dt, stream=mx.cpu)
    return mx.tensordot(x1, x2, axes=axes)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    if mx.issubdtype(x1.dtype, mx.complexfloating):
        x1 = mx.conj(x1)
    return mx.sum(x1 * x2, axis=axis)


def clip(x: Any, /, min: Any = None, max: Any = None) -> Any:  # noqa: A002 - the standard's names
    if min is None and max is None:
        return x
    return mx.clip(x, min, max)


def round(x: Any, /) -> Any:  # noqa: A001 - the standard's name
    return x if _int_like(x) else mx.round(x)


# -- reductions --------------------------------------------------------------------------------


def _accumulator(x: Any, dtype: Any) -> Any:
    """The standard's accumulation dtype: narrow integers and bools widen to 64 bits."""
    if dtype is not None:
        return dtype
    if x.dtype in _NARROW_INTS:
        return mx.uint64 if x.dtype in _UNSIGNED else _INT64
    return None


def sum(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:  # noqa: A001
    acc = _accumulator(x, dtype)
    if acc is not None and acc != x.dtype:
        x = x.astype(acc)
    if axis == ():
        return x
    out = mx.sum(x, axis=_axes(axis), keepdims=keepdims)
    # MLX accumulates narrow integers in int32; the standard keeps an explicitly requested dtype
    return out if acc is None or out.dtype == acc else out.astype(acc)


def prod(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
    acc = _accumulator(x, dtype)
    if acc is not None and acc != x.dtype:
        x = x.astype(acc)
    if axis == ():
        return x
    out = mx.prod(x, axis=_axes(axis), keepdims=keepdims)
    # MLX accumulates narrow integers in int32; the standard keeps an explicitly requested dtype
    return out if acc is None or out.dtype == acc else out.astype(acc)


def _reduction(fn: Callable[..., Any], to_bool: bool = False) -> Callable[..., Any]:
    def reduce(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
        if axis == ():  # MLX reads an empty axis list as "every axis"
            return x.astype(mx.bool_) if to_bool else x
        return fn(x, axis=_axes(axis), keepdims=keepdims)

    reduce.__name__ = fn.__name__
    return reduce


max = _reduction(mx.max)  # noqa: A001
min = _reduction(mx.min)  # noqa: A001
mean = _reduction(mx.mean)
all = _reduction(mx.all, True)  # noqa: A001
any = _reduction(mx.any, True)  # noqa: A001


def var(x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Any:
    return mx.var(x, axis=_axes(axis), keepdims=keepdims, ddof=int(correction))


def std(x: Any, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Any:
    return mx.std(x, axis=_axes(axis), keepdims=keepdims, ddof=int(correction))


def logsumexp(x: Any, axis: Any, keepdims: bool) -> Any:
    """The ``logsumexp`` kernel: MLX's own, or the float64-accurate composition."""
    if axis == ():
        return x
    if _is_f64(x):
        return logsumexp64(x, _axes(axis), keepdims)
    return mx.logsumexp(x, axis=_axes(axis), keepdims=keepdims)


def _cumulative(fn: Callable[..., Any], initial: int) -> Callable[..., Any]:
    def cumulative(x: Any, /, *, axis: int | None = None, dtype: Any = None, include_initial: bool = False) -> Any:
        acc = _accumulator(x, dtype)
        if acc is not None and acc != x.dtype:
            x = x.astype(acc)
        if axis is None:
            if x.ndim != 1:
                raise ValueError(f"cumulative: axis is required for a {x.ndim}-D array")
            axis = 0
        out = fn(x, axis=axis)
        if include_initial:
            shape = list(x.shape)
            shape[axis] = 1
            out = mx.concatenate([mx.full(shape, initial, dtype=out.dtype), out], axis=axis)
        return out

    return cumulative


cumulative_sum = _cumulative(mx.cumsum, 0)
cumulative_prod = _cumulative(mx.cumprod, 1)


# -- searching and sorting -----------------------------------------------------------------------


def argmax(x: Any, /, *, axis: int | None = None, keepdims: bool = False) -> Any:
    return mx.argmax(x, axis=axis, keepdims=keepdims).astype(_INT64)


def argmin(x: Any, /, *, axis: int | None = None, keepdims: bool = False) -> Any:
    return mx.argmin(x, axis=axis, keepdims=keepdims).astype(_INT64)


def argsort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Any:
    """Indices that sort ``x``; MLX's merge sort is stable, and descending keeps ties in order."""
    if not descending:
        return mx.argsort(x, axis=axis).astype(_INT64)
    n = x.shape[axis]
    rev = mx.argsort(mx.flip(x, axis=axis), axis=axis).astype(_INT64)
    return (n - 1) - mx.flip(rev, axis=axis)


def sort(x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Any:
    out = mx.sort(x, axis=axis)
    return mx.flip(out, axis=axis) if descending else out


def searchsorted(x1: Any, x2: Any, /, *, side: str = "left", sorter: Any = None) -> Any:
    if sorter is not None:
        x1 = mx.take(x1, sorter)
    if not hasattr(x2, "shape"):
        x2 = mx.array(x2, dtype=x1.dtype)
    return mx.searchsorted(x1, x2, side=side).astype(_INT64)


def nonzero(x: Any, /) -> tuple[Any, ...]:
    """Indices of the non-zero elements, one array per axis (one host sync for the count)."""
    if x.ndim == 0:
        raise ValueError("nonzero: a 0-d array has no indices")
    mask = mx.reshape(x != 0, (-1,))
    n = mask.size
    count = int(mx.sum(mask).item())
    pos = mx.cumsum(mask.astype(_INT64)) - 1
    # non-zero element i goes to slot pos[i]; the rest pile up in a spare slot past the end
    target = mx.where(mask, pos, count)
    flat = mx.zeros((count + 1,), dtype=_INT64).at[target].add(mx.where(mask, mx.arange(n, dtype=_INT64), 0))[:count]
    out = []
    for dim in reversed(x.shape):
        out.append(flat % dim)
        flat = flat // dim
    return tuple(reversed(out))


def count_nonzero(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    return sum(x != 0, axis=axis, keepdims=keepdims)


def _unique_parts(x: Any) -> tuple[Any, Any, Any, Any]:
    flat = mx.reshape(x, (-1,))
    order = mx.argsort(flat).astype(_INT64)
    s = flat[order]
    first = mx.concatenate([mx.array([True]), s[1:] != s[:-1]]) if s.size else mx.zeros((0,), dtype=mx.bool_)
    (starts,) = nonzero(first) if s.size else (mx.zeros((0,), dtype=_INT64),)
    group = mx.cumsum(first.astype(_INT64)) - 1
    return s, order, starts, group


def unique_values(x: Any, /) -> Any:
    s, _, starts, _ = _unique_parts(x)
    return s[starts]


def unique_counts(x: Any, /) -> tuple[Any, Any]:
    s, _, starts, group = _unique_parts(x)
    counts = mx.zeros((starts.size,), dtype=_INT64).at[group].add(1)
    return s[starts], counts


def unique_inverse(x: Any, /) -> tuple[Any, Any]:
    s, order, starts, group = _unique_parts(x)
    inv = mx.zeros((s.size,), dtype=_INT64)
    inv[order] = group
    return s[starts], mx.reshape(inv, x.shape)


def unique_all(x: Any, /) -> tuple[Any, Any, Any, Any]:
    s, order, starts, group = _unique_parts(x)
    inv = mx.zeros((s.size,), dtype=_INT64)
    inv[order] = group
    counts = mx.zeros((starts.size,), dtype=_INT64).at[group].add(1)
    return s[starts], order[starts], mx.reshape(inv, x.shape), counts


# -- creation --------------------------------------------------------------------------------------


def infer_dtype(obj: Any) -> Any:
    """Lucid's dtype for Python data: bool, int64, float32 or complex64 (MLX would pick int32 for ints)."""
    kind = -1
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, (list, tuple)):
            stack.extend(o)
        elif isinstance(o, builtins.bool):
            kind = builtins.max(kind, 0)
        elif isinstance(o, int):
            kind = builtins.max(kind, 1)
        elif isinstance(o, float):
            kind = builtins.max(kind, 2)
        elif isinstance(o, complex):
            kind = 3
        else:
            return None
    return (mx.float32, mx.bool_, _INT64, mx.float32, mx.complex64)[kind + 1]


def host_dtype(obj: Any) -> Any:
    """The MLX dtype matching a host array's (NumPy, buffer) dtype, or None to let MLX choose."""
    dt = getattr(obj, "dtype", None)
    name = getattr(dt, "name", None)
    if name is None:
        return None
    try:
        return DTYPES_BY_NAME[name]
    except KeyError:
        raise TypeError(
            f"MLX has no dtype matching {name}; convert the data first (e.g. complex128 -> complex64)"
        ) from None


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: bool | None = None) -> Any:
    """An MLX array from an MLX array, Python data or a host array (whose dtype is kept)."""
    if isinstance(obj, mx.array):
        if dtype is not None and obj.dtype != dtype:
            if copy is False:
                raise ValueError(f"asarray: copy=False, but casting {obj.dtype} to {dtype} needs a copy")
            return obj.astype(dtype)
        return mx.array(obj) if copy else obj
    if copy is False:
        raise ValueError("asarray: copy=False, but MLX copies host memory into its own buffers")
    if dtype is None:
        if isinstance(obj, (builtins.bool, int, float, complex, list, tuple)):
            dtype = infer_dtype(obj)
        else:
            dtype = host_dtype(obj)
    if dtype is None:
        return mx.array(obj)
    if dtype == mx.uint64 and isinstance(obj, (int, list, tuple)):
        return _uint64_array(obj)
    return mx.array(obj, dtype=dtype)


_TWO64 = 1 << 64


def _as_int64_bits(obj: Any) -> Any:
    if isinstance(obj, (list, tuple)):
        return [_as_int64_bits(o) for o in obj]
    return obj - _TWO64 if isinstance(obj, int) and obj >= 1 << 63 else obj


def _uint64_array(obj: Any) -> Any:
    """uint64 from Python ints: MLX cannot convert ints >= 2**63 (std::bad_cast), so go through int64 bits."""
    return mx.view(mx.array(_as_int64_bits(obj), dtype=_INT64), mx.uint64)


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Any:
    if isinstance(x, mx.array):
        return mx.array(x) if copy else x
    return asarray(x)


def zeros(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    return mx.zeros(shape, dtype=mx.float32 if dtype is None else dtype)


def ones(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    return mx.ones(shape, dtype=mx.float32 if dtype is None else dtype)


empty = zeros


def full(shape: Any, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    if dtype is None:
        dtype = infer_dtype(fill_value)
    if dtype == mx.uint64 and isinstance(fill_value, int) and fill_value >= 1 << 63:
        return mx.view(mx.full(shape, fill_value - _TWO64, dtype=_INT64), mx.uint64)
    return mx.full(shape, fill_value, dtype=dtype)


def zeros_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    return mx.zeros(x.shape, dtype=x.dtype if dtype is None else dtype)


def ones_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    return mx.ones(x.shape, dtype=x.dtype if dtype is None else dtype)


empty_like = zeros_like


def full_like(x: Any, /, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    return mx.full(x.shape, fill_value, dtype=x.dtype if dtype is None else dtype)


def arange(start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None) -> Any:
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        dtype = _INT64 if builtins.all(isinstance(v, int) for v in (start, stop, step)) else mx.float32
    return mx.arange(start, stop, step, dtype=dtype)


def linspace(
    start: Any, stop: Any, /, num: int, *, dtype: Any = None, device: Any = None, endpoint: bool = True
) -> Any:
    return mx.linspace(start, stop, num, endpoint=endpoint, dtype=mx.float32 if dtype is None else dtype)


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None, device: Any = None) -> Any:
    return mx.eye(n_rows, n_cols, k=k, dtype=mx.float32 if dtype is None else dtype)


def tril(x: Any, /, *, k: int = 0) -> Any:
    return mx.tril(x, k=k)


def triu(x: Any, /, *, k: int = 0) -> Any:
    return mx.triu(x, k=k)


def meshgrid(*arrays: Any, indexing: str = "xy") -> list[Any]:
    return list(mx.meshgrid(*arrays, indexing=indexing))


# -- manipulation ----------------------------------------------------------------------------------


def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    if x.dtype == dtype:
        return mx.array(x) if copy else x
    return x.astype(dtype)


def reshape(x: Any, /, shape: Sequence[int], *, copy: bool | None = None) -> Any:
    return mx.reshape(x, shape)


def concat(arrays: Sequence[Any], /, *, axis: int | None = 0) -> Any:
    if axis is None:
        return mx.concatenate([mx.reshape(a, (-1,)) for a in arrays])
    return mx.concatenate(list(arrays), axis=axis)


def stack(arrays: Sequence[Any], /, *, axis: int = 0) -> Any:
    return mx.stack(list(arrays), axis=axis)


def flip(x: Any, /, *, axis: Any = None) -> Any:
    if axis == ():
        return x
    return mx.flip(x, axis=_axes(axis))


def roll(x: Any, /, shift: Any, *, axis: Any = None) -> Any:
    return mx.roll(x, shift, axis)


def squeeze(x: Any, /, axis: Any) -> Any:
    if axis == ():
        return x
    return mx.squeeze(x, axis=_axes(axis))


def expand_dims(x: Any, /, axis: Any = 0) -> Any:
    return mx.expand_dims(x, _axes(axis))


def permute_dims(x: Any, /, axes: Sequence[int]) -> Any:
    return mx.transpose(x, list(axes))


def repeat(x: Any, repeats: Any, /, *, axis: int | None = None) -> Any:
    if isinstance(repeats, int):
        return mx.repeat(x, repeats, axis=axis)
    counts = repeats.tolist() if hasattr(repeats, "tolist") else list(repeats)
    if axis is None:
        x, axis = mx.reshape(x, (-1,)), 0
    idx = [i for i, c in enumerate(counts) for _ in range(c)]
    return mx.take(x, mx.array(idx, dtype=_INT64), axis=axis)


def take(x: Any, indices: Any, /, *, axis: int | None = None) -> Any:
    return mx.take(x, indices, axis=axis)


def broadcast_arrays(*arrays: Any) -> list[Any]:
    return list(mx.broadcast_arrays(*arrays))


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    return tuple(mx.take(x, i, axis=axis) for i in range(x.shape[axis]))


def where(condition: Any, x1: Any, x2: Any, /) -> Any:
    return mx.where(condition, x1, x2)


# -- boolean masks in keys ------------------------------------------------------------------------


def expand_bool_keys(key: Any) -> Any:
    """Replace boolean-mask arrays in an index key by their integer positions (MLX indexes with ints only)."""
    if isinstance(key, mx.array):
        return nonzero(key) if key.dtype == mx.bool_ else key
    if not isinstance(key, tuple):
        return key
    if not builtins.any(isinstance(k, mx.array) and k.dtype == mx.bool_ for k in key):
        return key
    out: list[Any] = []
    for k in key:
        if isinstance(k, mx.array) and k.dtype == mx.bool_:
            out.extend(nonzero(k) if k.ndim else (mx.array([0] if k.item() else [], dtype=_INT64),))
        else:
            out.append(k)
    return tuple(out)


def check_index_bounds(shape: tuple[int, ...], key: Any) -> None:
    """Raise IndexError for out-of-range integer-array indices, as NumPy words it (MLX would read memory past
    the array and return it as values); the smallest and largest entry of every index array in one host sync."""
    if not isinstance(key, tuple):
        key = (key,)
    consuming = builtins.sum(1 for k in key if k is not None and k is not Ellipsis)
    checks = []
    dim = 0
    for k in key:
        if k is Ellipsis:
            dim += len(shape) - consuming
            continue
        if k is None:
            continue
        if isinstance(k, mx.array) and k.size and dim < len(shape):
            checks.append((dim, shape[dim], k))
        dim += 1
    if not checks:
        return
    bounds = mx.stack([mx.stack([mx.min(k).astype(mx.int64), mx.max(k).astype(mx.int64)]) for _, _, k in checks])
    for (axis, n, _), (lo, hi) in zip(checks, bounds.tolist()):
        bad = lo if lo < -n else hi if hi >= n else None
        if bad is not None:
            raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")


# -- the namespace ---------------------------------------------------------------------------------

# MLX functions whose behaviour already matches the standard; MLX's aliases where the name differs.
_PASSTHROUGH = (
    "abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_invert bitwise_left_shift bitwise_or "
    "bitwise_right_shift bitwise_xor broadcast_to ceil conj cosh divide equal expm1 floor floor_divide greater "
    "greater_equal imag isfinite isinf isnan less less_equal log log1p log2 log10 logical_and logical_not "
    "logical_or logical_xor matrix_transpose maximum minimum moveaxis multiply negative not_equal positive pow "
    "real reciprocal remainder sinh sqrt square subtract tan tanh trunc take_along_axis tile"
).split()

# Our adapters, listed by their names in the namespace (not by ``__name__``: what one factory builds
# shares one, e.g. cumulative_sum and cumulative_prod are both ``_cumulative``'s ``cumulative``).
_ADAPTED: dict[str, Callable[..., Any]] = {
    name: globals()[name]
    for name in (
        "exp sin cos erf sigmoid logaddexp sign signbit copysign hypot matmul einsum tensordot vecdot clip round "
        "sum prod max min mean all any var std cumulative_sum cumulative_prod argmax argmin argsort sort "
        "searchsorted nonzero count_nonzero unique_values unique_counts unique_inverse unique_all asarray "
        "from_dlpack zeros ones full zeros_like ones_like full_like empty empty_like arange linspace eye tril triu "
        "meshgrid astype reshape concat stack flip roll squeeze expand_dims permute_dims repeat take "
        "broadcast_arrays unstack where logsumexp"
    ).split()
}


def _on_stream(fn: Callable[..., Any], stream: Any) -> Callable[..., Any]:
    @functools.wraps(fn)
    def bound(*args: Any, **kwargs: Any) -> Any:
        with mx.stream(stream):
            return fn(*args, **kwargs)

    return bound


class MLXNamespace:
    """The Array API namespace of one MLX device (``stream=None``: MLX's default device, no wrapping).

    Args:
        stream: the ``mx.Device`` to run on, or None when it is the only one.
        device_name: the Lucid device name, for error messages.
        float64: whether this device computes in float64 (MLX's CPU does, its GPU does not).
    """

    def __init__(self, stream: Any = None, device_name: str = "mlx:cpu", float64: bool = True) -> None:
        self.stream = stream
        self.device_name = device_name
        for name in _PASSTHROUGH:
            fn = getattr(mx, name)
            setattr(self, name, fn if stream is None else functools.partial(fn, stream=stream))
        for name, fn in _ADAPTED.items():
            setattr(self, name, fn if stream is None else _on_stream(fn, stream))
        for name, dt in DTYPES_BY_NAME.items():
            setattr(self, name, dt)
        # the extensions: linalg always runs on the CPU stream (MLX factorizes only there)
        self.linalg = make_linalg()
        self.fft = make_fft(lambda f: f if stream is None else _on_stream(f, stream))
        self.e, self.pi, self.inf, self.nan, self.newaxis = math.e, math.pi, math.inf, math.nan, None
        self.result_type, self.can_cast, self.finfo, self.iinfo, self.isdtype = (
            mx.result_type, mx.can_cast, mx.finfo, mx.iinfo, mx.isdtype,
        )  # fmt: skip
        if not float64:
            self._refuse_float64()

    def _refuse_float64(self) -> None:
        """On a device without float64, every way of making a float64 array raises a clear error."""
        where = self.device_name

        def guard(fn: Callable[..., Any], pos: int | None) -> Callable[..., Any]:
            @functools.wraps(fn)
            def checked(*args: Any, **kwargs: Any) -> Any:
                dt = kwargs.get("dtype", args[pos] if pos is not None and len(args) > pos else None)
                if dt == _FLOAT64 or (dt is None and _is_f64(args[0] if args else None)):
                    raise TypeError(float64_error(where))
                return fn(*args, **kwargs)

            return checked

        self.astype = guard(self.astype, 1)
        for name in ("asarray", "zeros", "ones", "full", "empty", "arange", "linspace", "eye", "from_dlpack"):
            setattr(self, name, guard(getattr(self, name), None))

    def __repr__(self) -> str:
        return f"<Array API namespace of {self.device_name}>"


def float64_error(device: str) -> str:
    return (
        f"MLX cannot compute in float64 on {device} (its GPU has no float64); use device 'mlx:cpu' "
        "for float64, or cast to float32 first"
    )
