"""The Adam family: Adam (with AMSGrad), AdamW, Adamax, NAdam and RAdam, as in PyTorch."""

from __future__ import annotations

__all__ = ["Adam", "AdamW", "Adamax", "NAdam", "RAdam"]

import math
from typing import Any

import lucid_core as lc
from lucid_core import Parameter, Tensor

from .optimizer import Optimizer, ParamsT, fusable, lerp_


def check_betas(group: dict[str, Any]) -> None:
    """Raise ValueError unless both betas lie in [0, 1) and eps >= 0."""
    betas = group["betas"]
    if len(betas) != 2:
        raise ValueError(f"betas must be a pair (beta1, beta2), got {betas!r}")
    for i, b in enumerate(betas):
        if not 0.0 <= b < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {b} (expected 0 <= beta < 1)")
    eps = group.get("eps")
    if isinstance(eps, (int, float)) and eps < 0.0:
        raise ValueError(f"Invalid epsilon value: {eps} (expected eps >= 0)")


def _moments(param: Parameter, state: dict[str, Any]) -> None:
    state["step"] = 0
    state["exp_avg"] = lc.zeros_like(param.detach())
    state["exp_avg_sq"] = lc.zeros_like(param.detach())


class Adam(Optimizer):
    """Adam (Kingma & Ba, 2014), optionally AMSGrad, as ``torch.optim.Adam``.

    ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 * v + (1 - beta2) * g^2``,
    ``p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)``. With
    ``decoupled_weight_decay`` (AdamW) the decay multiplies ``p`` by ``1 - lr * weight_decay``.
    """

    weight_decay_style = "l2"

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        decoupled_weight_decay: bool = False,
        defaults: dict[str, Any] | None = None,
    ) -> None:
        hyper = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                     decoupled_weight_decay=decoupled_weight_decay)  # fmt: skip
        super().__init__(params, hyper, overrides=defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        check_betas(group)

    def init_single(self, param: Parameter, state: dict[str, Any], group: dict[str, Any]) -> None:
        _moments(param, state)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = lc.zeros_like(param.detach())

    def apply_single(self, param: Parameter, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        lr, eps = group["lr"], group["eps"]
        beta1, beta2 = group["betas"]
        state["step"] = step = state["step"] + 1
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        if not group["amsgrad"] and fusable((lr, eps, beta1, beta2), param, grad, exp_avg, exp_avg_sq):  # fused
            lc.fused.adam_step_(
                param, grad, exp_avg, exp_avg_sq, lerp_weight=1 - beta1, beta2=beta2,
                step_size=lr / (1 - beta1**step), bias_correction2_sqrt=(1 - beta2**step) ** 0.5, eps=eps,
            )  # fmt: skip
            return
        lerp_(exp_avg, grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).add_(grad * grad * (1 - beta2))
        step_size = lr / (1 - beta1**step)
        bias_correction2_sqrt = (1 - beta2**step) ** 0.5
        if group["amsgrad"]:
            max_sq = state["max_exp_avg_sq"]
            max_sq.copy_(lc.maximum(max_sq, exp_avg_sq))
            denom = lc.sqrt(max_sq) / bias_correction2_sqrt + eps
        else:
            denom = lc.sqrt(exp_avg_sq) / bias_correction2_sqrt + eps
        param.add_(exp_avg * -step_size / denom)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), as ``torch.optim.AdamW`` (weight_decay 1e-2)."""

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        defaults: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         decoupled_weight_decay=True, defaults=defaults)  # fmt: skip


class Adamax(Optimizer):
    """Adamax (Adam with the infinity norm), as ``torch.optim.Adamax``.

    ``u = max(beta2 * u, |g| + eps)``, ``p -= lr / (1 - beta1^t) * m / u``.
    """

    weight_decay_style = "l2"

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        *,
        maximize: bool = False,
        defaults: dict[str, Any] | None = None,
    ) -> None:
        hyper = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, maximize=maximize)
        super().__init__(params, hyper, overrides=defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        check_betas(group)

    def init_single(self, param: Parameter, state: dict[str, Any], group: dict[str, Any]) -> None:
        state["step"] = 0
        state["exp_avg"] = lc.zeros_like(param.detach())
        state["exp_inf"] = lc.zeros_like(param.detach())

    def apply_single(self, param: Parameter, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        beta1, beta2 = group["betas"]
        state["step"] = step = state["step"] + 1
        exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
        lerp_(exp_avg, grad, 1 - beta1)
        exp_inf.copy_(lc.maximum(exp_inf * beta2, lc.abs(grad) + group["eps"]))
        clr = group["lr"] / (1 - beta1**step)
        param.add_(exp_avg * -clr / exp_inf)


class NAdam(Optimizer):
    """Adam with Nesterov momentum (Dozat, 2016), as ``torch.optim.NAdam``.

    The momentum schedule is ``mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay))``;
    ``decoupled_weight_decay`` gives NAdamW.
    """

    weight_decay_style = "l2"

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        maximize: bool = False,
        defaults: dict[str, Any] | None = None,
    ) -> None:
        hyper = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                     decoupled_weight_decay=decoupled_weight_decay, maximize=maximize)  # fmt: skip
        super().__init__(params, hyper, overrides=defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        check_betas(group)
        if group["momentum_decay"] < 0.0:
            raise ValueError(f"Invalid momentum_decay value: {group['momentum_decay']} (expected >= 0)")

    def init_single(self, param: Parameter, state: dict[str, Any], group: dict[str, Any]) -> None:
        _moments(param, state)
        state["mu_product"] = 1.0

    def apply_single(self, param: Parameter, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        lr = group["lr"]
        beta1, beta2 = group["betas"]
        state["step"] = step = state["step"] + 1
        bias_correction2 = 1 - beta2**step
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * group["momentum_decay"])))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * group["momentum_decay"])))
        state["mu_product"] = mu_product = state["mu_product"] * mu
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        lerp_(exp_avg, grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).add_(grad * grad * (1 - beta2))
        denom = lc.sqrt(exp_avg_sq / bias_correction2) + group["eps"]
        param.add_(grad * (-lr * (1.0 - mu) / (1.0 - mu_product)) / denom)
        param.add_(exp_avg * ((-lr * mu_next) / (1.0 - mu_product * mu_next)) / denom)


class RAdam(Optimizer):
    """Rectified Adam (Liu et al., 2019), as ``torch.optim.RAdam``: plain momentum SGD until the
    variance estimate is tractable (``rho_t > 5``), then rectified Adam steps."""

    weight_decay_style = "l2"

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        decoupled_weight_decay: bool = False,
        *,
        maximize: bool = False,
        defaults: dict[str, Any] | None = None,
    ) -> None:
        hyper = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                     decoupled_weight_decay=decoupled_weight_decay, maximize=maximize)  # fmt: skip
        super().__init__(params, hyper, overrides=defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        check_betas(group)

    def init_single(self, param: Parameter, state: dict[str, Any], group: dict[str, Any]) -> None:
        _moments(param, state)

    def apply_single(self, param: Parameter, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        lr = group["lr"]
        beta1, beta2 = group["betas"]
        state["step"] = step = state["step"] + 1
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        lerp_(exp_avg, grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).add_(grad * grad * (1 - beta2))
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        corrected = exp_avg / bias_correction1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
        if rho_t > 5.0:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            adaptive = (bias_correction2**0.5) / (lc.sqrt(exp_avg_sq) + group["eps"])
            param.sub_(corrected * lr * adaptive * rect)
        else:
            param.sub_(corrected * lr)
