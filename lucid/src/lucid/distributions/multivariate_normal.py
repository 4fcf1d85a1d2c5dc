"""The multivariate normal distribution (by covariance, precision or lower Cholesky factor)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import lucid_core as lc
from lucid_core import Tensor

from . import constraints
from .distribution import Distribution
from .utils import expand_to, lazy_property, size, standard_normal

__all__ = ["MultivariateNormal"]


def _batch_mv(bmat: Tensor, bvec: Tensor) -> Tensor:
    """Matrix times vector over broadcast batch axes."""
    return lc.matmul(bmat, bvec[..., None])[..., 0]


def _batch_mahalanobis(b_l: Tensor, b_x: Tensor) -> Tensor:
    """x^T (tril tril^T)^{-1} x over broadcast batch axes: the squared norm of tril^{-1} x."""
    batch = lc.broadcast_shapes(tuple(b_l.shape[:-2]), tuple(b_x.shape[:-1]))
    n = b_x.shape[-1]
    tril = lc.broadcast_to(b_l, (*batch, n, n))
    x = lc.broadcast_to(b_x, (*batch, n))
    solved = lc.linalg.solve(tril, x[..., None])[..., 0]
    return lc.sum(solved * solved, axis=-1)


def _tril_inverse(tril: Tensor) -> Tensor:
    n = tril.shape[-1]
    eye = lc.eye(n, dtype=tril.dtype, device=tril.device)
    return lc.linalg.solve(tril, lc.broadcast_to(eye, tuple(tril.shape)))


class MultivariateNormal(Distribution):
    """A Gaussian over vectors: mean ``loc`` and one of ``covariance_matrix``, ``precision_matrix``, ``scale_tril``."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc: Tensor,
        covariance_matrix: Tensor | None = None,
        precision_matrix: Tensor | None = None,
        scale_tril: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        if scale_tril is not None:
            if scale_tril.ndim < 2:
                raise ValueError(
                    "scale_tril matrix must be at least two-dimensional, with optional leading batch dimensions"
                )
            batch_shape = lc.broadcast_shapes(tuple(scale_tril.shape[:-2]), tuple(loc.shape[:-1]))
            self.scale_tril = lc.broadcast_to(scale_tril, (*batch_shape, *scale_tril.shape[-2:]))
        elif covariance_matrix is not None:
            if covariance_matrix.ndim < 2:
                raise ValueError(
                    "covariance_matrix must be at least two-dimensional, with optional leading batch dimensions"
                )
            batch_shape = lc.broadcast_shapes(tuple(covariance_matrix.shape[:-2]), tuple(loc.shape[:-1]))
            self.covariance_matrix = lc.broadcast_to(covariance_matrix, (*batch_shape, *covariance_matrix.shape[-2:]))
        else:
            if precision_matrix.ndim < 2:
                raise ValueError(
                    "precision_matrix must be at least two-dimensional, with optional leading batch dimensions"
                )
            batch_shape = lc.broadcast_shapes(tuple(precision_matrix.shape[:-2]), tuple(loc.shape[:-1]))
            self.precision_matrix = lc.broadcast_to(precision_matrix, (*batch_shape, *precision_matrix.shape[-2:]))
        self.loc = lc.broadcast_to(loc, (*batch_shape, loc.shape[-1]))
        event_shape = self.loc.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = lc.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = lc.linalg.cholesky(lc.linalg.inv(precision_matrix))

    def expand(self, batch_shape: Any, _instance: Any = None) -> MultivariateNormal:
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = size(batch_shape)
        loc_shape = (*batch_shape, *self.event_shape)
        cov_shape = (*batch_shape, *self.event_shape, *self.event_shape)
        new.loc = expand_to(self.loc, loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, expand_to(self.__dict__[name], cov_shape))
        super(MultivariateNormal, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self) -> Tensor:
        return expand_to(self._unbroadcasted_scale_tril, (*self._batch_shape, *self._event_shape, *self._event_shape))

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        tril = self._unbroadcasted_scale_tril
        return expand_to(
            lc.matmul(tril, lc.matrix_transpose(tril)), (*self._batch_shape, *self._event_shape, *self._event_shape)
        )

    @lazy_property
    def precision_matrix(self) -> Tensor:
        tril_inv = _tril_inverse(self._unbroadcasted_scale_tril)
        return expand_to(
            lc.matmul(lc.matrix_transpose(tril_inv), tril_inv),
            (*self._batch_shape, *self._event_shape, *self._event_shape),
        )

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        tril = self._unbroadcasted_scale_tril
        return expand_to(lc.sum(tril * tril, axis=-1), (*self._batch_shape, *self._event_shape))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = standard_normal(shape, self.loc)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        maha = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = lc.sum(lc.log(lc.linalg.diagonal(self._unbroadcasted_scale_tril)), axis=-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + maha) - half_log_det

    def entropy(self) -> Tensor:
        half_log_det = lc.sum(lc.log(lc.linalg.diagonal(self._unbroadcasted_scale_tril)), axis=-1)
        h = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        if len(self._batch_shape) == 0:
            return h
        return expand_to(h, self._batch_shape)
