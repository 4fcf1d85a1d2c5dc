"""Multiplicative schedules: LambdaLR, MultiplicativeLR, StepLR, MultiStepLR, ConstantLR, LinearLR,
ExponentialLR and PolynomialLR, each in PyTorch's recursive form plus its closed form."""

from __future__ import annotations

__all__ = ["LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR",
           "PolynomialLR"]  # fmt: skip

import types
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..optimizer import Optimizer
from ._base import LRScheduler, format_param

#: a learning-rate factor as a function of the epoch, or one such function per param group
LRLambda = Callable[[int], float] | Sequence[Callable[[int], float]]


def _current(optimizer: Optimizer) -> list[float]:
    return [group["lr"] for group in optimizer.param_groups]


class _LambdaBase(LRScheduler):
    """Shared by LambdaLR and MultiplicativeLR: one callable per group, kept out of the state_dict."""

    _not_saved = ("optimizer", "lr_lambdas")

    def __init__(self, optimizer: Optimizer, lr_lambda: LRLambda, last_epoch: int, verbose: bool) -> None:
        self.optimizer = optimizer
        self.lr_lambdas: list[Callable[[int], float]] = format_param("lr_lambda", optimizer, lr_lambda)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch, verbose)

    def state_dict(self) -> dict[str, Any]:
        out = super().state_dict()
        # callable objects keep their attributes; plain functions are not saved
        out["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else dict(getattr(fn, "__dict__", {})) for fn in self.lr_lambdas
        ]
        return out

    def _load_state(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        lambdas = state.pop("lr_lambdas", None) or []
        super()._load_state(state)
        for fn, attrs in zip(self.lr_lambdas, lambdas):
            if attrs is not None:
                fn.__dict__.update(attrs)


class LambdaLR(_LambdaBase):
    """``lr = initial_lr * lr_lambda(epoch)``; ``lr_lambda`` may be one function or one per group."""

    def __init__(self, optimizer: Optimizer, lr_lambda: LRLambda, last_epoch: int = -1, verbose: bool = False) -> None:
        super().__init__(optimizer, lr_lambda, last_epoch, verbose)

    def get_lr(self) -> list[float]:
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaBase):
    """Each step multiplies the learning rate by ``lr_lambda(epoch)``."""

    def __init__(self, optimizer: Optimizer, lr_lambda: LRLambda, last_epoch: int = -1, verbose: bool = False) -> None:
        super().__init__(optimizer, lr_lambda, last_epoch, verbose)

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return _current(self.optimizer)
        return [g["lr"] * fn(self.last_epoch) for fn, g in zip(self.lr_lambdas, self.optimizer.param_groups)]


class StepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every ``step_size`` steps."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1,
                 verbose: bool = False) -> None:  # fmt: skip
        if step_size <= 0:
            raise ValueError(f"StepLR: step_size must be a positive integer, got {step_size}")
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _current(self.optimizer)
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` at each milestone (a repeated milestone counts twice)."""

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1, last_epoch: int = -1,
                 verbose: bool = False) -> None:  # fmt: skip
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self) -> list[float]:
        if self.last_epoch not in self.milestones:
            return _current(self.optimizer)
        k = self.milestones[self.last_epoch]
        return [g["lr"] * self.gamma**k for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        milestones = sorted(self.milestones.elements())
        return [base * self.gamma ** bisect_right(milestones, self.last_epoch) for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """Scale the learning rate by ``factor`` for the first ``total_iters`` steps."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5, last_epoch: int = -1,
                 verbose: bool = False) -> None:  # fmt: skip
        if factor > 1.0 or factor < 0:
            raise ValueError(f"ConstantLR: factor must be between 0 and 1, got {factor}")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [g["lr"] * self.factor for g in self.optimizer.param_groups]
        if self.last_epoch != self.total_iters:
            return _current(self.optimizer)
        return [g["lr"] * (1.0 / self.factor) for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        on = self.last_epoch >= self.total_iters
        return [base * (self.factor + on * (1 - self.factor)) for base in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale the learning rate linearly from ``start_factor`` to ``end_factor`` over ``total_iters`` steps."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1, verbose: bool = False) -> None:  # fmt: skip
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(f"LinearLR: start_factor must be in (0, 1], got {start_factor}")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError(f"LinearLR: end_factor must be in [0, 1], got {end_factor}")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [g["lr"] * self.start_factor for g in self.optimizer.param_groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return _current(self.optimizer)
        slope = self.end_factor - self.start_factor
        ratio = 1.0 + slope / (self.total_iters * self.start_factor + (self.last_epoch - 1) * slope)
        return [g["lr"] * ratio for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        frac = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (self.start_factor + (self.end_factor - self.start_factor) * frac) for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every step."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1, verbose: bool = False) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return _current(self.optimizer)
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the learning rate as ``(1 - t / total_iters) ** power`` until ``total_iters``."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1,
                 verbose: bool = False) -> None:  # fmt: skip
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self) -> list[float]:
        if self._is_initial or self.last_epoch > self.total_iters:
            return _current(self.optimizer)
        n, t = self.total_iters, self.last_epoch
        factor = ((1.0 - t / n) / (1.0 - (t - 1) / n)) ** self.power
        return [g["lr"] * factor for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        frac = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (1.0 - frac) ** self.power for base in self.base_lrs]
