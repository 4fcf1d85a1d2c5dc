"""The ``Distribution`` base class: shapes, validation and the generic parts of the interface."""

from __future__ import annotations

import warnings
from typing import Any

import lucid_core as lc
from lucid_core import Tensor
from lucid_core._tensor_methods import Size

from . import constraints
from .utils import lazy_property, size

__all__ = ["Distribution"]


def _all_true(valid: Tensor) -> bool:
    return bool(lc.all(valid).item())


class Distribution:
    """Abstract base of probability distributions (PyTorch's ``Distribution``).

    Args:
        batch_shape: the shape over which parameters are batched.
        event_shape: the shape of a single sample (without batching).
        validate_args: check parameters (here) and values given to ``log_prob``/``cdf``/``icdf``;
            None takes the class default (:meth:`set_default_validate_args`).
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for every distribution made afterwards without ``validate_args``."""
        if value not in [True, False]:
            raise ValueError(f"set_default_validate_args: expected True or False, got {value!r}")
        Distribution._validate_args = value

    def __init__(self, batch_shape: Any = (), event_shape: Any = (), validate_args: bool | None = None) -> None:
        self._batch_shape = size(batch_shape)
        self._event_shape = size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(
                    f"{self.__class__} does not define `arg_constraints`. "
                    "Please set `arg_constraints = {}` or initialize the distribution "
                    "with `validate_args=False` to turn off validation.",
                    stacklevel=2,
                )
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # constraints that depend on other parameters cannot be checked
                if param not in self.__dict__ and isinstance(getattr(type(self), param, None), lazy_property):
                    continue  # a lazily built parameter (probs from logits) is valid by construction
                value = getattr(self, param)
                if not _all_true(constraint.check(value)):
                    raise ValueError(
                        f"Expected parameter {param} "
                        f"({type(value).__name__} of shape {tuple(value.shape)}) "
                        f"of distribution {self!r} "
                        f"to satisfy the constraint {constraint!r}, "
                        f"but found invalid values:\n{value}"
                    )

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        """A new distribution whose parameters are expanded (not copied) to ``batch_shape``."""
        raise NotImplementedError

    @property
    def batch_shape(self) -> Size:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        """Each tensor parameter's constraint."""
        raise NotImplementedError

    @property
    def support(self) -> Any:
        """The constraint every sample satisfies."""
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        """The distribution's mean."""
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        """The distribution's mode."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        """The distribution's variance."""
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        """The distribution's standard deviation."""
        return lc.sqrt(self.variance)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """Samples of shape ``sample_shape + batch_shape + event_shape``, outside the graph."""
        with lc.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """Reparameterised samples: gradients flow from them to the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        """``sample((n,))`` (PyTorch's deprecated spelling)."""
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.", FutureWarning, stacklevel=2)
        return self.sample((n,))

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse cumulative distribution function at ``value``."""
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete support along axis 0, shape ``(cardinality,) + batch_shape + event_shape``."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The entropy, one per batch entry."""
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        """exp(entropy)."""
        return lc.exp(self.entropy())

    def _extended_shape(self, sample_shape: Any = ()) -> Size:
        return Size(tuple(size(sample_shape)) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value: Tensor) -> None:
        """Check that ``value`` broadcasts with the shapes and lies in the support (PyTorch's messages)."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = value.ndim - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(
                f"The right-most size of value must match event_shape: {Size(value.shape)} vs {self._event_shape}."
            )
        actual_shape = tuple(value.shape)
        expected_shape = tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(
                    "Value is not broadcastable with batch_shape+event_shape: "
                    f"{Size(actual_shape)} vs {Size(expected_shape)}."
                )
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(
                f"{self.__class__} does not define `support` to enable sample validation. "
                "Please initialize the distribution with `validate_args=False` to turn off validation.",
                stacklevel=2,
            )
            return
        if not _all_true(support.check(value)):
            raise ValueError(
                "Expected value argument "
                f"({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({support!r}) "
                f"of the distribution {self!r}, "
                f"but found invalid values:\n{value}"
            )

    def _get_checked_instance(self, cls: type, _instance: Any = None) -> Any:
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom __init__ method "
                "must also define a custom .expand() method."
            )
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        param_names = [k for k in self.arg_constraints if k in self.__dict__]
        args_string = ", ".join(
            f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else Size(self.__dict__[p].shape)}"
            for p in param_names
        )
        return self.__class__.__name__ + "(" + args_string + ")"
