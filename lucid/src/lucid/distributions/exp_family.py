"""``ExponentialFamily``: the base PyTorch gives the exponential-family distributions."""

from __future__ import annotations

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Distributions of the exponential family (Normal, Bernoulli, Gamma, ...), for ``isinstance`` checks."""
