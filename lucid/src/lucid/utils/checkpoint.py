"""``lucid.utils.checkpoint``: activation checkpointing (``lucid_nn.utils.checkpoint``): recompute in backward."""

from __future__ import annotations

from typing import Any

__all__ = ["checkpoint"]


def checkpoint(function: Any, *args: Any, **kwargs: Any) -> Any:
    """Run ``function(*args)`` without keeping its intermediate values; backward recomputes them."""
    import inspect

    from lucid_nn.utils import checkpoint as impl

    if inspect.ismodule(impl):  # lucid_nn.utils.checkpoint may be a module holding the function
        impl = impl.checkpoint
    return impl(function, *args, **kwargs)
