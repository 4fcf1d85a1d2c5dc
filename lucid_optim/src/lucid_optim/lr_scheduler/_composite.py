"""Schedulers made of schedulers: SequentialLR (one after another) and ChainedScheduler (all at once)."""

from __future__ import annotations

__all__ = ["SequentialLR", "ChainedScheduler"]

from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from ..optimizer import Optimizer
from ._base import LRScheduler
from ._plateau import ReduceLROnPlateau


def _check_children(owner: str, optimizer: Optimizer, schedulers: Sequence[LRScheduler]) -> None:
    if len(schedulers) < 1:
        raise ValueError(f"{owner} expects at least one scheduler, but got none")
    for i, s in enumerate(schedulers):
        if not hasattr(s, "optimizer"):
            raise TypeError(f"{owner}: the scheduler at index {i} should have an `optimizer` attribute")
        if isinstance(s, ReduceLROnPlateau):
            raise ValueError(f"{owner} does not support ReduceLROnPlateau (its step needs a metric); index {i}")
        if s.optimizer is not optimizer:
            raise ValueError(f"{owner} expects all schedulers to belong to the same optimizer; index {i} does not")


class _Composite(LRScheduler):
    _not_saved = ("optimizer", "_schedulers")

    def state_dict(self) -> dict[str, Any]:
        out = super().state_dict()
        out["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return out

    def _load_state(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        children = state.pop("_schedulers")
        super()._load_state(state)
        # each child writes its own last rates (SequentialLR's idle children hold stale ones); the
        # composite's are written after these, by load_state_dict
        for s, sd in zip(self._schedulers, children):
            s.load_state_dict(sd)


class SequentialLR(_Composite):
    """Run ``schedulers[i]`` between ``milestones[i-1]`` and ``milestones[i]``; each starts afresh at its milestone."""

    def __init__(self, optimizer: Optimizer, schedulers: list[LRScheduler], milestones: list[int], last_epoch: int = -1,
                 verbose: bool = False) -> None:  # fmt: skip
        _check_children("SequentialLR", optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                f"SequentialLR expects one milestone fewer than schedulers, got {len(schedulers)} schedulers and "
                f"{len(milestones)} milestones"
            )
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        self.verbose = verbose
        # undo the children's initial steps, then start the first one again
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        self._recursive_undo(self)
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self._step_count = 0

    def _recursive_undo(self, sched: LRScheduler) -> None:
        children = getattr(sched, "_schedulers", None)
        if children is not None:
            for s in children:
                self._recursive_undo(s)
        elif hasattr(sched, "last_epoch"):
            sched.last_epoch -= 1

    def step(self, epoch: int | None = None) -> None:
        """Step the scheduler of the current phase (restarting it at its milestone)."""
        self.last_epoch += 1
        self._step_count += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        sched = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            sched._update_lr(0)
        else:
            sched.step()
        previous = self._last_lr
        self._last_lr = sched.get_last_lr()
        if self.verbose and previous != self._last_lr:
            print(f"Epoch {self.last_epoch}: setting learning rates to {self._last_lr}.")


class ChainedScheduler(_Composite):
    """Step every scheduler in turn each step, so their factors multiply."""

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None,
                 verbose: bool = False) -> None:  # fmt: skip
        if len(schedulers) < 1:
            raise ValueError("ChainedScheduler expects at least one scheduler, but got none")
        optimizer = optimizer or schedulers[0].optimizer
        _check_children("ChainedScheduler", optimizer, schedulers)
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self.verbose = verbose
        self.last_epoch = 0
        self._step_count = 0
        self.base_lrs = [g.get("initial_lr", g["lr"]) for g in optimizer.param_groups]
        self._last_lr = [g["lr"] for g in optimizer.param_groups]

    def step(self, epoch: int | None = None) -> None:
        """Step each chained scheduler once."""
        self.last_epoch += 1
        self._step_count += 1
        for s in self._schedulers:
            s.step()
        previous = self._last_lr
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]
        if self.verbose and previous != self._last_lr:
            print(f"Epoch {self.last_epoch}: setting learning rates to {self._last_lr}.")
