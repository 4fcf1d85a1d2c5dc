"""Functional forms of the non-convolutional layers: linear, embedding, dropout, normalisation, padding."""

from __future__ import annotations

import warnings

__all__ = [
    "linear", "bilinear", "embedding", "one_hot", "pad", "normalize", "cosine_similarity", "pairwise_distance",
    "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
    "batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "local_response_norm",
    "embedding_bag", "grouped_mm",
]  # fmt: skip

import itertools
import math
from collections.abc import Callable, Sequence

import lucid_core as lc
from lucid_core import Tensor, amp, kernels
from lucid_core._forward_ad import saved_values_suffice
from lucid_core.amp import autocast_op
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
    def jvp(ctx, tx, tw, tb):
        # bilinear in (x, weight), plus the bias: tx W^T + x tW^T + tb
        x, weight, _ = ctx.inputs
        terms = [t for t in (None if tx is None else _Linear.apply(tx, weight, None),
                             None if tw is None else _Linear.apply(x, tw, None), tb) if t is not None]  # fmt: skip
        return None if not terms else sum(terms[1:], terms[0])

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
    if amp.active:  # inside autocast: in its lower-precision dtype (every layer calls this: one test, no wrapper)
        (x, weight, bias), _ = amp.cast_inputs("linear", (x, weight, bias), {})
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


@autocast_op("bilinear")
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


@lc.compiler.check  # a compiled plan checks again on every replay, rather than guarding on the bounds it read
def _check_rows(x: Tensor, n: int) -> None:
    """Raise unless every index in ``x`` names one of ``n`` rows (negative ones too, as PyTorch)."""
    lo, hi = index_bounds(x)  # one read-back of both
    if lo < 0 or hi >= n:
        raise IndexOutOfRangeError(
            f"embedding: index out of range: indices span [{lo}, {hi}] but there are {n} rows "
            f"(expected 0 <= index < {n})"
        )


def embedding(x: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:  # fmt: skip
    """Rows of ``weight`` picked by the integer tensor ``x``; the ``padding_idx`` row gets no gradient.

    Args:
        scale_grad_by_freq: divide each row's gradient by how often its index occurs in ``x``.
        sparse: accepted; the weight's gradient is always dense here (the same numbers as PyTorch's sparse one).
    """
    _check(x, "embedding")
    if x.dtype.kind not in "iu":
        raise TypeError(f"embedding: indices must be an integer tensor, got {x.dtype.name}")
    n = weight.shape[0]
    if x.size:
        _check_rows(x, n)
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
    if scale_grad_by_freq and x.size:
        out = _scale_grad_by_count(out, x)
    return out


def _scale_grad_by_count(rows: Tensor, x: Tensor) -> Tensor:
    """``rows`` (the lookups of indices ``x``, embedding axis last) with their gradient divided by how many
    times each index occurs in ``x``; the values are unchanged."""
    with lc.no_grad():
        flat = lc.reshape(x, (-1,))
        values, counts = lc.unique_counts(flat)
        per = lc.take(counts, lc.searchsorted(values, flat), axis=0)
        inv = lc.reshape(1.0 / lc.astype(per, rows.dtype), (*x.shape, 1))
    return rows * inv + rows.detach() * (1.0 - inv)


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


def _written(x: Tensor, fn: Callable[[Tensor], Tensor], inplace: bool, name: str) -> Tensor:
    """``fn(x)``, or ``x`` holding it when ``inplace`` (PyTorch's ``inplace=True`` returns its input); ``fn``
    then runs on the in-place machinery's stand-in for ``x``, so the graph does not save the tensor it writes."""
    if not inplace:
        return fn(x)
    return x._apply_inplace(fn, f"{name}_")


def dropout(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by 1 / (1 - p) (identity when not training)."""
    _check(x, "dropout")
    _check_p(p, "dropout")
    if not training or p == 0:
        return x
    if p == 1:
        return _written(x, lambda t: t * 0.0, inplace, "dropout")
    keep = lc.bernoulli(1.0 - p, x.shape, dtype=x.dtype, device=x.device)
    return _written(x, lambda t: t * keep * (1.0 / (1.0 - p)), inplace, "dropout")


def _channel_dropout(
    x: Tensor, p: float, training: bool, batched_ndim: int, name: str, inplace: bool = False
) -> Tensor:
    _check(x, name)
    _check_p(p, name)
    if x.ndim not in (batched_ndim - 1, batched_ndim):
        raise ValueError(f"{name}: expected a {batched_ndim - 1}-D or {batched_ndim}-D input, got shape {x.shape}")
    if not training or p == 0:
        return x
    if p == 1:
        return _written(x, lambda t: t * 0.0, inplace, name)
    lead = 2 if x.ndim == batched_ndim else 1
    shape = x.shape[:lead] + (1,) * (x.ndim - lead)
    keep = lc.bernoulli(1.0 - p, shape, dtype=x.dtype, device=x.device)
    return _written(x, lambda t: t * keep * (1.0 / (1.0 - p)), inplace, name)


def dropout1d(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of an (N, C, L) or (C, L) input with probability ``p``."""
    return _channel_dropout(x, p, training, 3, "dropout1d", inplace)


def dropout2d(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels (axis 1) of an (N, C, H, W) input with probability ``p``.

    As PyTorch 2.13: a 3-D input is taken as (N, C, L) (channel-wise 1-D dropout, with PyTorch's warning), and
    other ranks are deprecated but still drop over the first two axes (a 2-D input element by element).
    """
    _check(x, "dropout2d")
    if x.ndim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {x.ndim}-D input to dropout2d, which is deprecated and will result in an error "
            "in a future release. To retain the behavior and silence this warning, please use dropout instead. Note "
            "that dropout2d exists to provide channel-wise dropout on inputs with 2 spatial dimensions, a channel "
            "dimension, and an optional batch dimension (i.e. 3D or 4D inputs).",
            stacklevel=2,
        )
    if x.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is "
            "desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior will "
            "change in a future release to interpret the input as one without a batch dimension, i.e. shape "
            "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    if x.ndim < 2:
        raise ValueError(f"dropout2d: expected an input with a channel axis (N, C, H, W), got shape {x.shape}")
    return _channel_dropout(x, p, training, x.ndim, "dropout2d", inplace)


def dropout3d(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of an (N, C, D, H, W) or (C, D, H, W) input with probability ``p``."""
    return _channel_dropout(x, p, training, 5, "dropout3d", inplace)


def _alpha_dropout(x: Tensor, p: float, training: bool, inplace: bool, feature: bool, name: str) -> Tensor:
    """SELU-preserving dropout: dropped values become SELU's negative saturation, then an affine map restores
    the mean and variance; ``feature`` drops whole channels (axis 1) instead of elements."""
    _check(x, name)
    _check_p(p, name)
    if not training or p == 0:
        return x
    if p == 1:
        return _written(x, lambda t: t * 0.0, inplace, name)
    alpha_p = -1.7580993408473766
    shape = tuple(x.shape[:2]) + (1,) * (x.ndim - 2) if feature else x.shape
    if feature and x.ndim < 2:
        raise ValueError(f"{name}: expected an input with a channel axis (N, C, ...), got shape {x.shape}")
    keep = lc.bernoulli(1.0 - p, shape, dtype=x.dtype, device=x.device)
    a = ((1 - p) * (1 + p * alpha_p**2)) ** -0.5
    b = -a * alpha_p * p
    return _written(x, lambda t: (t * keep + alpha_p * (1 - keep)) * a + b, inplace, name)


def alpha_dropout(x: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's self-normalising mean and variance."""
    return _alpha_dropout(x, p, training, inplace, False, "alpha_dropout")


def feature_alpha_dropout(x: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """:func:`alpha_dropout` of whole channels (axis 1)."""
    return _alpha_dropout(x, p, training, inplace, True, "feature_alpha_dropout")


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
    def jvp(ctx, tx, tw, tb, _eps):
        # y = xhat * w + b with xhat = (x - mean) * rstd over the last axis; d xhat = rstd * (tx - mean(tx) -
        # xhat * mean(xhat * tx)). The kernel's saved statistics serve where nothing differentiates them again;
        # otherwise they are recomputed in Lucid ops, so the tangent nests and differentiates again
        x, weight, _, eps = ctx.inputs
        out = None
        if tx is not None or tw is not None:
            if saved_values_suffice(x):
                mean, rstd = lc.asarray(ctx.mean, device=x.device), lc.asarray(ctx.rstd, device=x.device)
            else:
                mean, var = _moments(x, (x.ndim - 1,))
                rstd = lc.rsqrt(var + eps)
            xhat = (x - mean) * rstd
        if tx is not None:
            centred = tx - lc.mean(tx, axis=-1, keepdims=True)
            dxhat = (centred - xhat * lc.mean(xhat * tx, axis=-1, keepdims=True)) * rstd
            out = dxhat if weight is None else dxhat * weight
        if tw is not None:
            out = xhat * tw if out is None else out + xhat * tw
        if tb is not None:
            out = tb if out is None else out + tb
        return out

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


def local_response_norm(x: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """x / (k + alpha * mean of x^2 over ``size`` neighbouring channels)^beta (channels zero-padded)."""
    _check(x, "local_response_norm")
    if x.ndim < 3:
        raise ValueError(f"local_response_norm: expected an input of 3 or more dimensions, got shape {x.shape}")
    if x.shape[1] == 0:
        return x
    c = x.shape[1]
    sq = x * x
    widths = [(0, 0)] * x.ndim
    widths[1] = (size // 2, (size - 1) // 2)
    padded = lc.pad(sq, widths, mode="constant", value=0.0)
    acc = padded[:, 0:c]
    for i in range(1, size):
        acc = acc + padded[:, i : i + c]
    div = (acc * (alpha / size) + k) ** beta
    return x / div


def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """Sums, means or maxima of bags of embedding rows, without materialising the per-index rows' layout.

    Args:
        input: (B, L) indices (each row a bag), or 1-D indices cut into bags at ``offsets``.
        mode: ``"sum"``, ``"mean"`` or ``"max"``; empty bags give zeros.
        per_sample_weights: a weight per index, multiplied in before the sum (``mode="sum"`` only).
        padding_idx: indices equal to it are left out of their bag (and of its count).
        scale_grad_by_freq: divide each row's gradient by how often its index occurs in ``input``.
        sparse: accepted; the gradient is dense (as in :func:`embedding`).
    """
    _check(input, "embedding_bag")
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"embedding_bag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
    if per_sample_weights is not None and mode != "sum":
        raise ValueError("embedding_bag: per_sample_weights is only supported for mode='sum'")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("embedding_bag: offsets must be None when input is 2-D (each row is a bag)")
        b, length = input.shape
        bag_of = [i for i in range(b) for _ in range(length)]
        flat = lc.reshape(input, (-1,))
        if per_sample_weights is not None:
            per_sample_weights = lc.reshape(per_sample_weights, (-1,))
    elif input.ndim == 1:
        if offsets is None or offsets.ndim != 1:
            raise ValueError("embedding_bag: a 1-D input needs 1-D offsets")
        starts = [int(v) for v in offsets.tolist()]
        total = input.shape[0]
        if include_last_offset:
            bounds = starts
        else:
            bounds = [*starts, total]
        if any(a > c for a, c in itertools.pairwise(bounds)) or (bounds and (bounds[0] != 0 or bounds[-1] > total)):
            raise ValueError(f"embedding_bag: offsets {starts} must start at 0 and not decrease")
        b = len(bounds) - 1
        bag_of = [i for i in range(b) for _ in range(bounds[i], bounds[i + 1])]
        flat = input[: len(bag_of)] if len(bag_of) != total else input
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights[: len(bag_of)]
    else:
        raise ValueError(f"embedding_bag: input must be 1-D or 2-D, got shape {input.shape}")
    rows = embedding(flat, weight, max_norm=max_norm, norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq)
    n_rows = weight.shape[0]
    keep = lc.ones((len(bag_of),), dtype=weight.dtype, device=weight.device)
    if padding_idx is not None:
        pad = padding_idx + n_rows if padding_idx < 0 else padding_idx
        keep = lc.astype(flat != pad, weight.dtype)
    member = lc.asarray(
        [[1.0 if g == i else 0.0 for g in bag_of] for i in range(b)], dtype=weight.dtype, device=weight.device
    )  # (B, M)
    member = member * lc.reshape(keep, (1, -1))
    if mode == "max":
        if not bag_of:
            return lc.zeros((b, weight.shape[1]), dtype=weight.dtype, device=weight.device)
        inside = lc.expand_dims(member > 0, axis=-1)  # (B, M, 1)
        masked = lc.where(
            inside, lc.expand_dims(rows, axis=0), lc.full((), -math.inf, dtype=weight.dtype, device=weight.device)
        )
        top = lc.max(masked, axis=1)
        empty = lc.expand_dims(lc.logical_not(lc.any(member > 0, axis=1)), axis=-1)
        return lc.where(empty, lc.zeros_like(top), top)
    if per_sample_weights is not None:
        member = member * lc.reshape(per_sample_weights, (1, -1))
    out = (
        lc.matmul(member, rows) if bag_of else lc.zeros((b, weight.shape[1]), dtype=weight.dtype, device=weight.device)
    )
    if mode == "mean":
        counts = lc.sum(lc.reshape(keep, (1, -1)) * lc.astype(member != 0, weight.dtype), axis=1, keepdims=True)
        out = out / lc.maximum(counts, lc.ones_like(counts))
    return out


def _cross_map_windows(c: int, size: int) -> tuple[list[list[float]], list[list[float]]]:
    """(forward, backward) channel-mixing matrices of PyTorch's legacy ``CrossMapLRN2d``.

    Its forward builds each channel's sum of squares by a running add/subtract that leaves channel 0 in
    every window; its hand-written backward sums over a different (symmetric-offset) window. Both are
    reproduced exactly, as matrices: row ``c`` says which channels enter channel ``c``'s sum.
    """
    pre_pad = int((size - 1) / 2 + 1)
    rows = [[0.0] * c for _ in range(c)]
    for j in range(min(pre_pad, c)):
        rows[0][j] += 1.0
    for i in range(1, c):
        rows[i] = list(rows[i - 1])
        if i < c - pre_pad + 1:
            rows[i][i + pre_pad - 1] += 1.0
        if i > pre_pad:
            rows[i][i - pre_pad] -= 1.0
    inv = int(size - (size - 1) / 2)
    back = [[1.0 if i - inv <= j <= i + size - 1 - inv else 0.0 for j in range(c)] for i in range(c)]
    return rows, back


def _mix_channels(m: Tensor, t: Tensor) -> Tensor:
    """sum_j m[c, j] * t[:, j, ...] for an (N, C, ...) ``t``."""
    n, c = t.shape[:2]
    flat = lc.reshape(t, (n, c, -1))
    return lc.reshape(lc.matmul(m, flat), t.shape)


class _CrossMapLRN2d(lc.Function):
    """PyTorch's legacy cross-map LRN: ``x * (k + alpha / size * window_sum(x^2)) ** -beta``, with PyTorch's
    forward window and its own backward formula (which is not the exact derivative of that forward)."""

    @staticmethod
    def forward(ctx, x, size, alpha, beta, k):
        fwd, _ = _cross_map_windows(x.shape[1], size)
        scale = _mix_channels(lc.asarray(fwd, dtype=x.dtype, device=x.device), x * x) * (alpha / size) + k
        return x * scale**-beta

    @staticmethod
    def backward(ctx, gy):
        x, size, alpha, beta, k = ctx.inputs
        fwd, back = _cross_map_windows(x.shape[1], size)
        scale = _mix_channels(lc.asarray(fwd, dtype=x.dtype, device=x.device), x * x) * (alpha / size) + k
        out = x * scale**-beta
        acc = _mix_channels(lc.asarray(back, dtype=x.dtype, device=x.device), gy * out / scale)
        return scale**-beta * gy - (2.0 * alpha * beta / size) * x * acc, None, None, None, None


def _cross_map_lrn2d(x: Tensor, size: int, alpha: float, beta: float, k: float) -> Tensor:
    """The ``CrossMapLRN2d`` layer's computation (an (N, C, H, W) input)."""
    _check(x, "CrossMapLRN2d")
    if x.ndim != 4:
        raise ValueError(f"CrossMapLRN2d: expected a 4-D input (N, C, H, W), got shape {x.shape}")
    return _CrossMapLRN2d.apply(x, size, alpha, beta, k)


def grouped_mm(
    mat_a: Tensor,
    mat_b: Tensor,
    *,
    offs: Tensor | None = None,
    bias: Tensor | None = None,
    out_dtype: lc.DTypeLike = None,
) -> Tensor:
    """Matrix products of groups (mixture-of-experts layers): group ``g`` is ``A_g @ B_g``.

    3-D ``mat_a`` (G, M, K) and ``mat_b`` (G, K, N): a batched product. With 1-D ``offs`` (cumulative group
    ends): 2-D ``mat_a`` (M, K) with 3-D ``mat_b`` (G, K, N) splits the rows of ``mat_a``; 2-D with 2-D splits
    the shared K axis, giving (G, M, N); 3-D ``mat_a`` (G, M, K) with 2-D ``mat_b`` (K, N) splits the columns
    of ``mat_b``. Rows or columns past ``offs[-1]`` are zero. ``bias`` is not supported.
    """
    _check(mat_a, "grouped_mm")
    _check(mat_b, "grouped_mm")
    if bias is not None:
        raise NotImplementedError("grouped_mm: bias is not supported; add it to the result")
    da, db = mat_a.ndim, mat_b.ndim
    if (da, db) not in ((2, 2), (2, 3), (3, 2), (3, 3)):
        raise ValueError(f"grouped_mm: operands must be 2-D or 3-D, got shapes {mat_a.shape} and {mat_b.shape}")
    if (da, db) == (3, 3):
        if offs is not None:
            raise ValueError("grouped_mm: offs must be None when both operands are 3-D")
        out = lc.matmul(mat_a, mat_b)
    else:
        if offs is None:
            raise ValueError(f"grouped_mm: offs is needed for {da}-D x {db}-D operands")
        ends = [int(v) for v in offs.tolist()]
        starts = [0, *ends[:-1]]
        if any(e < s0 for s0, e in zip(starts, ends)):
            raise ValueError(f"grouped_mm: offs must not decrease, got {ends}")
        if (da, db) == (2, 3):
            if len(ends) != mat_b.shape[0]:
                raise ValueError(f"grouped_mm: {len(ends)} offsets for {mat_b.shape[0]} groups of mat_b")
            parts = [lc.matmul(mat_a[s0:e], mat_b[g]) for g, (s0, e) in enumerate(zip(starts, ends))]
            rest = mat_a.shape[0] - ends[-1]
            if rest:
                parts.append(lc.zeros((rest, mat_b.shape[2]), dtype=mat_a.dtype, device=mat_a.device))
            out = lc.concat(parts, axis=0)
        elif (da, db) == (3, 2):
            if len(ends) != mat_a.shape[0]:
                raise ValueError(f"grouped_mm: {len(ends)} offsets for {mat_a.shape[0]} groups of mat_a")
            parts = [lc.matmul(mat_a[g], mat_b[:, s0:e]) for g, (s0, e) in enumerate(zip(starts, ends))]
            rest = mat_b.shape[1] - ends[-1]
            if rest:
                parts.append(lc.zeros((mat_a.shape[1], rest), dtype=mat_a.dtype, device=mat_a.device))
            out = lc.concat(parts, axis=1)
        else:
            out = lc.stack([lc.matmul(mat_a[:, s0:e], mat_b[s0:e]) for s0, e in zip(starts, ends)], axis=0)
    return out if out_dtype is None else lc.astype(out, out_dtype)
