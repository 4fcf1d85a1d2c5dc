"""The multinomial distribution: category counts of ``total_count`` categorical draws."""

from __future__ import annotations

from typing import Any, ClassVar

import lucid_core as lc
from lucid_core import Tensor

from . import constraints
from ._special import lgamma
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution
from .utils import broadcast_all, size

__all__ = ["Multinomial"]


class Multinomial(Distribution):
    """Counts over the last axis of ``probs``/``logits`` after ``total_count`` (an int) independent draws."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.simplex,
        "logits": constraints.real_vector,
    }

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def __init__(
        self,
        total_count: int = 1,
        probs: Tensor | None = None,
        logits: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Multinomial:
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = Binomial(total_count=self.total_count, probs=new._categorical.probs)
        super(Multinomial, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self) -> constraints.Constraint:
        return constraints.multinomial(self.total_count)

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def param_shape(self) -> Any:
        return self._categorical.param_shape

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with lc.no_grad():
            samples = self._categorical.sample((self.total_count, *size(sample_shape)))
            k = self._categorical._num_events
            hits = samples[..., None] == lc.arange(k, dtype=lc.int64, device=samples.device)
            return lc.sum(lc.astype(hits, self.probs.dtype), axis=0)

    def entropy(self) -> Tensor:
        n = float(self.total_count)
        term1 = n * self._categorical.entropy() - lgamma(
            lc.asarray(n + 1, dtype=self.probs.dtype, device=self.probs.device)
        )
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = lc.exp(self._binomial.log_prob(support))
        weights = lgamma(support + 1)
        return term1 + lc.sum(binomial_probs * weights, axis=(0, -1))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = lgamma(lc.sum(value, axis=-1) + 1)
        log_factorial_xs = lc.sum(lgamma(value + 1), axis=-1)
        logits = lc.where((value == 0) & (logits == -lc.inf), lc.zeros_like(logits), logits)
        log_powers = lc.sum(logits * value, axis=-1)
        return log_factorial_n - log_factorial_xs + log_powers
