"""Gradient clipping, flat-vector views of parameters, and activation checkpointing (``utils.checkpoint``)."""

from __future__ import annotations

__all__ = [
    "clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters", "checkpoint", "rnn",
    "parametrize", "parametrizations", "weight_norm", "remove_weight_norm", "spectral_norm",
]  # fmt: skip

from collections.abc import Iterable

import lucid_core as lc
from lucid_core import Tensor

from . import (
    checkpoint,  # the module, as torch.utils.checkpoint (its function is checkpoint.checkpoint)
    parametrizations,
    parametrize,
    rnn,
)
from ._weight_norm import remove_weight_norm, weight_norm
from .parametrizations import spectral_norm


def _as_list(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
) -> Tensor:
    """Scale all gradients together so their joint ``norm_type``-norm is at most ``max_norm``.

    Returns the total norm before clipping (a 0-d tensor).
    """
    params = [p for p in _as_list(parameters) if p.grad is not None]
    if not params:
        return lc.asarray(0.0)
    norm_type = float(norm_type)
    with lc.no_grad():
        grads = [p.grad.detach() for p in params]
        dev = grads[0].device
        if norm_type == float("inf"):
            norms = [lc.max(lc.abs(g)).to(dev) for g in grads]
            total = lc.max(lc.stack(norms))
        else:
            parts = [lc.sum(lc.abs(g) ** norm_type).to(dev) for g in grads]
            total = lc.sum(lc.stack(parts)) ** (1.0 / norm_type)
        if error_if_nonfinite and not bool(lc.isfinite(total).item()):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be "
                "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
                "`error_if_nonfinite=False`"
            )
        coef = lc.clip(max_norm / (total + 1e-6), None, 1.0)
        for p in params:
            p.grad.mul_(coef.to(p.grad.device).astype(p.grad.dtype))
    return total


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float) -> None:
    """Clip every gradient element into [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    with lc.no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and concatenated into one 1-D tensor (on the first one's device)."""
    params = list(parameters)
    if not params:
        raise ValueError("parameters_to_vector: got no parameters")
    dev = params[0].device
    for p in params:
        if p.device != dev:
            raise RuntimeError(f"parameters_to_vector: parameters are on different devices ({dev} and {p.device})")
    return lc.concat([lc.reshape(p, (-1,)) for p in params])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of the 1-D ``vec`` into the parameters, in place."""
    if not isinstance(vec, Tensor) or vec.ndim != 1:
        raise TypeError(f"vector_to_parameters: expected a 1-D Tensor, got {getattr(vec, 'shape', type(vec).__name__)}")
    params = list(parameters)
    total = sum(p.size for p in params)
    if total != vec.shape[0]:
        raise ValueError(f"vector_to_parameters: vector has {vec.shape[0]} elements but the parameters hold {total}")
    offset = 0
    with lc.no_grad():
        for p in params:
            n = p.size
            p.copy_(vec[offset : offset + n].reshape(p.shape))
            offset += n
