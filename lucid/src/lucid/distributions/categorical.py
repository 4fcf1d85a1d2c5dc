"""The categorical distribution over ``{0, ..., K-1}`` (by ``probs`` or ``logits`` on the last axis)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import lucid_core as lc
from lucid_core import Tensor
from lucid_core.ops.random import multinomial

from . import constraints
from .distribution import Distribution
from .utils import expand_to, lazy_property, logits_to_probs, probs_to_logits, size

__all__ = ["Categorical"]


class Categorical(Distribution):
    """Index ``i`` with probability ``probs[..., i]`` (normalised), or ``softmax(logits)[..., i]``."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.simplex,
        "logits": constraints.independent(constraints.real, 1),
    }
    has_enumerate_support = True

    def __init__(
        self, probs: Tensor | None = None, logits: Tensor | None = None, validate_args: bool | None = None
    ) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.ndim < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / lc.sum(probs, axis=-1, keepdims=True)
        else:
            if logits.ndim < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - lc.logsumexp(logits, axis=-1, keepdims=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        batch_shape = self._param.shape[:-1] if self._param.ndim > 1 else ()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Categorical:
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = size(batch_shape)
        param_shape = (*batch_shape, self._num_events)
        if "probs" in self.__dict__:
            new.probs = expand_to(self.probs, param_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = expand_to(self.logits, param_shape)
            new._param = new.logits
        new._num_events = self._num_events
        super(Categorical, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> Any:
        return self._param.shape

    @property
    def mean(self) -> Tensor:
        return lc.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    @property
    def mode(self) -> Tensor:
        return lc.argmax(self.probs, axis=-1)

    @property
    def variance(self) -> Tensor:
        return lc.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """Indices drawn as PyTorch draws them: ``multinomial(probs_2d, n, replacement=True).T`` reshaped,
        so a seeded program samples PyTorch's actions on the numpy backend."""
        shape = self._extended_shape(sample_shape)
        n = math.prod(size(sample_shape))
        with lc.no_grad():
            probs_2d = lc.reshape(self.probs, (-1, self._num_events))
            samples_2d = lc.permute_dims(multinomial(probs_2d, n, True), (1, 0))
            return lc.reshape(samples_2d, tuple(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = lc.astype(value, lc.int64)[..., None]
        value, log_pmf = lc.broadcast_arrays(value, self.logits)
        return lc.take_along_axis(log_pmf, value[..., :1], axis=-1)[..., 0]

    def entropy(self) -> Tensor:
        logits = lc.clip(self.logits, lc.finfo(self.logits.dtype).min, None)
        return -lc.sum(logits * self.probs, axis=-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = lc.arange(self._num_events, dtype=lc.int64, device=self._param.device)
        values = lc.reshape(values, (-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = lc.broadcast_to(values, (self._num_events, *self._batch_shape))
        return values
