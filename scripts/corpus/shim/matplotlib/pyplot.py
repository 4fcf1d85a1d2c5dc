"""Every pyplot call is accepted and does nothing."""

from __future__ import annotations

from typing import Any


def _nothing(*args: Any, **kwargs: Any) -> Any:
    return _Nothing()


class _Nothing:
    def __getattr__(self, name: str) -> Any:
        return _nothing

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self

    def __iter__(self) -> Any:
        return iter((self, self))


def __getattr__(name: str) -> Any:
    return _nothing
