"""Grad mode: the per-thread switch that says whether ops record the graph (``no_grad`` and friends).

It sits below the Tensor and the autograd engine, which both read it; :mod:`lucid_core._autograd`
re-exports the public names.
"""

from __future__ import annotations

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"]

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class _GradMode(threading.local):
    """Grad mode is per thread (as in PyTorch): a DataLoader worker's ``no_grad`` leaves training alone."""

    def __init__(self) -> None:
        self.enabled = True


_mode = _GradMode()


def is_grad_enabled() -> bool:
    """Whether ops record the graph for backward right now."""
    return _mode.enabled


@contextmanager
def set_grad_enabled(mode: bool) -> Iterator[None]:
    """Enable or disable graph recording inside the ``with`` block."""
    prev = _mode.enabled
    _mode.enabled = bool(mode)
    try:
        yield
    finally:
        _mode.enabled = prev


class no_grad:  # noqa: N801 - the name users know from PyTorch
    """Context manager (and decorator) in which no op records a graph: inference and updates."""

    def __enter__(self) -> None:
        self._prev = _mode.enabled
        _mode.enabled = False

    def __exit__(self, *exc: object) -> None:
        _mode.enabled = self._prev

    def __call__(self, fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with no_grad():
                return fn(*args, **kwargs)

        return wrapper


class enable_grad(no_grad):  # noqa: N801
    """Context manager that turns graph recording back on inside a ``no_grad`` block."""

    def __enter__(self) -> None:
        self._prev = _mode.enabled
        _mode.enabled = True
