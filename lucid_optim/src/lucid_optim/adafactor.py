"""Adafactor: Adam-like steps with a factored (row x column) second moment, as ``torch.optim.Adafactor``."""

from __future__ import annotations

__all__ = ["Adafactor"]

import math
from typing import Any

import lucid_core as lc
from lucid_core import Parameter, Tensor

from .optimizer import Optimizer, ParamsT, lerp_


def _rms(x: Tensor) -> float:
    return math.sqrt(float(lc.sum(x * x)) / max(1, x.size))


class Adafactor(Optimizer):
    """Adafactor (Shazeer & Stern, 2018) in PyTorch's formulation (no first moment).

    Matrices keep row and column means of ``g^2`` (over the last two axes); vectors keep a full
    variance. ``beta2_t = 1 - t^beta2_decay``; the step is ``max(eps2, rms(p)) * min(lr, 1/sqrt(t))``
    times the update clipped to RMS ``d``. ``eps=(None, eps2)`` uses the dtype's machine epsilon.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple[float | None, float] = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        maximize: bool = False,
        defaults: dict[str, Any] | None = None,
    ) -> None:
        hyper = dict(lr=lr, beta2_decay=beta2_decay, eps=tuple(eps), d=d, weight_decay=weight_decay, maximize=maximize)
        super().__init__(params, hyper, overrides=defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        if group["beta2_decay"] > 0.0:
            raise ValueError(f"beta2_decay should be <= 0 but is: {group['beta2_decay']}")
        eps1, eps2 = group["eps"]
        if eps1 is not None and eps1 < 0.0:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps1}")
        if eps2 < 0.0:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps2}")
        if group["d"] < 1.0:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {group['d']}")

    def init_single(self, param: Parameter, state: dict[str, Any], group: dict[str, Any]) -> None:
        state["step"] = 0
        if param.ndim > 1:
            row = list(param.shape)
            row[-1] = 1
            col = list(param.shape)
            col[-2] = 1
            state["row_var"] = lc.zeros(tuple(row), dtype=param.dtype, device=param.device)
            state["col_var"] = lc.zeros(tuple(col), dtype=param.dtype, device=param.device)
        else:
            state["variance"] = lc.zeros_like(param.detach())

    def apply_single(self, param: Parameter, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        lr, wd = group["lr"], group["weight_decay"]
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = lc.finfo(param.dtype).eps
        state["step"] = step = state["step"] + 1
        one_minus_beta2 = float(step) ** group["beta2_decay"]
        rho = min(lr, 1 / (step**0.5))
        alpha = max(eps2, _rms(param)) * rho
        # decoupled decay, applied here rather than by the base (weight_decay_style) because PyTorch takes
        # the parameter's RMS above before decaying it
        if wd != 0:
            param.mul_(1 - lr * wd)
        if grad.ndim > 1:
            row_var, col_var = state["row_var"], state["col_var"]
            sq = grad * grad
            lerp_(row_var, lc.mean(sq, axis=-1, keepdims=True), one_minus_beta2)
            lerp_(col_var, lc.mean(sq, axis=-2, keepdims=True), one_minus_beta2)
            var = (row_var @ col_var) / lc.clip(lc.mean(row_var, axis=-2, keepdims=True), eps1)
        else:
            variance = state["variance"]
            lerp_(variance, grad * grad, one_minus_beta2)
            var = variance
        update = lc.rsqrt(lc.clip(var, eps1 * eps1)) * grad
        denom = max(1.0, _rms(update) / group["d"])
        param.sub_(update, alpha=alpha / denom)
