"""PyTorch's ops beyond the Array API standard, with PyTorch's signatures (``dim=``, ``keepdim=``).

They are declared in :mod:`lucid_core._op_table`, which makes each one a ``Tensor`` method (and its
``name_`` in-place form) and the ``lucid`` face's free function. Most are composed from the standard's
differentiable ops, so their gradients come from those ops (written so that the branch a ``where``
drops cannot put a NaN into the gradient); the few that need their own backward are ``Function``s here.
They are not part of ``lucid_core``'s namespace, which stays the standard's.
"""

# ruff: noqa: A002 - PyTorch names the first argument ``input``
from __future__ import annotations

import builtins
import itertools
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from .. import _dtypes as dt
from .._autograd import no_grad
from .._tensor import Tensor
from ..amp import autocast_op
from . import creation as _c
from . import elementwise as _e
from . import indexing as _i
from . import manipulation as _m
from . import products as _p
from . import reduction as _r
from . import searching as _s
from ._helpers import normalize_axis

_LN2 = math.log(2.0)


class MinMax(NamedTuple):
    """What ``aminmax`` returns."""

    min: Tensor
    max: Tensor


class ValuesIndices(NamedTuple):
    """What ``median``/``kthvalue``/``cummax``-style ops with ``dim`` return."""

    values: Tensor
    indices: Tensor


def _float(x: Tensor) -> Tensor:
    """``x`` as a floating-point tensor (integers and bools become the default float, as PyTorch's unary math)."""
    return x if x.dtype.kind in "fc" else _m.astype(x, dt.float32)


def _like(value: Any, x: Tensor) -> Tensor:
    return value if isinstance(value, Tensor) else _c.asarray(value, dtype=x.dtype, device=x.device)


def _dims(dim: Any, ndim: int, name: str) -> tuple[int, ...]:
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return tuple(normalize_axis(d, builtins.max(ndim, 1), name) for d in dims)


# -- element-wise ----------------------------------------------------------------------------------------------
def _exp2(input: Tensor) -> Tensor:
    """``2 ** x``, element-wise."""
    return _e.exp(_e.multiply(_float(input), _LN2))


def frac(input: Tensor) -> Tensor:
    """The fractional part, ``x - trunc(x)`` (with the sign of ``x``)."""
    return _e.subtract(input, _e.trunc(input))


def deg2rad(input: Tensor) -> Tensor:
    """Degrees to radians."""
    return _e.multiply(_float(input), math.pi / 180.0)


def rad2deg(input: Tensor) -> Tensor:
    """Radians to degrees."""
    return _e.multiply(_float(input), 180.0 / math.pi)


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    """NaN to ``nan``, +inf to ``posinf`` and -inf to ``neginf`` (the dtype's largest/smallest finite by default)."""
    if input.dtype.kind not in "fc":
        return _m.clone(input)
    info = dt.finfo(input.dtype)
    hi = info.max if posinf is None else posinf
    lo = -info.max if neginf is None else neginf
    out = _e.where(_e.isnan(input), _like(nan, input), input)
    out = _e.where(_e.logical_and(_e.isinf(out), _e.greater(out, 0)), _like(hi, input), out)
    return _e.where(_e.logical_and(_e.isinf(out), _e.less(out, 0)), _like(lo, input), out)


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """The step function: 0 below 0, 1 above, ``values`` at 0 (not differentiable, as in PyTorch)."""
    if values.dtype is not input.dtype:
        raise RuntimeError(
            f"heaviside is not yet implemented for tensors with different dtypes ({input.dtype.name} and "
            f"{values.dtype.name})"
        )
    zero, one = _c.zeros_like(input), _c.ones_like(input)
    return _e.where(_e.equal(input, 0), values, _e.where(_e.greater(input, 0), one, zero)).detach()


def float_power(input: Any, exponent: Any) -> Tensor:
    """``input ** exponent`` in double precision (complex128 for complex operands), as PyTorch's."""
    kinds = [getattr(v, "dtype", None) for v in (input, exponent)]
    wide = dt.complex128 if builtins.any(k is not None and k.kind == "c" for k in kinds) else dt.float64
    if builtins.any(isinstance(v, complex) for v in (input, exponent)):
        wide = dt.complex128
    a = _m.astype(input, wide) if isinstance(input, Tensor) else input
    b = _m.astype(exponent, wide) if isinstance(exponent, Tensor) else exponent
    if not isinstance(a, Tensor):
        a = _c.asarray(a, dtype=wide, device=b.device)
    return _e.pow(a, b)


def true_divide(input: Any, other: Any) -> Tensor:
    """True division (PyTorch's alias of ``div``)."""
    return _e.divide(input, other)


def fmod(input: Any, other: Any) -> Tensor:
    """C's remainder: ``input - trunc(input / other) * other``, with the sign of ``input`` (PyTorch's ``fmod``)."""
    if isinstance(input, Tensor) and input.dtype.kind in "iu" and not (isinstance(other, float)):
        if not isinstance(other, Tensor) or other.dtype.kind in "iu":
            r = _e.remainder(input, other)  # Python's sign rule, then moved to the dividend's sign
            fix = _e.logical_and(_e.not_equal(r, 0), _e.not_equal(_e.less(r, 0), _e.less(input, 0)))
            return _e.where(fix, _e.subtract(r, other), r)
    q = _e.trunc(_e.divide(input, other)).detach()
    return _e.subtract(input, _e.multiply(q, other))


def sgn(input: Tensor) -> Tensor:
    """The sign; for complex numbers ``x / |x|`` (0 at 0)."""
    if input.dtype.kind != "c":
        return _e.sign(input)
    a = _e.abs(input)
    zero = _e.equal(a, 0)
    return _e.where(zero, _c.zeros_like(input), input / _m.astype(_e.where(zero, _c.ones_like(a), a), input.dtype))


def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """``log2(2**x + 2**y)``, computed stably."""
    return _e.logaddexp(_e.multiply(input, _LN2), _e.multiply(other, _LN2)) / _LN2


def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """``input * 2 ** other``."""
    return _e.multiply(_float(input), _exp2(other))


def fmax(input: Tensor, other: Tensor) -> Tensor:
    """The element-wise maximum, ignoring NaN where only one side is NaN."""
    return _e.where(_e.isnan(input), other, _e.where(_e.isnan(other), input, _e.maximum(input, other)))


def fmin(input: Tensor, other: Tensor) -> Tensor:
    """The element-wise minimum, ignoring NaN where only one side is NaN."""
    return _e.where(_e.isnan(input), other, _e.where(_e.isnan(other), input, _e.minimum(input, other)))


def isposinf(input: Tensor) -> Tensor:
    """Whether each element is +inf."""
    return _e.logical_and(_e.isinf(input), _e.greater(input, 0))


def isneginf(input: Tensor) -> Tensor:
    """Whether each element is -inf."""
    return _e.logical_and(_e.isinf(input), _e.less(input, 0))


def isreal(input: Tensor) -> Tensor:
    """Whether each element has no imaginary part (every element of a real tensor)."""
    if input.dtype.kind != "c":
        return _c.ones_like(input, dtype=dt.bool)
    from . import complex as _cx

    return _e.equal(_cx.imag(input), 0)


def angle(input: Tensor) -> Tensor:
    """The argument of each element: ``atan2(imag, real)``; for reals 0, or pi below 0 (NaN stays NaN)."""
    if input.dtype.kind == "c":
        from . import complex as _cx

        return _e.atan2(_cx.imag(input), _cx.real(input))
    x = _float(input)
    out = _e.where(_e.less(x, 0), _c.full_like(x, math.pi), _c.zeros_like(x))
    return _e.where(_e.isnan(x), x, out).detach()


def clamp_min(input: Tensor, min: Any) -> Tensor:
    """Clip from below."""
    return _e.clip(input, min, None)


def clamp_max(input: Tensor, max: Any) -> Tensor:
    """Clip from above."""
    return _e.clip(input, None, max)


# -- fused arithmetic ---------------------------------------------------------------------------------------------
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 * tensor2``."""
    prod = _e.multiply(tensor1, tensor2)
    return _e.add(input, prod if value == 1 else _e.multiply(prod, value))


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 / tensor2``."""
    if tensor1.dtype.kind in "iub" and tensor2.dtype.kind in "iub":
        raise RuntimeError("addcdiv: integer division with addcdiv is no longer supported; use floor_divide")
    q = _e.divide(tensor1, tensor2)
    return _e.add(input, q if value == 1 else _e.multiply(q, value))


def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    """``input + weight * (end - input)``."""
    return _e.add(input, _e.multiply(weight, _e.subtract(end, input)))


@autocast_op("addmm")
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` (``input`` broadcasts)."""
    return _beta_alpha(input, _p.matmul(_mat(mat1, "addmm"), _mat(mat2, "addmm")), beta, alpha)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    return _beta_alpha(input, mv(mat, vec), beta, alpha)


@autocast_op("addbmm")
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
    return _beta_alpha(input, _r.sum(_p.matmul(_batch(batch1), _batch(batch2)), axis=0), beta, alpha)


@autocast_op("baddbmm")
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)``, batch by batch."""
    return _beta_alpha(input, _p.matmul(_batch(batch1), _batch(batch2)), beta, alpha)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``."""
    return _beta_alpha(input, _p.outer(vec1, vec2), beta, alpha)


def _mat(x: Tensor, name: str) -> Tensor:
    if x.ndim != 2:
        raise RuntimeError(f"{name}: expected a 2-D matrix, got {x.ndim}-D")
    return x


def _batch(x: Tensor) -> Tensor:
    if x.ndim != 3:
        raise RuntimeError(f"batch1 and batch2 must be 3-D tensors, got {x.ndim}-D")
    return x


def _beta_alpha(input: Tensor, prod: Tensor, beta: Any, alpha: Any) -> Tensor:
    if alpha != 1:
        prod = _e.multiply(prod, alpha)
    if beta == 0:  # PyTorch ignores input then (NaN and inf in it do not propagate)
        return _m.broadcast_to(prod, _m.broadcast_shapes(input.shape, prod.shape)) + 0
    return _e.add(input if beta == 1 else _e.multiply(input, beta), prod)


def mv(input: Tensor, vec: Tensor) -> Tensor:
    """Matrix times vector."""
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"mv: expected a 2-D matrix and a 1-D vector, got {input.ndim}-D and {vec.ndim}-D")
    return _p.matmul(input, vec)


def dot(input: Tensor, other: Tensor) -> Tensor:
    """The dot product of two 1-D tensors (no conjugation)."""
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input.shape != other.shape:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src [{other.shape[0]}] to have the "
            "same number of elements, but got different"
        )
    return _r.sum(_e.multiply(input, other))


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """The dot product of two 1-D tensors, conjugating the first."""
    return dot(_e.conj(input) if input.dtype.kind == "c" else input, other)


def inner(input: Tensor, other: Tensor) -> Tensor:
    """The sum of products over the last axes (a product with a scalar when either is 0-D)."""
    if input.ndim == 0 or other.ndim == 0:
        return _e.multiply(input, other)
    return _p.tensordot(input, other, axes=((input.ndim - 1,), (other.ndim - 1,)))


def tensordot(a: Tensor, b: Tensor, dims: Any = 2) -> Tensor:
    """Contract ``dims`` axes (the last of ``a`` with the first of ``b``, or the listed ones)."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, (list, tuple)):
        dims = tuple(tuple([d] if isinstance(d, int) else d) for d in dims)
    return _p.tensordot(a, b, axes=dims)


def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product."""
    n = builtins.max(input.ndim, other.ndim)
    a = _m.reshape(input, (1,) * (n - input.ndim) + input.shape)
    b = _m.reshape(other, (1,) * (n - other.ndim) + other.shape)
    ea = _m.reshape(a, tuple(itertools.chain.from_iterable((s, 1) for s in a.shape)))
    eb = _m.reshape(b, tuple(itertools.chain.from_iterable((1, s) for s in b.shape)))
    return _m.reshape(_e.multiply(ea, eb), tuple(s * t for s, t in zip(a.shape, b.shape)))


# -- reductions ---------------------------------------------------------------------------------------------------
def nansum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The sum, treating NaN as 0."""
    x = input if input.dtype.kind not in "fc" else _e.where(_e.isnan(input), _c.zeros_like(input), input)
    return _r.sum(x, axis=_axis(dim), keepdims=keepdim, dtype=dtype)


def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The mean over the elements that are not NaN."""
    x = input if dtype is None else _m.astype(input, dtype)
    keep = _e.logical_not(_e.isnan(x))
    count = _r.sum(_m.astype(keep, x.dtype), axis=_axis(dim), keepdims=keepdim)
    return nansum(x, dim, keepdim) / count


def _axis(dim: Any) -> Any:
    return tuple(dim) if isinstance(dim, list) else dim


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False) -> MinMax:
    """The smallest and the largest values (along ``dim``)."""
    if input.size == 0 and dim is None:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty tensor (specify a dim)")
    return MinMax(_r.min(input, axis=dim, keepdims=keepdim), _r.max(input, axis=dim, keepdims=keepdim))


def _correction(unbiased: Any, correction: Any) -> float:
    if correction is not None:
        return float(correction)
    return 1.0 if unbiased is None or unbiased else 0.0


def var_mean(
    input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction: Any = None
) -> tuple[Tensor, Tensor]:
    """``(var, mean)`` over ``dim``; unbiased by default."""
    if isinstance(dim, builtins.bool):
        dim, unbiased = None, dim
    c = _correction(unbiased, correction)
    d = _axis(dim)
    return _r.var(input, axis=d, keepdims=keepdim, correction=c), _r.mean(input, axis=d, keepdims=keepdim)


def std_mean(
    input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction: Any = None
) -> tuple[Tensor, Tensor]:
    """``(std, mean)`` over ``dim``; unbiased by default."""
    if isinstance(dim, builtins.bool):
        dim, unbiased = None, dim
    c = _correction(unbiased, correction)
    d = _axis(dim)
    return _r.std(input, axis=d, keepdims=keepdim, correction=c), _r.mean(input, axis=d, keepdims=keepdim)


def _sorted_pick(x: Tensor, dim: int, pos: Tensor | int, keepdim: bool) -> ValuesIndices:
    """The element at sorted position ``pos`` along ``dim`` with its index (the gradient flows to it)."""
    order = _s.argsort(x, axis=dim, stable=True)
    if isinstance(pos, int):
        shape = list(x.shape)
        shape[dim] = 1
        pos = _c.full(tuple(shape), pos, dtype=order.dtype, device=x.device)
    idx = _i.take_along_axis(order, pos, axis=dim)
    values = _i.take_along_axis(x, idx, axis=dim)
    if not keepdim:
        values, idx = _m.squeeze(values, dim), _m.squeeze(idx, dim)
    return ValuesIndices(values, _m.astype(idx, dt.int64))


def median(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """The lower median (of all elements, or ``(values, indices)`` along ``dim``); NaN if any is NaN."""
    if dim is None:
        flat = _m.reshape(input, (-1,))
        if flat.shape[0] == 0:
            return _c.full((), math.nan, dtype=input.dtype, device=input.device)
        value = _sorted_pick(flat, 0, (flat.shape[0] - 1) // 2, False).values
        if input.dtype.kind == "f":
            value = _e.where(_r.any(_e.isnan(flat)), _c.full_like(value, math.nan), value)
        return value
    x = input if input.ndim else _m.reshape(input, (1,))
    d = normalize_axis(dim, x.ndim, "median")
    out = _sorted_pick(x, d, (x.shape[d] - 1) // 2, keepdim and input.ndim > 0)
    if input.dtype.kind == "f":  # a NaN is the median of its slice, as in PyTorch (sorting puts NaN last)
        nan = _r.any(_e.isnan(x), axis=d, keepdims=True)
        last = _s.argmax(_m.astype(_e.isnan(x), dt.int8), axis=d, keepdims=True)
        vals, idx = out
        if not (keepdim and input.ndim > 0):
            nan, last = _m.squeeze(nan, d), _m.squeeze(last, d)
        if input.ndim == 0:
            nan, last = _m.reshape(nan, ()), _m.reshape(last, ())
        out = ValuesIndices(_e.where(nan, _c.full_like(vals, math.nan), vals),
                            _e.where(nan, _m.astype(last, dt.int64), idx))  # fmt: skip
    return out


def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """The lower median of the elements that are not NaN."""
    if dim is None:
        return nanmedian(_m.reshape(input, (-1,)), 0).values
    x = input if input.ndim else _m.reshape(input, (1,))
    d = normalize_axis(dim, x.ndim, "nanmedian")
    count = _r.sum(_m.astype(_e.logical_not(_e.isnan(x)), dt.int64), axis=d, keepdims=True)
    pos = _e.maximum(count - 1, 0) // 2
    return _sorted_pick(x, d, pos, keepdim and input.ndim > 0)


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
    """The ``k``-th smallest element along ``dim`` with its index."""
    x = input if input.ndim else _m.reshape(input, (1,))
    d = normalize_axis(dim, x.ndim, "kthvalue")
    if not 1 <= k <= x.shape[d]:
        raise IndexError(f"kthvalue(): selected number k ({k}) out of range for dimension {dim} of size {x.shape[d]}")
    return _sorted_pick(x, d, k - 1, keepdim and input.ndim > 0)


def msort(input: Tensor) -> Tensor:
    """Sorted along the first axis."""
    return _i.take_along_axis(input, _s.argsort(input, axis=0, stable=True), axis=0)


def _quantile(input: Tensor, q: Any, dim: Any, keepdim: bool, interpolation: str, ignore_nan: bool) -> Tensor:
    if input.dtype.kind != "f":
        raise RuntimeError(f"quantile() input tensor must be either float or double dtype, got {input.dtype.name}")
    scalar = not isinstance(q, Tensor) or q.ndim == 0
    qs = q if isinstance(q, Tensor) else _c.asarray(q, dtype=input.dtype, device=input.device)
    qs = _m.reshape(_m.astype(qs, input.dtype), (-1,))
    if builtins.bool(_r.any(_e.logical_or(_e.less(qs, 0), _e.greater(qs, 1))).item()):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    if dim is None:
        x, d = _m.reshape(input, (-1,)), 0
    else:
        x = input if input.ndim else _m.reshape(input, (1,))
        d = normalize_axis(dim, x.ndim, "quantile")
    xs = _m.moveaxis(x, d, -1)
    order = _s.argsort(xs, axis=-1, stable=True)
    srt = _i.take_along_axis(xs, order, axis=-1)
    n = xs.shape[-1]
    isnan = _e.isnan(srt)
    if ignore_nan:
        count = _r.sum(_m.astype(_e.logical_not(isnan), input.dtype), axis=-1, keepdims=True)
    else:
        count = _c.full((*srt.shape[:-1], 1), float(n), dtype=input.dtype, device=input.device)
    pos = _m.reshape(qs, (-1,) + (1,) * srt.ndim) * _e.maximum(count - 1, 0)  # (nq, ..., 1)
    lo, hi = _e.floor(pos), _e.ceil(pos)
    if interpolation == "lower":
        hi = lo
    elif interpolation == "higher":
        lo = hi
    elif interpolation == "nearest":
        lo = hi = _e.round(pos)
    elif interpolation not in ("linear", "midpoint"):
        raise ValueError(
            f"quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, got {interpolation!r}"
        )
    nq = qs.shape[0]
    target = (nq, *srt.shape)
    big = _m.broadcast_to(_m.expand_dims(srt, axis=0), target)

    def at(p: Tensor) -> Tensor:
        i = _m.astype(_e.clip(p, 0, builtins.max(n - 1, 0)), dt.int64)
        return _i.take_along_axis(big, _m.broadcast_to(i, (*target[:-1], 1)), axis=-1)

    a, b = at(lo), at(hi)
    w = _c.full_like(pos, 0.5) if interpolation == "midpoint" else pos - lo
    if interpolation in ("lower", "higher", "nearest"):
        w = _c.zeros_like(pos)
    out = a + (b - a) * w.detach()
    out = _m.squeeze(out, -1)
    if not ignore_nan:
        anynan = _m.expand_dims(_r.any(isnan, axis=-1), axis=0)
        out = _e.where(anynan, _c.full_like(out, math.nan), out)
    else:
        out = _e.where(_e.equal(_m.squeeze(count, -1), 0), _c.full_like(out, math.nan), out)
    if keepdim:
        if dim is None:
            out = _m.reshape(out, (nq,) + (1,) * input.ndim)
        elif input.ndim:
            out = _m.expand_dims(out, axis=d + 1)
    return _m.reshape(out, out.shape[1:]) if scalar else out


@autocast_op("quantile")
def quantile(
    input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear"
) -> Tensor:
    """The ``q``-th quantiles (``q`` a number or a 1-D tensor in [0, 1]) of all elements or along ``dim``."""
    return _quantile(input, q, dim, keepdim, interpolation, False)


@autocast_op("nanquantile")
def nanquantile(
    input: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear"
) -> Tensor:
    """The quantiles of the elements that are not NaN."""
    return _quantile(input, q, dim, keepdim, interpolation, True)


def _running(input: Tensor, dim: int, better: Any, name: str) -> ValuesIndices:
    x = input if input.ndim else _m.reshape(input, (1,))
    d = normalize_axis(dim, x.ndim, name)
    n = x.shape[d]
    with no_grad():
        xs = _m.moveaxis(x.detach(), d, 0)
        idx = []
        if n:
            best, at = xs[0], _c.zeros(xs.shape[1:], dtype=dt.int64, device=x.device)
            idx.append(at)
            for i in range(1, n):
                v = xs[i]
                take = _e.logical_or(better(v, best), _e.isnan(v))
                if x.dtype.kind == "f":
                    take = _e.logical_and(take, _e.logical_not(_e.isnan(best)))
                best = _e.where(take, v, best)
                at = _e.where(take, _c.full_like(at, i), at)
                idx.append(at)
        order = _m.moveaxis(_m.stack(idx, axis=0), 0, d) if n else _c.zeros(x.shape, dtype=dt.int64, device=x.device)
    values = _i.take_along_axis(x, order, axis=d)
    if input.ndim == 0:
        return ValuesIndices(_m.reshape(values, ()), _m.reshape(order, ()))
    return ValuesIndices(values, order)


def cummax(input: Tensor, dim: int) -> ValuesIndices:
    """The running maximum along ``dim`` and where it was reached (the last of equal values)."""
    return _running(input, dim, _e.greater_equal, "cummax")


def cummin(input: Tensor, dim: int) -> ValuesIndices:
    """The running minimum along ``dim`` and where it was reached (the last of equal values)."""
    return _running(input, dim, _e.less_equal, "cummin")


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """``log(cumsum(exp(x)))`` along ``dim``, computed stably."""
    x = _float(input)
    if x.ndim == 0:
        return x + 0
    d = normalize_axis(dim, x.ndim, "logcumsumexp")
    m = _r.max(x.detach(), axis=d, keepdims=True) if x.shape[d] else _c.zeros_like(x)
    m = _e.where(_e.isfinite(m), m, _c.zeros_like(m))
    return _e.log(_r.cumulative_sum(_e.exp(x - m), axis=d)) + m


@autocast_op("trace")
def trace(input: Tensor) -> Tensor:
    """The sum of the main diagonal of a 2-D tensor."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    k = builtins.min(input.shape)
    idx = _c.arange(k, device=input.device)
    return _r.sum(_i.getitem(input, (idx, idx)))


def cov(
    input: Tensor, *, correction: int = 1, fweights: Tensor | None = None, aweights: Tensor | None = None
) -> Tensor:
    """The covariance of the rows (variables) of ``input`` over its columns (observations)."""
    x = input if input.ndim == 2 else _m.reshape(input, (1, -1))
    x = _float(x)
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = _m.astype(fweights, x.dtype)
    if aweights is not None:
        w = _m.astype(aweights, x.dtype) if w is None else w * aweights
    if w is None:
        avg = _r.mean(x, axis=1, keepdims=True)
        norm = _c.asarray(float(n - correction), dtype=x.dtype, device=x.device)
        xc = x - avg
        c = _p.matmul(xc, _m.matrix_transpose(_e.conj(xc) if x.dtype.kind == "c" else xc))
    else:
        wsum = _r.sum(w)
        avg = _r.sum(x * w, axis=1, keepdims=True) / wsum
        if correction == 0:
            norm = wsum
        elif aweights is None:
            norm = wsum - correction
        else:
            norm = wsum - correction * _r.sum(w * aweights) / wsum
        xc = x - avg
        c = _p.matmul(xc * w, _m.matrix_transpose(xc))
    c = c / _e.maximum(norm, 0)
    return _m.reshape(c, ()) if input.ndim < 2 else c


def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the rows of ``input`` (clipped to [-1, 1])."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = _e.sqrt(_linalg_diag(c))
    c = c / _m.expand_dims(d, axis=1) / _m.expand_dims(d, axis=0)
    return _e.clip(c, -1, 1)


def _linalg_diag(m: Tensor) -> Tensor:
    k = builtins.min(m.shape)
    idx = _c.arange(k, device=m.device)
    return _i.getitem(m, (idx, idx))


def trapezoid(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The trapezoid rule along ``dim``: with sample points ``x`` or a constant spacing ``dx`` (1)."""
    d = normalize_axis(dim, y.ndim, "trapezoid")
    if y.shape[d] == 0:
        return _r.sum(y, axis=d)
    mid = _i.getitem(y, (slice(None),) * d + (slice(1, None),)) + _i.getitem(y, (slice(None),) * d + (slice(None, -1),))
    if isinstance(x, Tensor):
        dxs = _m.moveaxis(_e.subtract(x[1:], x[:-1]) if x.ndim == 1 else _diff(x, d), -1 if x.ndim == 1 else d, -1)
        return _r.sum(_m.moveaxis(mid, d, -1) * dxs, axis=-1) / 2.0
    step = 1.0 if dx is None and x is None else (dx if dx is not None else x)
    return _r.sum(mid, axis=d) * (step / 2.0)


def _diff(x: Tensor, d: int) -> Tensor:
    return _i.getitem(x, (slice(None),) * d + (slice(1, None),)) - _i.getitem(
        x, (slice(None),) * d + (slice(None, -1),)
    )


def cumulative_trapezoid(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The running trapezoid rule along ``dim`` (one element shorter than ``y`` there)."""
    d = normalize_axis(dim, y.ndim, "cumulative_trapezoid")
    mid = _diff(y, d) + 2 * _i.getitem(y, (slice(None),) * d + (slice(None, -1),))  # y[i+1] + y[i]
    if isinstance(x, Tensor):
        dxs = x[1:] - x[:-1] if x.ndim == 1 else _diff(x, d)
        if x.ndim == 1:
            dxs = _m.reshape(dxs, (-1,) + (1,) * (y.ndim - 1 - d))
        return _r.cumulative_sum(mid * dxs / 2.0, axis=d)
    step = 1.0 if dx is None and x is None else (dx if dx is not None else x)
    return _r.cumulative_sum(mid * (step / 2.0), axis=d)


# -- shapes ---------------------------------------------------------------------------------------------------------
def ravel(input: Tensor) -> Tensor:
    """The elements as a 1-D tensor."""
    return _m.reshape(input, (-1,))


def _atleast(n: int, tensors: Sequence[Any]) -> Any:
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(_atleast(n, (t,)) for t in tensors[0])
    out = []
    for t in tensors:
        if t.ndim >= n:
            out.append(t)
        elif n == 3 and t.ndim == 2:
            out.append(_m.expand_dims(t, axis=-1))
        elif n == 3 and t.ndim == 1:
            out.append(_m.reshape(t, (1, t.shape[0], 1)))
        else:
            out.append(_m.reshape(t, (1,) * (n - t.ndim) + t.shape))
    return out[0] if len(out) == 1 else tuple(out)


def atleast_1d(*tensors: Any) -> Any:
    """Each tensor with at least one axis (0-D ones become shape (1,))."""
    return _atleast(1, tensors)


def atleast_2d(*tensors: Any) -> Any:
    """Each tensor with at least two axes (leading axes of length 1 added)."""
    return _atleast(2, tensors)


def atleast_3d(*tensors: Any) -> Any:
    """Each tensor with at least three axes (NumPy's placement: (n,) -> (1, n, 1), (m, n) -> (m, n, 1))."""
    return _atleast(3, tensors)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """1-D and 0-D tensors as columns, others joined along axis 1."""
    cols = [_m.reshape(t, (-1, 1)) if t.ndim <= 1 else t for t in tensors]
    return _m.concat(cols, axis=1)


def row_stack(tensors: Sequence[Tensor]) -> Tensor:
    """1-D tensors as rows, others joined along axis 0 (``vstack``)."""
    return _m.concat(list(atleast_2d(list(tensors))), axis=0)


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along the third axis (after :func:`atleast_3d`)."""
    return _m.concat(list(atleast_3d(list(tensors))), axis=2)


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times in the plane of ``dims`` (from the first toward the second)."""
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    a, b = (normalize_axis(d, input.ndim, "rot90") for d in dims)
    if a == b:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {a} and dim1 = {b}")
    k %= 4
    if k == 1:
        return _m.swapaxes(_m.flip(input, axis=b), a, b)
    if k == 2:
        return _m.flip(input, axis=(a, b))
    if k == 3:
        return _m.flip(_m.swapaxes(input, a, b), axis=b)
    return _m.clone(input)


def fliplr(input: Tensor) -> Tensor:
    """Reverse the columns (axis 1)."""
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return _m.flip(input, axis=1)


def flipud(input: Tensor) -> Tensor:
    """Reverse the rows (axis 0)."""
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return _m.flip(input, axis=0)


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """The tensors broadcast to one shape (views)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    return tuple(_m.broadcast_arrays(*tensors))


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """The flattened input on the ``offset``-th diagonal of a square matrix."""
    return diag_embed(_m.reshape(input, (-1,)), offset)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices with the last axis of ``input`` on their ``offset``-th diagonal (in axes ``dim1``, ``dim2``)."""
    n = input.shape[-1] + builtins.abs(offset)
    nd = input.ndim + 1
    a, b = normalize_axis(dim1, nd, "diag_embed"), normalize_axis(dim2, nd, "diag_embed")
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    k = input.shape[-1]
    eye = _c.eye(k, n, k=builtins.max(offset, 0), dtype=input.dtype, device=input.device)  # (k, n)
    rows = _m.expand_dims(input, axis=-1) * eye  # (..., k, n): row i has x_i at column i + offset
    start = builtins.max(-offset, 0)
    pad = [(0, 0)] * (input.ndim - 1) + [(start, n - k - start), (0, 0)]
    out = _m.pad(rows, pad)  # (..., n, n): the row of x_i at i - min(offset, 0)
    return _m.moveaxis(out, (-2, -1), (a, b))


def block_diag(*tensors: Tensor) -> Tensor:
    """The tensors (0-D, 1-D as a row, or 2-D) on the diagonal of one matrix, zeros elsewhere."""
    mats = [_m.reshape(t, (1, 1)) if t.ndim == 0 else _m.reshape(t, (1, -1)) if t.ndim == 1 else t for t in tensors]
    if not mats:
        return _c.zeros((0, 0))
    cols = builtins.sum(m.shape[1] for m in mats)
    dtype = dt.result_type(*mats) if len(mats) > 1 else mats[0].dtype
    rows, left = [], 0
    for m in mats:
        m = _m.astype(m, dtype) if m.dtype is not dtype else m
        rows.append(_m.pad(m, [(0, 0), (left, cols - left - m.shape[1])]))
        left += m.shape[1]
    return _m.concat(rows, axis=0)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every combination of one element from each 1-D tensor, as rows (a 1-D tensor for one input)."""
    if len(tensors) == 1:
        return tensors[0]
    from .creation import meshgrid

    grids = meshgrid(*tensors, indexing="ij")
    return _m.stack([_m.reshape(g, (-1,)) for g in grids], axis=1)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-``r`` combinations of a 1-D tensor's elements, as rows (``itertools.combinations`` order)."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    if not rows:
        return _c.zeros((0, r), dtype=input.dtype, device=input.device)
    idx = _c.asarray(rows, dtype=dt.int64, device=input.device)
    return _i.getitem(input, idx)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None) -> Tensor:
    """The (2, n) row and column indices of the lower triangle of a ``row`` x ``col`` matrix."""
    pairs = [(i, j) for i in range(row) for j in range(col) if j - i <= offset]
    return _pairs(pairs, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None) -> Tensor:
    """The (2, n) row and column indices of the upper triangle of a ``row`` x ``col`` matrix."""
    pairs = [(i, j) for i in range(row) for j in range(col) if j - i >= offset]
    return _pairs(pairs, dtype, device)


def _pairs(pairs: list[tuple[int, int]], dtype: Any, device: Any) -> Tensor:
    dtype = dt.int64 if dtype is None else dtype
    if not pairs:
        return _c.zeros((2, 0), dtype=dtype, device=device)
    return _c.asarray([[p[0] for p in pairs], [p[1] for p in pairs]], dtype=dtype, device=device)


def argwhere(input: Tensor) -> Tensor:
    """The indices of the nonzero elements, one row each (``(n, ndim)``, int64)."""
    idx = _s.nonzero(input)
    if not idx:
        return _c.zeros((int(builtins.bool(input.item())), 0), dtype=dt.int64, device=input.device)
    return _m.astype(_m.stack(list(idx), axis=1), dt.int64)


def take(input: Tensor, index: Tensor) -> Tensor:
    """Elements of the flattened ``input`` at ``index`` (any shape; the result has ``index``'s shape)."""
    return _m.reshape(_i.take(_m.reshape(input, (-1,)), _m.reshape(index, (-1,))), index.shape)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How often each non-negative integer occurs in a 1-D tensor (the sum of ``weights`` when given)."""
    if input.ndim != 1 or input.dtype.kind not in "iu":
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if input.size and builtins.bool(_r.any(_e.less(input, 0)).item()):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    n = builtins.max(int(_r.max(input).item()) + 1 if input.size else 0, minlength)
    hits = _m.astype(_e.equal(_m.expand_dims(input, axis=1), _c.arange(n, device=input.device)), dt.int64)
    if weights is None:
        return _r.sum(hits, axis=0)
    w = weights if weights.dtype.kind == "f" else _m.astype(weights, dt.float64)
    return _r.sum(_m.astype(hits, w.dtype) * _m.expand_dims(w, axis=1), axis=0)


def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    """A histogram of ``bins`` equal bins over [min, max] (the data's range when both are 0)."""
    x = input.detach()
    lo, hi = float(min), float(max)
    if lo == hi and x.size:
        lo, hi = float(_r.min(x).item()), float(_r.max(x).item())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    flat = _m.reshape(x, (-1,))
    inside = _e.logical_and(_e.greater_equal(flat, lo), _e.less_equal(flat, hi))
    b = _m.astype(_e.floor((flat - lo) * (bins / (hi - lo))), dt.int64)
    b = _e.clip(b, 0, bins - 1)
    hits = _e.logical_and(_e.equal(_m.expand_dims(b, axis=1), _c.arange(bins, device=x.device)),
                          _m.expand_dims(inside, axis=1))  # fmt: skip
    return _r.sum(_m.astype(hits, x.dtype), axis=0)


def bucketize(input: Any, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """The index of the bucket of each element among sorted 1-D ``boundaries``."""
    x = input if isinstance(input, Tensor) else _c.asarray(input, dtype=boundaries.dtype, device=boundaries.device)
    out = _s.searchsorted(boundaries, x, side="right" if right else "left")
    return _m.astype(out, dt.int32 if out_int32 else dt.int64)


def unique_consecutive(
    input: Tensor, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
) -> Any:
    """The input with runs of equal consecutive elements (of the flattened tensor) collapsed to one."""
    if dim is not None:
        raise NotImplementedError("unique_consecutive: dim= is not supported yet; flatten first")
    flat = _m.reshape(input, (-1,))
    n = flat.shape[0]
    if n == 0:
        empty = _c.zeros((0,), dtype=dt.int64, device=input.device)
        outs = [flat] + ([_c.zeros(input.shape, dtype=dt.int64, device=input.device)] if return_inverse else [])
        return outs[0] if len(outs) == 1 and not return_counts else tuple(outs + ([empty] if return_counts else []))
    new = _m.concat([_c.ones((1,), dtype=dt.bool, device=input.device),
                     _e.not_equal(flat[1:], flat[:-1])], axis=0)  # fmt: skip
    starts = _s.nonzero(new)[0]
    values = _i.getitem(flat, starts)
    outs: list[Tensor] = [values]
    if return_inverse:
        inv = _r.cumulative_sum(_m.astype(new, dt.int64)) - 1
        outs.append(_m.reshape(inv, input.shape))
    if return_counts:
        bounds = _m.concat([starts, _c.asarray([n], dtype=starts.dtype, device=input.device)], axis=0)
        outs.append(_m.astype(bounds[1:] - bounds[:-1], dt.int64))
    return outs[0] if len(outs) == 1 else tuple(outs)


# -- indexed writes (out of place; the table makes their in-place forms) ----------------------------------------------
def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """A copy with the slices at ``index`` along ``dim`` set to ``value``."""
    d = normalize_axis(dim, builtins.max(input.ndim, 1), "index_fill")
    mask_shape = [1] * input.ndim
    if input.ndim:
        mask_shape[d] = input.shape[d]
    n = input.shape[d] if input.ndim else 1
    hit = _r.any(_e.equal(_m.expand_dims(_c.arange(n, device=input.device), axis=1),
                          _m.reshape(index, (1, -1))), axis=1)  # fmt: skip
    mask = _m.reshape(hit, tuple(mask_shape))
    v = value if isinstance(value, Tensor) else _c.asarray(value, dtype=input.dtype, device=input.device)
    return _e.where(mask, _m.astype(v, input.dtype) if v.dtype is not input.dtype else v, input)


# -- PyTorch's spellings of standard ops (the face's functions and the methods share them) ----------------------------
def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle (on and below ``diagonal``) of the last two axes, zeros above."""
    return _c.tril(input, k=diagonal)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle (on and above ``diagonal``) of the last two axes, zeros below."""
    return _c.triu(input, k=diagonal)


def diff(
    input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None, append: Tensor | None = None
) -> Tensor:
    """The ``n``-th forward difference along ``dim``."""
    from .utility import diff as _diff_std

    return _diff_std(input, axis=dim, n=n, prepend=prepend, append=append)


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    """Repeat ``input`` along each axis; fewer ``dims`` than axes pad with 1 in front, as in PyTorch."""
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    return _m.tile(input, (1,) * (input.ndim - len(dims)) + dims)


def broadcast_to(input: Tensor, size: Sequence[int]) -> Tensor:
    """A view broadcast to ``size`` (-1 keeps an axis)."""
    size = tuple(size)
    lead = len(size) - input.ndim
    return _m.broadcast_to(input, tuple(input.shape[i - lead] if s == -1 else s for i, s in enumerate(size)))


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """Pick elements along ``dim`` by ``indices`` (of the flattened tensor when None); indices broadcast."""
    if dim is None:
        return _i.take(_m.reshape(input, (-1,)), _m.reshape(indices, (-1,)))
    d = normalize_axis(dim, input.ndim, "take_along_dim")
    shape_x = list(input.shape)
    shape_i = list(indices.shape)
    shape_x[d] = shape_i[d] = 1
    common = _m.broadcast_shapes(tuple(shape_x), tuple(shape_i))
    xs = list(common)
    xs[d] = input.shape[d]
    ids = list(common)
    ids[d] = indices.shape[d]
    return _i.take_along_axis(_m.broadcast_to(input, tuple(xs)), _m.broadcast_to(indices, tuple(ids)), axis=d)


def repeat_interleave(input: Tensor, repeats: Any, dim: int | None = None, *, output_size: int | None = None) -> Tensor:
    """Repeat each element ``repeats`` times along ``dim`` (of the flattened tensor when None)."""
    return _m.repeat(input, repeats, axis=dim)


def isclose(input: Tensor, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """Element-wise ``|input - other| <= atol + rtol * |other|`` (NaNs equal with ``equal_nan``)."""
    other = other if isinstance(other, Tensor) else _c.asarray(other, dtype=input.dtype, device=input.device)
    if input.dtype.kind not in "fc":
        return _e.equal(input, other)
    close = _e.less_equal(_e.abs(input - other), atol + rtol * _e.abs(other))
    close = _e.logical_or(close, _e.equal(input, other))  # equal infinities
    if equal_nan:
        close = _e.logical_or(close, _e.logical_and(_e.isnan(input), _e.isnan(other)))
    return close


def allclose(input: Tensor, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether every element is close (see :func:`isclose`); a Python bool."""
    return builtins.bool(_r.all(isclose(input, other, rtol, atol, equal_nan)).item())


def equal(input: Tensor, other: Tensor) -> bool:
    """True if both tensors have the same shape and elements (a Python bool)."""
    return input.shape == other.shape and builtins.bool(_r.all(_e.equal(input, other)).item())


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:
    """Indices of nonzero elements: an ``(n, ndim)`` int64 tensor, or one 1-D tensor per axis with ``as_tuple``."""
    if as_tuple:
        idx = _s.nonzero(input)
        return tuple(_m.astype(i, dt.int64) for i in idx) if input.ndim else (argwhere(input)[:, 0] * 0,)
    return argwhere(input)


def is_nonzero(input: Tensor) -> bool:
    """Whether the single element of ``input`` is nonzero."""
    if input.size != 1:
        raise RuntimeError(f"Boolean value of Tensor with {'no values' if input.size == 0 else 'more than one value'} "
                           "is ambiguous")  # fmt: skip
    return builtins.bool(input.item())


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether both tensors have the same shape."""
    return input.shape == other.shape


def bitwise_not(input: Tensor) -> Tensor:
    """Bit-wise NOT (logical NOT for bools)."""
    return _e.bitwise_invert(input)
