"""The Laplace (double exponential) distribution."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any, ClassVar

import lucid_core as lc
from lucid_core import Tensor

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, expand_to, size, standard_uniform

__all__ = ["Laplace"]


class Laplace(Distribution):
    """Laplace distribution with location ``loc`` and scale ``scale``."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.real
    has_rsample = True

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale**2

    @property
    def stddev(self) -> Tensor:
        return math.sqrt(2) * self.scale

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        batch_shape = () if isinstance(loc, Number) and isinstance(scale, Number) else self.loc.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Laplace:
        new = self._get_checked_instance(Laplace, _instance)
        batch_shape = size(batch_shape)
        new.loc = expand_to(self.loc, batch_shape)
        new.scale = expand_to(self.scale, batch_shape)
        super(Laplace, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        eps = lc.finfo(self.loc.dtype).eps
        u = standard_uniform(self._extended_shape(sample_shape), self.loc) * (2.0 - eps) + (eps - 1.0)
        return self.loc - self.scale * lc.sign(u) * lc.log1p(-lc.abs(u))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -lc.log(2 * self.scale) - lc.abs(value - self.loc) / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * lc.sign(value - self.loc) * lc.expm1(-lc.abs(value - self.loc) / self.scale)

    def icdf(self, value: Tensor) -> Tensor:
        term = value - 0.5
        return self.loc - self.scale * lc.sign(term) * lc.log1p(-2 * lc.abs(term))

    def entropy(self) -> Tensor:
        return 1 + lc.log(2 * self.scale)
