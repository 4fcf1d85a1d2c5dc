"""Reductions: sum, mean, max/min, prod, var/std, logsumexp, cumulative sums, all/any."""

from __future__ import annotations

from typing import Any

from .. import _dtypes as dt
from .. import kernels
from .._autograd import Function
from .._forward_ad import jvp_from_vjp
from .._tensor import Tensor, check_tensor
from .._typing import DTypeLike
from ..amp import autocast_op
from . import _helpers as _h
from . import creation as _c
from . import elementwise as _e
from . import indexing as _i
from . import manipulation as _m

__all__ = [
    "sum",
    "mean",
    "max",
    "min",
    "prod",
    "var",
    "std",
    "logsumexp",
    "cumulative_sum",
    "cumulative_prod",
    "all",
    "any",
]


#: dtypes whose reductions accumulate in a wider dtype, as PyTorch's do: the reduction runs in the value's dtype
#: and its result is cast back once, so a float16 sum of 4096 tenths is the float32 sum rounded, not a float16
#: running sum stuck where its ulp outgrew the terms (bfloat16 likewise, as PyTorch's CPU reductions)
ACCUMULATE: dict[dt.DType, dt.DType] = {dt.float16: dt.float32, dt.bfloat16: dt.float32}


def accumulation_dtype(x: Tensor) -> dt.DType | None:
    """The dtype ``x``'s reductions accumulate in, where it is wider than ``x``'s own (None otherwise)."""
    return ACCUMULATE.get(x.dtype)


def widened(fn: Any, x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """``fn(x, ...)`` computed in ``x``'s accumulation dtype and cast back to ``x``'s dtype."""
    wide = ACCUMULATE[x.dtype]
    return _m.astype(fn(_m.astype(x, wide), *args, **kwargs), x.dtype)


class Sum(Function):
    native = True
    linear = True  # forward mode: the op itself on the tangents
    saves_inputs = False  # the gradient needs shapes only

    @staticmethod
    def forward(ctx, x, axes, keepdims, dtype):
        if dtype is not None and x.dtype == ctx.xp.bool:
            x = ctx.xp.astype(x, dtype)  # the standard sums numeric arrays only
        return ctx.xp.sum(x, axis=axes, keepdims=keepdims, dtype=dtype)

    @staticmethod
    def backward(ctx, gy):
        x, axes, keepdims, _ = ctx.inputs
        g = _h.expand_reduced(gy, x.shape, axes, keepdims)
        if g.dtype is not x.dtype:
            g = _m._cast_grad(g, x.dtype)
        return g, None, None, None

    @staticmethod
    def backward_raw(ctx, gy):
        x, axes, keepdims, _ = ctx.inputs
        if gy.dtype != x._data.dtype:
            return NotImplemented  # the cast back goes through backward
        return _h.expand_reduced_raw(ctx.xp, gy, tuple(x._data.shape), axes, keepdims), None, None, None


def sum(  # noqa: A001
    x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, dtype: DTypeLike = None, keepdims: bool = False
) -> Tensor:
    """Sum over ``axis`` (all axes by default); integers and bools sum in the default integer dtype."""
    check_tensor(x, "sum")
    if dtype is None and x.dtype in ACCUMULATE:
        return widened(sum, x, axis=axis, keepdims=keepdims)
    axes = _h.normalize_axes(axis, x.ndim, "sum")
    native = None
    if dtype is not None:
        native = x._device.backend.native_dtype(dt.as_dtype(dtype))
    elif x.dtype.kind in "bi" and x.dtype is not dt.int64:
        native = x._device.backend.native_dtype(dt.int64)
    elif x.dtype.kind == "u" and x.dtype is not dt.uint64:
        native = x._device.backend.native_dtype(dt.uint64)
    return Sum.apply(x, axes, keepdims, native)


def mean(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:
    """Arithmetic mean over ``axis`` (a floating-point tensor is required, as in the standard)."""
    check_tensor(x, "mean")
    if x.dtype.kind not in "fc":
        raise TypeError(f"mean: expected a floating-point tensor, got {x.dtype.name}; cast it with .astype(float32)")
    if x.dtype in ACCUMULATE:
        return widened(mean, x, axis=axis, keepdims=keepdims)
    axes = _h.normalize_axes(axis, x.ndim, "mean")
    n = 1
    for a in axes:
        n *= x.shape[a]
    return sum(x, axis=axes, keepdims=keepdims) / (n if n else float("nan"))


class _Extremum(Function):
    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)
    kernel = "max"

    @staticmethod
    def forward(ctx, x, axes, keepdims):
        return getattr(ctx.xp, ctx.kernel)(x, axis=axes, keepdims=keepdims)

    @staticmethod
    def backward(ctx, gy):
        x, axes, keepdims = ctx.inputs
        y = _h.expand_reduced(ctx.output(), x.shape, axes, keepdims)
        hit = x == y
        if len(axes) == x.ndim and x.ndim:
            # over every element (PyTorch's max()/min()): a NaN result's gradient goes to the NaNs; a reduction
            # over some axes leaves NaN where the result is NaN (no element equals it), as amax/amin do
            hit = _e.logical_or(hit, _e.logical_and(_e.isnan(x), _e.isnan(y)))
        mask = _m.astype(hit, gy.dtype)
        # ties share the gradient equally
        count = sum(mask, axis=axes, keepdims=True)
        return _h.expand_reduced(gy, x.shape, axes, keepdims) * mask / count, None, None


class Max(_Extremum):
    __slots__ = ()
    kernel = "max"


class Min(_Extremum):
    __slots__ = ()
    kernel = "min"


def _extremum(cls: type[Function], x: Tensor, axis: Any, keepdims: bool, name: str) -> Tensor:
    check_tensor(x, name)
    axes = _h.normalize_axes(axis, x.ndim, name)
    for a in axes:
        if x.shape[a] == 0:
            raise ValueError(f"{name}: cannot reduce over axis {a} of size 0 (shape {x.shape})")
    return cls.apply(x, axes, keepdims)


def max(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Largest value over ``axis``; tied maxima share the gradient."""
    return _extremum(Max, x, axis, keepdims, "max")


def min(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Smallest value over ``axis``; tied minima share the gradient."""
    return _extremum(Min, x, axis, keepdims, "min")


def _in_dtype(ctx: Function, x: Any, out: Any, keep_dtype: bool) -> Any:
    """``out`` in ``x``'s dtype when the caller asked for that dtype: libraries accumulate small integers in
    64 bits; the cast back wraps exactly as arithmetic in the small type would (modular arithmetic)."""
    return ctx.xp.astype(out, x.dtype) if keep_dtype and out.dtype != x.dtype else out


class Prod(Function):
    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x, axes, keepdims, keep_dtype):
        return _in_dtype(ctx, x, ctx.xp.prod(x, axis=axes, keepdims=keepdims), keep_dtype)

    @staticmethod
    def backward(ctx, gy):
        x, axes, keepdims, _ = ctx.inputs
        g = _h.expand_reduced(gy, x.shape, axes, keepdims)
        # product of the other elements, exact even where x has zeros: move the reduced axes
        # to the end, flatten them, and multiply exclusive cumulative products from both sides

        keep = [a for a in range(x.ndim) if a not in axes]
        perm = tuple(keep) + tuple(axes)
        xt = _m.permute_dims(x, perm) if perm != tuple(range(x.ndim)) else x
        lead = tuple(x.shape[a] for a in keep)
        flat = _m.reshape(xt, (*lead, -1))
        left = cumulative_prod(flat, axis=-1, include_initial=True)[..., :-1]
        rev = flat[..., ::-1]
        right = cumulative_prod(rev, axis=-1, include_initial=True)[..., :-1][..., ::-1]
        others = _m.reshape(left * right, tuple(xt.shape))
        inv = [0] * x.ndim
        for i, p in enumerate(perm):
            inv[p] = i
        others = _m.permute_dims(others, tuple(inv)) if perm != tuple(range(x.ndim)) else others
        return g * _e.conj_if_complex(others), None, None, None


@autocast_op("prod")
def prod(
    x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, dtype: DTypeLike = None, keepdims: bool = False
) -> Tensor:
    """Product over ``axis``; the gradient is exact where elements are zero."""
    check_tensor(x, "prod")
    if dtype is None and x.dtype in ACCUMULATE:
        return widened(prod, x, axis=axis, keepdims=keepdims)
    if dtype is not None:
        x = _m.astype(x, dt.as_dtype(dtype))
    return Prod.apply(x, _h.normalize_axes(axis, x.ndim, "prod"), keepdims, dtype is not None)


def var(
    x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, correction: float = 0.0, keepdims: bool = False
) -> Tensor:
    """Variance over ``axis`` with ``correction`` degrees of freedom subtracted (1 for the unbiased estimate)."""
    check_tensor(x, "var")
    if x.dtype in ACCUMULATE:
        return widened(var, x, axis=axis, correction=correction, keepdims=keepdims)
    axes = _h.normalize_axes(axis, x.ndim, "var")
    n = 1
    for a in axes:
        n *= x.shape[a]
    d = mean(x, axis=axes, keepdims=True)
    dev = x - d
    denom = n - correction
    return sum(dev * dev, axis=axes, keepdims=keepdims) / (denom if denom > 0 else float("nan"))


def std(
    x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, correction: float = 0.0, keepdims: bool = False
) -> Tensor:
    """Standard deviation: the square root of :func:`var`, with gradient 0 (not NaN) where it is 0, as in PyTorch."""
    check_tensor(x, "std")
    if x.dtype in ACCUMULATE:
        return widened(std, x, axis=axis, correction=correction, keepdims=keepdims)
    return SqrtOfVariance.apply(var(x, axis=axis, correction=correction, keepdims=keepdims))


class SqrtOfVariance(Function):
    """``sqrt(v)`` whose gradient is 0 where ``v`` is 0: a constant row's std has gradient 0, as in PyTorch."""

    native = True

    @staticmethod
    def forward(ctx, v):
        return ctx.xp.sqrt(v)

    @staticmethod
    def jvp(ctx, tv):
        y = ctx.output()
        zero = _e.equal(y, 0)
        return _e.where(zero, 0.0, tv / (2.0 * _e.where(zero, 1.0, y)))

    @staticmethod
    def backward(ctx, gy):
        y = ctx.output()
        zero = _e.equal(y, 0)
        return _e.where(zero, 0.0, gy / (2 * _e.where(zero, 1.0, y)))


class Logsumexp(Function):
    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x, axes, keepdims):
        return kernels.call(ctx.device, "logsumexp", x, axes, keepdims)

    @staticmethod
    def backward(ctx, gy):

        x, axes, keepdims = ctx.inputs
        y = _h.expand_reduced(ctx.output(), x.shape, axes, keepdims)
        return _h.expand_reduced(gy, x.shape, axes, keepdims) * _e.exp(x - y), None, None


def logsumexp(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:
    """log(sum(exp(x))) over ``axis``, without overflow."""
    check_tensor(x, "logsumexp")
    if x.dtype in ACCUMULATE:
        return widened(logsumexp, x, axis=axis, keepdims=keepdims)
    return Logsumexp.apply(x, _h.normalize_axes(axis, x.ndim, "logsumexp"), keepdims)


class CumulativeSum(Function):
    native = True
    linear = True  # forward mode: the op itself on the tangents

    @staticmethod
    def forward(ctx, x, axis, include_initial, keep_dtype):
        return _in_dtype(ctx, x, ctx.xp.cumulative_sum(x, axis=axis, include_initial=include_initial), keep_dtype)

    @staticmethod
    def backward(ctx, gy):

        x, axis, include_initial, _ = ctx.inputs
        g = _m.flip(cumulative_sum(_m.flip(gy, axis=axis), axis=axis), axis=axis)
        if include_initial:
            idx = [slice(None)] * x.ndim
            idx[axis] = slice(1, None)
            g = _i.getitem(g, tuple(idx))
        return g, None, None, None


def cumulative_sum(
    x: Tensor, /, *, axis: int | None = None, dtype: DTypeLike = None, include_initial: bool = False
) -> Tensor:
    """Running sum along ``axis`` (required unless ``x`` is 1-D)."""
    check_tensor(x, "cumulative_sum")
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"cumulative_sum: axis is required for a {x.ndim}-D tensor")
        axis = 0
    if dtype is None and x.dtype in ACCUMULATE:
        return widened(cumulative_sum, x, axis=axis, include_initial=include_initial)
    if dtype is not None:
        x = _m.astype(x, dt.as_dtype(dtype))
    return CumulativeSum.apply(x, _h.normalize_axis(axis, x.ndim, "cumulative_sum"), include_initial, dtype is not None)


class CumulativeProd(Function):
    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x, axis, include_initial, keep_dtype):
        return _in_dtype(ctx, x, kernels.call(ctx.device, "cumulative_prod", x, axis, include_initial), keep_dtype)

    @staticmethod
    def backward(ctx, gy):
        # d y_j / d x_i = prod_{k<=j, k!=i} x_k for j >= i; computed without dividing by x (nor reading y)
        x, axis, include_initial, _ = ctx.inputs
        if include_initial:
            idx = [slice(None)] * x.ndim
            idx[axis] = slice(1, None)
            gy = _i.getitem(gy, tuple(idx))
        n = x.shape[axis]
        xm = _m.moveaxis(x, axis, -1)
        gm = _m.moveaxis(gy, axis, -1)

        i_idx = _c.arange(n, device=x.device)
        # others[..., i, j] = prod over k <= j, k != i of x_k (for j >= i)
        xe = _m.expand_dims(xm, axis=-2)  # (..., 1, n)
        eye_mask = _m.expand_dims(i_idx, axis=-1) == _m.expand_dims(i_idx, axis=0)  # (n, n) [i, k]
        repl = _e.where(eye_mask, 1.0, xe)  # x with x_i replaced by 1: (..., n_i, n_k)
        partial = cumulative_prod(repl, axis=-1)  # (..., i, j)
        upper = _m.expand_dims(i_idx, axis=-1) <= _m.expand_dims(i_idx, axis=0)  # j >= i
        contrib = _e.conj_if_complex(_e.where(upper, partial, 0.0)) * _m.expand_dims(gm, axis=-2)
        g = sum(contrib, axis=-1)
        return _m.moveaxis(g, -1, axis), None, None, None


def cumulative_prod(
    x: Tensor, /, *, axis: int | None = None, dtype: DTypeLike = None, include_initial: bool = False
) -> Tensor:
    """Running product along ``axis``; the gradient is exact where elements are zero."""
    check_tensor(x, "cumulative_prod")
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"cumulative_prod: axis is required for a {x.ndim}-D tensor")
        axis = 0
    if dtype is not None:
        x = _m.astype(x, dt.as_dtype(dtype))
    return CumulativeProd.apply(
        x, _h.normalize_axis(axis, x.ndim, "cumulative_prod"), include_initial, dtype is not None
    )


class _Logical(Function):
    native = True
    differentiable = False
    kernel = "all"

    @staticmethod
    def forward(ctx, x, axes, keepdims):
        return getattr(ctx.xp, ctx.kernel)(x, axis=axes, keepdims=keepdims)


class AllOp(_Logical):
    __slots__ = ()
    kernel = "all"


class AnyOp(_Logical):
    __slots__ = ()
    kernel = "any"


def all(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether every element along ``axis`` is true (non-zero)."""
    check_tensor(x, "all")
    return AllOp.apply(x, _h.normalize_axes(axis, x.ndim, "all"), keepdims)


def any(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether some element along ``axis`` is true (non-zero)."""
    check_tensor(x, "any")
    return AnyOp.apply(x, _h.normalize_axes(axis, x.ndim, "any"), keepdims)
