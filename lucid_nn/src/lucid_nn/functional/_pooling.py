"""Pooling and resampling: max/avg pools, adaptive pools, and interpolate (nearest, linear, bilinear).

Windows come from the same im2col as convolutions (one strided view per kernel offset, stacked),
with a reshape fast path when windows tile the input exactly (stride == kernel, no padding).
Adaptive average pooling and linear/cubic interpolation are matmuls with small weight matrices.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import lucid_core as lc
from lucid_core import Tensor, kernels
from lucid_core._forward_ad import jvp_from_vjp
from lucid_core.amp import autocast_op

from ._conv import _ntuple, col2im, im2col

__all__ = [
    "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "interpolate", "upsample",
    "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d",
    "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
    "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d",
    "fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d_with_indices", "upsample_nearest", "upsample_bilinear",
]  # fmt: skip

_LAYOUT = {1: "(N, C, L) or (C, L)", 2: "(N, C, H, W) or (C, H, W)", 3: "(N, C, D, H, W) or (C, D, H, W)"}


def _batched(x: Any, nd: int, name: str) -> tuple[Tensor, bool]:
    """``x`` with a batch axis (added for an unbatched input), and whether one was added."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a Tensor input, got {type(x).__name__}")
    if x.ndim == nd + 2:
        return x, False
    if x.ndim == nd + 1:
        return lc.expand_dims(x, axis=0), True
    raise ValueError(f"{name}: expected input with {nd + 1} or {nd + 2} dimensions {_LAYOUT[nd]}, got shape {x.shape}")


def _pool_geometry(
    x: Tensor,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None,
    padding: int | Sequence[int],
    dilation: int | Sequence[int],
    ceil_mode: bool,
    nd: int,
    name: str,
) -> tuple[tuple[int, ...], ...]:
    """(kernel, stride, padding, dilation, out, extra right padding) per spatial axis, validated."""
    k = _ntuple(kernel_size, nd, "kernel_size", name)
    s = (
        k
        if stride is None or (not isinstance(stride, int) and len(stride) == 0)
        else _ntuple(stride, nd, "stride", name)
    )
    p = _ntuple(padding, nd, "padding", name)
    d = _ntuple(dilation, nd, "dilation", name)
    for v, what in ((k, "kernel_size"), (s, "stride"), (d, "dilation")):
        if any(i <= 0 for i in v):
            raise ValueError(f"{name}: {what} must be positive, got {v}")
    if any(pi < 0 or 2 * pi > kk for pi, kk in zip(p, k)):
        raise ValueError(f"{name}: padding {p} must be non-negative and at most half the kernel size {k}")
    out, extra = [], []
    for size, kk, ss, pp, dd in zip(x.shape[2:], k, s, p, d):
        span = size + 2 * pp - dd * (kk - 1) - 1
        o = (span + (ss - 1 if ceil_mode else 0)) // ss + 1
        if ceil_mode and (o - 1) * ss >= size + pp:
            o -= 1  # the last window must start inside the input or the left padding
        if o <= 0:
            raise ValueError(
                f"{name}: input of spatial size {x.shape[2:]} is smaller than the kernel {k} (padding {p})"
            )
        out.append(o)
        extra.append(max(0, (o - 1) * ss + dd * (kk - 1) + 1 - (size + 2 * pp)))
    return k, s, p, d, tuple(out), tuple(extra)


def _tiles(x: Tensor, k: tuple[int, ...], s: tuple[int, ...], p: tuple[int, ...], d: tuple[int, ...]) -> bool:
    return k == s and not any(p) and all(v == 1 for v in d)


def _tile_view(x: Tensor, k: tuple[int, ...], out: tuple[int, ...]) -> Tensor:
    """(N, C, o1*k1, o2*k2, ...) viewed as (N, C, o1, k1, o2, k2, ...) (cropping any remainder)."""
    if tuple(x.shape[2:]) != tuple(o * kk for o, kk in zip(out, k)):
        x = x[(slice(None), slice(None), *tuple(slice(0, o * kk) for o, kk in zip(out, k)))]
    shape = tuple(x.shape[:2]) + tuple(v for o, kk in zip(out, k) for v in (o, kk))
    return lc.reshape(x, shape)


class _TileMax(lc.Function):
    """Maximum over non-overlapping tiles (stride == kernel, no padding): the ``max_pool_tiles`` kernel.
    The gradient goes to each tile's first maximum, as PyTorch routes it."""

    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x, k, out):
        return kernels.call(ctx.device, "max_pool_tiles", x, k, out)

    @staticmethod
    def backward(ctx, gy):
        x, k, out = ctx.inputs
        return _TileMaxGrad.apply(gy, x, ctx.output(), k, out), None, None

    @staticmethod
    def backward_raw(ctx, gy):
        x, k, out = ctx.inputs
        return kernels.call(ctx.device, "max_pool_tiles_grad", gy, x._data, ctx.output()._data, k, out), None, None


class _TileMaxGrad(lc.Function):
    """``gy`` routed to each tile's first maximum of ``x``: the ``max_pool_tiles_grad`` kernel.

    Linear in ``gy``; the routing is piecewise constant in ``x``, so only ``gy`` has a gradient: each tile's
    winner's incoming gradient, the same masks in Lucid ops."""

    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, gy, x, y, k, out):
        return kernels.call(ctx.device, "max_pool_tiles_grad", gy, x, y, k, out)

    @staticmethod
    def backward(ctx, h):
        _, x, y, k, out = ctx.inputs
        zero = lc.zeros((), dtype=h.dtype, device=h.device)
        d_gy = None
        for key, first in zip(kernels.tile_keys(k, out), kernels.first_maxima(lc, x.detach(), y.detach(), k, out)):
            part = lc.where(first, h[key], zero)
            d_gy = part if d_gy is None else d_gy + part
        return d_gy, None, None, None, None


def _max_pool(
    x: Tensor,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    ceil_mode: bool,
    return_indices: bool,
    nd: int,
    name: str,
) -> Any:
    x, unbatched = _batched(x, nd, name)
    k, s, p, d, out, extra = _pool_geometry(x, kernel_size, stride, padding, dilation, ceil_mode, nd, name)
    if _tiles(x, k, s, p, d) and not any(extra) and not return_indices:
        y = _TileMax.apply(x, k, out)
    else:
        pads = tuple((pp, pp + e) for pp, e in zip(p, extra))
        cols = im2col(x, k, s, d, pads, out, value=-math.inf)
        y, a = _first_max(cols, 2)
        if return_indices:
            idx = _window_argmax(a, x.shape[2:], k, s, p, d, out)
    if unbatched:
        y = lc.squeeze(y, axis=0)
    if return_indices:
        return y, (lc.squeeze(idx, axis=0) if unbatched else idx)
    return y


class _FirstMax(lc.Function):
    """Each window's maximum along ``axis``, its gradient going to the window's first maximum alone (a NaN
    counts as the maximum), as PyTorch routes max-pooling's gradient (``lc.max`` shares it among ties).
    Built from ``max``, ``argmax`` and a select, so every backend that has those runs it."""

    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, win, axis):
        return ctx.xp.max(win, axis=axis)

    @staticmethod
    def backward(ctx, gy):
        win, axis = ctx.inputs
        first = _first_mask(win, axis)
        return lc.where(first, lc.expand_dims(gy, axis=axis), lc.zeros((), dtype=gy.dtype, device=gy.device)), None


def _first_mask(win: Tensor, axis: int) -> Tensor:
    """True at each window's first maximum along ``axis``."""
    a = lc.argmax(win.detach(), axis=axis, keepdims=True)
    shape = [1] * win.ndim
    shape[axis] = win.shape[axis]
    return lc.reshape(lc.arange(win.shape[axis], device=win.device), tuple(shape)) == a


def _first_max(win: Tensor, axis: int) -> tuple[Tensor, Tensor]:
    """Each window's maximum along ``axis`` (the gradient to its first maximum) and that maximum's position."""
    return _FirstMax.apply(win, axis), lc.argmax(win.detach(), axis=axis)


def _window_argmax(
    a: Tensor,
    size: tuple[int, ...],
    k: tuple[int, ...],
    s: tuple[int, ...],
    p: tuple[int, ...],
    d: tuple[int, ...],
    out: tuple[int, ...],
) -> Tensor:
    """Flat index into the input's spatial axes of each window's first maximum (``a``: its offset within the
    window, (N, C, *out)), as PyTorch returns."""
    flat = None
    rem = a
    for i in range(len(k)):
        inner = 1
        for kk in k[i + 1 :]:
            inner *= kk
        off = lc.floor_divide(rem, inner)
        rem = lc.remainder(rem, inner)
        shape = [1] * len(out)
        shape[i] = out[i]
        start = lc.reshape(lc.arange(out[i], device=a.device) * s[i] - p[i], tuple(shape))
        pos = start + off * d[i]
        flat = pos if flat is None else flat * size[i] + pos
    return flat


def max_pool1d(
    input: Tensor,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """Maximum over sliding windows of ``input`` (N, C, L); ``stride`` defaults to ``kernel_size``."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1, "max_pool1d")


def max_pool2d(
    input: Tensor,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """Maximum over sliding windows of ``input`` (N, C, H, W); padding counts as -inf.

    Args:
        return_indices: also return each maximum's flat index into H * W (PyTorch's layout).
    """
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2, "max_pool2d")


def _avg_divisor(
    size: Sequence[int],
    k: Sequence[int],
    s: Sequence[int],
    p: Sequence[int],
    out: Sequence[int],
    include_pad: bool,
    device: Any,
    dtype: Any,
) -> Tensor:
    """Per-window element counts (PyTorch's rule: padding counts, the ceil-mode overhang does not)."""
    div = None
    for i, (n, kk, ss, pp, o) in enumerate(zip(size, k, s, p, out)):
        counts = []
        for j in range(o):
            start = j * ss - pp
            end = min(start + kk, n + pp)
            counts.append(end - start if include_pad else min(end, n) - max(start, 0))
        shape = [1] * len(out)
        shape[i] = o
        c = lc.reshape(lc.asarray(counts, dtype=dtype, device=device), tuple(shape))
        div = c if div is None else div * c
    return div


def _avg_pool(
    x: Tensor,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None,
    nd: int,
    name: str,
) -> Tensor:
    x, unbatched = _batched(x, nd, name)
    if x.dtype.kind not in "fc":
        raise TypeError(f"{name}: expected a floating-point input, got {x.dtype.name}")
    k, s, p, d, out, extra = _pool_geometry(x, kernel_size, stride, padding, 1, ceil_mode, nd, name)
    if divisor_override is not None and divisor_override <= 0:
        raise ValueError(f"{name}: divisor_override must be positive, got {divisor_override}")
    pads = tuple((pp, pp + e) for pp, e in zip(p, extra))
    if divisor_override is not None:
        div: Any = divisor_override
    elif _tiles(x, k, s, p, d) and not any(extra):
        div = math.prod(k)
    else:
        div = _avg_divisor(x.shape[2:], k, s, p, out, count_include_pad, x.device, x.dtype)
    y = _AvgPool.apply(x, k, s, pads, out, div)
    return lc.squeeze(y, axis=0) if unbatched else y


class _AvgPool(lc.Function):
    """Window sums over ``x`` zero-padded by ``pads``, divided by ``divisor`` (a number or a constant tensor):
    the ``avg_pool`` kernel. Linear in ``x``: its gradient spreads ``gy / divisor`` back over each window
    (col2im, whose own gradient is im2col), so gradients of every order are Lucid ops."""

    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x, k, s, pads, out, divisor):
        return kernels.call(ctx.device, "avg_pool", x, k, s, pads, out, divisor)

    @staticmethod
    def backward(ctx, gy):
        x, k, s, pads, _, divisor = ctx.inputs
        g = lc.expand_dims(gy / divisor, axis=2)
        cols = lc.broadcast_to(g, (*g.shape[:2], math.prod(k), *g.shape[3:]))
        return col2im(cols, tuple(x.shape[2:]), k, s, (1,) * len(k), pads), None, None, None, None, None


def avg_pool1d(
    input: Tensor,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """Mean over sliding windows of ``input`` (N, C, L); ``stride`` defaults to ``kernel_size``."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1, "avg_pool1d")


def avg_pool2d(
    input: Tensor,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """Mean over sliding windows of ``input`` (N, C, H, W).

    Args:
        count_include_pad: whether zero padding counts in each window's divisor.
        divisor_override: divide every window's sum by this instead.
    """
    return _avg_pool(
        input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2, "avg_pool2d"
    )


def _adaptive_sizes(x: Tensor, output_size: Any, nd: int, name: str) -> tuple[int, ...]:
    if isinstance(output_size, int) or output_size is None:
        output_size = (output_size,) * nd
    sizes = tuple(output_size)
    if len(sizes) == 1:
        sizes = sizes * nd
    if len(sizes) != nd:
        raise ValueError(f"{name}: output_size must be an int or {nd} values, got {output_size}")
    out = tuple(x.shape[2 + i] if v is None else int(v) for i, v in enumerate(sizes))
    if any(v <= 0 for v in out):
        raise ValueError(f"{name}: output_size must be positive, got {out}")
    return out


def _bounds(n: int, o: int) -> list[tuple[int, int]]:
    """PyTorch's adaptive windows: [floor(i*n/o), ceil((i+1)*n/o))."""
    return [((i * n) // o, -((-(i + 1) * n) // o)) for i in range(o)]


def _apply_matrix(x: Tensor, m: Tensor, axis: int) -> Tensor:
    """Contract ``x``'s ``axis`` with the last axis of ``m`` (out, in); the result's axis has size out."""
    if axis == x.ndim - 1:
        return lc.matmul(x, lc.matrix_transpose(m))
    if axis == x.ndim - 2:
        return lc.matmul(m, x)
    return lc.moveaxis(lc.matmul(lc.moveaxis(x, axis, -1), lc.matrix_transpose(m)), -1, axis)


def _adaptive_avg(x: Tensor, output_size: Any, nd: int, name: str) -> Tensor:
    x, unbatched = _batched(x, nd, name)
    if x.dtype.kind not in "fc":
        raise TypeError(f"{name}: expected a floating-point input, got {x.dtype.name}")
    out = _adaptive_sizes(x, output_size, nd, name)
    size = tuple(x.shape[2:])
    if all(n % o == 0 for n, o in zip(size, out)):
        k = tuple(n // o for n, o in zip(size, out))
        y = lc.mean(_tile_view(x, k, out), axis=tuple(range(3, 3 + 2 * nd, 2)))
    else:
        y = x
        for i, (n, o) in enumerate(zip(size, out)):
            if n == o:
                continue
            rows = [[1.0 / (b - a) if a <= j < b else 0.0 for j in range(n)] for a, b in _bounds(n, o)]
            y = _apply_matrix(y, lc.asarray(rows, dtype=x.dtype, device=x.device), 2 + i)
    return lc.squeeze(y, axis=0) if unbatched else y


def adaptive_avg_pool1d(input: Tensor, output_size: int | Sequence[int]) -> Tensor:
    """Average pooling of ``input`` (N, C, L) into ``output_size`` windows (PyTorch's window bounds)."""
    return _adaptive_avg(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input: Tensor, output_size: int | Sequence[int | None]) -> Tensor:
    """Average pooling of ``input`` (N, C, H, W) to ``output_size`` (None keeps that axis)."""
    return _adaptive_avg(input, output_size, 2, "adaptive_avg_pool2d")


def _adaptive_max(x: Tensor, output_size: Any, return_indices: bool, nd: int, name: str) -> Any:
    x, unbatched = _batched(x, nd, name)
    out = _adaptive_sizes(x, output_size, nd, name)
    size = tuple(x.shape[2:])
    y = x
    index_parts = []
    for i, (n, o) in enumerate(zip(size, out)):
        bounds = _bounds(n, o)
        kmax = max(b - a for a, b in bounds)
        # window positions padded to a common length by repeating the last element (max unchanged)
        idx = [min(a + t, b - 1) for a, b in bounds for t in range(kmax)]
        index_parts.append((idx, o, kmax))
        it = lc.asarray(idx, dtype=lc.int64, device=x.device)
        ax = 2 + 2 * i
        y = lc.take(y, it, axis=ax)
        y = lc.reshape(y, (*y.shape[:ax], o, kmax, *y.shape[ax + 1 :]))
    # move window axes last and flatten them: each window's first maximum takes the gradient (the padding
    # repeats come after the element they repeat)
    perm = (0, 1, *tuple(range(2, 2 + 2 * nd, 2)), *tuple(range(3, 3 + 2 * nd, 2)))
    w = lc.permute_dims(y, perm)
    y, a = _first_max(lc.reshape(w, (*w.shape[: 2 + nd], -1)), -1)
    result: Any = y
    if return_indices:
        # map the argmax back to input coordinates
        ks = tuple(km for _, _, km in index_parts)
        flat = None
        rem = a
        for i, (idx, o, km) in enumerate(index_parts):
            inner = math.prod(ks[i + 1 :])
            off = lc.floor_divide(rem, inner)
            rem = lc.remainder(rem, inner)
            table = lc.reshape(lc.asarray(idx, dtype=lc.int64, device=x.device), (o, km))
            shape = [1] * nd
            shape[i] = o
            rows = lc.reshape(lc.arange(o, device=x.device), tuple(shape))
            pos = table[rows, off]
            flat = pos if flat is None else flat * size[i] + pos
        result = (y, flat)
    if unbatched:
        if return_indices:
            return lc.squeeze(result[0], axis=0), lc.squeeze(result[1], axis=0)
        return lc.squeeze(result, axis=0)
    return result


def adaptive_max_pool1d(input: Tensor, output_size: int | Sequence[int], return_indices: bool = False) -> Any:
    """Max pooling of ``input`` (N, C, L) into ``output_size`` windows."""
    return _adaptive_max(input, output_size, return_indices, 1, "adaptive_max_pool1d")


def adaptive_max_pool2d(input: Tensor, output_size: int | Sequence[int | None], return_indices: bool = False) -> Any:
    """Max pooling of ``input`` (N, C, H, W) to ``output_size`` (None keeps that axis)."""
    return _adaptive_max(input, output_size, return_indices, 2, "adaptive_max_pool2d")


_MODES = {
    "nearest": None, "nearest-exact": None, "area": None, "linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3,
}  # fmt: skip


def _source_coords(n: int, o: int, scale: float | None, align_corners: bool, device: Any, dtype: Any) -> Tensor:
    """Source coordinate of each output position for linear modes (PyTorch's convention)."""
    j = lc.arange(o, dtype=dtype, device=device)
    if align_corners:
        return j * ((n - 1) / (o - 1) if o > 1 else 0.0)
    ratio = (1.0 / scale) if scale is not None else n / o
    return lc.maximum(((j + 0.5) * ratio - 0.5), lc.zeros_like(j))


def _linear_matrix(n: int, o: int, scale: float | None, align_corners: bool, device: Any, dtype: Any) -> Tensor:
    """(o, n) weights of linear interpolation from n samples to o."""
    src = _source_coords(n, o, scale, align_corners, device, dtype)
    i0 = lc.minimum(lc.floor(src), lc.full_like(src, n - 1))
    lam = src - i0
    i1 = lc.minimum(i0 + 1, lc.full_like(src, n - 1))
    cols = lc.reshape(lc.arange(n, dtype=dtype, device=device), (1, n))
    w0 = lc.astype(lc.equal(cols, lc.expand_dims(i0, axis=1)), dtype) * lc.expand_dims(1 - lam, axis=1)
    w1 = lc.astype(lc.equal(cols, lc.expand_dims(i1, axis=1)), dtype) * lc.expand_dims(lam, axis=1)
    return w0 + w1


def _cubic_matrix(n: int, o: int, scale: float | None, align_corners: bool, device: Any, dtype: Any) -> Tensor:
    """(o, n) weights of bicubic interpolation (Keys, A = -0.75); taps beyond the edges repeat the edge."""
    a = -0.75
    ratio = ((n - 1) / (o - 1) if o > 1 else 0.0) if align_corners else (1.0 / scale if scale else n / o)
    rows = []
    for j in range(o):
        src = j * ratio if align_corners else (j + 0.5) * ratio - 0.5  # no clamp at 0, as PyTorch's cubic
        f = math.floor(src)
        t = src - f
        w = [
            ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
            ((a + 2) * t - (a + 3)) * t * t + 1,
            ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
            ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a,
        ]
        row = [0.0] * n
        for tap, wt in zip(range(f - 1, f + 3), w):
            row[min(max(tap, 0), n - 1)] += wt
        rows.append(row)
    return lc.asarray(rows, dtype=dtype, device=device)


def _nearest_index(n: int, o: int, scale: float | None, exact: bool) -> list[int]:
    ratio = (1.0 / scale) if scale is not None else n / o
    if exact:
        return [min(math.floor((j + 0.5) * ratio), n - 1) for j in range(o)]
    return [min(math.floor(j * ratio), n - 1) for j in range(o)]


def interpolate(
    input: Tensor,
    size: int | Sequence[int] | None = None,
    scale_factor: float | Sequence[float] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """Resample ``input`` (N, C, *spatial) to ``size`` or by ``scale_factor``.

    Args:
        mode: ``"nearest"``, ``"nearest-exact"``, ``"area"`` (adaptive average pooling), ``"linear"``
            (3-D input), ``"bilinear"`` or ``"bicubic"`` (4-D) or ``"trilinear"`` (5-D).
        align_corners: for linear and cubic modes, map corner pixels' centres onto each other (default False).
        antialias: not supported (only False); PyTorch applies it to bilinear/bicubic downsampling.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"interpolate: expected a Tensor input, got {type(input).__name__}")
    if mode not in _MODES:
        raise ValueError(f"interpolate: unknown mode {mode!r}; expected one of {sorted(_MODES)}")
    nd = input.ndim - 2
    if nd < 1:
        raise ValueError(
            f"interpolate: expected input with at least 3 dimensions (N, C, *spatial), got shape {input.shape}"
        )
    want = _MODES[mode]
    if want is not None and want != nd:
        raise ValueError(f"interpolate: mode {mode!r} expects a {want + 2}-D input, got shape {input.shape}")
    if want is None and align_corners is not None:
        raise ValueError(
            "interpolate: align_corners can only be set with the linear and cubic modes "
            "(linear, bilinear, bicubic, trilinear)"
        )
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported; use antialias=False")
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    spatial = tuple(input.shape[2:])
    scales: tuple[float | None, ...]
    if size is not None:
        out = _ntuple(size, nd, "size", "interpolate")
        scales = (None,) * nd
    else:
        sf = (
            (float(scale_factor),) * nd
            if isinstance(scale_factor, (int, float))
            else tuple(float(v) for v in scale_factor)
        )
        if len(sf) != nd:
            raise ValueError(f"interpolate: scale_factor must be a number or {nd} numbers, got {scale_factor}")
        out = tuple(math.floor(n * f) for n, f in zip(spatial, sf))
        scales = (None,) * nd if recompute_scale_factor else sf
    if any(v <= 0 for v in out):
        raise ValueError(f"interpolate: output size {out} must be positive")
    if mode == "area":
        return _adaptive_avg(input, out, nd, "interpolate")
    y = input
    for i, (n, o, sc) in enumerate(zip(spatial, out, scales)):
        if n == o and sc in (None, 1.0):
            continue
        if want is None:
            idx = lc.asarray(_nearest_index(n, o, sc, mode == "nearest-exact"), dtype=lc.int64, device=input.device)
            y = lc.take(y, idx, axis=2 + i)
        else:
            if input.dtype.kind not in "fc":
                raise TypeError(f"interpolate: mode {mode!r} needs a floating-point input, got {input.dtype.name}")
            matrix = _cubic_matrix if mode == "bicubic" else _linear_matrix
            m = matrix(n, o, sc, bool(align_corners), input.device, input.dtype)
            y = _apply_matrix(y, m, 2 + i)
    return y


def upsample(
    input: Tensor,
    size: int | Sequence[int] | None = None,
    scale_factor: float | Sequence[float] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
) -> Tensor:
    """Alias of :func:`interpolate` (PyTorch's older name)."""
    return interpolate(input, size, scale_factor, mode, align_corners)


# -- 3-D pools and the *_with_indices forms ------------------------------------------------------------------
@autocast_op("max_pool3d")
def max_pool3d(
    input: Tensor,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """Maximum over sliding windows of ``input`` (N, C, D, H, W); indices are flat into D * H * W."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3, "max_pool3d")


@autocast_op("avg_pool3d")
def avg_pool3d(
    input: Tensor,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """Mean over sliding windows of ``input`` (N, C, D, H, W)."""
    return _avg_pool(
        input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3, "avg_pool3d"
    )


def max_pool1d_with_indices(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
    ceil_mode: bool = False, return_indices: bool = False,
) -> tuple[Tensor, Tensor]:  # fmt: skip
    """:func:`max_pool1d` returning (values, indices) whatever ``return_indices`` says."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, True, 1, "max_pool1d")


def max_pool2d_with_indices(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
    ceil_mode: bool = False, return_indices: bool = False,
) -> tuple[Tensor, Tensor]:  # fmt: skip
    """:func:`max_pool2d` returning (values, indices)."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, True, 2, "max_pool2d")


def max_pool3d_with_indices(
    input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
    ceil_mode: bool = False, return_indices: bool = False,
) -> tuple[Tensor, Tensor]:  # fmt: skip
    """:func:`max_pool3d` returning (values, indices)."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, True, 3, "max_pool3d")


@autocast_op("adaptive_avg_pool3d")
def adaptive_avg_pool3d(input: Tensor, output_size: int | Sequence[int | None]) -> Tensor:
    """Average pooling of ``input`` (N, C, D, H, W) to ``output_size`` (None keeps that axis)."""
    return _adaptive_avg(input, output_size, 3, "adaptive_avg_pool3d")


@autocast_op("adaptive_max_pool3d")
def adaptive_max_pool3d(input: Tensor, output_size: int | Sequence[int | None], return_indices: bool = False) -> Any:
    """Max pooling of ``input`` (N, C, D, H, W) to ``output_size``."""
    return _adaptive_max(input, output_size, return_indices, 3, "adaptive_max_pool3d")


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """:func:`adaptive_max_pool1d` returning (values, indices)."""
    return _adaptive_max(input, output_size, True, 1, "adaptive_max_pool1d")


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """:func:`adaptive_max_pool2d` returning (values, indices)."""
    return _adaptive_max(input, output_size, True, 2, "adaptive_max_pool2d")


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """:func:`adaptive_max_pool3d` returning (values, indices)."""
    return _adaptive_max(input, output_size, True, 3, "adaptive_max_pool3d")


# -- power-average pools ---------------------------------------------------------------------------------------
def _lp_pool(x: Tensor, norm_type: float, kernel_size: Any, stride: Any, ceil_mode: bool, nd: int, name: str) -> Tensor:
    """(sum over each window of x^p)^(1/p), as PyTorch computes it: an average pool of x^p times the window size."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a Tensor input, got {type(x).__name__}")
    k = _ntuple(kernel_size, nd, "kernel_size", name)
    pooled = _avg_pool(x**norm_type, k, stride, 0, ceil_mode, True, None, nd, name)
    return (lc.sign(pooled) * lc.relu(lc.abs(pooled)) * math.prod(k)) ** (1.0 / norm_type)


def lp_pool1d(
    input: Tensor, norm_type: float, kernel_size: int, stride: int | None = None, ceil_mode: bool = False
) -> Tensor:
    """Power-average pooling of ``input`` (N, C, L): the p-norm of each window (p = ``norm_type``)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1, "lp_pool1d")


def lp_pool2d(
    input: Tensor,
    norm_type: float,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    ceil_mode: bool = False,
) -> Tensor:
    """Power-average pooling of ``input`` (N, C, H, W)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2, "lp_pool2d")


def lp_pool3d(
    input: Tensor,
    norm_type: float,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    ceil_mode: bool = False,
) -> Tensor:
    """Power-average pooling of ``input`` (N, C, D, H, W)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3, "lp_pool3d")


# -- unpooling ---------------------------------------------------------------------------------------------------
def _max_unpool(
    x: Tensor, indices: Tensor, kernel_size: Any, stride: Any, padding: Any, output_size: Any, nd: int, name: str
) -> Tensor:
    """Scatter ``x`` into zeros at the flat spatial ``indices`` a max pool returned."""
    x, unbatched = _batched(x, nd, name)
    if not isinstance(indices, Tensor) or indices.dtype.kind not in "iu":
        raise TypeError(f"{name}: indices must be an integer Tensor (as max_pool{nd}d returns)")
    if unbatched:
        indices = lc.expand_dims(indices, axis=0)
    if tuple(indices.shape) != tuple(x.shape):
        raise ValueError(f"{name}: indices of shape {indices.shape} do not match the input's {x.shape}")
    k = _ntuple(kernel_size, nd, "kernel_size", name)
    s = k if stride is None else _ntuple(stride, nd, "stride", name)
    p = _ntuple(padding, nd, "padding", name)
    default = tuple((n - 1) * ss - 2 * pp + kk for n, kk, ss, pp in zip(x.shape[2:], k, s, p))
    if output_size is None:
        out = default
    else:
        out = tuple(int(v) for v in output_size)[-nd:]
        if len(out) != nd:
            raise ValueError(f"{name}: output_size must have {nd} (or {nd + 2}) entries, got {output_size}")
        for o, d, ss in zip(out, default, s):
            if not d - ss < o < d + ss:
                raise ValueError(f"{name}: output_size {out} must be within one stride of the default {default}")
    n, c = x.shape[0], x.shape[1]
    total = math.prod(out)
    if indices.size:
        lo, hi = int(lc.min(indices).item()), int(lc.max(indices).item())
        if lo < 0 or hi >= total:
            raise ValueError(f"{name}: indices must lie in [0, {total}) for output size {out}, got [{lo}, {hi}]")
    flat = lc.zeros((n, c, total), dtype=x.dtype, device=x.device)
    rows = lc.reshape(lc.arange(n, device=x.device), (n, 1, 1))
    cols = lc.reshape(lc.arange(c, device=x.device), (1, c, 1))
    flat[rows, cols, lc.reshape(indices, (n, c, -1))] = lc.reshape(x, (n, c, -1))
    y = lc.reshape(flat, (n, c, *out))
    return lc.squeeze(y, axis=0) if unbatched else y


def max_unpool1d(
    input: Tensor,
    indices: Tensor,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    output_size: Sequence[int] | None = None,
) -> Tensor:
    """The partial inverse of :func:`max_pool1d`: maxima back at their positions, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1, "max_unpool1d")


@autocast_op("max_unpool2d")
def max_unpool2d(
    input: Tensor,
    indices: Tensor,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    output_size: Sequence[int] | None = None,
) -> Tensor:
    """The partial inverse of :func:`max_pool2d`."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2, "max_unpool2d")


@autocast_op("max_unpool3d")
def max_unpool3d(
    input: Tensor,
    indices: Tensor,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    output_size: Sequence[int] | None = None,
) -> Tensor:
    """The partial inverse of :func:`max_pool3d`."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3, "max_unpool3d")


# -- fractional max pooling ---------------------------------------------------------------------------------------
def _fractional_max(
    x: Tensor,
    kernel_size: Any,
    output_size: Any,
    output_ratio: Any,
    return_indices: bool,
    samples: Tensor | None,
    nd: int,
    name: str,
) -> Any:
    """Max over windows whose starts follow PyTorch's pseudo-random sequence, one per (sample, channel),
    drawn from ``samples`` (N, C, nd) in [0, 1) (PyTorch's order: (W, H) for 2-D, (T, H, W) for 3-D)."""
    x, unbatched = _batched(x, nd, name)
    k = _ntuple(kernel_size, nd, "kernel_size", name)
    size = tuple(x.shape[2:])
    if output_size is None:
        if output_ratio is None:
            raise ValueError(f"{name}: give output_size or output_ratio")
        ratios = (
            (float(output_ratio),) * nd
            if isinstance(output_ratio, (int, float))
            else tuple(float(r) for r in output_ratio)
        )
        if len(ratios) != nd:
            raise ValueError(f"{name}: output_ratio must be a number or {nd} numbers, got {output_ratio}")
        if not all(0 < r < 1 for r in ratios):
            raise ValueError(f"{name}: output_ratio must be in (0, 1), got {output_ratio}")
        out = tuple(int(n * r) for n, r in zip(size, ratios))
    else:
        out = _ntuple(output_size, nd, "output_size", name)
    for n, kk, o in zip(size, k, out):
        if o + kk - 1 > n:
            raise ValueError(f"{name}: output size {out} with kernel {k} is too large for the input size {size}")
    n_batch, c = x.shape[0], x.shape[1]
    if samples is None:
        samples = lc.rand(n_batch, c, nd, dtype=x.dtype, device=x.device)
    elif unbatched and samples.ndim == 2:
        samples = lc.expand_dims(samples, axis=0)
    if tuple(samples.shape) != (n_batch, c, nd):
        raise ValueError(f"{name}: _random_samples must have shape {(n_batch, c, nd)}, got {samples.shape}")
    samples = lc.astype(samples.detach(), lc.float64 if x.dtype == lc.float64 else x.dtype)
    lin = None
    for a, (n, kk, o) in enumerate(zip(size, k, out)):
        # PyTorch's sample layout: 2-D (W, H), 3-D (T, H, W)
        u = samples[:, :, nd - 1 - a if nd == 2 else a]  # (N, C)
        u = lc.reshape(u, (n_batch, c, 1))
        if o > 1:
            alpha = (n - kk) / (o - 1)
            i = lc.reshape(lc.arange(o, dtype=u.dtype, device=x.device), (1, 1, o))
            starts = lc.floor((i + u) * alpha) - lc.floor(u * alpha)
            last = lc.full((n_batch, c, 1), float(n - kk), dtype=u.dtype, device=x.device)
            starts = lc.concat([starts[:, :, : o - 1], last], axis=2)
        else:
            starts = lc.full((n_batch, c, 1), float(n - kk), dtype=u.dtype, device=x.device)
        starts = lc.astype(starts, lc.int64)
        # positions along this axis of every (output, offset) pair: (N, C, o, kk)
        pos = lc.expand_dims(starts, axis=-1) + lc.reshape(lc.arange(kk, device=x.device), (1, 1, 1, kk))
        # place this axis' (o, kk) pair among the nd output axes and nd offset axes
        shape = [n_batch, c] + [1] * (2 * nd)
        shape[2 + a], shape[2 + nd + a] = o, kk
        pos = lc.reshape(pos, tuple(shape))
        lin = pos if lin is None else lin * n + pos
    lin = lc.broadcast_to(lin, (n_batch, c, *out, *k))
    window = math.prod(k)
    flat_idx = lc.reshape(lin, (n_batch, c, -1))
    vals = lc.take_along_axis(lc.reshape(x, (n_batch, c, -1)), flat_idx, axis=2)
    vals = lc.reshape(vals, (n_batch, c, *out, window))
    y, arg = _first_max(vals, -1)
    idx = None
    if return_indices:
        arg = lc.expand_dims(arg, axis=-1)
        idx = lc.squeeze(lc.take_along_axis(lc.reshape(lin, (n_batch, c, *out, window)), arg, axis=-1), axis=-1)
    if unbatched:
        y = lc.squeeze(y, axis=0)
        idx = None if idx is None else lc.squeeze(idx, axis=0)
    return (y, idx) if return_indices else y


@autocast_op("fractional_max_pool2d")
def fractional_max_pool2d(
    input: Tensor,
    kernel_size: int | Sequence[int],
    output_size: int | Sequence[int] | None = None,
    output_ratio: float | Sequence[float] | None = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> Any:
    """Fractional max pooling of ``input`` (N, C, H, W) (Graham, 2014) to ``output_size`` or ``output_ratio``."""
    return _fractional_max(
        input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 2, "fractional_max_pool2d"
    )


@autocast_op("fractional_max_pool3d")
def fractional_max_pool3d(
    input: Tensor,
    kernel_size: int | Sequence[int],
    output_size: int | Sequence[int] | None = None,
    output_ratio: float | Sequence[float] | None = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> Any:
    """Fractional max pooling of ``input`` (N, C, D, H, W)."""
    return _fractional_max(
        input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 3, "fractional_max_pool3d"
    )


def fractional_max_pool2d_with_indices(
    input: Tensor,
    kernel_size: int | Sequence[int],
    output_size: int | Sequence[int] | None = None,
    output_ratio: float | Sequence[float] | None = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """:func:`fractional_max_pool2d` returning (values, indices)."""
    return _fractional_max(
        input, kernel_size, output_size, output_ratio, True, _random_samples, 2, "fractional_max_pool2d"
    )


def fractional_max_pool3d_with_indices(
    input: Tensor,
    kernel_size: int | Sequence[int],
    output_size: int | Sequence[int] | None = None,
    output_ratio: float | Sequence[float] | None = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """:func:`fractional_max_pool3d` returning (values, indices)."""
    return _fractional_max(
        input, kernel_size, output_size, output_ratio, True, _random_samples, 3, "fractional_max_pool3d"
    )


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated alias: ``interpolate(..., mode="nearest")``."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated alias: ``interpolate(..., mode="bilinear", align_corners=True)``."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
