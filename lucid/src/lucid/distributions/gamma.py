"""The Gamma distribution (shape ``concentration``, inverse scale ``rate``)."""

from __future__ import annotations

from numbers import Number
from typing import Any, ClassVar

import lucid_core as lc
from lucid_core import Tensor

from . import constraints
from ._special import digamma, gammainc, lgamma, standard_gamma, xlogy
from .exp_family import ExponentialFamily
from .utils import broadcast_all, expand_to, size

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """Gamma(concentration, rate); ``rsample`` uses implicit reparameterisation gradients."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "concentration": constraints.positive,
        "rate": constraints.positive,
    }
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return lc.clip((self.concentration - 1) / self.rate, 0.0, None)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate**2

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        scalar = isinstance(concentration, Number) and isinstance(rate, Number)
        super().__init__(() if scalar else self.concentration.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Gamma:
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = size(batch_shape)
        new.concentration = expand_to(self.concentration, batch_shape)
        new.rate = expand_to(self.rate, batch_shape)
        super(Gamma, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(expand_to(self.concentration, shape)) / expand_to(self.rate, shape)
        tiny = lc.finfo(value.dtype).smallest_normal
        return value + lc.clip(value.detach(), tiny, None) - value.detach()  # the floor, outside the graph

    def log_prob(self, value: Tensor) -> Tensor:
        if not isinstance(value, Tensor):
            value = lc.asarray(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (
            xlogy(self.concentration, self.rate)
            + xlogy(self.concentration - 1, value)
            - self.rate * value
            - lgamma(self.concentration)
        )

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return gammainc(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        c = self.concentration
        return c - lc.log(self.rate) + lgamma(c) + (1.0 - c) * digamma(c)

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return (self.concentration - 1, -self.rate)
