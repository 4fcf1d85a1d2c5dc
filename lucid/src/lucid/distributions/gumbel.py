"""The Gumbel (type-I extreme value) distribution."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import lucid_core as lc
from lucid_core import Tensor

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Gumbel"]


class Gumbel(TransformedDistribution):
    """Gumbel(``loc``, ``scale``): loc - scale * log(-log U) with U uniform."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.real

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        finfo = lc.finfo(self.loc.dtype)
        base_dist = Uniform(
            lc.full_like(self.loc, finfo.smallest_normal),
            lc.full_like(self.loc, 1 - finfo.eps),
            validate_args=validate_args,
        )
        transforms = [ExpTransform().inv, AffineTransform(loc=0, scale=-lc.ones_like(self.scale)), ExpTransform().inv,
                      AffineTransform(loc=self.loc, scale=-self.scale)]  # fmt: skip
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Gumbel:
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc = lc.broadcast_to(self.loc, tuple(batch_shape))
        new.scale = lc.broadcast_to(self.scale, tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - lc.exp(y)) - lc.log(self.scale)

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * euler_constant

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev**2

    def entropy(self) -> Tensor:
        return lc.log(self.scale) + (1 + euler_constant)
