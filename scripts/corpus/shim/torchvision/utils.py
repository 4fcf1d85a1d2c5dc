"""Stand-ins of torchvision.utils: images are not written (the corpus compares numbers, not files)."""

from __future__ import annotations

from typing import Any


def make_grid(tensor: Any, **_: Any) -> Any:
    """Return the batch unchanged (no grid is drawn)."""
    return tensor


def save_image(tensor: Any, fp: Any, **_: Any) -> None:
    """Write nothing."""
    return None
