"""Functional forms of the non-convolutional layers: linear, embedding, dropout, normalisation, padding."""

from __future__ import annotations

__all__ = [
    "linear", "bilinear", "embedding", "one_hot", "pad", "normalize", "cosine_similarity", "pairwise_distance",
    "dropout", "dropout1d", "dropout2d", "alpha_dropout",
    "batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm",
]  # fmt: skip

import math
from collections.abc import Sequence

import lucid_core as lc
from lucid_core import Tensor, kernels
from lucid_core.ops._index_checks import IndexOutOfRangeError, index_bounds


def _check(x: object, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type(x).__name__}")
    return x


# -- linear maps ------------------------------------------------------------------------------------
class _Linear(lc.Function):
    """x (..., in) @ weight.T + bias in one node; gradients come out in each input's own layout.

    The leading axes are folded into one inside the node (one 2-D product, no Reshape nodes around it).
    Through the generic ops the weight's gradient is ``(x.T @ g).T``, a transposed (Fortran-order) array
    that then makes every optimizer update a strided loop; here it is ``g.T @ x``, C-ordered.
    """

    native = True

    @staticmethod
    def forward(ctx, x, weight, bias):
        xp = ctx.xp
        x2 = x if x.ndim == 2 else xp.reshape(x, (-1, x.shape[-1]))
        y = kernels.call(ctx.device, "linear", x2, weight, bias)
        return y if x.ndim == 2 else xp.reshape(y, (*x.shape[:-1], weight.shape[0]))

    @staticmethod
    def backward(ctx, g):
        x, weight, bias = ctx.inputs
        g2 = g if g.ndim == 2 else lc.reshape(g, (-1, g.shape[-1]))
        gx = gw = gb = None
        if x.requires_grad:
            gx = lc.matmul(g2, weight)
            gx = gx if x.ndim == 2 else lc.reshape(gx, x.shape)
        if weight.requires_grad:
            x2 = x if x.ndim == 2 else lc.reshape(x, (-1, x.shape[-1]))
            gw = lc.matmul(lc.matrix_transpose(g2), x2)
        if bias is not None and bias.requires_grad:
            gb = lc.sum(g2, axis=0)
        return gx, gw, gb

    @staticmethod
    def backward_raw(ctx, g):
        # backward's calls on the backend's arrays (Matmul, PermuteDims, Reshape and Sum run these), for real floats
        x, weight, bias = ctx.inputs
        if g.dtype not in ctx.device.real_natives:
            return NotImplemented
        xp = ctx.xp
        g2 = g if g.ndim == 2 else xp.reshape(g, (-1, g.shape[-1]))
        gx = gw = gb = None
        if x._requires_grad:
            gx = xp.matmul(g2, weight._data)
            gx = gx if x.ndim == 2 else xp.reshape(gx, tuple(x._data.shape))
        if weight._requires_grad:
            x2 = x._data if x.ndim == 2 else xp.reshape(x._data, (-1, x.shape[-1]))
            gw = xp.matmul(xp.permute_dims(g2, (1, 0)), x2)
        if bias is not None and bias._requires_grad:
            gb = xp.sum(g2, axis=(0,), keepdims=False, dtype=None)
        return gx, gw, gb


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight.T + bias, with weight laid out (out_features, in_features)."""
    _check(x, "linear")
    xs, ws = x.shape, weight.shape  # (each property builds a tuple: read once, as every layer calls this)
    if not xs or xs[-1] != ws[-1]:
        raise ValueError(
            f"linear: input's last dimension is {xs[-1] if xs else 'missing'} but weight of shape "
            f"{ws} expects {ws[-1]} features"
        )
    dtype = x.dtype
    if (
        len(ws) == 2
        and len(xs) >= 2
        and xs[-1] > 0
        and dtype is weight.dtype
        and (bias is None or (bias.dtype is dtype and bias.shape == ws[:1]))
    ):
        # one 2-D product over all leading axes: a batched (..., L, in) @ (in, out) runs one small GEMM per
        # batch entry forward and sums a (..., in, out) stack for the weight's gradient
        return _Linear.apply(x, weight, bias)
    y = lc.matmul(x, lc.matrix_transpose(weight)) if weight.ndim == 2 else lc.matmul(x, weight)
    return y if bias is None else y + bias


def bilinear(x1: Tensor, x2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y_k = x1 @ weight[k] @ x2 + bias_k, with weight of shape (out, in1, in2)."""
    _check(x1, "bilinear")
    _check(x2, "bilinear")
    out, in1, in2 = weight.shape
    if x1.shape[-1] != in1 or x2.shape[-1] != in2 or x1.shape[:-1] != x2.shape[:-1]:
        raise ValueError(
            f"bilinear: inputs of shapes {x1.shape} and {x2.shape} do not fit weight {weight.shape}; expected "
            f"(..., {in1}) and (..., {in2}) with the same leading dimensions"
        )
    lead = x1.shape[:-1]
    a = x1.reshape(-1, in1)
    b = x2.reshape(-1, in2)
    w = lc.permute_dims(weight, (1, 0, 2)).reshape(in1, out * in2)
    y = lc.sum((a @ w).reshape(-1, out, in2) * lc.expand_dims(b, axis=1), axis=-1)
    if bias is not None:
        y = y + bias
    return y.reshape(*lead, out)


def embedding(x: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0) -> Tensor:  # fmt: skip
    """Rows of ``weight`` picked by the integer tensor ``x``; the ``padding_idx`` row gets no gradient."""
    _check(x, "embedding")
    if x.dtype.kind not in "iu":
        raise TypeError(f"embedding: indices must be an integer tensor, got {x.dtype.name}")
    n = weight.shape[0]
    if x.size:
        lo, hi = index_bounds(x)  # one read-back of both
        if lo < 0 or hi >= n:  # negative indices too, as PyTorch (they are not counted from the end)
            raise IndexOutOfRangeError(
                f"embedding: index out of range: indices span [{lo}, {hi}] but there are {n} rows "
                f"(expected 0 <= index < {n})"
            )
    if max_norm is not None:
        # PyTorch renormalises, in place, only the rows this lookup touches
        with lc.no_grad():
            idx = lc.remainder(x.reshape(-1), n)
            used = lc.any(lc.expand_dims(idx, axis=-1) == lc.arange(n, dtype=idx.dtype, device=idx.device), axis=0)
            norms = _p_norm(weight.detach(), norm_type, -1, True)
            too_big = lc.logical_and(lc.expand_dims(used, axis=-1), norms > max_norm)
            scale = lc.where(too_big, max_norm / (norms + 1e-7), lc.ones_like(norms))
            weight.copy_(weight.detach() * scale)
    out = weight[x]
    if padding_idx is not None:
        if padding_idx < 0:
            padding_idx += n
        keep = lc.expand_dims(x != padding_idx, axis=-1)
        out = lc.where(keep, out, out.detach())
    return out


def one_hot(x: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding along a new last axis (``num_classes=-1``: max(x) + 1)."""
    _check(x, "one_hot")
    if x.dtype.kind not in "iu":
        raise TypeError(f"one_hot: only integer tensors are supported, got {x.dtype.name}")
    if num_classes == -1:
        if x.size == 0:
            raise ValueError("one_hot: cannot infer the number of classes from an empty tensor; pass num_classes")
        num_classes = int(lc.max(x).item()) + 1
    if x.size:
        lo, hi = int(lc.min(x).item()), int(lc.max(x).item())
        if lo < 0 or hi >= num_classes:
            raise ValueError(f"one_hot: class values must be in [0, {num_classes}), got values in [{lo}, {hi}]")
    classes = lc.arange(num_classes, dtype=x.dtype, device=x.device)
    return lc.astype(lc.expand_dims(x, axis=-1) == classes, lc.int64)


def pad(x: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad with PyTorch's tuple: ``(left, right)`` for the last axis, then the one before, and so on.

    ``mode`` is ``"constant"`` (negative amounts crop), ``"reflect"``, ``"replicate"`` or ``"circular"``.
    """
    _check(x, "pad")
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise ValueError(f"pad: padding length {len(pad)} must be even and at most 2 * ndim ({2 * x.ndim})")
    modes = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "circular"}
    if mode not in modes:
        raise ValueError(f"pad: unknown mode {mode!r}; expected one of {sorted(modes)}")
    if mode != "constant" and value:
        raise ValueError(f"pad: padding value {value} is only allowed in constant mode, not {mode!r}")
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    if any(b < 0 or a < 0 for b, a in widths):
        if mode != "constant":
            raise ValueError(f"pad: negative padding {pad} is only supported in constant mode")
        key = tuple(slice(max(-b, 0), s - max(-a, 0)) for (b, a), s in zip(widths, x.shape))
        x = x[key]
        widths = [(max(b, 0), max(a, 0)) for b, a in widths]
    if all(b == 0 and a == 0 for b, a in widths):
        return x
    return lc.pad(x, widths, mode=modes[mode], value=0.0 if value is None else value)


# -- norms and distances --------------------------------------------------------------------------------
def _p_norm(x: Tensor, p: float, dim: int | Sequence[int], keepdim: bool) -> Tensor:
    """The p-norm along ``dim``: ``lc.linalg.vector_norm``, whose gradient is 0 (not NaN) at a zero vector."""
    axis = tuple(dim) if isinstance(dim, Sequence) else dim
    return lc.linalg.vector_norm(x, axis=axis, keepdims=keepdim, ord=p)


def normalize(x: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """x / max(||x||_p, eps) along ``dim``."""
    _check(x, "normalize")
    return x / lc.maximum(_p_norm(x, p, dim, True), eps)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim`` (each norm clamped to ``eps``)."""
    _check(x1, "cosine_similarity")
    _check(x2, "cosine_similarity")
    x1, x2 = lc.broadcast_arrays(x1, x2)
    n1 = lc.maximum(_p_norm(x1, 2, dim, True), eps)
    n2 = lc.maximum(_p_norm(x2, 2, dim, True), eps)
    return lc.sum((x1 / n1) * (x2 / n2), axis=dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """||x1 - x2 + eps||_p along the last axis."""
    _check(x1, "pairwise_distance")
    d = x1 - x2 + eps
    return _p_norm(d, p, -1, keepdim)


# -- dropout ------------------------------------------------------------------------------------------
def _check_p(p: float, name: str) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name}: dropout probability has to be between 0 and 1, but got {p}")


def dropout(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by 1 / (1 - p) (identity when not training)."""
    _check(x, "dropout")
    _check_p(p, "dropout")
    if not training or p == 0:
        return x
    if p == 1:
        return x * 0.0
    keep = lc.bernoulli(1.0 - p, x.shape, dtype=x.dtype, device=x.device)
    return x * keep * (1.0 / (1.0 - p))


def _channel_dropout(x: Tensor, p: float, training: bool, batched_ndim: int, name: str) -> Tensor:
    _check(x, name)
    _check_p(p, name)
    if x.ndim not in (batched_ndim - 1, batched_ndim):
        raise ValueError(f"{name}: expected a {batched_ndim - 1}-D or {batched_ndim}-D input, got shape {x.shape}")
    if not training or p == 0:
        return x
    if p == 1:
        return x * 0.0
    lead = 2 if x.ndim == batched_ndim else 1
    shape = x.shape[:lead] + (1,) * (x.ndim - lead)
    keep = lc.bernoulli(1.0 - p, shape, dtype=x.dtype, device=x.device)
    return x * keep * (1.0 / (1.0 - p))


def dropout1d(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Zero whole channels of an (N, C, L) or (C, L) input with probability ``p``."""
    return _channel_dropout(x, p, training, 3, "dropout1d")


def dropout2d(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Zero whole channels of an (N, C, H, W) or (C, H, W) input with probability ``p``."""
    return _channel_dropout(x, p, training, 4, "dropout2d")


def alpha_dropout(x: Tensor, p: float = 0.5, training: bool = False) -> Tensor:
    """Dropout that keeps SELU's self-normalising mean and variance."""
    _check(x, "alpha_dropout")
    _check_p(p, "alpha_dropout")
    if not training or p == 0:
        return x
    if p == 1:
        return x * 0.0
    alpha_p = -1.7580993408473766
    keep = lc.bernoulli(1.0 - p, x.shape, dtype=x.dtype, device=x.device)
    a = ((1 - p) * (1 + p * alpha_p**2)) ** -0.5
    b = -a * alpha_p * p
    return (x * keep + alpha_p * (1 - keep)) * a + b


# -- normalisation ------------------------------------------------------------------------------------
def _affine(y: Tensor, weight: Tensor | None, bias: Tensor | None, shape: tuple[int, ...]) -> Tensor:
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def _moments(x: Tensor, axes: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    mean = lc.mean(x, axis=axes, keepdims=True)
    d = x - mean
    return mean, lc.mean(d * d, axis=axes, keepdims=True)


def batch_norm(
    x: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise over every axis but 1 (channels) with batch statistics (training) or running ones.

    In training the running buffers, when given, are updated in place:
    ``running = (1 - momentum) * running + momentum * batch_stat`` (unbiased variance).
    """
    _check(x, "batch_norm")
    if x.ndim < 2:
        raise ValueError(f"batch_norm: expected at least a 2-D input (N, C, ...), got shape {x.shape}")
    c = x.shape[1]
    shape = (1, c) + (1,) * (x.ndim - 2)
    axes = (0, *range(2, x.ndim))
    if training:
        count = x.size // c
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {x.shape}")
        mean, var = _moments(x, axes)
        if running_mean is not None and running_var is not None:
            with lc.no_grad():
                m = mean.detach().reshape(c)
                v = var.detach().reshape(c) * (count / (count - 1))
                running_mean.copy_(running_mean * (1 - momentum) + m.astype(running_mean.dtype) * momentum)
                running_var.copy_(running_var * (1 - momentum) + v.astype(running_var.dtype) * momentum)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: running_mean and running_var are needed when training=False")
        mean = running_mean.reshape(shape)
        var = running_var.reshape(shape)
    y = (x - mean) * lc.rsqrt(var + eps)
    return _affine(y, weight, bias, shape)


def instance_norm(
    x: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each (sample, channel) over its spatial axes; running stats as in :func:`batch_norm`."""
    _check(x, "instance_norm")
    if x.ndim < 3:
        raise ValueError(f"instance_norm: expected an (N, C, ...) input with spatial axes, got shape {x.shape}")
    n, c = x.shape[:2]
    shape = (1, c) + (1,) * (x.ndim - 2)
    axes = tuple(range(2, x.ndim))
    if use_input_stats:
        mean, var = _moments(x, axes)
        if running_mean is not None and running_var is not None:
            count = x.size // (n * c)
            with lc.no_grad():
                m = lc.mean(mean.detach().reshape(n, c), axis=0)
                v = lc.mean(var.detach().reshape(n, c), axis=0) * (count / max(count - 1, 1))
                running_mean.copy_(running_mean * (1 - momentum) + m.astype(running_mean.dtype) * momentum)
                running_var.copy_(running_var * (1 - momentum) + v.astype(running_var.dtype) * momentum)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm: running_mean and running_var are needed when use_input_stats=False")
        mean = running_mean.reshape(shape)
        var = running_var.reshape(shape)
    y = (x - mean) * lc.rsqrt(var + eps)
    return _affine(y, weight, bias, shape)


def _normalized_axes(
    x: Tensor, normalized_shape: int | Sequence[int], name: str
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(ns)
    if k == 0 or x.ndim < k or tuple(x.shape[-k:]) != ns:
        raise ValueError(
            f"{name}: given normalized_shape={list(ns)}, expected input with shape [*, {', '.join(map(str, ns))}], "
            f"but got input of size {list(x.shape)}"
        )
    return ns, tuple(range(x.ndim - k, x.ndim))


class _LayerNorm(lc.Function):
    """Layer norm over the last axis with optional (D,) weight and bias: the ``layer_norm`` kernel.

    First-order backward is the ``layer_norm_grad`` kernel; when the gradient itself must be
    differentiable (``create_graph``), backward recomputes it from ``x`` in Lucid ops instead.
    """

    native = True

    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        y, ctx.mean, ctx.rstd = kernels.call(ctx.device, "layer_norm", x, weight, bias, eps)
        return y

    @staticmethod
    def backward(ctx, gy):
        x, weight, bias, eps = ctx.inputs
        need_w = weight is not None and weight.requires_grad
        need_b = bias is not None and bias.requires_grad
        if lc.is_grad_enabled():
            mean, var = _moments(x, (x.ndim - 1,))
            rstd = lc.rsqrt(var + eps)
            xhat = (x - mean) * rstd
            g = gy if weight is None else gy * weight
            gx = (g - lc.mean(g, axis=-1, keepdims=True) - xhat * lc.mean(g * xhat, axis=-1, keepdims=True)) * rstd
            lead = tuple(range(x.ndim - 1))
            gw = lc.sum(gy * xhat, axis=lead) if need_w else None
            gb = lc.sum(gy, axis=lead) if need_b else None
            return gx, gw, gb, None
        dev = x.device
        gx, gw, gb = _LayerNormGrad.apply(
            gy, x, lc.asarray(ctx.mean, device=dev), lc.asarray(ctx.rstd, device=dev), weight
        )
        return gx, gw if need_w else None, gb if need_b else None, None

    @staticmethod
    def backward_raw(ctx, gy):
        x, weight, bias, _ = ctx.inputs
        w = None if weight is None else weight._data
        gx, gw, gb = kernels.call(ctx.device, "layer_norm_grad", gy, x._data, ctx.mean, ctx.rstd, w)
        need_w = weight is not None and weight._requires_grad
        need_b = bias is not None and bias._requires_grad
        return (gx if x._requires_grad else None), gw if need_w else None, gb if need_b else None, None


class _LayerNormGrad(lc.Function):
    """First-order gradients of ``_LayerNorm`` (the ``layer_norm_grad`` kernel), used where no graph is kept."""

    native = True
    differentiable = False

    @staticmethod
    def forward(ctx, gy, x, mean, rstd, weight):
        return kernels.call(ctx.device, "layer_norm_grad", gy, x, mean, rstd, weight)


def layer_norm(
    x: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` axes, then scale by ``weight`` and shift by ``bias``."""
    _check(x, "layer_norm")
    ns, axes = _normalized_axes(x, normalized_shape, "layer_norm")
    if (
        x.dtype.kind == "f"
        and x.size
        and all(p is None or (p.dtype is x.dtype and tuple(p.shape) == ns) for p in (weight, bias))
    ):
        # one fused node over the flattened trailing axes (the ``layer_norm`` kernel)
        d = math.prod(ns)
        flat = lc.reshape(x, (*x.shape[: x.ndim - len(ns)], d)) if len(ns) > 1 else x
        w = None if weight is None else (lc.reshape(weight, (d,)) if len(ns) > 1 else weight)
        b = None if bias is None else (lc.reshape(bias, (d,)) if len(ns) > 1 else bias)
        y = _LayerNorm.apply(flat, w, b, float(eps))
        return lc.reshape(y, x.shape) if len(ns) > 1 else y
    mean, var = _moments(x, axes)
    y = (x - mean) * lc.rsqrt(var + eps)
    return _affine(y, weight, bias, ns)


def rms_norm(
    x: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    eps: float | None = None,
) -> Tensor:
    """x / sqrt(mean(x**2) + eps) over the trailing axes, times ``weight`` (eps defaults to the dtype's eps)."""
    _check(x, "rms_norm")
    ns, axes = _normalized_axes(x, normalized_shape, "rms_norm")
    if eps is None:
        eps = lc.finfo(x.dtype).eps
    y = x * lc.rsqrt(lc.mean(x * x, axis=axes, keepdims=True) + eps)
    return _affine(y, weight, None, ns)


def group_norm(
    x: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each sample's channels in ``num_groups`` groups, then apply per-channel affine."""
    _check(x, "group_norm")
    if x.ndim < 2:
        raise ValueError(f"group_norm: expected an (N, C, ...) input, got shape {x.shape}")
    n, c = x.shape[:2]
    if c % num_groups:
        raise ValueError(f"group_norm: number of channels ({c}) must be divisible by num_groups ({num_groups})")
    g = x.reshape(n, num_groups, -1)
    mean, var = _moments(g, (2,))
    y = ((g - mean) * lc.rsqrt(var + eps)).reshape(x.shape)
    return _affine(y, weight, bias, (1, c) + (1,) * (x.ndim - 2))
