"""Margin losses (hinge, soft margin, multi-class and multi-label margins, triplets), pairwise distances and
the connectionist temporal classification loss, with PyTorch's reductions."""

from __future__ import annotations

__all__ = [
    "hinge_embedding_loss", "soft_margin_loss", "multilabel_soft_margin_loss", "multi_margin_loss",
    "multilabel_margin_loss", "triplet_margin_with_distance_loss", "pdist", "ctc_loss",
]  # fmt: skip

from collections.abc import Callable

import lucid_core as lc
from lucid_core import Tensor
from lucid_core.amp import autocast_op

from ._activation import logsigmoid
from ._loss import _check_reduction, _hinge, _pair, _reduce
from ._misc import pairwise_distance


@autocast_op("hinge_embedding_loss")
def hinge_embedding_loss(x: Tensor, target: Tensor, margin: float = 1.0, reduction: str = "mean") -> Tensor:
    """x where target is 1, max(0, margin - x) where it is -1."""
    x, target = _pair(x, target, "hinge_embedding_loss")
    _check_reduction(reduction, "hinge_embedding_loss")
    zeros = lc.zeros_like(x)
    loss = lc.where(target != 1, _hinge(margin - x), zeros) + lc.where(target != -1, x, zeros)
    return _reduce(loss, reduction, "hinge_embedding_loss")


@autocast_op("soft_margin_loss")
def soft_margin_loss(x: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """log(1 + exp(-target * x)), the two-class logistic loss for targets in {-1, 1}."""
    x, target = _pair(x, target, "soft_margin_loss")
    _check_reduction(reduction, "soft_margin_loss")
    return _reduce(lc.logaddexp(0.0, -target * x), reduction, "soft_margin_loss")


def multilabel_soft_margin_loss(
    x: Tensor, target: Tensor, weight: Tensor | None = None, reduction: str = "mean"
) -> Tensor:
    """Binary cross-entropy on the logits ``x`` (N, C) per class, averaged over the classes (C)."""
    x, target = _pair(x, target, "multilabel_soft_margin_loss")
    _check_reduction(reduction, "multilabel_soft_margin_loss")
    loss = -(target * logsigmoid(x) + (1.0 - target) * logsigmoid(-x))
    if weight is not None:
        loss = loss * weight
    c = x.shape[-1] if x.ndim else 1
    loss = lc.sum(loss, axis=-1) / c if x.ndim else loss
    return _reduce(loss, reduction, "multilabel_soft_margin_loss")


def _class_scores(x: Tensor, target: Tensor, name: str) -> tuple[Tensor, Tensor, bool]:
    """(N, C) scores and (N,) integer targets (an unbatched (C,) input gains a batch axis)."""
    if not isinstance(x, Tensor) or not isinstance(target, Tensor):
        raise TypeError(f"{name}: input and target must be Tensors")
    unbatched = x.ndim <= 1
    if unbatched:
        x = lc.reshape(x, (1, -1))
    if x.ndim != 2:
        raise ValueError(f"{name}: expected a 1-D (C) or 2-D (N, C) input, got shape {x.shape}")
    return x, target, unbatched


@autocast_op("multi_margin_loss")
def multi_margin_loss(
    x: Tensor,
    target: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    reduction: str = "mean",
) -> Tensor:
    """sum over j != y of max(0, margin - x[y] + x[j])^p / C, the multi-class hinge loss (p = 1 or 2)."""
    x, target, unbatched = _class_scores(x, target, "multi_margin_loss")
    _check_reduction(reduction, "multi_margin_loss")
    if p not in (1, 2):
        raise ValueError(f"multi_margin_loss: only p == 1 and p == 2 are supported, got {p}")
    if target.dtype.kind not in "iu":
        raise TypeError(f"multi_margin_loss: target must hold class indices (integers), got {target.dtype.name}")
    n, c = x.shape
    t = lc.reshape(target, (n, 1))
    if target.size != n:
        raise ValueError(f"multi_margin_loss: expected {n} targets for input of shape {x.shape}, got {target.shape}")
    if n and (int(lc.min(t).item()) < 0 or int(lc.max(t).item()) >= c):
        raise IndexError(f"multi_margin_loss: target values must be in [0, {c})")
    picked = lc.take_along_axis(x, t, axis=1)
    h = _hinge(margin - picked + x)
    if p == 2:
        h = h * h
    if weight is not None:
        h = h * lc.reshape(lc.take(weight, lc.reshape(t, (n,)), axis=0), (n, 1))
    other = lc.reshape(lc.arange(c, device=x.device), (1, c)) != t
    loss = lc.sum(lc.where(other, h, lc.zeros_like(h)), axis=1) / c
    if unbatched:
        loss = lc.reshape(loss, ())
    return _reduce(loss, reduction, "multi_margin_loss")


@autocast_op("multilabel_margin_loss")
def multilabel_margin_loss(x: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """sum over target classes j and other classes i of max(0, 1 - (x[j] - x[i])) / C.

    ``target`` (N, C) lists each sample's classes, ended by the first -1 (the rest is ignored).
    """
    x, target, unbatched = _class_scores(x, target, "multilabel_margin_loss")
    _check_reduction(reduction, "multilabel_margin_loss")
    if target.dtype.kind not in "iu":
        raise TypeError(f"multilabel_margin_loss: target must hold class indices, got {target.dtype.name}")
    if unbatched:
        target = lc.reshape(target, (1, -1))
    if tuple(target.shape) != tuple(x.shape):
        raise ValueError(f"multilabel_margin_loss: target of shape {target.shape} must match input {x.shape}")
    c = x.shape[1]
    ended = lc.cumulative_sum(lc.astype(target == -1, lc.int64), axis=1) > 0
    listed = lc.logical_and(lc.logical_not(ended), target >= 0)
    classes = lc.reshape(lc.arange(c, device=x.device), (1, 1, c))
    hit = lc.logical_and(lc.expand_dims(listed, axis=2), lc.expand_dims(target, axis=2) == classes)
    is_target = lc.astype(lc.any(hit, axis=1), x.dtype)  # (N, C)
    # pairs (j target, i not target): hinge(1 - x[j] + x[i])
    h = _hinge(1.0 - lc.expand_dims(x, axis=2) + lc.expand_dims(x, axis=1))
    pair = lc.expand_dims(is_target, axis=2) * lc.expand_dims(1.0 - is_target, axis=1)
    loss = lc.sum(h * pair, axis=(1, 2)) / c
    if unbatched:
        loss = lc.reshape(loss, ())
    return _reduce(loss, reduction, "multilabel_margin_loss")


def triplet_margin_with_distance_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    *,
    distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """max(d(a, p) - d(a, n) + margin, 0) for any distance ``d`` (default :func:`pairwise_distance`)."""
    _check_reduction(reduction, "triplet_margin_with_distance_loss")
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: margin must be greater than 0, got {margin}")
    d = pairwise_distance if distance_function is None else distance_function
    d_ap = d(anchor, positive)
    d_an = d(anchor, negative)
    if swap:
        d_an = lc.minimum(d_an, d(positive, negative))
    return _reduce(_hinge(margin + d_ap - d_an), reduction, "triplet_margin_with_distance_loss")


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """p-norm distances between every pair of rows i < j of ``input`` (N, M), as a vector of N(N-1)/2."""
    if not isinstance(input, Tensor) or input.ndim != 2:
        raise ValueError(f"pdist: expected a 2-D input (N, M), got {getattr(input, 'shape', type(input).__name__)}")
    if p < 0:
        raise ValueError(f"pdist: p must be non-negative, got {p}")
    n = input.shape[0]
    rows = [i for i in range(n) for _ in range(i + 1, n)]
    cols = [j for i in range(n) for j in range(i + 1, n)]
    a = lc.take(input, lc.asarray(rows, dtype=lc.int64, device=input.device), axis=0)
    b = lc.take(input, lc.asarray(cols, dtype=lc.int64, device=input.device), axis=0)
    return lc.linalg.vector_norm(a - b, axis=-1, ord=p)


# -- CTC -------------------------------------------------------------------------------------------------------
_NEG = -1e30  # log(0) stand-in: finite, so log-sum-exp's gradient stays 0 (not NaN) on unreachable paths


def _lengths(v: Tensor | int | list[int] | tuple[int, ...], n: int, what: str) -> list[int]:
    if isinstance(v, int) or (isinstance(v, Tensor) and v.ndim == 0):
        out = [int(v.item() if isinstance(v, Tensor) else v)]
    else:
        out = [int(i) for i in (v.tolist() if isinstance(v, Tensor) else v)]
    if len(out) != n:
        raise ValueError(f"ctc_loss: expected {n} {what}, got {len(out)}")
    return out


@autocast_op("ctc_loss")
def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Tensor | int | list[int] | tuple[int, ...],
    target_lengths: Tensor | int | list[int] | tuple[int, ...],
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    """Connectionist temporal classification loss: -log of the total probability of all alignments.

    Args:
        log_probs: (T, N, C) (or (T, C)) log-probabilities, e.g. ``log_softmax`` outputs.
        targets: (N, S) padded class indices, or all targets concatenated into one 1-D tensor.
        input_lengths: per sample, how many time steps count.
        target_lengths: per sample, how many target labels count.
        reduction: ``"mean"`` divides each loss by its target length, then averages over the batch.
        zero_infinity: impossible alignments (infinite loss) give 0 and a zero gradient instead.
    """
    _check_reduction(reduction, "ctc_loss")
    if not isinstance(log_probs, Tensor) or log_probs.ndim not in (2, 3):
        raise ValueError("ctc_loss: log_probs must be a (T, N, C) or (T, C) Tensor")
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = lc.expand_dims(log_probs, axis=1)
        if targets.ndim == 1:
            targets = lc.expand_dims(targets, axis=0)
    t_max, n, _ = log_probs.shape
    in_len = _lengths(input_lengths, n, "input lengths")
    tg_len = _lengths(target_lengths, n, "target lengths")
    if any(v > t_max or v < 0 for v in in_len):
        raise ValueError(f"ctc_loss: input lengths {in_len} must lie in [0, {t_max}]")
    tg = targets.tolist()
    if targets.ndim == 1:  # concatenated
        rows, start = [], 0
        for length in tg_len:
            rows.append(tg[start : start + length])
            start += length
    else:
        rows = [r[:length] for r, length in zip(tg, tg_len)]
    s_max = max([len(r) for r in rows] + [0])
    ext = [[blank] * (2 * s_max + 1) for _ in range(n)]
    allow = [[False] * (2 * s_max + 1) for _ in range(n)]
    for b, r in enumerate(rows):
        for k, label in enumerate(r):
            ext[b][2 * k + 1] = label
            allow[b][2 * k + 1] = k > 0 and r[k - 1] != label
    dev, dt = log_probs.device, log_probs.dtype
    ext_t = lc.asarray(ext, dtype=lc.int64, device=dev)  # (N, 2S+1)
    skip = lc.asarray(allow, dtype=lc.bool, device=dev)
    width = 2 * s_max + 1
    neg = lc.full((n, width), _NEG, dtype=dt, device=dev)
    pad1 = lc.full((n, 1), _NEG, dtype=dt, device=dev)
    pad2 = lc.full((n, 2), _NEG, dtype=dt, device=dev)
    start_mask = lc.reshape(lc.arange(width, device=dev) < 2, (1, width))
    emit0 = lc.take_along_axis(log_probs[0], ext_t, axis=1)
    alpha = lc.where(start_mask, emit0, neg)
    for t in range(1, t_max):
        emit = lc.take_along_axis(log_probs[t], ext_t, axis=1)
        one = lc.concat([pad1, alpha[:, :-1]], axis=1)
        two = lc.where(skip, lc.concat([pad2, alpha[:, :-2]], axis=1) if width > 2 else neg, neg)
        nxt = lc.logaddexp(lc.logaddexp(alpha, one), two) + emit
        live = lc.reshape(lc.asarray([t < v for v in in_len], dtype=lc.bool, device=dev), (n, 1))
        alpha = lc.where(live, nxt, alpha)
    last = lc.asarray([[2 * v] for v in tg_len], dtype=lc.int64, device=dev)
    before = lc.asarray([[max(2 * v - 1, 0)] for v in tg_len], dtype=lc.int64, device=dev)
    a_last = lc.take_along_axis(alpha, last, axis=1)[:, 0]
    a_before = lc.take_along_axis(alpha, before, axis=1)[:, 0]
    has_label = lc.asarray([v > 0 for v in tg_len], dtype=lc.bool, device=dev)
    total = lc.where(has_label, lc.logaddexp(a_last, a_before), a_last)
    empty = lc.asarray([v == 0 for v in in_len], dtype=lc.bool, device=dev)
    total = lc.where(lc.logical_and(empty, has_label), lc.full_like(total, _NEG), total)
    loss = -total
    impossible = loss > -_NEG / 2
    if zero_infinity:
        loss = lc.where(impossible, lc.zeros_like(loss), loss)
    else:
        loss = lc.where(impossible, lc.full_like(loss, float("inf")), loss)
    if reduction == "mean":
        denom = lc.asarray([max(v, 1) for v in tg_len], dtype=dt, device=dev)
        return lc.mean(loss / denom)
    if unbatched and reduction == "none":
        return lc.reshape(loss, ())
    return _reduce(loss, reduction, "ctc_loss")
