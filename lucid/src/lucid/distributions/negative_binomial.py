"""The negative binomial distribution: successes before ``total_count`` failures."""

from __future__ import annotations

from typing import Any, ClassVar

import lucid_core as lc
from lucid_core import Tensor

from . import constraints
from ._special import lgamma
from .distribution import Distribution
from .gamma import Gamma
from .poisson import poisson_sample
from .utils import broadcast_all, expand_to, lazy_property, logits_to_probs, probs_to_logits, size

__all__ = ["NegativeBinomial"]


def _logsigmoid(x: Tensor) -> Tensor:
    return -(lc.maximum(-x, 0.0) + lc.log1p(lc.exp(-lc.abs(x))))


class NegativeBinomial(Distribution):
    """Successes in Bernoulli(``probs``) trials before ``total_count`` failures (a Gamma-Poisson mixture)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "total_count": constraints.greater_than_eq(0),
        "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(
        self, total_count: Any, probs: Any = None, logits: Any = None, validate_args: bool | None = None
    ) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = lc.astype(self.total_count, self.probs.dtype)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = lc.astype(self.total_count, self.logits.dtype)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> NegativeBinomial:
        new = self._get_checked_instance(NegativeBinomial, _instance)
        batch_shape = size(batch_shape)
        new.total_count = expand_to(self.total_count, batch_shape)
        if "probs" in self.__dict__:
            new.probs = expand_to(self.probs, batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = expand_to(self.logits, batch_shape)
            new._param = new.logits
        super(NegativeBinomial, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.total_count * lc.exp(self.logits)

    @property
    def mode(self) -> Tensor:
        return lc.clip(lc.floor((self.total_count - 1) * lc.exp(self.logits)), 0.0, None)

    @property
    def variance(self) -> Tensor:
        return self.mean / lc.sigmoid(-self.logits)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Any:
        return self._param.shape

    @lazy_property
    def _gamma(self) -> Gamma:
        return Gamma(concentration=self.total_count, rate=lc.exp(-self.logits), validate_args=False)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with lc.no_grad():
            rate = self._gamma.sample(sample_shape)
            return poisson_sample(rate)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = self.total_count * _logsigmoid(-self.logits) + value * _logsigmoid(self.logits)
        log_normalization = -lgamma(self.total_count + value) + lgamma(1.0 + value) + lgamma(self.total_count)
        log_normalization = lc.where(self.total_count + value == 0.0, 0.0, log_normalization)
        return log_unnormalized_prob - log_normalization
