"""The Dirichlet distribution over the probability simplex."""

from __future__ import annotations

from typing import Any, ClassVar

import lucid_core as lc
from lucid_core import Tensor

from . import constraints
from ._special import digamma, lgamma, standard_gamma, xlogy
from .exp_family import ExponentialFamily
from .utils import expand_to, size

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Dirichlet(``concentration``) over vectors on the simplex (the last axis is the event)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "concentration": constraints.independent(constraints.positive, 1)
    }
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if concentration.ndim < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Dirichlet:
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = size(batch_shape)
        new.concentration = expand_to(self.concentration, (*batch_shape, *self.event_shape))
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """Independent Gamma(concentration_i, 1) draws, normalised (their gradients are implicit ones)."""
        shape = self._extended_shape(sample_shape)
        gammas = standard_gamma(expand_to(self.concentration, shape))
        out = gammas / lc.sum(gammas, axis=-1, keepdims=True)
        tiny = lc.finfo(out.dtype).smallest_normal
        return out + lc.clip(out.detach(), tiny, 1.0 - lc.finfo(out.dtype).eps) - out.detach()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return lc.sum(xlogy(c - 1.0, value), axis=-1) + lgamma(lc.sum(c, axis=-1)) - lc.sum(lgamma(c), axis=-1)

    @property
    def mean(self) -> Tensor:
        return self.concentration / lc.sum(self.concentration, axis=-1, keepdims=True)

    @property
    def mode(self) -> Tensor:
        cm1 = lc.clip(self.concentration - 1, 0.0, None)
        mode = cm1 / lc.sum(cm1, axis=-1, keepdims=True)
        # where every concentration is below 1 the density peaks at the vertex of the largest one
        all_small = lc.all(self.concentration < 1, axis=-1, keepdims=True)
        k = self.concentration.shape[-1]
        vertex = lc.astype(lc.argmax(mode, axis=-1, keepdims=True) == lc.arange(k, device=mode.device), mode.dtype)
        return lc.where(all_small, vertex, mode)

    @property
    def variance(self) -> Tensor:
        con0 = lc.sum(self.concentration, axis=-1, keepdims=True)
        return self.concentration * (con0 - self.concentration) / (con0**2 * (con0 + 1))

    def entropy(self) -> Tensor:
        c = self.concentration
        k = c.shape[-1]
        a0 = lc.sum(c, axis=-1)
        return (
            lc.sum(lgamma(c), axis=-1) - lgamma(a0) - (k - a0) * digamma(a0) - lc.sum((c - 1.0) * digamma(c), axis=-1)
        )

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.concentration,)
