"""The Pareto (type I) distribution: scale * exp(Exponential(alpha))."""

from __future__ import annotations

from typing import Any, ClassVar

import lucid_core as lc
from lucid_core import Tensor

from . import constraints
from .exponential import Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .utils import broadcast_all, expand_to

__all__ = ["Pareto"]


class Pareto(TransformedDistribution):
    """Pareto with minimum ``scale`` and tail index ``alpha``."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "alpha": constraints.positive,
        "scale": constraints.positive,
    }

    def __init__(self, scale: Any, alpha: Any, validate_args: bool | None = None) -> None:
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base_dist = Exponential(self.alpha, validate_args=validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Pareto:
        new = self._get_checked_instance(Pareto, _instance)
        new.scale = expand_to(self.scale, batch_shape)
        new.alpha = expand_to(self.alpha, batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> Tensor:
        a = lc.clip(self.alpha, 1.0, None)
        return a * self.scale / (a - 1)

    @property
    def mode(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        a = lc.clip(self.alpha, 2.0, None)
        return self.scale**2 * a / ((a - 1) ** 2 * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.greater_than_eq(self.scale)

    def entropy(self) -> Tensor:
        return lc.log(self.scale / self.alpha) + (1 + 1.0 / self.alpha)
