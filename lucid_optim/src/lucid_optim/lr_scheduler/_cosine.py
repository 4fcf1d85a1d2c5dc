"""Cosine schedules: CosineAnnealingLR, CosineAnnealingWarmRestarts (SGDR) and WarmupCosine."""

from __future__ import annotations

__all__ = ["CosineAnnealingLR", "CosineAnnealingWarmRestarts", "WarmupCosine"]

import math

from ..optimizer import Optimizer
from ._base import LRScheduler


class CosineAnnealingLR(LRScheduler):
    """Anneal from the initial lr to ``eta_min`` along half a cosine over ``T_max`` steps (then back up)."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1,  # noqa: N803
                 verbose: bool = False) -> None:  # fmt: skip
        if T_max <= 0:
            raise ValueError(f"CosineAnnealingLR: T_max must be positive, got {T_max}")
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self) -> list[float]:
        groups = self.optimizer.param_groups
        t, n, lo = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return [g["lr"] for g in groups]
        if self._step_count == 1 and t > 0:
            return [lo + (base - lo) * (1 + math.cos(t * math.pi / n)) / 2 for base in self.base_lrs]
        if (t - 1 - n) % (2 * n) == 0:
            return [g["lr"] + (base - lo) * (1 - math.cos(math.pi / n)) / 2 for base, g in zip(self.base_lrs, groups)]
        ratio = (1 + math.cos(math.pi * t / n)) / (1 + math.cos(math.pi * (t - 1) / n))
        return [ratio * (g["lr"] - lo) + lo for g in groups]

    def _get_closed_form_lr(self) -> list[float]:
        lo = self.eta_min
        return [lo + (base - lo) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2 for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR: cosine annealing restarted every ``T_i`` steps, with ``T_i`` growing by ``T_mult``."""

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,  # noqa: N803
                 last_epoch: int = -1, verbose: bool = False) -> None:  # fmt: skip
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min!r} of type {type(eta_min).__name__}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self) -> list[float]:
        lo = self.eta_min
        return [lo + (base - lo) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2 for base in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """Advance one step, or jump to a (possibly fractional) ``epoch``."""
        self._step_count += 1
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult**n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._set_lrs(self.get_lr())


class WarmupCosine(LRScheduler):
    """Linear warmup then cosine decay: the schedule people otherwise hand-write with LambdaLR.

    For ``t < warmup_steps``: ``lr = base * (s + (1 - s) * t / warmup_steps)`` with
    ``s = warmup_start_factor``; then ``lr = eta_min + (base - eta_min) * (1 + cos(pi * p)) / 2``
    with ``p = (t - warmup_steps) / (total_steps - warmup_steps)`` capped at 1.
    """

    def __init__(self, optimizer: Optimizer, warmup_steps: int, total_steps: int, eta_min: float = 0.0,
                 warmup_start_factor: float = 0.0, last_epoch: int = -1, verbose: bool = False) -> None:  # fmt: skip
        if warmup_steps < 0 or total_steps <= 0 or warmup_steps > total_steps:
            raise ValueError(
                f"WarmupCosine: need 0 <= warmup_steps <= total_steps and total_steps > 0, "
                f"got warmup_steps={warmup_steps}, total_steps={total_steps}"
            )
        if not 0.0 <= warmup_start_factor <= 1.0:
            raise ValueError(f"WarmupCosine: warmup_start_factor must be in [0, 1], got {warmup_start_factor}")
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps
        self.eta_min = eta_min
        self.warmup_start_factor = warmup_start_factor
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self) -> list[float]:
        t, w, s = self.last_epoch, self.warmup_steps, self.warmup_start_factor
        if t < w:
            return [base * (s + (1.0 - s) * t / w) for base in self.base_lrs]
        progress = min(1.0, (t - w) / max(1, self.total_steps - w))
        cos = 0.5 * (1.0 + math.cos(math.pi * progress))
        return [self.eta_min + (base - self.eta_min) * cos for base in self.base_lrs]

    _get_closed_form_lr = get_lr
