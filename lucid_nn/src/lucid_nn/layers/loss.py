"""Loss modules: thin wrappers holding the options of the functional losses."""

from __future__ import annotations

__all__ = [
    "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss",
    "KLDivLoss", "PoissonNLLLoss", "GaussianNLLLoss", "CosineEmbeddingLoss", "MarginRankingLoss", "TripletMarginLoss",
    "HingeEmbeddingLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss", "MultiLabelMarginLoss",
    "TripletMarginWithDistanceLoss", "CTCLoss", "NLLLoss2d", "LinearCrossEntropyLoss",
]  # fmt: skip

from collections.abc import Callable
from typing import Any

import lucid_core as lc
from lucid_core import Tensor

from .. import functional as F
from ..functional._legacy import accept_legacy
from ..module import Module
from .linear import Linear


class _Loss(Module):
    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:  # each loss also takes PyTorch's legacy size_average=/reduce=
            cls.__init__ = accept_legacy(cls.__init__)  # type: ignore[method-assign]

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        if reduction not in ("none", "mean", "sum", "batchmean"):
            raise ValueError(f"{type(self).__name__}: {reduction!r} is not a valid value for reduction")
        self.reduction = reduction


_Loss.__init__ = accept_legacy(_Loss.__init__)  # type: ignore[method-assign]


class _WeightedLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """Mean squared error."""

    def forward(self, x: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(x, target, self.reduction)


class L1Loss(_Loss):
    """Mean absolute error."""

    def forward(self, x: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(x, target, self.reduction)


class SmoothL1Loss(_Loss):
    """Quadratic below ``beta``, linear above (divided by beta)."""

    def __init__(self, reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(reduction)
        self.beta = beta

    def forward(self, x: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(x, target, self.reduction, self.beta)


class HuberLoss(_Loss):
    """Quadratic below ``delta``, linear above (scaled by delta)."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction)
        self.delta = delta

    def forward(self, x: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(x, target, self.reduction, self.delta)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy of logits against class indices or probabilities; see :func:`functional.cross_entropy`."""

    def __init__(
        self,
        weight: Tensor | None = None,
        ignore_index: int = -100,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(weight, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, x: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(x, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of log-probabilities at the target classes."""

    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100, reduction: str = "mean") -> None:
        super().__init__(weight, reduction)
        self.ignore_index = ignore_index

    def forward(self, x: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(x, target, self.weight, self.ignore_index, self.reduction)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities."""

    def forward(self, x: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(x, target, self.weight, self.reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    """Sigmoid and binary cross entropy in one stable step; ``pos_weight`` weighs the positives."""

    def __init__(self, weight: Tensor | None = None, reduction: str = "mean", pos_weight: Tensor | None = None) -> None:
        super().__init__(weight, reduction)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, x: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(x, target, self.weight, self.reduction, self.pos_weight)


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence of log-probabilities ``x`` from ``target``."""

    def __init__(self, reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__(reduction)
        self.log_target = log_target

    def forward(self, x: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(x, target, self.reduction, self.log_target)


class PoissonNLLLoss(_Loss):
    """Poisson negative log-likelihood of ``target`` given the (log-)rate ``x``."""

    def __init__(self, log_input: bool = True, full: bool = False, eps: float = 1e-8, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, x: Tensor, target: Tensor) -> Tensor:
        return F.poisson_nll_loss(x, target, self.log_input, self.full, self.eps, self.reduction)


class GaussianNLLLoss(_Loss):
    """Gaussian negative log-likelihood of ``target`` given mean ``x`` and variance ``var``."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.full, self.eps = full, eps

    def forward(self, x: Tensor, target: Tensor, var: Tensor) -> Tensor:
        return F.gaussian_nll_loss(x, target, var, self.full, self.eps, self.reduction)


class CosineEmbeddingLoss(_Loss):
    """1 - cos for similar pairs (target 1), max(0, cos - margin) for dissimilar ones (-1)."""

    def __init__(self, margin: float = 0.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin = margin

    def forward(self, x1: Tensor, x2: Tensor, target: Tensor) -> Tensor:
        return F.cosine_embedding_loss(x1, x2, target, self.margin, self.reduction)


class MarginRankingLoss(_Loss):
    """max(0, -target * (x1 - x2) + margin)."""

    def __init__(self, margin: float = 0.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin = margin

    def forward(self, x1: Tensor, x2: Tensor, target: Tensor) -> Tensor:
        return F.margin_ranking_loss(x1, x2, target, self.margin, self.reduction)


class TripletMarginLoss(_Loss):
    """max(d(anchor, positive) - d(anchor, negative) + margin, 0)."""

    def __init__(
        self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6, swap: bool = False, reduction: str = "mean"
    ) -> None:
        super().__init__(reduction)
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_loss(
            anchor, positive, negative, self.margin, self.p, self.eps, self.swap, self.reduction
        )


class NLLLoss2d(NLLLoss):
    """Deprecated alias of :class:`NLLLoss` for (N, C, H, W) inputs."""


class HingeEmbeddingLoss(_Loss):
    """x where target is 1, max(0, margin - x) where it is -1."""

    def __init__(self, margin: float = 1.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin = margin

    def forward(self, x: Tensor, target: Tensor) -> Tensor:
        return F.hinge_embedding_loss(x, target, self.margin, self.reduction)


class SoftMarginLoss(_Loss):
    """log(1 + exp(-target * x)) for targets in {-1, 1}."""

    def forward(self, x: Tensor, target: Tensor) -> Tensor:
        return F.soft_margin_loss(x, target, self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Per-class logistic loss averaged over the classes."""

    def forward(self, x: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_soft_margin_loss(x, target, self.weight, self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss: sum over j != y of max(0, margin - x[y] + x[j])^p / C."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight: Tensor | None = None, reduction: str = "mean") -> None:
        super().__init__(weight, reduction)
        if p not in (1, 2):
            raise ValueError(f"MultiMarginLoss: only p == 1 and p == 2 are supported, got {p}")
        self.p = p
        self.margin = margin

    def forward(self, x: Tensor, target: Tensor) -> Tensor:
        return F.multi_margin_loss(x, target, self.p, self.margin, self.weight, self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss between each sample's target classes and its other classes."""

    def forward(self, x: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_margin_loss(x, target, self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """max(d(a, p) - d(a, n) + margin, 0) for a given distance function (default pairwise distance)."""

    def __init__(
        self,
        *,
        distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
        margin: float = 1.0,
        swap: bool = False,
        reduction: str = "mean",
    ) -> None:
        super().__init__(reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: margin must be greater than 0, got {margin}")
        self.distance_function = distance_function
        self.margin = margin
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_with_distance_loss(
            anchor,
            positive,
            negative,
            distance_function=self.distance_function,
            margin=self.margin,
            swap=self.swap,
            reduction=self.reduction,
        )


class CTCLoss(_Loss):
    """Connectionist temporal classification loss (see :func:`lucid_nn.functional.ctc_loss`)."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths: Tensor, target_lengths: Tensor) -> Tensor:
        return F.ctc_loss(
            log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction, self.zero_infinity
        )


class LinearCrossEntropyLoss(Module):
    """A bias-optional linear layer to ``num_classes`` (times ``out_features``) logits and cross entropy
    with the target, in one module (PyTorch chunks it to save memory; the numbers are the same)."""

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        out_features: tuple[int, ...] = (),
        bias: bool = False,
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
        reduction: str = "mean",
        weight: Tensor | None = None,
        ignore_index: int | None = None,
        label_smoothing: float = 0.0,
        options: object = None,
    ) -> None:
        super().__init__()
        self.in_features = in_features
        self.num_classes = num_classes
        self.out_features = tuple(out_features)
        n_out = num_classes
        for v in self.out_features:
            n_out *= v
        self.linear = Linear(in_features, n_out, bias=bias, device=device, dtype=dtype)
        self.reduction = reduction
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        w = lc.reshape(self.linear.weight, (self.num_classes, *self.out_features, self.in_features))
        b = self.linear.bias
        b = None if b is None else lc.reshape(b, (self.num_classes, *self.out_features))
        return F.linear_cross_entropy(
            input, w, target, linear_bias=b, weight=self.weight, reduction=self.reduction,
            ignore_index=self.ignore_index, label_smoothing=self.label_smoothing, options=self.options,
        )  # fmt: skip

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, num_classes={self.num_classes}, out_features={self.out_features}, "
            f"bias={self.linear.bias is not None}, reduction={self.reduction}"
        )
