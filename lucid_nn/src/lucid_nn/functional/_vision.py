"""Vision helpers: pixel and channel shuffles, affine grids and grid sampling.

``grid_sample`` is composed from gathers (``take_along_axis``) and elementwise weights, so its gradients
with respect to both the input and the grid (and of every order) come from the ops it is made of.
"""

from __future__ import annotations

__all__ = [
    "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle", "affine_grid", "grid_sample",
]  # fmt: skip

from collections.abc import Sequence

import lucid_core as lc
from lucid_core import Tensor
from lucid_core.amp import autocast_op


def _check(x: object, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type(x).__name__}")
    return x


# -- shuffles ---------------------------------------------------------------------------------------------
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C * r^2, H, W) -> (*, C, H * r, W * r): channels become sub-pixel positions."""
    _check(input, "pixel_shuffle")
    r = int(upscale_factor)
    if input.ndim < 3:
        raise ValueError(f"pixel_shuffle: expected an input of at least 3 dimensions, got shape {input.shape}")
    if r <= 0:
        raise ValueError(f"pixel_shuffle: upscale_factor must be positive, got {upscale_factor}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise ValueError(f"pixel_shuffle: {c} channels are not divisible by upscale_factor squared ({r * r})")
    n = len(lead)
    y = lc.reshape(input, (*lead, c // (r * r), r, r, h, w))
    y = lc.permute_dims(y, (*range(n), n, n + 3, n + 1, n + 4, n + 2))
    return lc.reshape(y, (*lead, c // (r * r), h * r, w * r))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H * r, W * r) -> (*, C * r^2, H, W): the inverse of :func:`pixel_shuffle`."""
    _check(input, "pixel_unshuffle")
    r = int(downscale_factor)
    if input.ndim < 3:
        raise ValueError(f"pixel_unshuffle: expected an input of at least 3 dimensions, got shape {input.shape}")
    if r <= 0:
        raise ValueError(f"pixel_unshuffle: downscale_factor must be positive, got {downscale_factor}")
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise ValueError(f"pixel_unshuffle: spatial size ({h}, {w}) is not divisible by downscale_factor {r}")
    n = len(lead)
    y = lc.reshape(input, (*lead, c, h // r, r, w // r, r))
    y = lc.permute_dims(y, (*range(n), n, n + 2, n + 4, n + 1, n + 3))
    return lc.reshape(y, (*lead, c * r * r, h // r, w // r))


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """(N, C, *) with the channels seen as (groups, C / groups) and transposed to (C / groups, groups)."""
    _check(input, "channel_shuffle")
    if input.ndim < 3:
        raise ValueError(f"channel_shuffle: expected an input of at least 3 dimensions, got shape {input.shape}")
    g = int(groups)
    c = input.shape[1]
    if g <= 0 or c % g:
        raise ValueError(f"channel_shuffle: number of channels ({c}) must be divisible by groups ({groups})")
    n, rest = input.shape[0], tuple(input.shape[2:])
    y = lc.reshape(input, (n, g, c // g, *rest))
    y = lc.permute_dims(y, (0, 2, 1, *range(3, 3 + len(rest))))
    return lc.reshape(y, (n, c, *rest))


def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """The same as :func:`channel_shuffle` (PyTorch's kernel-level name)."""
    return channel_shuffle(input, groups)


# -- affine grids and sampling -----------------------------------------------------------------------------
def _base_coords(n: int, align_corners: bool, dtype: lc.DTypeLike, device: lc.DeviceLike) -> Tensor:
    """Normalised coordinates in [-1, 1] of ``n`` pixel centres (or corners with ``align_corners``)."""
    if n <= 1:
        return lc.zeros((n,), dtype=dtype, device=device)
    i = lc.arange(n, dtype=dtype, device=device)
    if align_corners:
        return i * (2.0 / (n - 1)) - 1.0
    return (i * 2.0 + 1.0) / n - 1.0


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None) -> Tensor:
    """Sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps ``theta`` (N, 2, 3) (or (N, 3, 4)),
    for an output of ``size`` (N, C, H, W) (or (N, C, D, H, W)); the last axis holds (x, y[, z])."""
    _check(theta, "affine_grid")
    size = tuple(int(s) for s in size)
    ac = bool(align_corners)
    if theta.dtype.kind != "f":
        raise TypeError(f"affine_grid: expected a floating-point theta, got {theta.dtype.name}")
    nd = len(size) - 2
    if nd not in (2, 3):
        raise ValueError(f"affine_grid: size must have 4 or 5 entries (N, C, [D,] H, W), got {size}")
    if theta.shape != (size[0], nd, nd + 1):
        raise ValueError(
            f"affine_grid: expected theta of shape {(size[0], nd, nd + 1)} for size {size}, got {theta.shape}"
        )
    spatial = size[2:][::-1]  # (W, H[, D]): x varies along the last axis
    axes = [_base_coords(n, ac, theta.dtype, theta.device) for n in spatial]
    out_shape = size[2:]
    parts = []
    for k, a in enumerate(axes):
        shape = [1] * nd
        shape[nd - 1 - k] = spatial[k]
        parts.append(lc.broadcast_to(lc.reshape(a, tuple(shape)), out_shape))
    parts.append(lc.ones(out_shape, dtype=theta.dtype, device=theta.device))
    base = lc.reshape(lc.stack(parts, axis=-1), (1, -1, nd + 1))  # (1, prod(spatial), nd + 1)
    grid = lc.matmul(base, lc.matrix_transpose(theta))  # (N, prod(spatial), nd)
    return lc.reshape(grid, (size[0], *out_shape, nd))


def _unnormalize(coord: Tensor, n: int, align_corners: bool) -> Tensor:
    if align_corners:
        return (coord + 1.0) * ((n - 1) / 2.0)
    return ((coord + 1.0) * n - 1.0) / 2.0


def _reflect(coord: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """Reflect ``coord`` into [twice_low / 2, twice_high / 2] (PyTorch's reflection padding)."""
    if twice_low == twice_high:
        return lc.zeros_like(coord)
    lo = twice_low / 2.0
    span = (twice_high - twice_low) / 2.0
    c = lc.abs(coord - lo)
    flips = lc.floor(c / span)
    extra = c - flips * span
    even = lc.remainder(flips, 2.0) == 0
    return lc.where(even, extra + lo, span - extra + lo)


def _pad_coord(coord: Tensor, n: int, padding_mode: str, align_corners: bool) -> Tensor:
    if padding_mode == "border":
        return lc.clip(coord, 0.0, float(n - 1))
    if padding_mode == "reflection":
        coord = _reflect(coord, 0, 2 * (n - 1)) if align_corners else _reflect(coord, -1, 2 * n - 1)
        return lc.clip(coord, 0.0, float(n - 1))
    return coord


def _gather(flat: Tensor, idx: list[Tensor], sizes: tuple[int, ...], out_shape: tuple[int, ...]) -> Tensor:
    """Values of ``flat`` (N, C, prod(sizes)) at integer positions ``idx`` (per axis, slowest first), zero
    outside the input; each index tensor is (N, *out)."""
    valid = None
    lin = None
    for i, n in zip(idx, sizes):
        ok = lc.logical_and(i >= 0, i <= n - 1)
        valid = ok if valid is None else lc.logical_and(valid, ok)
        ic = lc.clip(i, 0, n - 1)
        lin = ic if lin is None else lin * n + ic
    n_batch, c = flat.shape[0], flat.shape[1]
    lin = lc.reshape(lc.astype(lin, lc.int64), (n_batch, 1, -1))
    v = lc.take_along_axis(flat, lc.broadcast_to(lin, (n_batch, c, lin.shape[-1])), axis=2)
    v = lc.reshape(v, (n_batch, c, *out_shape))
    mask = lc.astype(lc.expand_dims(valid, axis=1), flat.dtype)
    return v * mask


def _cubic_weights(t: Tensor) -> list[Tensor]:
    """Keys' cubic convolution weights (A = -0.75) of the four taps around a point at fraction ``t``."""
    a = -0.75

    def near(x: Tensor) -> Tensor:  # |x| <= 1
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0

    def far(x: Tensor) -> Tensor:  # 1 < |x| < 2
        return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a

    return [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]


@autocast_op("grid_sampler", "grid_sample")
def grid_sample(
    input: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> Tensor:
    """Sample ``input`` (N, C, H, W) at the normalised (x, y) positions of ``grid`` (N, Ho, Wo, 2), or a 5-D
    input at (x, y, z) positions of a (N, Do, Ho, Wo, 3) grid.

    Args:
        mode: ``"bilinear"`` (trilinear for 5-D), ``"nearest"`` or ``"bicubic"`` (4-D only).
        padding_mode: values outside the input: ``"zeros"``, ``"border"`` (edge values) or ``"reflection"``.
        align_corners: -1 and 1 are the corner pixels' centres (True) or their outer edges (False, default).
    """
    _check(input, "grid_sample")
    _check(grid, "grid_sample")
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"grid_sample: mode must be 'bilinear', 'nearest' or 'bicubic', got {mode!r}")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"grid_sample: padding_mode must be 'zeros', 'border' or 'reflection', got {padding_mode!r}")
    nd = input.ndim - 2
    if nd not in (2, 3) or grid.ndim != input.ndim or grid.shape[-1] != nd or grid.shape[0] != input.shape[0]:
        raise ValueError(
            "grid_sample: expected input (N, C, H, W) with grid (N, Ho, Wo, 2), or input (N, C, D, H, W) with "
            f"grid (N, Do, Ho, Wo, 3); got input {input.shape} and grid {grid.shape}"
        )
    if mode == "bicubic" and nd != 2:
        raise ValueError("grid_sample: bicubic interpolation only supports 4-D input")
    ac = bool(align_corners)
    sizes = tuple(input.shape[2:])  # (H, W) or (D, H, W): slowest first
    out_shape = tuple(grid.shape[1:-1])
    flat = lc.reshape(input, (input.shape[0], input.shape[1], -1))
    # grid's last axis is (x, y[, z]): coordinate k belongs to spatial axis nd - 1 - k
    coords = [_unnormalize(grid[..., nd - 1 - a], sizes[a], ac) for a in range(nd)]
    if mode == "bicubic":
        h, w = sizes
        fy, fx = lc.floor(coords[0]), lc.floor(coords[1])
        wy, wx = _cubic_weights(coords[0] - fy), _cubic_weights(coords[1] - fx)
        out = None
        for i in range(4):
            yi = fy + (i - 1)
            if padding_mode != "zeros":
                yi = _pad_coord(yi, h, padding_mode, ac)
            for j in range(4):
                xj = fx + (j - 1)
                if padding_mode != "zeros":
                    xj = _pad_coord(xj, w, padding_mode, ac)
                v = _gather(flat, [yi.detach(), xj.detach()], sizes, out_shape)
                term = v * lc.expand_dims(wy[i] * wx[j], axis=1)
                out = term if out is None else out + term
        return out
    coords = [_pad_coord(c, n, padding_mode, ac) for c, n in zip(coords, sizes)]
    if mode == "nearest":
        idx = [lc.round(c).detach() for c in coords]
        return _gather(flat, idx, sizes, out_shape)
    lo = [lc.floor(c).detach() for c in coords]
    frac = [c - f for c, f in zip(coords, lo)]
    out = None
    for corner in range(2**nd):
        bits = [(corner >> (nd - 1 - a)) & 1 for a in range(nd)]
        idx = [f + b for f, b in zip(lo, bits)]
        weight = None
        for fr, b in zip(frac, bits):
            wa = fr if b else 1.0 - fr
            weight = wa if weight is None else weight * wa
        term = _gather(flat, idx, sizes, out_shape) * lc.expand_dims(weight, axis=1)
        out = term if out is None else out + term
    return out
