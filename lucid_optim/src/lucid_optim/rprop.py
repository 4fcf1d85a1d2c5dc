"""Resilient backpropagation: per-coordinate step sizes driven by gradient signs."""

from __future__ import annotations

__all__ = ["Rprop"]

from typing import Any

import lucid_core as lc
from lucid_core import Parameter, Tensor

from .optimizer import Optimizer, ParamsT


class Rprop(Optimizer):
    """Rprop (Riedmiller & Braun), as ``torch.optim.Rprop``.

    Where ``g * g_prev`` is positive the step size grows by ``etaplus``, negative: shrinks by
    ``etaminus`` and the coordinate skips this step; sizes stay in ``step_sizes``.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        maximize: bool = False,
        defaults: dict[str, Any] | None = None,
    ) -> None:
        hyper = dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes), maximize=maximize)
        super().__init__(params, hyper, overrides=defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        etaminus, etaplus = group["etas"]
        if not 0.0 < etaminus < 1.0 < etaplus:
            raise ValueError(f"Invalid eta values: {etaminus}, {etaplus} (expected 0 < etaminus < 1 < etaplus)")

    def init_single(self, param: Parameter, state: dict[str, Any], group: dict[str, Any]) -> None:
        state["step"] = 0
        state["prev"] = lc.zeros_like(param.detach())
        state["step_size"] = lc.full_like(param.detach(), group["lr"])

    def apply_single(self, param: Parameter, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        etaminus, etaplus = group["etas"]
        lo, hi = group["step_sizes"]
        state["step"] += 1
        prev, step_size = state["prev"], state["step_size"]
        sign = lc.sign(grad * prev)
        factor = lc.where(sign > 0, etaplus, lc.where(sign < 0, etaminus, lc.ones_like(sign)))
        step_size.copy_(lc.clip(step_size * factor, lo, hi))
        grad = lc.where(sign < 0, lc.zeros_like(grad), grad)
        param.sub_(lc.sign(grad) * step_size)
        prev.copy_(grad)
