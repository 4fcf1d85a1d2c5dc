"""Lion: the sign of an interpolated momentum (Chen et al., 2023)."""

from __future__ import annotations

__all__ = ["Lion"]

from typing import Any

import lucid_core as lc
from lucid_core import Parameter, Tensor

from .adam import check_betas
from .optimizer import Optimizer, ParamsT


class Lion(Optimizer):
    """Lion ("EvoLved Sign Momentum"), from "Symbolic Discovery of Optimization Algorithms".

    ``p *= 1 - lr * weight_decay``; ``p -= lr * sign(beta1 * m + (1 - beta1) * g)``;
    ``m = beta2 * m + (1 - beta2) * g``. Use a learning rate 3-10x smaller than AdamW's.
    """

    weight_decay_style = "decoupled"

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-4,
        betas: tuple[float, float] = (0.9, 0.99),
        weight_decay: float = 0.0,
        *,
        maximize: bool = False,
        defaults: dict[str, Any] | None = None,
    ) -> None:
        hyper = dict(lr=lr, betas=tuple(betas), weight_decay=weight_decay, maximize=maximize)
        super().__init__(params, hyper, overrides=defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        check_betas(group)

    def init_single(self, param: Parameter, state: dict[str, Any], group: dict[str, Any]) -> None:
        state["exp_avg"] = lc.zeros_like(param.detach())

    def apply_single(self, param: Parameter, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        beta1, beta2 = group["betas"]
        exp_avg = state["exp_avg"]
        param.sub_(lc.sign(exp_avg * beta1 + grad * (1 - beta1)), alpha=group["lr"])
        exp_avg.mul_(beta2).add_(grad * (1 - beta2))
