"""``MixtureSameFamily``: a Categorical mixture of components from one batched distribution."""

from __future__ import annotations

from typing import Any, ClassVar

import lucid_core as lc
from lucid_core import Tensor

from . import constraints
from .categorical import Categorical
from .distribution import Distribution
from .utils import log_softmax, size

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """Pick component ``k ~ mixture_distribution``, then draw from ``component_distribution``'s k-th batch entry.

    The rightmost batch axis of ``component_distribution`` indexes the components.
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {}
    has_rsample = False

    def __init__(
        self,
        mixture_distribution: Categorical,
        component_distribution: Distribution,
        validate_args: bool | None = None,
    ) -> None:
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(self._mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of torch.distributions.Categorical")
        if not isinstance(self._component_distribution, Distribution):
            raise ValueError("The Component distribution needs to be an instance of torch.distributions.Distribution")
        mdbs = self._mixture_distribution.batch_shape
        cdbs = self._component_distribution.batch_shape[:-1]
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(
                    f"`mixture_distribution.batch_shape` ({mdbs}) is not "
                    f"compatible with `component_distribution.batch_shape`({size(cdbs)})"
                )
        km = self._mixture_distribution.logits.shape[-1]
        kc = self._component_distribution.batch_shape[-1]
        if km != kc:
            raise ValueError(
                f"`mixture_distribution component` ({km}) does not equal "
                f"`component_distribution.batch_shape[-1]` ({kc})"
            )
        self._num_component = km
        event_shape = self._component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(batch_shape=cdbs, event_shape=event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> MixtureSameFamily:
        batch_shape = size(batch_shape)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand((*batch_shape, self._num_component))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        super(MixtureSameFamily, new).__init__(
            batch_shape=batch_shape, event_shape=new._component_distribution.event_shape, validate_args=False
        )
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self) -> constraints.Constraint:
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self) -> Categorical:
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        return self._component_distribution

    @property
    def mean(self) -> Tensor:
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return lc.sum(probs * self.component_distribution.mean, axis=-1 - self._event_ndims)

    @property
    def variance(self) -> Tensor:
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        axis = -1 - self._event_ndims
        mean_cond_var = lc.sum(probs * self.component_distribution.variance, axis=axis)
        var_cond_mean = lc.sum(probs * (self.component_distribution.mean - self._pad(self.mean)) ** 2, axis=axis)
        return mean_cond_var + var_cond_mean

    def cdf(self, x: Tensor) -> Tensor:
        cdf_x = self.component_distribution.cdf(self._pad(x))
        return lc.sum(cdf_x * self.mixture_distribution.probs, axis=-1)

    def log_prob(self, x: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self.component_distribution.log_prob(self._pad(x))  # [S, B, k]
        log_mix_prob = log_softmax(self.mixture_distribution.logits, -1)  # [B, k]
        return lc.logsumexp(log_prob_x + log_mix_prob, axis=-1)  # [S, B]

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with lc.no_grad():
            sample_shape = size(sample_shape)
            gather_dim = len(sample_shape) + len(self.batch_shape)
            es = tuple(self.event_shape)
            mix_sample = self.mixture_distribution.sample(sample_shape)
            comp_samples = self.component_distribution.sample(sample_shape)
            index = lc.reshape(mix_sample, (*mix_sample.shape, 1, *([1] * len(es))))
            index = lc.broadcast_to(index, (*mix_sample.shape, 1, *es))
            samples = lc.take_along_axis(comp_samples, index, axis=gather_dim)
            return lc.squeeze(samples, axis=gather_dim)

    def _pad(self, x: Tensor) -> Tensor:
        return lc.expand_dims(x, axis=x.ndim - self._event_ndims)

    def _pad_mixture_dimensions(self, x: Tensor) -> Tensor:
        dist_batch_ndims = len(self.batch_shape)
        cat_batch_ndims = len(self.mixture_distribution.batch_shape)
        pad_ndims = 0 if cat_batch_ndims == 1 else dist_batch_ndims - cat_batch_ndims
        xs = tuple(x.shape)
        return lc.reshape(x, xs[:-1] + (1,) * pad_ndims + xs[-1:] + (1,) * self._event_ndims)

    def __repr__(self) -> str:
        return f"MixtureSameFamily(\n  {self.mixture_distribution},\n  {self.component_distribution})"
