"""The exponential distribution."""

from __future__ import annotations

from numbers import Number
from typing import Any, ClassVar

import lucid_core as lc
from lucid_core import Tensor

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all, expand_to, size, standard_uniform

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    """Exponential distribution with ``rate`` (density rate * exp(-rate * x) on x >= 0)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.rate

    @property
    def mode(self) -> Tensor:
        return lc.zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        return 1.0 / self.rate

    @property
    def variance(self) -> Tensor:
        return self.rate ** (-2)

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        batch_shape = () if isinstance(rate, Number) else self.rate.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Exponential:
        new = self._get_checked_instance(Exponential, _instance)
        batch_shape = size(batch_shape)
        new.rate = expand_to(self.rate, batch_shape)
        super(Exponential, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        u = standard_uniform(self._extended_shape(sample_shape), self.rate)
        return -lc.log1p(-u) / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return lc.log(self.rate) - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - lc.exp(-self.rate * value)

    def icdf(self, value: Tensor) -> Tensor:
        return -lc.log1p(-value) / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - lc.log(self.rate)

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (-self.rate,)
