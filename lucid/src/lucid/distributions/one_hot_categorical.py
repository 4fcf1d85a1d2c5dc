"""The one-hot categorical distribution: Categorical's draws as one-hot vectors."""

from __future__ import annotations

from typing import Any, ClassVar

import lucid_core as lc
from lucid_core import Tensor

from . import constraints
from .categorical import Categorical
from .distribution import Distribution
from .utils import size

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]


def _one_hot(index: Tensor, num_classes: int, dtype: Any) -> Tensor:
    classes = lc.arange(num_classes, dtype=lc.int64, device=index.device)
    return lc.astype(index[..., None] == classes, dtype)


class OneHotCategorical(Distribution):
    """A one-hot vector of length K whose hot index is Categorical(``probs``/``logits``)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.simplex,
        "logits": constraints.real_vector,
    }
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(
        self, probs: Tensor | None = None, logits: Tensor | None = None, validate_args: bool | None = None
    ) -> None:
        self._categorical = Categorical(probs, logits)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> OneHotCategorical:
        new = self._get_checked_instance(OneHotCategorical, _instance)
        batch_shape = size(batch_shape)
        new._categorical = self._categorical.expand(batch_shape)
        super(OneHotCategorical, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def _param(self) -> Tensor:
        return self._categorical._param

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def mean(self) -> Tensor:
        return self._categorical.probs

    @property
    def mode(self) -> Tensor:
        probs = self._categorical.probs
        return _one_hot(lc.argmax(probs, axis=-1), probs.shape[-1], probs.dtype)

    @property
    def variance(self) -> Tensor:
        return self._categorical.probs * (1 - self._categorical.probs)

    @property
    def param_shape(self) -> Any:
        return self._categorical.param_shape

    def sample(self, sample_shape: Any = ()) -> Tensor:
        probs = self._categorical.probs
        indices = self._categorical.sample(sample_shape)
        return _one_hot(indices, probs.shape[-1], probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        indices = lc.argmax(value, axis=-1)
        return self._categorical.log_prob(indices)

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        n = self.event_shape[0]
        values = lc.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = lc.reshape(values, (n,) + (1,) * len(self.batch_shape) + (n,))
        if expand:
            values = lc.broadcast_to(values, (n, *self.batch_shape, n))
        return values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose ``rsample`` passes gradients straight through to ``probs``."""

    has_rsample = True

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        samples = self.sample(sample_shape)
        probs = self._categorical.probs  # cached on the categorical
        return samples + (probs - probs.detach())
