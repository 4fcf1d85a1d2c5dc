"""Fused in-place updates for optimizers: one kernel call where the per-op version makes a dozen.

An optimizer step is a chain of element-wise ops per parameter; on a CPU each is a pass over memory and a
Python call, which for Adam costs as much as a small model's forward. These functions run the chain as
one declared kernel (``lucid_core.kernels``: a backend may own it, the composed default runs the same ops
in the same order), so the numbers are those of the per-op update, and write the results into the
tensors as their in-place methods do (every detached view sees them, versions are counted).
"""

from __future__ import annotations

__all__ = ["adam_step_"]

from . import kernels
from ._grad_mode import _mode
from ._tensor import Tensor


def adam_step_(
    param: Tensor,
    grad: Tensor,
    exp_avg: Tensor,
    exp_avg_sq: Tensor,
    *,
    lerp_weight: float,
    beta2: float,
    step_size: float,
    bias_correction2_sqrt: float,
    eps: float,
) -> None:
    """Adam's update of ``param`` and its moments, in place (PyTorch's single-tensor Adam, op for op).

    ``exp_avg = lerp(exp_avg, grad, lerp_weight)``, ``exp_avg_sq = exp_avg_sq * beta2 + grad * grad *
    (1 - beta2)``, ``param += exp_avg * -step_size / (sqrt(exp_avg_sq) / bias_correction2_sqrt + eps)``.
    All four tensors must share a device, a floating dtype and a shape.
    """
    ts = (param, grad, exp_avg, exp_avg_sq)
    for name, t in zip(("param", "grad", "exp_avg", "exp_avg_sq"), ts):
        if not isinstance(t, Tensor):
            raise TypeError(f"adam_step_: {name} is a {type(t).__name__}, expected a Tensor")
        if t.device != param.device or t.dtype != param.dtype or t.shape != param.shape:
            raise ValueError(
                f"adam_step_: {name} is {t.dtype.name} {t.shape} on {t.device}; expected the param's "
                f"{param.dtype.name} {param.shape} on {param.device}"
            )
    if param.dtype.kind != "f":
        raise TypeError(f"adam_step_: expected floating tensors, got {param.dtype.name}")
    if _mode.enabled and any(t._requires_grad for t in ts):
        raise RuntimeError(
            "adam_step_: an in-place update of tensors that require grad must run under `lucid_core.no_grad()`"
        )
    p, m, v = kernels.call(
        param._device, "adam_step", param._data, grad._data, exp_avg._data, exp_avg_sq._data,
        lerp_weight, beta2, 1 - beta2, -step_size, bias_correction2_sqrt, eps,
    )  # fmt: skip
    exp_avg._set_data(m)
    exp_avg_sq._set_data(v)
    param._set_data(p)
