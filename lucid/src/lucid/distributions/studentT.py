"""Student's t distribution (the module keeps PyTorch's name, ``studentT``)."""

# ruff: noqa: N999

from __future__ import annotations

import math
from typing import Any, ClassVar

import lucid_core as lc
from lucid_core import Tensor

from . import constraints
from ._special import digamma, lgamma
from .chi2 import Chi2
from .distribution import Distribution
from .utils import broadcast_all, expand_to, size, standard_normal

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t with ``df`` degrees of freedom, location ``loc`` and scale ``scale``."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "df": constraints.positive,
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.real
    has_rsample = True

    @property
    def mean(self) -> Tensor:
        return lc.where(self.df > 1, self.loc, lc.full_like(self.loc, math.nan))

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        df = self.df
        finite = self.scale**2 * df / lc.where(df > 2, df - 2, lc.ones_like(df))
        m = lc.where(df > 2, finite, lc.full_like(df, math.inf))
        return lc.where(df <= 1, lc.full_like(df, math.nan), m)

    def __init__(self, df: Any, loc: Any = 0.0, scale: Any = 1.0, validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self._chi2._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> StudentT:
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = size(batch_shape)
        new.df = expand_to(self.df, batch_shape)
        new.loc = expand_to(self.loc, batch_shape)
        new.scale = expand_to(self.scale, batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        super(StudentT, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        # x ~ N(0, 1), z ~ Chi2(df): x / sqrt(z / df) ~ t(df)
        shape = self._extended_shape(sample_shape)
        x = standard_normal(shape, self.df)
        z = self._chi2.rsample(sample_shape)
        y_t = x * lc.rsqrt(z / self.df)
        return self.loc + self.scale * y_t

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (
            lc.log(self.scale)
            + 0.5 * lc.log(self.df)
            + 0.5 * math.log(math.pi)
            + lgamma(0.5 * self.df)
            - lgamma(0.5 * (self.df + 1.0))
        )
        return -0.5 * (self.df + 1.0) * lc.log1p(y**2 / self.df) - z

    def entropy(self) -> Tensor:
        lbeta = lgamma(0.5 * self.df) + math.lgamma(0.5) - lgamma(0.5 * (self.df + 1))
        return (
            lc.log(self.scale)
            + 0.5 * (self.df + 1) * (digamma(0.5 * (self.df + 1)) - digamma(0.5 * self.df))
            + 0.5 * lc.log(self.df)
            + lbeta
        )
