"""The LRScheduler base: writes a learning rate into every param group of an optimizer per step."""

from __future__ import annotations

__all__ = ["LRScheduler", "format_param"]

import copy
from collections.abc import Sequence
from typing import Any, TypeVar

import lucid_core as lc

from ..optimizer import Optimizer

T = TypeVar("T")


def format_param(name: str, optimizer: Optimizer, value: T | Sequence[T]) -> list[T]:
    """One value per param group: a scalar is repeated, a list/tuple must have one entry per group."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name} must have one value per param group: got {len(value)} values for {n} groups")
        return list(value)
    return [value] * n


class LRScheduler:
    """Base class of the learning-rate schedules: subclasses implement :meth:`get_lr`.

    Args:
        optimizer: the optimizer whose groups' ``"lr"`` is set.
        last_epoch: index of the last step taken; -1 starts fresh (and records each group's
            ``initial_lr``), a larger value resumes and needs ``initial_lr`` in every group.
        verbose: print the learning rates whenever they change.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # compiled functions call a scheduler's step as itself on every replay (lucid_core.compiler.opaque)
        super().__init_subclass__(**kwargs)
        fn = cls.__dict__.get("step")
        if fn is not None and not getattr(fn, "__lucid_opaque__", False):
            cls.step = lc.compiler.opaque(fn)

    _not_saved: tuple[str, ...] = ("optimizer",)

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1, verbose: bool = False) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        self.verbose = verbose
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming a scheduler with "
                        f"last_epoch={last_epoch}; load the optimizer's state_dict first or start with last_epoch=-1"
                    )
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        """Set the learning rates for step 0 (PyTorch's first, implicit step)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    # -- the schedule --------------------------------------------------------------------------------
    def get_lr(self) -> list[float]:
        """The learning rates for ``self.last_epoch``, one per param group (override)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement get_lr")

    @lc.compiler.opaque
    def step(self, epoch: int | None = None) -> None:
        """Advance one step (or jump to ``epoch``, using the closed form where there is one)."""
        self._step_count += 1
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = int(epoch)
            closed = getattr(self, "_get_closed_form_lr", None)
            values = closed() if closed is not None else self.get_lr()
        self._set_lrs(values)

    def _set_lrs(self, values: list[float]) -> None:
        groups = self.optimizer.param_groups
        if len(values) != len(groups):
            name = type(self).__name__
            raise ValueError(f"{name}.get_lr returned {len(values)} values for {len(groups)} param groups")
        for group, lr in zip(groups, values):
            group["lr"] = lr
        previous = getattr(self, "_last_lr", None)
        self._last_lr = [group["lr"] for group in groups]
        if self.verbose and previous != self._last_lr:
            print(f"Epoch {self.last_epoch}: setting learning rates to {self._last_lr}.")

    @property
    def last_lr(self) -> list[float]:
        """The learning rates set by the last step."""
        return list(self._last_lr)

    def get_last_lr(self) -> list[float]:
        """The learning rates set by the last step (PyTorch's name)."""
        return list(self._last_lr)

    # -- serialization ---------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimizer (and callables): last_epoch, base_lrs, _step_count, _last_lr, ..."""
        out = {k: copy.deepcopy(v) for k, v in self.__dict__.items() if k not in self._not_saved}
        out["_group_count"] = len(self.optimizer.param_groups)
        return out

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict` and the groups' rates of the saved step.

        The optimizer must have as many param groups as when saved. A scheduler built on a
        freshly loaded optimizer resets the groups' ``lr`` (its constructor takes step 0), so the
        rates of the saved step are written back: the resumed run continues as the saved one would.
        """
        self._load_state(state_dict)
        self._restore_groups()

    def _load_state(self, state_dict: dict[str, Any]) -> None:
        """Check the group count and restore the attributes (subclasses restore what they saved apart)."""
        saved = state_dict.get("_group_count", len(self.optimizer.param_groups))
        if saved != len(self.optimizer.param_groups):
            raise ValueError(
                f"{type(self).__name__}.load_state_dict: the state was saved with {saved} param groups, "
                f"the optimizer has {len(self.optimizer.param_groups)}"
            )
        self.__dict__.update({k: copy.deepcopy(v) for k, v in state_dict.items() if k != "_group_count"})

    def _restore_groups(self) -> None:
        """Write the restored step's values (``get_last_lr()``) into the optimizer's groups."""
        for group, lr in zip(self.optimizer.param_groups, self._last_lr):
            group["lr"] = lr

    def __repr__(self) -> str:
        return f"{type(self).__name__}(last_epoch={self.last_epoch}, last_lr={self._last_lr})"
