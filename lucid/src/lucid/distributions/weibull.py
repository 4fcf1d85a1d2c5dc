"""The two-parameter Weibull distribution: scale * Exponential(1) ** (1 / concentration)."""

from __future__ import annotations

from typing import Any, ClassVar

import lucid_core as lc
from lucid_core import Tensor

from . import constraints
from ._special import lgamma
from .exponential import Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .utils import broadcast_all, euler_constant, expand_to

__all__ = ["Weibull"]


class Weibull(TransformedDistribution):
    """Weibull with ``scale`` (lambda) and ``concentration`` (k)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "scale": constraints.positive,
        "concentration": constraints.positive,
    }
    support = constraints.positive

    def __init__(self, scale: Any, concentration: Any, validate_args: bool | None = None) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = 1.0 / self.concentration
        base_dist = Exponential(lc.ones_like(self.scale), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration_reciprocal), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Weibull:
        new = self._get_checked_instance(Weibull, _instance)
        new.scale = expand_to(self.scale, batch_shape)
        new.concentration = expand_to(self.concentration, batch_shape)
        new.concentration_reciprocal = 1.0 / new.concentration
        base_dist = self.base_dist.expand(batch_shape)
        transforms = [PowerTransform(exponent=new.concentration_reciprocal), AffineTransform(loc=0, scale=new.scale)]
        super(Weibull, new).__init__(base_dist, transforms, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.scale * lc.exp(lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self) -> Tensor:
        return self.scale * ((self.concentration - 1) / self.concentration) ** (1.0 / self.concentration)

    @property
    def variance(self) -> Tensor:
        return self.scale**2 * (
            lc.exp(lgamma(1 + 2 * self.concentration_reciprocal))
            - lc.exp(2 * lgamma(1 + self.concentration_reciprocal))
        )

    def entropy(self) -> Tensor:
        return (
            euler_constant * (1 - self.concentration_reciprocal)
            + lc.log(self.scale * self.concentration_reciprocal)
            + 1
        )
