"""Dropout layers (identity in eval mode)."""

from __future__ import annotations

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]

from lucid_core import Tensor

from .. import functional as F
from ..module import Module


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p`` in training, scaling the rest by 1 / (1 - p)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) inputs with probability ``p`` in training."""

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout1d(x, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) inputs with probability ``p`` in training."""

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout2d(x, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps SELU's zero mean and unit variance."""

    def forward(self, x: Tensor) -> Tensor:
        return F.alpha_dropout(x, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) inputs with probability ``p`` in training."""

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout3d(x, self.p, self.training, self.inplace)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels (axis 1)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.feature_alpha_dropout(x, self.p, self.training, self.inplace)
