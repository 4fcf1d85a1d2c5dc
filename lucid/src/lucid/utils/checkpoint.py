"""``lucid.utils.checkpoint``: activation checkpointing (``lucid_nn.utils.checkpoint``): recompute in backward."""

from __future__ import annotations

from typing import Any

__all__ = ["checkpoint"]


def checkpoint(function: Any, *args: Any, **kwargs: Any) -> Any:
    """Run ``function(*args)`` without keeping its intermediate values; backward recomputes them."""
    from lucid_nn.utils import checkpoint as _checkpoint

    return _checkpoint(function, *args, **kwargs)
