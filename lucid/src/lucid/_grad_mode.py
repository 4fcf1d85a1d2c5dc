"""PyTorch's grad-mode switches: ``set_grad_enabled`` (a call, a context and a decorator) and
``inference_mode`` (graph recording off, with PyTorch's thread-local inference flag)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import lucid_core as lc


class set_grad_enabled:  # noqa: N801 - PyTorch's name
    """Turn graph recording on or off: as a call (``set_grad_enabled(False)``), a ``with`` block or a decorator."""

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        # PyTorch switches at construction, so the bare call works too; no_grad/enable_grad keep the previous
        # mode in the object (a generator-based context would restore it as soon as it is garbage-collected)
        self._ctx = lc.enable_grad() if self.mode else lc.no_grad()
        self._ctx.__enter__()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        self._ctx.__exit__(None, None, None)

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        self.__exit__()  # as a decorator it switches per call, not at decoration time
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)

        return wrapper


class _InferenceState(threading.local):
    on = False


_inference = _InferenceState()


class inference_mode:  # noqa: N801 - PyTorch's name
    """PyTorch's inference mode: a context manager and decorator (bare or called) that turns graph recording off,
    thread by thread. ``inference_mode(False)`` turns it back on, even inside ``no_grad``, as PyTorch's does.

    Lucid has no inference tensors (PyTorch's version-counter-free tensors): tensors made inside are ordinary
    ones, so ``is_inference_mode_enabled`` is the only observable difference from ``no_grad``.
    """

    def __new__(cls, mode: Any = True) -> Any:
        if callable(mode) and not isinstance(mode, bool):  # bare ``@inference_mode``
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)
        self._stack: list[tuple[bool, Any]] = []

    def __enter__(self) -> None:
        grad = lc.no_grad() if self.mode else lc.enable_grad()
        grad.__enter__()
        self._stack.append((_inference.on, grad))
        _inference.on = self.mode

    def __exit__(self, *exc: object) -> None:
        previous, grad = self._stack.pop()
        _inference.on = previous
        grad.__exit__(None, None, None)

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with inference_mode(mode):
                return fn(*args, **kwargs)

        return wrapper

    def clone(self) -> inference_mode:
        """A fresh context with the same mode (PyTorch's ``clone``)."""
        return inference_mode(self.mode)


def is_inference_mode_enabled() -> bool:
    """Whether this thread is inside ``inference_mode()`` (not merely ``no_grad``), as PyTorch answers."""
    return _inference.on
