"""``lucid.backends``: PyTorch's ``torch.backends`` questions (``mps``, ``cudnn``, ``cuda``) for Lucid's backends."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["cuda", "cudnn", "mps"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
