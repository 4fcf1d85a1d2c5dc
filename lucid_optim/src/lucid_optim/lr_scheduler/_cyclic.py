"""Cyclical schedules with momentum cycling: CyclicLR (Smith, 2017) and OneCycleLR (Smith, 2018)."""

from __future__ import annotations

__all__ = ["CyclicLR", "OneCycleLR"]

import math
import types
from collections.abc import Callable, Sequence
from typing import Any

from ..optimizer import Optimizer
from ._base import LRScheduler, format_param


def _setup_momentum(
    sched: _MomentumCycler,
    optimizer: Optimizer,
    base_momentum: float | Sequence[float],
    max_momentum: float | Sequence[float],
    last_epoch: int,
) -> None:
    """Check the optimizer has a momentum (or beta1) to cycle and write the bounds into its groups."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
    sched.use_beta1 = "betas" in optimizer.defaults
    sched.base_momentums = format_param("base_momentum", optimizer, base_momentum)
    sched.max_momentums = format_param("max_momentum", optimizer, max_momentum)
    if last_epoch == -1:
        for m_max, m_base, group in zip(sched.max_momentums, sched.base_momentums, optimizer.param_groups):
            _set_momentum(sched, group, m_max)
            group["max_momentum"] = m_max
            group["base_momentum"] = m_base


def _set_momentum(sched: _MomentumCycler, group: dict[str, Any], value: float) -> None:
    if sched.use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


class _MomentumCycler(LRScheduler):
    """Base of the schedules that also cycle the groups' momentum (or beta1)."""

    cycle_momentum: bool

    def _restore_groups(self) -> None:
        super()._restore_groups()
        if self.cycle_momentum:
            # get_lr is closed-form in last_epoch and sets the momentum as it goes: this gives the
            # saved step's momentum back (the constructor had reset it to max_momentum)
            self.get_lr()


class CyclicLR(_MomentumCycler):
    """Cycle the learning rate between ``base_lr`` and ``max_lr`` (and momentum the opposite way).

    Modes: ``"triangular"`` (constant amplitude), ``"triangular2"`` (amplitude halves each cycle),
    ``"exp_range"`` (amplitude ``gamma ** iteration``), or a custom ``scale_fn``.
    """

    _not_saved = ("optimizer", "_scale_fn_ref", "_scale_fn_custom")

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr: float | list[float],
        max_lr: float | list[float],
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn: Callable[[float], float] | None = None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.8,
        max_momentum: float | list[float] = 0.9,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        base_lrs = format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = format_param("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError(
                f"CyclicLR: mode must be 'triangular', 'triangular2' or 'exp_range' (or give scale_fn), got {mode!r}"
            )
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            _setup_momentum(self, optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch, verbose)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref: Callable[[float], float] = lambda x: 1.0
            self.scale_mode = "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref = lambda x: 1 / (2.0 ** (x - 1))
            self.scale_mode = "cycle"
        else:
            gamma = self.gamma
            self._scale_fn_ref = lambda x: gamma**x
            self.scale_mode = "iterations"

    def scale_fn(self, x: float) -> float:
        """The amplitude scale at cycle (or iteration) ``x``."""
        fn = self._scale_fn_custom if self._scale_fn_custom is not None else self._scale_fn_ref
        return fn(x)

    def get_lr(self) -> list[float]:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        scale_factor = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base + (hi - base) * scale_factor * scale for base, hi in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, lo, hi in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                _set_momentum(self, group, hi - (hi - lo) * scale_factor * scale)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        out = super().state_dict()
        fn = self._scale_fn_custom
        out["_scale_fn_custom"] = None if fn is None or isinstance(fn, types.FunctionType) else dict(fn.__dict__)
        return out

    def _load_state(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        attrs = state.pop("_scale_fn_custom", None)
        super()._load_state(state)
        if attrs is not None and self._scale_fn_custom is not None:
            self._scale_fn_custom.__dict__.update(attrs)
        self._init_scale_fn()


class OneCycleLR(_MomentumCycler):
    """The 1cycle policy: warm up to ``max_lr``, then anneal far below the start (per batch).

    ``anneal_strategy`` is ``"cos"`` or ``"linear"``; ``three_phase`` adds a symmetric way back
    before the final annealing. Momentum (or beta1) cycles inversely between its two bounds.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: float | list[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.85,
        max_momentum: float | list[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
        verbose: bool = False,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        up_end = float(pct_start * self.total_steps) - 1
        last = self.total_steps - 1
        if three_phase:
            self._schedule_phases = [
                (up_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                (last, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            self._schedule_phases = [
                (up_end, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (last, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        self.anneal_strategy = anneal_strategy
        max_lrs = format_param("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for hi, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = hi / div_factor
                group["max_lr"] = hi
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            _setup_momentum(self, optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch, verbose)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is {self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, (end, lr0, lr1, m0, m1) in enumerate(self._schedule_phases):
                if step <= end or i == len(self._schedule_phases) - 1:
                    pct = (step - start) / (end - start)
                    lrs.append(self._anneal(group[lr0], group[lr1], pct))
                    if self.cycle_momentum:
                        _set_momentum(self, group, self._anneal(group[m0], group[m1], pct))
                    break
                start = end
        return lrs
