"""Convolutions as im2col + one matmul: conv1d/2d/3d, transposed convs, unfold and fold.

``Im2col`` gathers every kernel offset's strided view of the (padded) input into one tensor of
shape ``(N, C, K, *out)``; its adjoint ``Col2im`` scatter-adds such a tensor back. Each is the
other's backward, so gradients of any order come from plain Lucid ops.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import lucid_core as lc
from lucid_core import Tensor, kernels
from lucid_core._forward_ad import jvp_from_vjp
from lucid_core.amp import autocast_op

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "unfold", "fold",
    "conv_tbc",
]  # fmt: skip

_LAYOUT = {1: "(N, C, L)", 2: "(N, C, H, W)", 3: "(N, C, D, H, W)"}
Pads = tuple[tuple[int, int], ...]


def _ntuple(value: int | Sequence[int], n: int, what: str, name: str) -> tuple[int, ...]:
    """``value`` repeated ``n`` times, or the given ``n`` values, as ints."""
    if isinstance(value, int):
        return (int(value),) * n
    out = tuple(int(v) for v in value)
    if len(out) == 1:
        return out * n
    if len(out) != n:
        raise ValueError(f"{name}: {what} must be an int or {n} ints, got {tuple(value)}")
    return out


def _set(ctx: Any, z: Any, key: tuple[Any, ...], value: Any) -> Any:
    """``z[key] = value`` through the backend's setitem kernel (immutable arrays return a new one)."""
    return kernels.call(ctx.device, "setitem", z, key, value)


class Im2col(lc.Function):
    """(N, C, *S) -> (N, C, K, *out): each kernel offset's strided view of the padded input."""

    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x, kernel, stride, dilation, pads, out, value):
        return kernels.call(ctx.device, "im2col", x, kernel, stride, dilation, pads, out, value)

    @staticmethod
    def backward(ctx, g):
        x, kernel, stride, dilation, pads, _, _ = ctx.inputs
        return Col2im.apply(g, kernel, stride, dilation, pads, tuple(x.shape[2:])), None, None, None, None, None, None


class Col2im(lc.Function):
    """(N, C, K, *out) -> (N, C, *size): scatter-add each offset's values back (the adjoint of Im2col)."""

    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, cols, kernel, stride, dilation, pads, size):
        return kernels.call(ctx.device, "col2im", cols, kernel, stride, dilation, pads, size)

    @staticmethod
    def backward(ctx, g):
        cols, kernel, stride, dilation, pads, _ = ctx.inputs
        return Im2col.apply(g, kernel, stride, dilation, pads, tuple(cols.shape[3:]), 0.0), None, None, None, None, None


# The convolution is bilinear in (x, w): B(x, w). Its two gradient products are
#   input_grad(gy, w) = d<gy, B(x, w)>/dx   and   weight_grad(x, gy) = d<gy, B(x, w)>/dw,
# and each of the three is the others' derivative, so gradients of every order are these three ops.
class _Conv(lc.Function):
    """``B(x, w)``: the ``conv`` kernel."""

    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x, w, stride, dilation, pads, groups):
        return kernels.call(ctx.device, "conv", x, w, stride, dilation, pads, groups)

    @staticmethod
    def backward(ctx, gy):
        x, w, stride, dilation, pads, groups = ctx.inputs
        need_x, need_w = ctx.needs_input_grad[:2]  # the first layer's input (the data) needs none
        gx = _ConvInputGrad.apply(gy, w, tuple(x.shape[2:]), stride, dilation, pads, groups) if need_x else None
        gw = _ConvWeightGrad.apply(x, gy, tuple(w.shape[2:]), stride, dilation, pads, groups) if need_w else None
        return gx, gw, None, None, None, None

    @staticmethod
    def backward_raw(ctx, gy):
        x, w, stride, dilation, pads, groups = ctx.inputs
        return (*_conv_grads_raw(ctx, gy, x, w, stride, dilation, pads, groups), None, None, None, None)


def _conv_grads_raw(ctx: Any, gy: Any, x: Tensor, w: Tensor, *geometry: Any) -> tuple[Any, Any]:
    """(gx, gw) of a convolution on the backend's arrays: the two kernels ``_ConvInputGrad`` and
    ``_ConvWeightGrad`` run (first-order backward, no graph kept)."""
    stride, dilation, pads, groups = geometry
    dev = ctx.device
    gx = gw = None
    if x._requires_grad:
        gx = kernels.call(dev, "conv_input_grad", gy, w._data, tuple(x.shape[2:]), stride, dilation, pads, groups)
    if w._requires_grad:
        gw = kernels.call(dev, "conv_weight_grad", x._data, gy, tuple(w.shape[2:]), stride, dilation, pads, groups)
    return gx, gw


class _ConvInputGrad(lc.Function):
    """d<gy, B(x, w)>/dx for an input of spatial ``size``: the ``conv_input_grad`` kernel."""

    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, gy, w, size, stride, dilation, pads, groups):
        return kernels.call(ctx.device, "conv_input_grad", gy, w, size, stride, dilation, pads, groups)

    @staticmethod
    def backward(ctx, h):
        gy, w, _, stride, dilation, pads, groups = ctx.inputs
        need_gy, need_w = ctx.needs_input_grad[:2]
        d_gy = _Conv.apply(h, w, stride, dilation, pads, groups) if need_gy else None
        d_w = _ConvWeightGrad.apply(h, gy, tuple(w.shape[2:]), stride, dilation, pads, groups) if need_w else None
        return d_gy, d_w, None, None, None, None, None


class _ConvWeightGrad(lc.Function):
    """d<gy, B(x, w)>/dw for a kernel of spatial size ``kernel``: the ``conv_weight_grad`` kernel."""

    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x, gy, kernel, stride, dilation, pads, groups):
        return kernels.call(ctx.device, "conv_weight_grad", x, gy, kernel, stride, dilation, pads, groups)

    @staticmethod
    def backward(ctx, h):
        x, gy, _, stride, dilation, pads, groups = ctx.inputs
        need_x, need_gy = ctx.needs_input_grad[:2]
        d_x = _ConvInputGrad.apply(gy, h, tuple(x.shape[2:]), stride, dilation, pads, groups) if need_x else None
        d_gy = _Conv.apply(x, h, stride, dilation, pads, groups) if need_gy else None
        return d_x, d_gy, None, None, None, None, None


class _ConvBias(lc.Function):
    """``B(x, w) + b`` in one kernel (``conv_bias``: the bias rides in the GEMM as a ones row); its gradients
    are the bilinear products above and ``b``'s channel sum, all Lucid ops."""

    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x, w, b, stride, dilation, pads, groups):
        return kernels.call(ctx.device, "conv_bias", x, w, b, stride, dilation, pads, groups)

    @staticmethod
    def backward(ctx, gy):
        x, w, _, stride, dilation, pads, groups = ctx.inputs
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        gx = _ConvInputGrad.apply(gy, w, tuple(x.shape[2:]), stride, dilation, pads, groups) if need_x else None
        gw = _ConvWeightGrad.apply(x, gy, tuple(w.shape[2:]), stride, dilation, pads, groups) if need_w else None
        gb = _ChannelSum.apply(gy) if need_b else None
        return gx, gw, gb, None, None, None, None

    @staticmethod
    def backward_raw(ctx, gy):
        x, w, b, stride, dilation, pads, groups = ctx.inputs
        gx, gw = _conv_grads_raw(ctx, gy, x, w, stride, dilation, pads, groups)
        gb = kernels.call(ctx.device, "channel_sum", gy) if b._requires_grad else None
        return gx, gw, gb, None, None, None, None


class _ChannelSum(lc.Function):
    """(N, C, *S) -> (C,): the sum over every axis but the channels (a bias's gradient), the ``channel_sum``
    kernel; its gradient broadcasts back."""

    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, g):
        return kernels.call(ctx.device, "channel_sum", g)

    @staticmethod
    def backward(ctx, h):
        g = ctx.inputs[0]
        return lc.broadcast_to(lc.reshape(h, (1, g.shape[1]) + (1,) * (g.ndim - 2)), tuple(g.shape))


def out_size(size: int, kernel: int, stride: int, pad: int, dilation: int) -> int:
    """Output length of a sliding window over ``size`` elements padded by ``pad`` in total."""
    return (size + pad - dilation * (kernel - 1) - 1) // stride + 1


def im2col(
    x: Tensor,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    dilation: tuple[int, ...],
    pads: Pads,
    out: tuple[int, ...] | None = None,
    value: float = 0.0,
) -> Tensor:
    """Sliding windows of ``x`` (N, C, *S) as (N, C, K, *out), padding with ``value``."""
    if out is None:
        out = tuple(
            out_size(s, k, st, b + a, d) for s, k, st, (b, a), d in zip(x.shape[2:], kernel, stride, pads, dilation)
        )
    if all(k == 1 for k in kernel) and all(s == 1 for s in stride) and not any(b or a for b, a in pads):
        return lc.expand_dims(x, axis=2)
    return Im2col.apply(x, tuple(kernel), tuple(stride), tuple(dilation), tuple(pads), tuple(out), value)


def col2im(
    cols: Tensor,
    size: tuple[int, ...],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    dilation: tuple[int, ...],
    pads: Pads,
) -> Tensor:
    """Sum sliding windows (N, C, K, *out) back into an (N, C, *size) tensor (the adjoint of ``im2col``)."""
    return Col2im.apply(cols, tuple(kernel), tuple(stride), tuple(dilation), tuple(pads), tuple(size))


def _check_input(x: Any, nd: int, name: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a Tensor input, got {type(x).__name__}")
    if x.ndim != nd + 2:
        raise ValueError(f"{name}: expected input with {nd + 2} dimensions {_LAYOUT[nd]}, got shape {x.shape}")


def _conv_pads(
    padding: str | int | Sequence[int],
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    dilation: tuple[int, ...],
    name: str,
) -> Pads:
    nd = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * nd
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided convolutions (stride={stride})")
            total = [d * (k - 1) for k, d in zip(kernel, dilation)]
            return tuple((t // 2, t - t // 2) for t in total)
        raise ValueError(f"{name}: padding must be 'valid', 'same', an int or a tuple of ints, got {padding!r}")
    p = _ntuple(padding, nd, "padding", name)
    if any(v < 0 for v in p):
        raise ValueError(f"{name}: padding must be non-negative, got {p}")
    return tuple((v, v) for v in p)


def _positive(values: tuple[int, ...], what: str, name: str) -> None:
    if any(v <= 0 for v in values):
        raise ValueError(f"{name}: {what} must be positive, got {values}")


def _convnd(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: int | Sequence[int],
    padding: str | int | Sequence[int],
    dilation: int | Sequence[int],
    groups: int,
    nd: int,
    name: str,
) -> Tensor:
    _check_input(x, nd, name)
    if not isinstance(weight, Tensor) or weight.ndim != nd + 2:
        shape = getattr(weight, "shape", None)
        raise ValueError(
            f"{name}: expected a weight with {nd + 2} dimensions (out, in/groups, *kernel), got shape {shape}"
        )
    if groups < 1:
        raise ValueError(f"{name}: groups must be a positive int, got {groups}")
    n, c = x.shape[:2]
    o, cg = weight.shape[:2]
    if c != cg * groups:
        raise ValueError(f"{name}: input has {c} channels but weight expects {cg * groups} (groups={groups})")
    if o % groups:
        raise ValueError(f"{name}: out channels {o} are not divisible by groups={groups}")
    kernel = tuple(weight.shape[2:])
    st = _ntuple(stride, nd, "stride", name)
    dl = _ntuple(dilation, nd, "dilation", name)
    _positive(st, "stride", name)
    _positive(dl, "dilation", name)
    pads = _conv_pads(padding, kernel, st, dl, name)
    out = tuple(out_size(s, k, t, b + a, d) for s, k, t, (b, a), d in zip(x.shape[2:], kernel, st, pads, dl))
    if any(v <= 0 for v in out):
        raise ValueError(
            f"{name}: input of spatial size {x.shape[2:]} with padding {pads} is smaller than the kernel "
            f"{kernel} (dilation {dl})"
        )
    k = 1
    for v in kernel:
        k *= v
    p = 1
    for v in out:
        p *= v
    if x.dtype.kind == "f" and weight.dtype == x.dtype:
        if isinstance(bias, Tensor) and bias.dtype == x.dtype and tuple(bias.shape) == (o,):
            return _ConvBias.apply(x, weight, bias, st, dl, pads, groups)
        y = _Conv.apply(x, weight, st, dl, pads, groups)
    else:  # complex (conjugate gradients) or mixed dtypes: composed from Lucid ops
        cols = lc.reshape(im2col(x, kernel, st, dl, pads, out), (n, groups, cg * k, p))
        w = lc.reshape(weight, (groups, o // groups, cg * k))
        y = lc.reshape(lc.matmul(w, cols), (n, o, *out))
    if bias is not None:
        y = y + lc.reshape(bias, (o,) + (1,) * nd)
    return y


@autocast_op("conv1d")
def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | Sequence[int] = 1,
    padding: str | int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
) -> Tensor:
    """1-D cross-correlation of ``input`` (N, C, L) with ``weight`` (out, C/groups, k)."""
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


@autocast_op("conv2d")
def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | Sequence[int] = 1,
    padding: str | int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
) -> Tensor:
    """2-D cross-correlation of ``input`` (N, C, H, W) with ``weight`` (out, C/groups, kh, kw).

    Args:
        padding: an int, one int per side-pair, ``"valid"`` (none) or ``"same"`` (output size = input size).
    """
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


@autocast_op("conv3d")
def conv3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | Sequence[int] = 1,
    padding: str | int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
) -> Tensor:
    """3-D cross-correlation of ``input`` (N, C, D, H, W) with ``weight`` (out, C/groups, kd, kh, kw)."""
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def transposed_out_size(
    size: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    output_padding: Sequence[int],
    dilation: Sequence[int],
) -> tuple[int, ...]:
    """Spatial output size of a transposed convolution."""
    return tuple(
        (s - 1) * st - 2 * p + d * (k - 1) + op + 1
        for s, k, st, p, op, d in zip(size, kernel, stride, padding, output_padding, dilation)
    )


def _conv_transposend(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: int | Sequence[int],
    padding: int | Sequence[int],
    output_padding: int | Sequence[int],
    groups: int,
    dilation: int | Sequence[int],
    nd: int,
    name: str,
) -> Tensor:
    _check_input(x, nd, name)
    if not isinstance(weight, Tensor) or weight.ndim != nd + 2:
        shape = getattr(weight, "shape", None)
        raise ValueError(
            f"{name}: expected a weight with {nd + 2} dimensions (in, out/groups, *kernel), got shape {shape}"
        )
    if groups < 1:
        raise ValueError(f"{name}: groups must be a positive int, got {groups}")
    n, c = x.shape[:2]
    if c != weight.shape[0]:
        raise ValueError(f"{name}: input has {c} channels but weight expects {weight.shape[0]} (groups={groups})")
    if c % groups:
        raise ValueError(f"{name}: in channels {c} are not divisible by groups={groups}")
    og = weight.shape[1]
    kernel = tuple(weight.shape[2:])
    st = _ntuple(stride, nd, "stride", name)
    dl = _ntuple(dilation, nd, "dilation", name)
    _positive(st, "stride", name)
    _positive(dl, "dilation", name)
    if isinstance(padding, str):
        raise ValueError(f"{name}: padding must be an int or a tuple of ints, got {padding!r}")
    pd = _ntuple(padding, nd, "padding", name)
    op = _ntuple(output_padding, nd, "output_padding", name)
    for o, s, d in zip(op, st, dl):
        if not 0 <= o < max(s, d):
            raise ValueError(f"{name}: output_padding {op} must be smaller than stride {st} or dilation {dl}")
    size = transposed_out_size(x.shape[2:], kernel, st, pd, op, dl)
    if any(v <= 0 for v in size):
        raise ValueError(f"{name}: the output would have non-positive spatial size {size}")
    k = 1
    for v in kernel:
        k *= v
    cg = c // groups
    w = lc.matrix_transpose(lc.reshape(weight, (groups, cg, og * k)))  # (G, og*K, cg)
    xs = lc.reshape(x, (n, groups, cg, -1))
    cols = lc.reshape(lc.matmul(w, xs), (n, groups * og, k, *tuple(x.shape[2:])))
    y = col2im(cols, size, kernel, st, dl, tuple((p, p) for p in pd))
    if bias is not None:
        y = y + lc.reshape(bias, (groups * og,) + (1,) * nd)
    return y


@autocast_op("conv_transpose1d")
def conv_transpose1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    output_padding: int | Sequence[int] = 0,
    groups: int = 1,
    dilation: int | Sequence[int] = 1,
) -> Tensor:
    """1-D transposed convolution of ``input`` (N, C, L) with ``weight`` (C, out/groups, k)."""
    return _conv_transposend(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 1, "conv_transpose1d"
    )


@autocast_op("conv_transpose2d")
def conv_transpose2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    output_padding: int | Sequence[int] = 0,
    groups: int = 1,
    dilation: int | Sequence[int] = 1,
) -> Tensor:
    """2-D transposed convolution (the gradient of conv2d w.r.t. its input) with ``weight`` (C, out/groups, kh, kw)."""
    return _conv_transposend(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 2, "conv_transpose2d"
    )


@autocast_op("conv_transpose3d")
def conv_transpose3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    output_padding: int | Sequence[int] = 0,
    groups: int = 1,
    dilation: int | Sequence[int] = 1,
) -> Tensor:
    """3-D transposed convolution with ``weight`` (C, out/groups, kd, kh, kw)."""
    return _conv_transposend(
        input, weight, bias, stride, padding, output_padding, groups, dilation, 3, "conv_transpose3d"
    )


def unfold(
    input: Tensor,
    kernel_size: int | Sequence[int],
    dilation: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    stride: int | Sequence[int] = 1,
) -> Tensor:
    """Sliding blocks of ``input`` (N, C, H, W) as columns: (N, C * kh * kw, L) (im2col)."""
    _check_input(input, 2, "unfold")
    kernel = _ntuple(kernel_size, 2, "kernel_size", "unfold")
    dl = _ntuple(dilation, 2, "dilation", "unfold")
    st = _ntuple(stride, 2, "stride", "unfold")
    pd = _ntuple(padding, 2, "padding", "unfold")
    for v, what in ((kernel, "kernel_size"), (dl, "dilation"), (st, "stride")):
        _positive(v, what, "unfold")
    pads = tuple((p, p) for p in pd)
    out = tuple(out_size(s, k, t, 2 * p, d) for s, k, t, p, d in zip(input.shape[2:], kernel, st, pd, dl))
    if any(v <= 0 for v in out):
        raise ValueError(f"unfold: input of spatial size {input.shape[2:]} is smaller than the kernel {kernel}")
    n, c = input.shape[:2]
    return lc.reshape(im2col(input, kernel, st, dl, pads, out), (n, c * kernel[0] * kernel[1], out[0] * out[1]))


def fold(
    input: Tensor,
    output_size: int | Sequence[int],
    kernel_size: int | Sequence[int],
    dilation: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    stride: int | Sequence[int] = 1,
) -> Tensor:
    """Sum columns (N, C * kh * kw, L) back into an (N, C, H, W) image (col2im, the adjoint of ``unfold``)."""
    if not isinstance(input, Tensor) or input.ndim != 3:
        raise ValueError(
            f"fold: expected input with 3 dimensions (N, C * kh * kw, L), got shape {getattr(input, 'shape', None)}"
        )
    size = _ntuple(output_size, 2, "output_size", "fold")
    kernel = _ntuple(kernel_size, 2, "kernel_size", "fold")
    dl = _ntuple(dilation, 2, "dilation", "fold")
    st = _ntuple(stride, 2, "stride", "fold")
    pd = _ntuple(padding, 2, "padding", "fold")
    for v, what in ((kernel, "kernel_size"), (dl, "dilation"), (st, "stride")):
        _positive(v, what, "fold")
    k = kernel[0] * kernel[1]
    n, ck, length = input.shape
    if ck % k:
        raise ValueError(f"fold: input's dimension 1 ({ck}) is not divisible by the kernel's size {kernel} ({k})")
    out = tuple(out_size(s, kk, t, 2 * p, d) for s, kk, t, p, d in zip(size, kernel, st, pd, dl))
    if out[0] * out[1] != length:
        raise ValueError(
            f"fold: input has {length} blocks but output_size {size} with kernel {kernel}, padding {pd}, "
            f"stride {st} and dilation {dl} gives {out[0]} x {out[1]} = {out[0] * out[1]}"
        )
    cols = lc.reshape(input, (n, ck // k, k, *out))
    return col2im(cols, size, kernel, st, dl, tuple((p, p) for p in pd))


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """1-D convolution over a time-major sequence: ``input`` (T, B, C_in), ``weight`` (K, C_in, C_out),
    ``bias`` (C_out,), zero padding ``pad`` on both ends of T; the result is (T + 2 * pad - K + 1, B, C_out)."""
    if not isinstance(input, Tensor) or input.ndim != 3:
        raise ValueError(f"conv_tbc: expected a 3-D input (T, B, C_in), got {getattr(input, 'shape', None)}")
    if weight.ndim != 3 or weight.shape[1] != input.shape[2]:
        raise ValueError(f"conv_tbc: weight must be (K, {input.shape[2]}, C_out), got shape {weight.shape}")
    x = lc.permute_dims(input, (1, 2, 0))  # (B, C_in, T)
    w = lc.permute_dims(weight, (2, 1, 0))  # (C_out, C_in, K)
    y = conv1d(x, w, bias, padding=pad)
    return lc.permute_dims(y, (2, 0, 1))
