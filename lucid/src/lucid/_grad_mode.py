"""PyTorch's grad-mode switches: ``set_grad_enabled`` (a call, a context and a decorator) and
``inference_mode`` (no_grad under PyTorch's name)."""

from __future__ import annotations

import functools
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


class inference_mode(lc.no_grad):  # noqa: N801 - PyTorch's name
    """``no_grad`` under PyTorch's other name (context manager and decorator); ``inference_mode(False)`` is a no-op."""

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)

    def __enter__(self) -> None:
        if self.mode:
            super().__enter__()

    def __exit__(self, *exc: object) -> None:
        if self.mode:
            super().__exit__(*exc)

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with inference_mode(mode):
                return fn(*args, **kwargs)

        return wrapper


def is_inference_mode_enabled() -> bool:
    """Whether graph recording is off (Lucid's inference mode is ``no_grad``)."""
    return not lc.is_grad_enabled()
