"""Stochastic gradient descent with momentum, dampening and Nesterov momentum."""

from __future__ import annotations

__all__ = ["SGD", "ASGD"]

from typing import Any

import lucid_core as lc
from lucid_core import Parameter, Tensor

from .optimizer import Optimizer, ParamsT, fusable


class SGD(Optimizer):
    """SGD, optionally with (Nesterov) momentum, as PyTorch's ``torch.optim.SGD``.

    ``buf = momentum * buf + (1 - dampening) * g`` (``buf = g`` on the first step);
    ``p -= lr * (g + momentum * buf if nesterov else buf)``, with ``g = grad + weight_decay * p``.
    """

    weight_decay_style = "l2"

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        defaults: dict[str, Any] | None = None,
    ) -> None:
        hyper = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                     maximize=maximize)  # fmt: skip
        super().__init__(params, hyper, overrides=defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        if group["momentum"] < 0.0:
            raise ValueError(f"Invalid momentum value: {group['momentum']} (expected momentum >= 0)")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("Nesterov momentum requires a momentum > 0 and zero dampening")

    def apply_single(self, param: Parameter, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        momentum = group["momentum"]
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = grad.detach().clone()
            elif fusable((group["lr"], momentum, group["dampening"]), param, grad, buf):  # the ops below, fused
                lc.fused.sgd_step_(
                    param, grad, buf, momentum=momentum, dampening=group["dampening"], lr=group["lr"],
                    nesterov=group["nesterov"],
                )  # fmt: skip
                return
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - group["dampening"])
            grad = grad + buf * momentum if group["nesterov"] else buf
        param.sub_(grad, alpha=group["lr"])


class ASGD(Optimizer):
    """Averaged SGD (Polyak & Juditsky), as ``torch.optim.ASGD``.

    ``p = p * (1 - lambd * eta) - eta * g``; ``ax`` averages the iterates once ``t > t0``;
    ``eta = lr / (1 + lambd * lr * t)^alpha``.
    """

    weight_decay_style = "l2"

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0.0,
        *,
        maximize: bool = False,
        defaults: dict[str, Any] | None = None,
    ) -> None:
        hyper = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, maximize=maximize)
        super().__init__(params, hyper, overrides=defaults)

    def init_single(self, param: Parameter, state: dict[str, Any], group: dict[str, Any]) -> None:
        state["step"] = 0
        state["eta"] = float(group["lr"])
        state["mu"] = 1.0
        state["ax"] = lc.zeros_like(param.detach())

    def apply_single(self, param: Parameter, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        lr, lambd = group["lr"], group["lambd"]
        state["step"] = step = state["step"] + 1
        eta = state["eta"]
        param.mul_(1 - lambd * eta)
        param.sub_(grad, alpha=eta)
        ax = state["ax"]
        if state["mu"] != 1:
            ax.add_((param - ax) * state["mu"])
        else:
            ax.copy_(param)
        state["eta"] = lr / ((1 + lambd * lr * step) ** group["alpha"])
        state["mu"] = 1 / max(1, step - group["t0"])
