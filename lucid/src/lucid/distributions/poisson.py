"""The Poisson distribution."""

from __future__ import annotations

from numbers import Number
from typing import Any, ClassVar

import lucid_core as lc
from lucid_core import Tensor

from . import constraints
from ._special import lgamma, xlogy
from .exp_family import ExponentialFamily
from .utils import broadcast_all, expand_to, size

__all__ = ["Poisson"]

_SMALL_RATE = 10.0  # below it, Knuth's product of uniforms; at or above, Hormann's transformed rejection


def _poisson_knuth(rate: Tensor) -> Tensor:
    """Count the uniforms whose running product stays above exp(-rate) (rate < 10: few steps)."""
    limit = lc.exp(-rate)
    prod = lc.ones_like(rate)
    count = lc.zeros_like(rate)
    active = lc.ones(tuple(rate.shape), dtype=lc.bool, device=rate.device)
    while True:
        prod = prod * lc.rand(*rate.shape, dtype=rate.dtype, device=rate.device)
        active = active & (prod > limit)
        if not bool(lc.any(active).item()):
            return count
        count = count + lc.astype(active, rate.dtype)


def _poisson_ptrs(rate: Tensor) -> Tensor:
    """Hormann's PTRS (transformed rejection with squeeze), for rate >= 10."""
    slam = lc.sqrt(rate)
    loglam = lc.log(rate)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    invalpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)
    out = lc.zeros_like(rate)
    done = lc.zeros(tuple(rate.shape), dtype=lc.bool, device=rate.device)
    while not bool(lc.all(done).item()):
        u = lc.rand(*rate.shape, dtype=rate.dtype, device=rate.device) - 0.5
        v = lc.rand(*rate.shape, dtype=rate.dtype, device=rate.device)
        us = 0.5 - lc.abs(u)
        k = lc.floor((2 * a / us + b) * u + rate + 0.43)
        quick = (us >= 0.07) & (v <= vr)
        lhs = lc.log(v) + lc.log(invalpha) - lc.log(a / (us * us) + b)
        rhs = -rate + k * loglam - lgamma(lc.clip(k, 0.0, None) + 1)
        slow = (k >= 0) & ~((us < 0.013) & (v > us)) & (lhs <= rhs)
        accept = (quick | slow) & ~done
        out = lc.where(accept, k, out)
        done = done | accept
    return out


def poisson_sample(rate: Tensor) -> Tensor:
    """Poisson(rate) counts, elementwise, as floats of ``rate``'s dtype (``torch.poisson``)."""
    bad = ~lc.isfinite(rate)  # inf or nan: no finite count (the samplers would not stop)
    rate = lc.where(bad, lc.zeros_like(rate), rate)
    small = rate < _SMALL_RATE
    result = lc.zeros_like(rate)
    if bool(lc.any(small).item()):
        result = lc.where(small, _poisson_knuth(lc.where(small, rate, lc.zeros_like(rate))), result)
    if bool(lc.any(~small).item()):
        result = lc.where(small, result, _poisson_ptrs(lc.where(small, lc.full_like(rate, _SMALL_RATE), rate)))
    return lc.where(bad, lc.full_like(rate, float("nan")), result)


class Poisson(ExponentialFamily):
    """Poisson distribution with mean ``rate``."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return lc.floor(self.rate)

    @property
    def variance(self) -> Tensor:
        return self.rate

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        batch_shape = () if isinstance(rate, Number) else self.rate.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Poisson:
        new = self._get_checked_instance(Poisson, _instance)
        batch_shape = size(batch_shape)
        new.rate = expand_to(self.rate, batch_shape)
        super(Poisson, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with lc.no_grad():
            return poisson_sample(lc.broadcast_to(self.rate.detach(), tuple(shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return xlogy(value, rate) - rate - lgamma(value + 1)

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (lc.log(self.rate),)
