"""The geometric distribution: the number of failures before the first success."""

from __future__ import annotations

from numbers import Number
from typing import Any, ClassVar

import lucid_core as lc
from lucid_core import Tensor

from . import constraints
from .bernoulli import bce_with_logits
from .distribution import Distribution
from .utils import broadcast_all, expand_to, lazy_property, logits_to_probs, probs_to_logits, size

__all__ = ["Geometric"]


class Geometric(Distribution):
    """Failures before the first success in Bernoulli(``probs``) trials (support 0, 1, 2, ...)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        probs_or_logits = probs if probs is not None else logits
        batch_shape = () if isinstance(probs_or_logits, Number) else probs_or_logits.shape
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            value = self.probs
            valid = value > 0
            if not bool(lc.all(valid).item()):
                raise ValueError(
                    "Expected parameter probs "
                    f"({type(value).__name__} of shape {tuple(value.shape)}) "
                    f"of distribution {self!r} "
                    f"to be positive but found invalid values:\n{value[~valid]}"
                )

    def expand(self, batch_shape: Any, _instance: Any = None) -> Geometric:
        new = self._get_checked_instance(Geometric, _instance)
        batch_shape = size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = expand_to(self.probs, batch_shape)
        if "logits" in self.__dict__:
            new.logits = expand_to(self.logits, batch_shape)
        super(Geometric, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return lc.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with lc.no_grad():
            probs = self.probs
            tiny = lc.finfo(probs.dtype).smallest_normal
            u = lc.clip(lc.rand(*shape, dtype=probs.dtype, device=probs.device), tiny, None)
            return lc.floor(lc.log(u) / lc.log1p(-probs))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # 0 failures under certain success: log(1) = 0, not 0 * log(0)
        probs = lc.where((probs == 1) & (value == 0), lc.zeros_like(probs), probs)
        return value * lc.log1p(-probs) + lc.log(self.probs)

    def entropy(self) -> Tensor:
        return bce_with_logits(self.logits, self.probs) / self.probs
