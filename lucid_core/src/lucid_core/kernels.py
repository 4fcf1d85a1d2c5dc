"""Kernels a backend may own: the one declared table of their names, signatures and composed defaults.

An op's forward calls ``call(device, name, *args)``: the backend's native kernel when it registered
one in ``Backend.kernels[name]``, else the composed default written once against the Array API
namespace ``device.xp`` (array-api-compat's shape: generic code, native overrides). Every kernel
takes and returns native arrays; the op's gradient stays in the core, written in Lucid ops, so a
native kernel never changes what a gradient means nor breaks higher-order gradients. A backend
registering a name not declared here gets a warning when it loads (a typo would silently do nothing).

docs/backends.md, section "Kernels a backend may own", renders this table for plugin authors.
"""

from __future__ import annotations

__all__ = [
    "ERF_A",
    "ERF_P",
    "KERNELS",
    "UNARY",
    "Kernel",
    "call",
    "check_names",
    "composed_col2im",
    "composed_im2col",
    "conv_out",
    "tile_keys",
]

import itertools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

from ._composed import generic_einsum, generic_index_add

Pads = tuple[tuple[int, int], ...]


class Kernel(NamedTuple):
    """One kernel a backend may own: its name, call signature, meaning, and composed default.

    ``default(device, *args)`` is the portable version; None means the op composes it itself
    (a unary op's default is ``xp.<name>``).
    """

    name: str
    signature: str
    doc: str
    default: Callable[..., Any] | None = None


# -- composed defaults ------------------------------------------------------------------------------
def _setitem(device: Any, x: Any, key: Any, value: Any) -> Any:
    try:
        x[key] = value
    except TypeError as exc:
        raise TypeError(
            f"setitem: backend {device.backend.name!r} cannot assign into its arrays ({exc}); a library with "
            "immutable arrays registers the kernel kernels['setitem'](array, key, value) -> new array "
            "(for JAX: array.at[key].set(value)); see docs/backends.md, 'Writes, views and immutable libraries'"
        ) from None
    except IndexError:
        keys = key if isinstance(key, tuple) else (key,)
        if not any(hasattr(k, "dtype") for k in keys):
            raise
        return _scatter_set(device, x, key, value)
    return x


def _scatter_set(device: Any, array: Any, key: Any, value: Any) -> Any:
    """``array`` with ``value`` at an integer-array ``key``, in standard functions: scatter-add the values
    and a count, keep the old element where nothing landed. A position named twice has no single right
    answer in standard functions (NumPy keeps the last, PyTorch leaves it undefined), so it raises."""
    xp = device.xp
    region = call(device, "getitem", array, key)
    dtype = array.dtype
    values = xp.broadcast_to(xp.asarray(value, dtype=dtype), region.shape)
    count = call(device, "index_add", xp.zeros(array.shape, dtype=dtype), key, xp.ones(region.shape, dtype=dtype))
    if bool(xp.any(count > 1)):
        raise IndexError(
            f"setitem: backend {device.backend.name!r} assigns through integer-array keys by a scatter, which "
            "cannot choose between values assigned twice to one position; use distinct indices, or register "
            "a native kernels['setitem']"
        )
    total = call(device, "index_add", xp.zeros(array.shape, dtype=dtype), key, values)
    return xp.where(count > 0, total, array)


def _getitem(device: Any, x: Any, key: Any) -> Any:
    return x[key]


def _index_add(device: Any, z: Any, key: Any, values: Any) -> Any:
    return generic_index_add(device.xp, z, key, values)


def _einsum(device: Any, spec: str, *xs: Any) -> Any:
    return generic_einsum(device.xp, spec, *xs)


def _shift(xp: Any, x: Any, axes: Any) -> Any:
    """``x`` minus its finite maximum over ``axes`` (an infinite or NaN maximum shifts by 0)."""
    m = xp.max(x, axis=axes, keepdims=True)
    return x - xp.where(xp.isfinite(m), m, xp.zeros_like(m))


def _logsumexp(device: Any, x: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
    xp = device.xp
    m = xp.max(x, axis=axes, keepdims=True)
    m = xp.where(xp.isfinite(m), m, xp.zeros_like(m))
    out = xp.log(xp.sum(xp.exp(x - m), axis=axes, keepdims=True)) + m
    return out if keepdims else xp.squeeze(out, axis=axes)


def _softmax(device: Any, x: Any, axis: int) -> Any:
    xp = device.xp
    e = xp.exp(_shift(xp, x, axis))
    return e / xp.sum(e, axis=axis, keepdims=True)


def _log_softmax(device: Any, x: Any, axis: int) -> Any:
    xp = device.xp
    s = _shift(xp, x, axis)
    return s - xp.log(xp.sum(xp.exp(s), axis=axis, keepdims=True))


def _relu_grad(device: Any, gy: Any, x: Any) -> Any:
    xp = device.xp
    return xp.where(x > 0, gy, xp.zeros_like(gy))


def _linear(device: Any, x: Any, w: Any, b: Any) -> Any:
    xp = device.xp
    y = xp.matmul(x, xp.permute_dims(w, (1, 0)))
    if b is None:
        return y
    write = getattr(device.backend, "inplace", None)  # the bias into the fresh product: one pass, no second array
    if write is None or not write("add", y, b, 1):
        y = y + b
    return y


def _cumulative_prod(device: Any, x: Any, axis: int, include_initial: bool) -> Any:
    return device.xp.cumulative_prod(x, axis=axis, include_initial=include_initial)


def _sigmoid(device: Any, x: Any) -> Any:
    return 0.5 * (device.xp.tanh(0.5 * x) + 1.0)  # tanh form: no overflow for large |x|


ERF_P = 0.3275911
ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
"""Abramowitz & Stegun 7.1.26: erf(a) = 1 - t (A1 + t (A2 + ... + t A5)) exp(-a^2), t = 1 / (1 + P a), a >= 0,
|error| < 1.5e-7. The composed float32 ``erf`` uses it, and so may a backend's fused GELU."""


def _erf(device: Any, x: Any) -> Any:
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), enough below float64; float64 gets a 1e-15 version
    xp = device.xp
    if x.dtype == xp.float64:
        return _erf64(xp, x)
    s = xp.sign(x)
    a = xp.abs(x)
    t = 1.0 / (1.0 + ERF_P * a)
    poly = t * (ERF_A[0] + t * (ERF_A[1] + t * (ERF_A[2] + t * (ERF_A[3] + t * ERF_A[4]))))
    return s * (1.0 - poly * xp.exp(-a * a))


def _erf64(xp: Any, x: Any) -> Any:
    """erf to about 1e-15 in Array API terms: a series of positive terms (no cancellation) below 2.5,
    the continued fraction of erfc above, so float64 results are not silently float32-accurate."""
    a = xp.abs(x)
    s = xp.minimum(a, 2.5)
    s2 = s * s
    term = total = s  # erf(s) = 2/sqrt(pi) exp(-s^2) sum_n 2^n s^(2n+1) / (2n+1)!!
    for n in range(1, 45):
        term = term * (2.0 * s2 / (2 * n + 1))
        total = total + term
    small = (2.0 / math.sqrt(math.pi)) * xp.exp(-s2) * total
    c = xp.maximum(a, 2.5)
    f = c  # erfc(c) = exp(-c^2) / sqrt(pi) / (c + (1/2) / (c + 1 / (c + (3/2) / (c + ...))))
    for k in range(40, 0, -1):
        f = c + (k / 2.0) / f
    large = 1.0 - xp.exp(-c * c) / (math.sqrt(math.pi) * f)
    return xp.sign(x) * xp.where(a < 2.5, small, large)


def _offset_key(
    offset: tuple[int, ...], stride: tuple[int, ...], dilation: tuple[int, ...], out: tuple[int, ...]
) -> tuple[Any, ...]:
    key: list[Any] = [slice(None), slice(None)]
    for o, s, d, n in zip(offset, stride, dilation, out):
        key.append(slice(o * d, o * d + s * (n - 1) + 1, s))
    return tuple(key)


def composed_im2col(
    device: Any,
    x: Any,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    dilation: tuple[int, ...],
    pads: Pads,
    out: tuple[int, ...],
    value: float,
) -> Any:
    """(N, C, *S) -> (N, C, K, *out): each kernel offset's strided view of the input padded with ``value``."""
    xp = device.xp
    if any(b or a for b, a in pads):
        shape = tuple(x.shape[:2]) + tuple(s + b + a for s, (b, a) in zip(x.shape[2:], pads))
        z = xp.full(shape, value, dtype=x.dtype)
        inner = (slice(None), slice(None), *tuple(slice(b, b + s) for s, (b, _) in zip(x.shape[2:], pads)))
        x = call(device, "setitem", z, inner, x)
    views = [x[_offset_key(o, stride, dilation, out)] for o in itertools.product(*(range(k) for k in kernel))]
    return xp.stack(views, axis=2)


def composed_col2im(
    device: Any,
    cols: Any,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    dilation: tuple[int, ...],
    pads: Pads,
    size: tuple[int, ...],
) -> Any:
    """(N, C, K, *out) -> (N, C, *size): each offset's values added back (the adjoint of im2col)."""
    xp = device.xp
    out = tuple(cols.shape[3:])
    padded = tuple(s + b + a for s, (b, a) in zip(size, pads))
    z = xp.zeros(tuple(cols.shape[:2]) + padded, dtype=cols.dtype)
    for i, o in enumerate(itertools.product(*(range(k) for k in kernel))):
        key = _offset_key(o, stride, dilation, out)
        z = call(device, "setitem", z, key, z[key] + cols[:, :, i, ...])  # the standard wants every axis covered
    if any(b or a for b, a in pads):
        z = z[(slice(None), slice(None), *tuple(slice(b, b + s) for s, (b, _) in zip(size, pads)))]
    return z


def tile_keys(kernel: tuple[int, ...], out: tuple[int, ...]) -> list[tuple[slice, ...]]:
    """One strided key per offset of non-overlapping tiles: ``x[key]`` is that offset's element of every
    tile, shape (N, C, *out); stops end just past the last element (the standard leaves others unspecified)."""
    return [
        (slice(None), slice(None), *(slice(o, o + k * (n - 1) + 1, k) for o, k, n in zip(off, kernel, out)))
        for off in itertools.product(*(range(k) for k in kernel))
    ]


def _max_pool_tiles(device: Any, x: Any, kernel: tuple[int, ...], out: tuple[int, ...]) -> Any:
    # an element-wise maximum of the strided views: libraries reduce tiny inner axes (2x2) far slower
    xp = device.xp
    views = [x[key] for key in tile_keys(kernel, out)]
    y = views[0]
    for v in views[1:]:
        y = xp.maximum(y, v)
    return y if len(views) > 1 else xp.asarray(y, copy=True)


def _max_pool_tiles_grad(device: Any, gy: Any, x: Any, y: Any, kernel: tuple[int, ...], out: tuple[int, ...]) -> Any:
    # PyTorch's routing: each tile's gradient goes to its first maximum in row-major order (a NaN counts as
    # the maximum), every other element gets 0
    xp = device.xp
    zero = xp.zeros((), dtype=gy.dtype)
    z = xp.zeros(x.shape, dtype=gy.dtype)
    for key, first in zip(tile_keys(kernel, out), first_maxima(xp, x, y, kernel, out)):
        z = call(device, "setitem", z, key, xp.where(first, gy, zero))
    return z


def first_maxima(xp: Any, x: Any, y: Any, kernel: tuple[int, ...], out: tuple[int, ...]) -> list[Any]:
    """Per tile offset (the order of :func:`tile_keys`), a mask of the tiles whose first maximum is there:
    where max-pooling's gradient goes (PyTorch's index of the maximum; a NaN is the maximum of its tile)."""
    masks = []
    taken = None
    for key in tile_keys(kernel, out):
        v = x[key]
        hit = xp.logical_or(v == y, xp.isnan(v))
        masks.append(hit if taken is None else xp.logical_and(hit, xp.logical_not(taken)))
        taken = hit if taken is None else xp.logical_or(taken, hit)
    return masks


def _prod(values: Any) -> int:
    n = 1
    for v in values:
        n *= v
    return n


def conv_out(size: Any, kernel: Any, stride: Any, pads: Pads, dilation: Any) -> tuple[int, ...]:
    """Spatial output size of a convolution."""
    return tuple(
        (s + b + a - d * (k - 1) - 1) // t + 1 for s, k, t, (b, a), d in zip(size, kernel, stride, pads, dilation)
    )


def _conv(device: Any, x: Any, w: Any, stride: Any, dilation: Any, pads: Pads, groups: int) -> Any:
    xp = device.xp
    n, o, cg, kernel = x.shape[0], w.shape[0], w.shape[1], tuple(w.shape[2:])
    out = conv_out(x.shape[2:], kernel, stride, pads, dilation)
    cols = call(device, "im2col", x, kernel, stride, dilation, pads, out, 0.0)
    cols = xp.reshape(cols, (n, groups, cg * _prod(kernel), _prod(out)))
    y = xp.matmul(xp.reshape(w, (groups, o // groups, cg * _prod(kernel))), cols)
    return xp.reshape(y, (n, o, *out))


def _conv_input_grad(
    device: Any, gy: Any, w: Any, size: tuple[int, ...], stride: Any, dilation: Any, pads: Pads, groups: int
) -> Any:
    xp = device.xp
    n, o, cg, kernel = gy.shape[0], w.shape[0], w.shape[1], tuple(w.shape[2:])
    out = tuple(gy.shape[2:])
    wt = xp.matrix_transpose(xp.reshape(w, (groups, o // groups, cg * _prod(kernel))))
    cols = xp.matmul(wt, xp.reshape(gy, (n, groups, o // groups, _prod(out))))
    cols = xp.reshape(cols, (n, groups * cg, _prod(kernel), *out))
    return call(device, "col2im", cols, kernel, stride, dilation, pads, size)


def _conv_weight_grad(
    device: Any, x: Any, gy: Any, kernel: tuple[int, ...], stride: Any, dilation: Any, pads: Pads, groups: int
) -> Any:
    xp = device.xp
    n, c, o = x.shape[0], x.shape[1], gy.shape[1]
    out = tuple(gy.shape[2:])
    cg = c // groups
    cols = call(device, "im2col", x, kernel, stride, dilation, pads, out, 0.0)
    cols = xp.reshape(cols, (n, groups, cg * _prod(kernel), _prod(out)))
    g = xp.matmul(xp.reshape(gy, (n, groups, o // groups, _prod(out))), xp.matrix_transpose(cols))
    return xp.reshape(xp.sum(g, axis=0), (o, cg, *kernel))


# -- conv, pooling and ReLU kernels of the CNN step (issue 17, session 3) ----------------------------
def _conv_bias(device: Any, x: Any, w: Any, b: Any, stride: Any, dilation: Any, pads: Pads, groups: int) -> Any:
    y = call(device, "conv", x, w, stride, dilation, pads, groups)
    return y + device.xp.reshape(b, (w.shape[0],) + (1,) * (x.ndim - 2))


def _channel_sum(device: Any, g: Any) -> Any:
    return device.xp.sum(g, axis=(0, *range(2, g.ndim)))


def _avg_pool(device: Any, x: Any, kernel: Any, stride: Any, pads: Pads, out: Any, divisor: Any) -> Any:
    xp = device.xp
    cols = call(device, "im2col", x, kernel, stride, (1,) * len(kernel), pads, out, 0.0)
    return xp.sum(cols, axis=2) / divisor


def _relu(device: Any, x: Any) -> Any:
    return device.xp.maximum(x, 0)


_CNN_KERNELS = (
    Kernel(
        "conv_bias",
        "(x, w, b, stride, dilation, pads, groups) -> array",
        "``conv`` plus the bias ``b`` (O,) on every output position (one GEMM with a ones row can do both).",
        _conv_bias,
    ),
    Kernel(
        "channel_sum",
        "(g) -> array",
        "(N, C, *S) -> (C,): the sum over every axis but 1 (a conv bias's gradient).",
        _channel_sum,
    ),
    Kernel(
        "avg_pool",
        "(x, kernel, stride, pads, out, divisor) -> array",
        "(N, C, *S) -> (N, C, *out): each window's sum over ``x`` zero-padded by ``pads``, divided by "
        "``divisor`` (a number or an array broadcastable to ``out``); no dilation.",
        _avg_pool,
    ),
    Kernel("relu", "(x) -> array", "max(x, 0), element-wise (NaN stays NaN).", _relu),
)
# -- fused nn kernels (layer_norm, gelu, attention, cross_entropy): composed defaults -----------------
# Each forward returns what its gradient kernel needs; the gradient kernels serve first-order backward
# only (the ops compose their gradients in Lucid ops when a graph of the gradient is wanted).
_SQRT1_2 = 1.0 / math.sqrt(2.0)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _layer_norm(device: Any, x: Any, weight: Any, bias: Any, eps: float) -> tuple[Any, Any, Any]:
    xp = device.xp
    mean = xp.mean(x, axis=-1, keepdims=True)
    d = x - mean
    rstd = 1.0 / xp.sqrt(xp.mean(d * d, axis=-1, keepdims=True) + eps)
    y = d * rstd
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y, mean, rstd


def _layer_norm_grad(device: Any, gy: Any, x: Any, mean: Any, rstd: Any, weight: Any) -> tuple[Any, Any, Any]:
    xp = device.xp
    xhat = (x - mean) * rstd
    g = gy if weight is None else gy * weight
    a = xp.mean(g, axis=-1, keepdims=True)
    b = xp.mean(g * xhat, axis=-1, keepdims=True)
    gx = (g - a - xhat * b) * rstd
    lead = tuple(range(x.ndim - 1))
    return gx, xp.sum(gy * xhat, axis=lead), xp.sum(gy, axis=lead)


def _gelu(device: Any, x: Any, approximate: str) -> Any:
    xp = device.xp
    if approximate == "tanh":
        return x * 0.5 * (1.0 + xp.tanh((x + 0.044715 * x * x * x) * _SQRT_2_PI))
    return x * 0.5 * (1.0 + call(device, "erf", x * _SQRT1_2))


def _gelu_grad(device: Any, gy: Any, x: Any, approximate: str) -> Any:
    xp = device.xp
    if approximate == "tanh":
        t = xp.tanh((x + 0.044715 * x * x * x) * _SQRT_2_PI)
        return gy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _SQRT_2_PI * (1.0 + 3.0 * 0.044715 * x * x))
    cdf = 0.5 * (1.0 + call(device, "erf", x * _SQRT1_2))
    return gy * (cdf + x * xp.exp(-0.5 * x * x) * _INV_SQRT_2PI)


def _causal_keep(xp: Any, length: int, source: int) -> Any:
    """(L, S) bool: key j is visible to query i when j <= i (top-left aligned)."""
    return xp.reshape(xp.arange(source), (1, source)) <= xp.reshape(xp.arange(length), (length, 1))


def _sdpa(device: Any, q: Any, k: Any, v: Any, scale: float, causal: bool) -> tuple[Any, Any]:
    xp = device.xp
    s = xp.matmul(q, xp.matrix_transpose(k)) * scale
    if causal:
        s = xp.where(_causal_keep(xp, s.shape[-2], s.shape[-1]), s, xp.full((), -math.inf, dtype=s.dtype))
    w = call(device, "softmax", s, s.ndim - 1)
    return xp.matmul(w, v), w


def _sdpa_grad(
    device: Any, gy: Any, q: Any, k: Any, v: Any, w: Any, scale: float, causal: bool = False
) -> tuple[Any, Any, Any]:
    xp = device.xp  # the masked weights are zeros: the full products need no mask
    gv = xp.matmul(xp.matrix_transpose(w), gy)
    dw = xp.matmul(gy, xp.matrix_transpose(v))
    ds = w * (dw - xp.sum(dw * w, axis=-1, keepdims=True)) * scale
    return xp.matmul(ds, k), xp.matmul(xp.matrix_transpose(ds), q), gv


def _class_hits(xp: Any, target: Any, ignore_index: int, c: int) -> tuple[Any, Any]:
    """(valid rows (N,), one-hot (N, C) bool of each valid row's class)."""
    valid = target != ignore_index
    safe = xp.where(valid, target, xp.zeros_like(target))
    return valid, xp.reshape(xp.arange(c), (1, c)) == xp.reshape(safe, (-1, 1))


def _cross_entropy(device: Any, x: Any, target: Any, ignore_index: int, smoothing: float) -> tuple[Any, Any]:
    xp = device.xp
    c = x.shape[1]
    logp = call(device, "log_softmax", x, 1)
    valid, hit = _class_hits(xp, target, ignore_index, c)
    zero = xp.zeros_like(logp)
    loss = -xp.sum(xp.where(hit, logp, zero), axis=1)
    if smoothing:
        loss = loss * (1.0 - smoothing) + (-xp.sum(logp, axis=1)) * (smoothing / c)
    # ignored rows add 0 even when the logit they stand in for is -inf (0 * inf would be NaN)
    return xp.where(valid, loss, xp.zeros_like(loss)), logp


def _cross_entropy_grad(device: Any, g: Any, logp: Any, target: Any, ignore_index: int, smoothing: float) -> Any:
    xp = device.xp
    c = logp.shape[1]
    _, hit = _class_hits(xp, target, ignore_index, c)
    v = -xp.reshape(g, (-1, 1))
    gl = xp.where(hit, v * (1.0 - smoothing) if smoothing else v, xp.zeros_like(logp))
    if smoothing:
        gl = gl + v * (smoothing / c)
    return gl - xp.exp(logp) * xp.sum(gl, axis=1, keepdims=True)


#: Unary ops whose forward a backend may replace by name: ``(x) -> array``, default ``xp.<name>``.
UNARY = (
    "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "square", "abs", "sin", "cos", "tan", "asin",
    "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sign", "floor", "ceil", "round",
    "trunc", "negative", "conj", "isnan", "isinf", "isfinite", "signbit", "logical_not", "bitwise_invert",
)  # fmt: skip


def _adam_step(
    device: Any,
    p: Any,
    g: Any,
    m: Any,
    v: Any,
    w: float,
    beta2: float,
    one_minus_beta2: float,
    neg_step: float,
    bias_correction2_sqrt: float,
    eps: float,
) -> tuple[Any, Any, Any]:
    xp = device.xp
    m = m + (g - m) * w if w < 0.5 else g - (g - m) * (1.0 - w)  # lerp in PyTorch's rounding order
    v = v * beta2 + g * g * one_minus_beta2
    return p + m * neg_step / (xp.sqrt(v) / bias_correction2_sqrt + eps), m, v


def _sgd_step(
    device: Any, p: Any, g: Any, buf: Any, momentum: float, buf_scale: float, lr: float, nesterov: bool
) -> tuple[Any, Any]:
    buf = buf * momentum + (g if buf_scale == 1 else g * buf_scale)
    d = g + buf * momentum if nesterov else buf
    return p - (d if lr == 1 else d * lr), buf


def _adadelta_step(
    device: Any, p: Any, g: Any, v: Any, u: Any, rho: float, one_minus_rho: float, eps: float, lr: float
) -> tuple[Any, Any, Any]:
    xp = device.xp
    v = v * rho + g * g * one_minus_rho
    d = xp.sqrt(u + eps) / xp.sqrt(v + eps) * g
    u = u * rho + d * d * one_minus_rho
    return p - (d if lr == 1 else d * lr), v, u


_GEOMETRY = (
    "``stride``, ``dilation``: one int per spatial axis; ``pads``: ``(before, after)`` per spatial axis; "
    "``groups``: channel groups; ``w``: (O, C/groups, *kernel)."
)

#: Every kernel a backend may register in ``Backend.kernels``, by name.
KERNELS: dict[str, Kernel] = {
    k.name: k
    for k in (
        *(Kernel(u, "(x) -> array", f"``xp.{u}(x)``, element-wise.") for u in UNARY),
        Kernel(
            "erf", "(x) -> array", "The error function (the default: 1.5e-7 in float32, about 1e-15 in float64).", _erf
        ),
        Kernel("sigmoid", "(x) -> array", "1 / (1 + exp(-x)), without overflow.", _sigmoid),
        Kernel(
            "logsumexp",
            "(x, axes: tuple[int, ...], keepdims: bool) -> array",
            "log(sum(exp(x))) over ``axes``, max-shifted.",
            _logsumexp,
        ),
        Kernel("softmax", "(x, axis: int) -> array", "exp(x) / sum(exp(x)) along ``axis``, max-shifted.", _softmax),
        Kernel(
            "log_softmax",
            "(x, axis: int) -> array",
            "x - logsumexp(x) along ``axis``, exact shift first.",
            _log_softmax,
        ),
        Kernel("relu_grad", "(gy, x) -> array", "``gy`` where ``x > 0``, else +0 (ReLU's gradient).", _relu_grad),
        Kernel(
            "linear",
            "(x, w, b) -> array",
            "``(x @ w.T) + b`` for a 2-D ``x`` (rows, in), ``w`` (out, in) and ``b`` (out,) or None, one dtype "
            "(a product can add the bias as it writes its result).",
            _linear,
        ),
        Kernel(
            "cumulative_prod",
            "(x, axis: int, include_initial: bool) -> array",
            "Running product along ``axis``.",
            _cumulative_prod,
        ),
        Kernel("einsum", "(spec: str, *xs) -> array", "Einstein summation; ``spec`` always has ``->``.", _einsum),
        Kernel("getitem", "(x, key) -> array", "``x[key]``; ``key`` is native (ints, slices, arrays).", _getitem),
        Kernel(
            "setitem",
            "(array, key, value) -> array",
            "``array[key] = value``, returning the updated array (immutable libraries return a new one).",
            _setitem,
        ),
        Kernel(
            "index_add",
            "(zeros, key, values) -> array",
            "``zeros`` with ``values`` added at ``key``; repeated positions accumulate (indexing's gradient).",
            _index_add,
        ),
        Kernel(
            "im2col",
            "(x, kernel, stride, dilation, pads, out, value: float) -> array",
            "(N, C, *S) -> (N, C, prod(kernel), *out): each kernel offset's strided view of ``x`` padded "
            "with ``value``, offsets in row-major order.",
            composed_im2col,
        ),
        Kernel(
            "col2im",
            "(cols, kernel, stride, dilation, pads, size) -> array",
            "(N, C, prod(kernel), *out) -> (N, C, *size): the adjoint of ``im2col`` (overlaps add up).",
            composed_col2im,
        ),
        Kernel(
            "max_pool_tiles",
            "(x, kernel, out) -> array",
            "(N, C, *S) -> (N, C, *out): the maximum of each non-overlapping ``kernel`` tile (stride == kernel, "
            "no padding; a remainder past ``out`` tiles is ignored).",
            _max_pool_tiles,
        ),
        Kernel(
            "max_pool_tiles_grad",
            "(gy, x, y, kernel, out) -> array",
            "(N, C, *S) zeros with ``gy / ties`` at each tile's maxima of ``x`` (``y`` = ``max_pool_tiles(x)``).",
            _max_pool_tiles_grad,
        ),
        Kernel(
            "conv",
            "(x, w, stride, dilation, pads, groups) -> array",
            "Cross-correlation (N, C, *S) -> (N, O, *out), no bias. " + _GEOMETRY,
            _conv,
        ),
        Kernel(
            "conv_input_grad",
            "(gy, w, size, stride, dilation, pads, groups) -> array",
            "The gradient of ``conv`` with respect to ``x`` (spatial ``size``) for output gradient ``gy``.",
            _conv_input_grad,
        ),
        Kernel(
            "conv_weight_grad",
            "(x, gy, kernel, stride, dilation, pads, groups) -> array",
            "The gradient of ``conv`` with respect to ``w`` (spatial ``kernel``) for output gradient ``gy``.",
            _conv_weight_grad,
        ),
        *_CNN_KERNELS,
        Kernel(
            "sgd_step",
            "(p, g, buf, momentum, buf_scale, lr, nesterov: bool) -> (array, array)",
            "(p, buf) after one SGD-with-momentum update (``lucid_core.fused.sgd_step_``): ``buf = buf momentum + "
            "g buf_scale``, ``p = p - lr (g + buf momentum if nesterov else buf)``, each op rounded to the arrays' "
            "dtype in that order (a factor of 1 is no multiply). A backend may update ``p``, ``buf`` in place.",
            _sgd_step,
        ),
        Kernel(
            "adam_step",
            "(p, g, m, v, w, beta2, one_minus_beta2, neg_step, bias_correction2_sqrt, eps) -> (array, array, array)",
            "(p, m, v) after one Adam update (``lucid_core.fused.adam_step_``): ``m = lerp(m, g, w)``, "
            "``v = v beta2 + g g (1 - beta2)``, ``p = p + m neg_step / (sqrt(v) / bias_correction2_sqrt + eps)``, "
            "each op rounded to the arrays' dtype in that order. A backend may update ``p``, ``m``, ``v`` in place "
            "and return them.",
            _adam_step,
        ),
        Kernel(
            "adadelta_step",
            "(p, g, v, u, rho, one_minus_rho, eps, lr) -> (array, array, array)",
            "(p, v, u) after one Adadelta update (``lucid_core.fused.adadelta_step_``): ``v = v rho + g g "
            "(1 - rho)``, ``d = sqrt(u + eps) / sqrt(v + eps) g``, ``u = u rho + d d (1 - rho)``, ``p = p - lr d``, "
            "each op rounded to the arrays' dtype in that order (a factor of 1 is no multiply). A backend may "
            "update ``p``, ``v``, ``u`` in place and return them.",
            _adadelta_step,
        ),
        # -- fused nn kernels: layer_norm, gelu, attention, cross_entropy --
        Kernel(
            "layer_norm",
            "(x, weight, bias, eps: float) -> (array, array, array)",
            "(y, mean, rstd): ``x`` normalised over its last axis, times ``weight`` plus ``bias`` (each (D,) or "
            "None); ``mean`` and ``rstd`` = 1/sqrt(var + eps) keep the reduced axis (biased variance).",
            _layer_norm,
        ),
        Kernel(
            "layer_norm_grad",
            "(gy, x, mean, rstd, weight) -> (array, array, array)",
            "(gx, gweight, gbias) of ``layer_norm`` for output gradient ``gy``; the parameter gradients sum over "
            "every leading axis (returned whether or not the layer has a weight and bias).",
            _layer_norm_grad,
        ),
        Kernel(
            "gelu",
            "(x, approximate: str) -> array",
            "x * Phi(x): ``approximate`` 'none' (erf) or 'tanh'; float32 may be 1.5e-7 off, float64 is exact.",
            _gelu,
        ),
        Kernel(
            "gelu_grad", "(gy, x, approximate: str) -> array", "``gy`` times the derivative of ``gelu``.", _gelu_grad
        ),
        Kernel(
            "scaled_dot_product_attention",
            "(q, k, v, scale: float, causal: bool) -> (array, array)",
            "(out, weights): weights = softmax(q @ k^T * scale) over the last axis, keys after each query "
            "masked out when ``causal`` (top-left aligned), out = weights @ v; q, k, v share batch axes.",
            _sdpa,
        ),
        Kernel(
            "scaled_dot_product_attention_grad",
            "(gy, q, k, v, weights, scale: float, causal: bool = False) -> (array, array, array)",
            "(gq, gk, gv) of ``scaled_dot_product_attention`` for output gradient ``gy``; ``causal`` as in the "
            "forward call (a kernel may then skip the masked weights, which are zeros).",
            _sdpa_grad,
        ),
        Kernel(
            "cross_entropy",
            "(x, target, ignore_index: int, label_smoothing: float) -> (array, array)",
            "(loss, logp) for (N, C) logits and (N,) class indices: each row's loss (0 at ``ignore_index``; "
            "with smoothing (1 - s) * nll + s / C * -sum(logp)) and log_softmax(x).",
            _cross_entropy,
        ),
        Kernel(
            "cross_entropy_grad",
            "(g, logp, target, ignore_index: int, label_smoothing: float) -> array",
            "The (N, C) gradient of ``cross_entropy``'s row losses for row gradients ``g`` (N,), from its ``logp``.",
            _cross_entropy_grad,
        ),
    )
}


def call(device: Any, name: str, *args: Any) -> Any:
    """Run kernel ``name`` on ``device``: the backend's native one, else the composed default."""
    k = device.backend.kernels.get(name)
    if k is not None:
        return k(*args)
    return KERNELS[name].default(device, *args)  # type: ignore[misc]


def check_names(backend: Any) -> list[str]:
    """The names in ``backend.kernels`` that no kernel declares (a typo would never be called)."""
    return sorted(set(backend.kernels) - set(KERNELS))
