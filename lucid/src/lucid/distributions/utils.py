"""Helpers shared by the distributions (``torch.distributions.utils``'s names)."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import lucid_core as lc
from lucid_core import Tensor
from lucid_core._tensor_methods import Size

__all__ = [
    "broadcast_all",
    "logits_to_probs",
    "probs_to_logits",
    "clamp_probs",
    "lazy_property",
    "euler_constant",
    "sum_rightmost",
]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """Numbers and tensors broadcast to one shape; numbers take the first tensor's dtype and device.

    Raises ValueError, as PyTorch does, when a value is neither a number nor a Tensor.
    """
    if not all(isinstance(v, (Tensor, numbers.Number)) for v in values):
        raise ValueError(
            "Input arguments must all be instances of numbers.Number, lucid.Tensor or objects implementing "
            "__torch_function__."
        )
    like = next((v for v in values if isinstance(v, Tensor)), None)
    if like is None:
        tensors = [lc.asarray(float(v), dtype=lc.float32) for v in values]
    else:
        dtype = like.dtype if like.dtype.kind in "fc" else lc.float32
        tensors = [
            v if isinstance(v, Tensor) else lc.asarray(float(v), dtype=dtype, device=like.device) for v in values
        ]
    return tuple(lc.broadcast_arrays(*tensors))


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    return lc.exp(x - lc.logsumexp(x, axis=axis, keepdims=True))


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    return x - lc.logsumexp(x, axis=axis, keepdims=True)


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities clipped to [eps, 1 - eps] of their dtype, so their logarithms stay finite."""
    eps = lc.finfo(probs.dtype).eps
    return lc.clip(probs, eps, 1.0 - eps)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Sigmoid of binary logits, softmax over the last axis otherwise."""
    if is_binary:
        return lc.sigmoid(logits)
    return softmax(logits, -1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """log-odds of binary probabilities, log-probabilities otherwise (clipped first, as PyTorch does)."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return lc.log(ps_clamped) - lc.log1p(-ps_clamped)
    return lc.log(ps_clamped)


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum out the ``dim`` rightmost axes (``dim <= 0`` leaves ``value`` as it is)."""
    if dim == 0:
        return value
    if not isinstance(value, Tensor):
        return value
    return lc.sum(value, axis=tuple(range(-dim, 0)))


class lazy_property:  # noqa: N801 - PyTorch's name
    """A property computed on first access and then stored on the instance (``probs`` from ``logits``)."""

    def __init__(self, wrapped: Callable[[Any], Any]) -> None:
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        if instance is None:
            return self
        value = self.wrapped(instance)
        instance.__dict__[self.wrapped.__name__] = value
        return value


def size(shape: Any) -> Size:
    """A shape as ``lucid.Size``."""
    if isinstance(shape, int):
        return Size((shape,))
    return Size(tuple(int(s) for s in shape))


def standard_normal(shape: Any, like: Tensor) -> Tensor:
    """N(0, 1) draws of ``shape`` with ``like``'s dtype and device (from the global seed)."""
    return lc.randn(*size(shape), dtype=like.dtype, device=like.device)


def standard_uniform(shape: Any, like: Tensor) -> Tensor:
    """U[0, 1) draws of ``shape`` with ``like``'s dtype and device (from the global seed)."""
    return lc.rand(*size(shape), dtype=like.dtype, device=like.device)


def expand_to(t: Tensor, shape: Any) -> Tensor:
    """``t`` broadcast to ``shape`` (a view; autograd sums the gradient back)."""
    shape = tuple(size(shape))
    if tuple(t.shape) == shape:
        return t
    return lc.broadcast_to(t, shape)
