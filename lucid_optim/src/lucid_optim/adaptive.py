"""Per-coordinate adaptive methods: RMSprop, Adagrad and Adadelta, as in PyTorch."""

from __future__ import annotations

__all__ = ["RMSprop", "Adagrad", "Adadelta"]

from typing import Any

import lucid_core as lc
from lucid_core import Parameter, Tensor

from .optimizer import Optimizer, ParamsT, fusable, lerp_


def _check_nonneg(group: dict[str, Any], *names: str) -> None:
    for name in names:
        if group[name] < 0.0:
            raise ValueError(f"Invalid {name} value: {group[name]} (expected {name} >= 0)")


class RMSprop(Optimizer):
    """RMSprop (Hinton), optionally centered and with momentum, as ``torch.optim.RMSprop``.

    ``v = alpha * v + (1 - alpha) * g^2``; the step divides ``g`` by ``sqrt(v - mean(g)^2 if centered else v) + eps``.
    """

    weight_decay_style = "l2"

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum: float = 0.0,
        centered: bool = False,
        *,
        maximize: bool = False,
        defaults: dict[str, Any] | None = None,
    ) -> None:
        hyper = dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum, centered=centered,
                     maximize=maximize)  # fmt: skip
        super().__init__(params, hyper, overrides=defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        _check_nonneg(group, "eps", "momentum", "alpha")

    def init_single(self, param: Parameter, state: dict[str, Any], group: dict[str, Any]) -> None:
        state["step"] = 0
        state["square_avg"] = lc.zeros_like(param.detach())
        if group["momentum"] > 0:
            state["momentum_buffer"] = lc.zeros_like(param.detach())
        if group["centered"]:
            state["grad_avg"] = lc.zeros_like(param.detach())

    def apply_single(self, param: Parameter, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        alpha, momentum = group["alpha"], group["momentum"]
        state["step"] += 1
        square_avg = state["square_avg"]
        square_avg.mul_(alpha).add_(grad * grad * (1 - alpha))
        if group["centered"]:
            grad_avg = state["grad_avg"]
            lerp_(grad_avg, grad, 1 - alpha)
            avg = lc.sqrt(square_avg - grad_avg * grad_avg) + group["eps"]
        else:
            avg = lc.sqrt(square_avg) + group["eps"]
        if momentum > 0:
            buf = state["momentum_buffer"]
            buf.mul_(momentum).add_(grad / avg)
            param.sub_(buf, alpha=group["lr"])
        else:
            param.add_(grad * -group["lr"] / avg)


class Adagrad(Optimizer):
    """Adagrad (Duchi et al., 2011), as ``torch.optim.Adagrad``.

    ``s += g^2``, ``p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(s) + eps)``.
    """

    weight_decay_style = "l2"

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        lr_decay: float = 0.0,
        weight_decay: float = 0.0,
        initial_accumulator_value: float = 0.0,
        eps: float = 1e-10,
        *,
        maximize: bool = False,
        defaults: dict[str, Any] | None = None,
    ) -> None:
        hyper = dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                     initial_accumulator_value=initial_accumulator_value, eps=eps, maximize=maximize)  # fmt: skip
        super().__init__(params, hyper, overrides=defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        _check_nonneg(group, "lr_decay", "initial_accumulator_value", "eps")

    def init_single(self, param: Parameter, state: dict[str, Any], group: dict[str, Any]) -> None:
        state["step"] = 0
        state["sum"] = lc.full_like(param.detach(), group["initial_accumulator_value"])

    def apply_single(self, param: Parameter, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        state["step"] = step = state["step"] + 1
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        state_sum = state["sum"]
        state_sum.add_(grad * grad)
        param.add_(grad * -clr / (lc.sqrt(state_sum) + group["eps"]))


class Adadelta(Optimizer):
    """Adadelta (Zeiler, 2012), as ``torch.optim.Adadelta``.

    ``v = rho * v + (1 - rho) * g^2``, ``d = sqrt(u + eps) / sqrt(v + eps) * g``,
    ``u = rho * u + (1 - rho) * d^2``, ``p -= lr * d``.
    """

    weight_decay_style = "l2"

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        *,
        maximize: bool = False,
        defaults: dict[str, Any] | None = None,
    ) -> None:
        hyper = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize)
        super().__init__(params, hyper, overrides=defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        if not 0.0 <= group["rho"] <= 1.0:
            raise ValueError(f"Invalid rho value: {group['rho']} (expected 0 <= rho <= 1)")
        _check_nonneg(group, "eps")

    def init_single(self, param: Parameter, state: dict[str, Any], group: dict[str, Any]) -> None:
        state["step"] = 0
        state["square_avg"] = lc.zeros_like(param.detach())
        state["acc_delta"] = lc.zeros_like(param.detach())

    def apply_single(self, param: Parameter, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        rho, eps = group["rho"], group["eps"]
        state["step"] += 1
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        if fusable((rho, eps, group["lr"]), param, grad, square_avg, acc_delta):  # one kernel, the same numbers
            lc.fused.adadelta_step_(param, grad, square_avg, acc_delta, rho=rho, eps=eps, lr=group["lr"])
            return
        square_avg.mul_(rho).add_(grad * grad * (1 - rho))
        delta = lc.sqrt(acc_delta + eps) / lc.sqrt(square_avg + eps) * grad
        acc_delta.mul_(rho).add_(delta * delta * (1 - rho))
        param.sub_(delta, alpha=group["lr"])
