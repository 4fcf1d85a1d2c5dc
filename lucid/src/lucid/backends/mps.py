"""``lucid.backends.mps``: whether Apple's Metal GPU is installed (through a backend such as MLX)."""

from __future__ import annotations

from .._device import has_mps


def is_available() -> bool:
    """Whether an installed backend offers Apple's Metal GPU."""
    return has_mps()


def is_built() -> bool:
    """Whether a Metal-capable backend is installed (the same answer as :func:`is_available`)."""
    return has_mps()
