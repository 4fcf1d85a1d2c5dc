"""The log-normal distribution: exp of a Normal."""

from __future__ import annotations

from typing import Any, ClassVar

import lucid_core as lc
from lucid_core import Tensor

from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform

__all__ = ["LogNormal"]


class LogNormal(TransformedDistribution):
    """exp(X) with X ~ Normal(``loc``, ``scale``)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        base_dist = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> LogNormal:
        new = self._get_checked_instance(LogNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self) -> Tensor:
        return self.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale

    @property
    def mean(self) -> Tensor:
        return lc.exp(self.loc + self.scale**2 / 2)

    @property
    def mode(self) -> Tensor:
        return lc.exp(self.loc - self.scale**2)

    @property
    def variance(self) -> Tensor:
        scale_sq = self.scale**2
        return lc.expm1(scale_sq) * lc.exp(2 * self.loc + scale_sq)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc
