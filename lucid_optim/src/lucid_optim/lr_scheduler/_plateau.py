"""ReduceLROnPlateau: lower the learning rate when a monitored metric stops improving."""

from __future__ import annotations

__all__ = ["ReduceLROnPlateau"]

import copy
import math
from typing import Any, SupportsFloat

from ..optimizer import Optimizer
from ._base import LRScheduler


class ReduceLROnPlateau(LRScheduler):
    """Multiply the learning rate by ``factor`` after ``patience`` steps without improvement.

    Args:
        mode: ``"min"`` (the metric should fall) or ``"max"``.
        threshold: improvement means beating the best by this much.
        threshold_mode: whether ``threshold`` is relative (``"rel"``) or absolute (``"abs"``).
        cooldown: steps to wait after a reduction before counting bad steps again.
        min_lr: a floor per group (or one for all); reductions smaller than ``eps`` are skipped.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: float | list[float] = 0,
        eps: float = 1e-8,
        verbose: bool = False,
    ) -> None:
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor should be < 1.0, got {factor}")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.factor = factor
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}")
            self.default_min_lr: float | None = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceLROnPlateau: mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs', got {threshold_mode!r}")
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.verbose = verbose
        self.last_epoch = 0
        self._step_count = 0
        self.base_lrs = [g["lr"] for g in optimizer.param_groups]
        self._last_lr = [g["lr"] for g in optimizer.param_groups]
        self._reset()

    @property
    def mode_worse(self) -> float:
        """The worst possible metric value for the mode (inf for min, -inf for max)."""
        return math.inf if self.mode == "min" else -math.inf

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        """Whether the scheduler is waiting out its cooldown after a reduction."""
        return self.cooldown_counter > 0

    def is_better(self, a: float, best: float) -> bool:
        """Whether metric ``a`` improves on ``best`` under the mode and threshold."""
        if self.mode == "min":
            return a < best * (1.0 - self.threshold) if self.threshold_mode == "rel" else a < best - self.threshold
        return a > best * (self.threshold + 1.0) if self.threshold_mode == "rel" else a > best + self.threshold

    def get_lr(self) -> list[float]:
        return [g["lr"] for g in self.optimizer.param_groups]

    def step(self, metrics: SupportsFloat, epoch: int | None = None) -> None:  # type: ignore[override]
        """Record this step's metric and reduce the learning rates if it has plateaued."""
        current = float(metrics)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        self._step_count += 1
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"the optimizer has {len(groups)} param groups but ReduceLROnPlateau got {len(self.min_lrs)} "
                    "min_lrs; update min_lrs after adding a param group"
                )
            self.min_lrs = [self.default_min_lr] * len(groups)
        for i, group in enumerate(groups):
            old = float(group["lr"])
            new = max(old * self.factor, self.min_lrs[i])
            if old - new > self.eps:
                group["lr"] = new
                if self.verbose:
                    print(f"Epoch {self.last_epoch}: reducing learning rate of group {i} to {new:.4e}.")

    def state_dict(self) -> dict[str, Any]:
        out = {k: copy.deepcopy(v) for k, v in self.__dict__.items() if k != "optimizer"}
        out["_group_count"] = len(self.optimizer.param_groups)
        return out
