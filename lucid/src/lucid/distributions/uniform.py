"""The continuous uniform distribution on [low, high)."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

import lucid_core as lc
from lucid_core import Tensor

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, expand_to, size, standard_uniform

__all__ = ["Uniform"]


class Uniform(Distribution):
    """Uniform distribution on the half-open interval [``low``, ``high``)."""

    has_rsample = True

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return math.nan * self.high

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12**0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low) ** 2 / 12

    def __init__(self, low: Any, high: Any, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        batch_shape = () if isinstance(low, Number) and isinstance(high, Number) else self.low.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Uniform:
        new = self._get_checked_instance(Uniform, _instance)
        batch_shape = size(batch_shape)
        new.low = expand_to(self.low, batch_shape)
        new.high = expand_to(self.high, batch_shape)
        super(Uniform, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.interval(self.low, self.high)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        u = standard_uniform(self._extended_shape(sample_shape), self.low)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        lb = lc.astype(self.low <= value, self.low.dtype)
        ub = lc.astype(self.high > value, self.low.dtype)
        return lc.log(lb * ub) - lc.log(self.high - self.low)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return lc.clip((value - self.low) / (self.high - self.low), 0.0, 1.0)

    def icdf(self, value: Tensor) -> Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return lc.log(self.high - self.low)
