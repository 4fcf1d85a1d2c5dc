"""The Bernoulli distribution (by ``probs`` or ``logits``)."""

from __future__ import annotations

from numbers import Number
from typing import Any, ClassVar

import lucid_core as lc
from lucid_core import Tensor

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all, expand_to, lazy_property, logits_to_probs, probs_to_logits, size

__all__ = ["Bernoulli"]


def bce_with_logits(logits: Tensor, target: Tensor) -> Tensor:
    """Elementwise binary cross-entropy of ``target`` under ``logits`` (the stable form)."""
    return lc.maximum(logits, 0.0) - logits * target + lc.log1p(lc.exp(-lc.abs(logits)))


class Bernoulli(ExponentialFamily):
    """1 with probability ``probs`` (or ``sigmoid(logits)``), else 0."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
        else:
            is_scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = () if is_scalar else self._param.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Bernoulli:
        new = self._get_checked_instance(Bernoulli, _instance)
        batch_shape = size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = expand_to(self.probs, batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = expand_to(self.logits, batch_shape)
            new._param = new.logits
        super(Bernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        mode = lc.astype(self.probs >= 0.5, self.probs.dtype)
        return lc.where(self.probs == 0.5, lc.nan, mode)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

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
        shape = self._extended_shape(sample_shape)
        with lc.no_grad():
            probs = expand_to(self.probs, shape)
            u = lc.rand(*shape, dtype=probs.dtype, device=probs.device)
            return lc.astype(u < probs, probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -bce_with_logits(logits, value)

    def entropy(self) -> Tensor:
        return bce_with_logits(self.logits, self.probs)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = lc.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = lc.reshape(values, (-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = lc.broadcast_to(values, (2, *self._batch_shape))
        return values

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (lc.log(self.probs / (1 - self.probs)),)
