"""``lucid.cpu``: PyTorch's ``torch.cpu`` questions (the CPU is always there) and its ``amp`` spellings."""

from __future__ import annotations

import lucid_core as lc

from . import amp

__all__ = ["amp", "is_available", "device_count", "current_device", "synchronize"]


def is_available() -> bool:
    """Whether the CPU is available (always)."""
    return True


def device_count() -> int:
    """The number of CPU devices (1, as PyTorch counts them)."""
    return 1


def current_device() -> str:
    """The current CPU device's name, ``"cpu"``."""
    return "cpu"


def synchronize(device: lc.DeviceLike = None) -> None:
    """Wait for queued CPU work (nothing to wait for)."""
