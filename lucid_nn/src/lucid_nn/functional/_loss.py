"""Loss functions with PyTorch's reductions, weights and edge cases; stable for extreme logits."""

from __future__ import annotations

__all__ = [
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss", "gaussian_nll_loss",
    "cosine_embedding_loss", "margin_ranking_loss", "triplet_margin_loss", "linear_cross_entropy",
]  # fmt: skip

import math
import warnings

import lucid_core as lc
from lucid_core import Tensor, kernels
from lucid_core._forward_ad import jvp_from_vjp
from lucid_core.amp import autocast_op
from lucid_core.ops._index_checks import index_bounds

from ._activation import log_softmax
from ._misc import linear, pairwise_distance

_REDUCTIONS = ("none", "mean", "sum")
# PyTorch's EPSILON in its loss kernels: 1e-12 rounded to float32 (BCE's gradient floor, cosine magnitudes)
_EPS = 9.999999960041972e-13


def _reduce(loss: Tensor, reduction: str, name: str) -> Tensor:
    if reduction == "mean":
        return lc.mean(loss)
    if reduction == "sum":
        return lc.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{name}: reduction must be one of {_REDUCTIONS}, got {reduction!r}")


def _check_reduction(reduction: str, name: str, extra: tuple[str, ...] = ()) -> None:
    if reduction not in _REDUCTIONS + extra:
        raise ValueError(f"{name}: reduction must be one of {_REDUCTIONS + extra}, got {reduction!r}")


def _pair(x: object, t: object, name: str) -> tuple[Tensor, Tensor]:
    if not isinstance(x, Tensor) or not isinstance(t, Tensor):
        raise TypeError(f"{name}: input and target must be Tensors, got {type(x).__name__} and {type(t).__name__}")
    try:
        lc.broadcast_shapes(x.shape, t.shape)
    except ValueError:
        raise ValueError(f"{name}: target shape {t.shape} does not broadcast to input shape {x.shape}") from None
    return x, t


def _warn_if_broadcast(x: Tensor, t: Tensor) -> None:
    """PyTorch's warning for a regression target whose shape differs from the input's (it broadcasts, which is
    rarely what was meant: a (N,) target against (N, 1) predictions gives an (N, N) loss)."""
    if tuple(t.shape) != tuple(x.shape):
        warnings.warn(
            f"Using a target size ({tuple(t.shape)}) that is different to the input size ({tuple(x.shape)}). "
            "This will likely lead to incorrect results due to broadcasting. Please ensure they have the same size.",
            UserWarning,
            stacklevel=3,
        )


class ProbabilityRangeError(ValueError, RuntimeError):
    """A probability outside [0, 1]: a ``ValueError``, and the ``RuntimeError`` PyTorch raises."""


@lc.compiler.check
def _check_probabilities(x: Tensor, t: Tensor, name: str) -> None:
    """Raise :class:`ProbabilityRangeError` where ``x`` or ``t`` has an element outside [0, 1] (NaN included),
    with PyTorch's messages; both checks are read back together (one sync on lazy backends)."""
    if not x.size:
        return
    with lc.no_grad():
        bx, bt = (lc.any(lc.logical_not(lc.logical_and(v >= 0, v <= 1))) for v in (x, t))  # NaN compares false
        lc.eval(bx, bt)  # one evaluation for both on a lazy backend (a no-op on eager ones)
        bad_x, bad_t = bool(bx.item()), bool(bt.item())
    if bad_x:
        raise ProbabilityRangeError(f"{name}: all elements of input should be between 0 and 1")
    if bad_t:
        raise ProbabilityRangeError(f"{name}: all elements of target should be between 0 and 1")


# -- regression ------------------------------------------------------------------------------------
@autocast_op("mse_loss")
def mse_loss(x: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """(x - target)**2, reduced."""
    x, target = _pair(x, target, "mse_loss")
    _warn_if_broadcast(x, target)
    _check_reduction(reduction, "mse_loss")
    d = x - target
    return _reduce(d * d, reduction, "mse_loss")


@autocast_op("l1_loss")
def l1_loss(x: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """|x - target|, reduced."""
    x, target = _pair(x, target, "l1_loss")
    _warn_if_broadcast(x, target)
    _check_reduction(reduction, "l1_loss")
    return _reduce(lc.abs(x - target), reduction, "l1_loss")


@autocast_op("smooth_l1_loss")
def smooth_l1_loss(x: Tensor, target: Tensor, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5 d**2 / beta where |d| < beta, else |d| - 0.5 beta."""
    x, target = _pair(x, target, "smooth_l1_loss")
    _warn_if_broadcast(x, target)
    _check_reduction(reduction, "smooth_l1_loss")
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    ad = lc.abs(x - target)
    if beta == 0:
        return _reduce(ad, reduction, "smooth_l1_loss")
    loss = lc.where(ad < beta, 0.5 * ad * ad / beta, ad - 0.5 * beta)
    return _reduce(loss, reduction, "smooth_l1_loss")


@autocast_op("huber_loss")
def huber_loss(x: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0) -> Tensor:
    """0.5 d**2 where |d| <= delta, else delta * (|d| - 0.5 delta)."""
    x, target = _pair(x, target, "huber_loss")
    _warn_if_broadcast(x, target)
    _check_reduction(reduction, "huber_loss")
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    ad = lc.abs(x - target)
    loss = lc.where(ad <= delta, 0.5 * ad * ad, delta * (ad - 0.5 * delta))
    return _reduce(loss, reduction, "huber_loss")


# -- classification --------------------------------------------------------------------------------------
def _class_weights(weight: Tensor | None, c: int, name: str) -> None:
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != c):
        raise ValueError(f"{name}: weight should have one entry per class ({c}), got shape {weight.shape}")


def _check_targets(x: Tensor, target: Tensor, name: str) -> None:
    if target.dtype.kind not in "iu":
        raise TypeError(f"{name}: class-index targets must be integers, got {target.dtype.name}")
    expected = (x.shape[0], *x.shape[2:]) if x.ndim >= 2 else ()
    if tuple(target.shape) != expected:
        raise ValueError(
            f"{name}: expected target of shape {expected} for input of shape {x.shape}, got {target.shape}"
        )


@lc.compiler.check  # a compiled plan checks again on every replay, rather than guarding on the bounds it read
def _check_classes(safe: Tensor, c: int, name: str, ignore_index: int) -> None:
    """Raise unless every target (ignored ones stood in for by 0) is a class index in [0, c)."""
    lo, hi = index_bounds(safe)  # (under vmap: every example's targets at once)
    if lo < 0 or hi >= c:
        raise IndexError(
            f"{name}: target values must be in [0, {c}) or ignore_index ({ignore_index}), got [{lo}, {hi}]"
        )


def _picked(x: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int, name: str) -> tuple[Tensor, Tensor]:
    """``(x[n, target[n], ...], weight[target] * (target != ignore_index))`` for a batched (N, C, ...) input."""
    c = x.shape[1]
    valid = target != ignore_index
    safe = lc.where(valid, target, lc.zeros_like(target))
    if target.size:
        _check_classes(safe, c, name, ignore_index)
    picked = lc.squeeze(lc.take_along_axis(x, lc.expand_dims(safe, axis=1), axis=1), axis=1)
    w = lc.astype(valid, x.dtype)
    if weight is not None:
        w = w * weight[safe]
    return picked, w


def _weighted_nll(picked: Tensor, w: Tensor) -> Tensor:
    """``-picked * w``, but 0 where ``w`` is 0 (an ignored target whose stand-in pick may be -inf: 0 * inf is NaN)."""
    return lc.where(w != 0, -picked * w, lc.zeros_like(w))


@autocast_op("nll_loss")
def nll_loss(
    x: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> Tensor:
    """-x[n, target[n]] (x holds log-probabilities over axis 1), weighted; ``mean`` divides by the total weight."""
    _pair(x, x, "nll_loss")
    _check_reduction(reduction, "nll_loss")
    if x.ndim == 0:
        raise ValueError("nll_loss: input must have a class axis, got a 0-d tensor")
    _check_targets(x, target, "nll_loss")
    unbatched = x.ndim == 1
    if unbatched:
        x, target = lc.expand_dims(x, axis=0), lc.expand_dims(target, axis=0)
    _class_weights(weight, x.shape[1], "nll_loss")
    picked, w = _picked(x, target, weight, ignore_index, "nll_loss")
    loss = _weighted_nll(picked, w)
    if reduction == "none":
        return loss[0] if unbatched else loss
    if reduction == "sum":
        return lc.sum(loss)
    return lc.sum(loss) / lc.sum(w)


class _IndexCrossEntropy(lc.Function):
    """Cross entropy of (N, C) logits against class indices, no class weight: one node (the ``cross_entropy``
    kernel: log_softmax, each row's pick and label smoothing), then the reduction over the non-ignored rows.

    First-order backward is the ``cross_entropy_grad`` kernel on the saved log-probabilities; with
    ``create_graph`` the log-probabilities are recomputed on the graph and the gradient written in Lucid ops.
    """

    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x, target, ignore_index, reduction, smoothing):
        xp = ctx.xp
        c = x.shape[1]
        every = False  # every row counts (no target is ignore_index): its weights would all be 1
        if target.shape[0]:
            lo, hi = int(xp.min(target)), int(xp.max(target))
            every = not lo <= ignore_index <= hi
            if (lo < 0 or hi >= c) and (lo == ignore_index or hi == ignore_index):  # without the ignored rows
                valid = target != ignore_index
                safe = xp.where(valid, target, xp.zeros_like(target))
                lo, hi = int(xp.min(safe)), int(xp.max(safe))
            if lo < 0 or hi >= c:
                raise IndexError(
                    f"cross_entropy: target values must be in [0, {c}) or ignore_index ({ignore_index}), "
                    f"got [{lo}, {hi}]"
                )
        loss, ctx.logp = kernels.call(ctx.device, "cross_entropy", x, target, ignore_index, smoothing)
        # each row's weight (1, or 0 where ignored); None when all are 1: a product with 1 changes no bit
        ctx.w = None if every else xp.astype(target != ignore_index, x.dtype)
        ctx.denom = None
        if reduction == "none":
            return loss
        total = xp.sum(loss)
        if reduction == "sum":
            return total
        ctx.denom = xp.asarray(float(target.shape[0]), dtype=x.dtype) if every else xp.sum(ctx.w)
        return total / ctx.denom

    @staticmethod
    def backward(ctx, gy):
        x, target, ignore_index, _, smoothing = ctx.inputs
        dev = x.device
        g = gy if ctx.denom is None else gy / lc.asarray(ctx.denom, device=dev)
        g = lc.broadcast_to(g, (x.shape[0],))  # each row's gradient
        if ctx.w is not None:
            g = g * lc.asarray(ctx.w, device=dev)
        if not lc.is_grad_enabled():
            logp = lc.asarray(ctx.logp, device=dev)
            return _IndexCrossEntropyGrad.apply(g, logp, target, ignore_index, smoothing), None, None, None, None
        # create_graph: log-probabilities on the graph, for higher-order gradients
        logp = log_softmax(x, 1)
        c = x.shape[1]
        hit = lc.equal(lc.reshape(lc.arange(c, device=dev), (1, c)), lc.expand_dims(target, axis=1))
        v = -lc.expand_dims(g, axis=1)
        zero = lc.zeros((), dtype=x.dtype, device=dev)
        gl = lc.where(hit, v * (1.0 - smoothing) if smoothing else v, zero)  # d loss / d logp
        if smoothing:
            gl = gl + v * (smoothing / c)
        return gl - lc.exp(logp) * lc.sum(gl, axis=1, keepdims=True), None, None, None, None

    @staticmethod
    def backward_raw(ctx, gy):
        x, target, ignore_index, _, smoothing = ctx.inputs
        xp = ctx.xp
        g = gy if ctx.denom is None else gy / ctx.denom
        g = xp.broadcast_to(g, (x.shape[0],))  # each row's gradient, as backward
        if ctx.w is not None:
            g = g * ctx.w
        gx = kernels.call(ctx.device, "cross_entropy_grad", g, ctx.logp, target._data, ignore_index, smoothing)
        return gx, None, None, None, None


class _IndexCrossEntropyGrad(lc.Function):
    """The (N, C) gradient of the row losses (the ``cross_entropy_grad`` kernel), where no graph is kept."""

    native = True
    differentiable = False

    @staticmethod
    def forward(ctx, g, logp, target, ignore_index, smoothing):
        return kernels.call(ctx.device, "cross_entropy_grad", g, logp, target, ignore_index, smoothing)


@autocast_op("cross_entropy_loss", "cross_entropy")
def cross_entropy(
    x: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross entropy of logits ``x`` (class axis 1) against class indices or class probabilities.

    Args:
        x: logits, (N, C, ...) or (C,).
        target: int class indices (N, ...) or float probabilities shaped like ``x``.
        weight: a per-class rescaling weight of shape (C,).
        ignore_index: class index whose targets add nothing (index targets only).
        reduction: ``"none"``, ``"mean"`` or ``"sum"``.
        label_smoothing: mix ``label_smoothing / C`` of a uniform distribution into the target.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"cross_entropy: input must be a Tensor, got {type(x).__name__}")
    _check_reduction(reduction, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    if x.ndim == 0:
        raise ValueError("cross_entropy: input must have a class axis, got a 0-d tensor")
    if not isinstance(target, Tensor):
        raise TypeError(f"cross_entropy: target must be a Tensor, got {type(target).__name__}")
    unbatched = x.ndim == 1
    if unbatched:
        x, target = lc.expand_dims(x, axis=0), lc.expand_dims(target, axis=0)
    c = x.shape[1]
    _class_weights(weight, c, "cross_entropy")
    if x.ndim == 2 and target.dtype.kind in "iu" and weight is None and x.dtype.kind == "f":
        _check_targets(x, target, "cross_entropy")
        loss = _IndexCrossEntropy.apply(x, target, ignore_index, reduction, float(label_smoothing))
        return loss[0] if unbatched and reduction == "none" else loss
    logp = log_softmax(x, 1)
    wshape = (1, c) + (1,) * (x.ndim - 2)
    if target.dtype.kind == "f":
        if target.shape != x.shape:
            raise ValueError(
                f"cross_entropy: probability targets must have the input's shape {x.shape}, got {target.shape}"
            )
        if label_smoothing > 0:
            target = target * (1.0 - label_smoothing) + label_smoothing / c
        prod = logp * target
        if weight is not None:
            prod = prod * weight.reshape(wshape)
        loss = -lc.sum(prod, axis=1)
        if reduction == "none":
            return loss[0] if unbatched else loss
        if reduction == "sum":
            return lc.sum(loss)
        return lc.sum(loss) / (x.size // c)
    _check_targets(x, target, "cross_entropy")
    picked, w = _picked(logp, target, weight, ignore_index, "cross_entropy")
    nll = _weighted_nll(picked, w)
    if label_smoothing > 0:
        valid = lc.astype(target != ignore_index, x.dtype)
        lw = logp if weight is None else logp * weight.reshape(wshape)
        smooth = -lc.sum(lw, axis=1) * valid
        if reduction == "none":
            loss = nll * (1.0 - label_smoothing) + smooth * (label_smoothing / c)
            return loss[0] if unbatched else loss
        if reduction == "sum":
            return lc.sum(nll) * (1.0 - label_smoothing) + lc.sum(smooth) * (label_smoothing / c)
        denom = lc.sum(w) if weight is not None else lc.sum(valid)
        return (lc.sum(nll) * (1.0 - label_smoothing) + lc.sum(smooth) * (label_smoothing / c)) / denom
    if reduction == "none":
        return nll[0] if unbatched else nll
    if reduction == "sum":
        return lc.sum(nll)
    return lc.sum(nll) / lc.sum(w)


class _BinaryCrossEntropy(lc.Function):
    """Element-wise BCE with PyTorch's gradient, which stays finite at probabilities exactly 0 and 1.

    The clamped logs make the value finite there, but differentiating them gives 0 * inf = NaN.
    PyTorch's backward is ``(x - t) / max(x (1 - x), 1e-12)`` for the input and ``-logit(x)`` for
    the target; both are written in Lucid ops, so higher-order gradients still work.
    """

    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x, t):
        log_x = lc.maximum(lc.log(x), -100.0)
        log_1mx = lc.maximum(lc.log1p(-x), -100.0)
        return -(t * log_x + (1.0 - t) * log_1mx)

    @staticmethod
    def backward(ctx, gy):
        x, t = ctx.inputs
        gx = gy * (x - t) / lc.maximum(x * (1.0 - x), _EPS) if x.requires_grad else None
        gt = gy * (lc.log1p(-x) - lc.log(x)) if t.requires_grad else None
        return gx, gt


@autocast_op("binary_cross_entropy")
def binary_cross_entropy(x: Tensor, target: Tensor, weight: Tensor | None = None, reduction: str = "mean") -> Tensor:
    """-(t log x + (1 - t) log(1 - x)) for probabilities ``x``; each log is clamped at -100 as in PyTorch."""
    x, target = _pair(x, target, "binary_cross_entropy")
    _check_reduction(reduction, "binary_cross_entropy")
    if x.shape != target.shape:
        raise ValueError(
            f"binary_cross_entropy: using a target size ({target.shape}) that is different to the input size "
            f"({x.shape}) is not supported"
        )
    _check_probabilities(x, target, "binary_cross_entropy")
    loss = _BinaryCrossEntropy.apply(x, target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy")


@autocast_op("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(
    x: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """Sigmoid + binary cross entropy in one stable expression; ``pos_weight`` scales the positive term."""
    x, target = _pair(x, target, "binary_cross_entropy_with_logits")
    _check_reduction(reduction, "binary_cross_entropy_with_logits")
    if x.shape != target.shape:
        raise ValueError(
            f"binary_cross_entropy_with_logits: target size ({target.shape}) must be the same as input size ({x.shape})"
        )
    softplus_neg = lc.logaddexp(0.0, -x)  # -log(sigmoid(x)), no overflow
    if pos_weight is not None:
        loss = (1.0 - target) * x + (1.0 + (pos_weight - 1.0) * target) * softplus_neg
    else:
        loss = (1.0 - target) * x + softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


class _XLogX(lc.Function):
    """``t * log(t)`` with 0 at t = 0 (PyTorch's ``xlogy(t, t)``), and its gradient ``log(t) + t / t``.

    The derivative is unbounded at t = 0; like PyTorch, the gradient there is NaN, not a finite number.
    """

    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, t):
        zero = lc.zeros_like(t)
        return lc.where(t == 0, zero, t * lc.log(lc.where(t == 0, lc.ones_like(t), t)))

    @staticmethod
    def backward(ctx, gy):
        (t,) = ctx.inputs
        log_t = lc.log(lc.where(t == 0, lc.ones_like(t), t))  # 0 where t = 0, as xlogy(t != 0, t)
        return gy * (log_t + t / t)


@autocast_op("kl_div")
def kl_div(x: Tensor, target: Tensor, reduction: str = "mean", log_target: bool = False) -> Tensor:
    """target * (log target - x) for log-probabilities ``x``; ``"batchmean"`` divides the sum by the batch size."""
    x, target = _pair(x, target, "kl_div")
    _check_reduction(reduction, "kl_div", ("batchmean",))
    if log_target:
        loss = lc.exp(target) * (target - x)
    else:
        loss = _XLogX.apply(target) - target * x
    if reduction == "batchmean":
        return lc.sum(loss) / (x.shape[0] if x.ndim else 1)
    return _reduce(loss, reduction, "kl_div")


def _hinge(v: Tensor) -> Tensor:
    """max(v, 0) with PyTorch's ``clamp_min`` gradient: it passes whole at v = 0 (``maximum`` splits ties)."""
    return lc.clip(v, min=0.0)


@autocast_op("poisson_nll_loss")
def poisson_nll_loss(
    x: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    eps: float = 1e-8,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of ``target`` under a Poisson distribution with rate ``x``.

    Args:
        log_input: ``x`` is the log of the rate (``exp(x) - target * x``); else the rate itself
            (``x - target * log(x + eps)``, ``eps`` keeping the log finite at rate 0).
        full: add Stirling's approximation of ``log(target!)`` (for targets above 1, as PyTorch does).
    """
    x, target = _pair(x, target, "poisson_nll_loss")
    _check_reduction(reduction, "poisson_nll_loss")
    loss = lc.exp(x) - target * x if log_input else x - target * lc.log(x + eps)
    if full:
        big = target > 1
        t = lc.where(big, target, lc.ones_like(target))  # a stand-in keeps log finite where the term is masked
        stirling = t * lc.log(t) - t + 0.5 * lc.log(2 * math.pi * t)
        loss = loss + lc.where(big, stirling, lc.zeros_like(stirling))
    return _reduce(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(
    x: Tensor,
    target: Tensor,
    var: Tensor,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of ``target`` under a Gaussian with mean ``x`` and variance ``var``.

    ``0.5 * (log(var) + (x - target)**2 / var)`` (plus ``0.5 * log(2 pi)`` when ``full``). ``var`` may
    have ``x``'s shape, lack its last axis, or have size 1 there (one variance for all). Variances
    below ``eps`` are raised to ``eps`` for the value only: as in PyTorch, the gradient reaches ``var``
    as if there were no floor.
    """
    x, target = _pair(x, target, "gaussian_nll_loss")
    _check_reduction(reduction, "gaussian_nll_loss")
    if not isinstance(var, Tensor):
        raise TypeError(f"gaussian_nll_loss: var must be a Tensor, got {type(var).__name__}")
    if var.shape != x.shape:
        if x.shape[:-1] == var.shape:
            var = lc.expand_dims(var, axis=-1)
        elif not (x.shape[:-1] == var.shape[:-1] and var.shape[-1:] == (1,)):
            raise ValueError(f"gaussian_nll_loss: var of shape {var.shape} does not fit input of shape {x.shape}")
    if var.size and float(lc.min(var).item()) < 0:
        raise ValueError("gaussian_nll_loss: var has negative entries")
    floored = var + (lc.maximum(var, eps) - var).detach()  # the value of max(var, eps), the gradient of var
    loss = 0.5 * (lc.log(floored) + (x - target) ** 2 / floored)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction, "gaussian_nll_loss")


# -- embeddings and ranking ---------------------------------------------------------------------------------
@autocast_op("cosine_embedding_loss")
def cosine_embedding_loss(
    x1: Tensor, x2: Tensor, target: Tensor, margin: float = 0.0, reduction: str = "mean"
) -> Tensor:
    """1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1."""
    _pair(x1, x2, "cosine_embedding_loss")
    _check_reduction(reduction, "cosine_embedding_loss")
    if x1.shape != x2.shape or x1.ndim not in (1, 2):
        raise ValueError(
            f"cosine_embedding_loss: expected two 1-D or 2-D inputs of one shape, got {x1.shape} and {x2.shape}"
        )
    eps = _EPS
    dot = lc.sum(x1 * x2, axis=-1)
    mag = lc.sqrt((lc.sum(x1 * x1, axis=-1) + eps) * (lc.sum(x2 * x2, axis=-1) + eps))
    cos = dot / mag
    zeros = lc.zeros_like(cos)
    loss = lc.where(target == 1, 1.0 - cos, zeros) + lc.where(target == -1, _hinge(cos - margin), zeros)
    return _reduce(loss, reduction, "cosine_embedding_loss")


@autocast_op("margin_ranking_loss")
def margin_ranking_loss(x1: Tensor, x2: Tensor, target: Tensor, margin: float = 0.0, reduction: str = "mean") -> Tensor:
    """max(0, -target * (x1 - x2) + margin)."""
    _pair(x1, x2, "margin_ranking_loss")
    _check_reduction(reduction, "margin_ranking_loss")
    return _reduce(_hinge(-target * (x1 - x2) + margin), reduction, "margin_ranking_loss")


@autocast_op("triplet_margin_loss")
def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2.0,
    eps: float = 1e-6,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """max(d(a, p) - d(a, n) + margin, 0) with p-norm distances (``swap`` uses min(d(a, n), d(p, n)))."""
    _pair(anchor, positive, "triplet_margin_loss")
    _check_reduction(reduction, "triplet_margin_loss")
    if not (anchor.ndim == positive.ndim == negative.ndim):
        raise ValueError(
            f"triplet_margin_loss: anchor, positive and negative must have the same number of dimensions, got "
            f"{anchor.ndim}, {positive.ndim} and {negative.ndim}"
        )
    d_ap = pairwise_distance(anchor, positive, p, eps)
    d_an = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_an = lc.minimum(d_an, pairwise_distance(positive, negative, p, eps))
    return _reduce(_hinge(margin + d_ap - d_an), reduction, "triplet_margin_loss")


def linear_cross_entropy(
    input: Tensor,
    linear_weight: Tensor,
    target: Tensor,
    *,
    linear_bias: Tensor | None = None,
    weight: Tensor | None = None,
    reduction: str = "mean",
    ignore_index: int | None = None,
    label_smoothing: float = 0.0,
    options: object = None,
) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``.

    ``linear_weight`` is (C, *out_features, in_features): the logits are (N, C, *out_features). ``options``
    (PyTorch's chunking of the batch to save memory) changes no number and is accepted and ignored.
    """
    if not isinstance(linear_weight, Tensor) or linear_weight.ndim < 2:
        raise ValueError("linear_cross_entropy: linear_weight must be a Tensor (C, *out_features, in_features)")
    classes = tuple(linear_weight.shape[:-1])
    w = lc.reshape(linear_weight, (-1, linear_weight.shape[-1]))
    b = None if linear_bias is None else lc.reshape(linear_bias, (-1,))
    logits = lc.reshape(linear(input, w, b), (*input.shape[:-1], *classes))
    return cross_entropy(
        logits,
        target,
        weight,
        ignore_index=-100 if ignore_index is None else ignore_index,
        reduction=reduction,
        label_smoothing=label_smoothing,
    )
