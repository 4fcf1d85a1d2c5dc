"""The binomial distribution: successes in ``total_count`` Bernoulli trials."""

from __future__ import annotations

from typing import Any, ClassVar

import lucid_core as lc
from lucid_core import Tensor

from . import constraints
from ._special import lgamma
from .distribution import Distribution
from .utils import broadcast_all, expand_to, lazy_property, logits_to_probs, probs_to_logits, size

__all__ = ["Binomial"]

_CHUNK = 256  # trials drawn at once when sampling


def _clamp_by_zero(x: Tensor) -> Tensor:
    # max(x, 0) whose gradient at 0 is 1/2, as PyTorch's
    return (lc.clip(x, 0.0, None) + x - lc.clip(x, None, 0.0)) / 2


class Binomial(Distribution):
    """Binomial(``total_count``, ``probs`` or ``sigmoid(logits)``)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "total_count": constraints.nonnegative_integer,
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True

    def __init__(
        self, total_count: Any = 1, probs: Any = None, logits: Any = None, validate_args: bool | None = None
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

    def expand(self, batch_shape: Any, _instance: Any = None) -> Binomial:
        new = self._get_checked_instance(Binomial, _instance)
        batch_shape = size(batch_shape)
        new.total_count = expand_to(self.total_count, batch_shape)
        if "probs" in self.__dict__:
            new.probs = expand_to(self.probs, batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = expand_to(self.logits, batch_shape)
            new._param = new.logits
        super(Binomial, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return lc.minimum(lc.floor((self.total_count + 1) * self.probs), self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Any:
        return self._param.shape

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """Counts of uniforms below ``probs`` among the first ``total_count`` trials (drawn in chunks)."""
        shape = tuple(self._extended_shape(sample_shape))
        with lc.no_grad():
            probs = lc.broadcast_to(self.probs.detach(), shape)[..., None]
            n = lc.broadcast_to(self.total_count.detach(), shape)[..., None]
            n_max = int(lc.max(self.total_count).item()) if self.total_count.numel() else 0
            counts = lc.zeros(shape, dtype=probs.dtype, device=probs.device)
            for start in range(0, n_max, _CHUNK):
                width = min(_CHUNK, n_max - start)
                u = lc.rand(*shape, width, dtype=probs.dtype, device=probs.device)
                trial = lc.arange(start, start + width, dtype=probs.dtype, device=probs.device)
                success = (u < probs) & (trial < n)
                counts = counts + lc.sum(lc.astype(success, probs.dtype), axis=-1)
            return counts

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        log_factorial_n = lgamma(n + 1)
        log_factorial_k = lgamma(value + 1)
        log_factorial_nmk = lgamma(n - value + 1)
        normalize_term = n * _clamp_by_zero(logits) + n * lc.log1p(lc.exp(-lc.abs(logits))) - log_factorial_n
        return value * logits - log_factorial_k - log_factorial_nmk - normalize_term

    def entropy(self) -> Tensor:
        total_count = int(lc.max(self.total_count).item())
        if not bool(lc.all(self.total_count == total_count).item()):
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -lc.sum(lc.exp(log_prob) * log_prob, axis=0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        total_count = int(lc.max(self.total_count).item())
        if not bool(lc.all(self.total_count == total_count).item()):
            raise NotImplementedError("Inhomogeneous total count not supported by `enumerate_support`.")
        values = lc.arange(1 + total_count, dtype=self._param.dtype, device=self._param.device)
        values = lc.reshape(values, (-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = lc.broadcast_to(values, (values.shape[0], *self._batch_shape))
        return values
