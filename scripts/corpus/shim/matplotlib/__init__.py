"""A stand-in of matplotlib that draws nothing (the corpus compares numbers, not plots)."""

from __future__ import annotations


def use(*args: object, **kwargs: object) -> None:
    """Choose no backend."""
    return None
