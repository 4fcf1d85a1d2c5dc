"""``lucid.accelerator``: PyTorch's device-neutral accelerator questions, for the installed GPU backend."""

from __future__ import annotations

from lucid_core import Device

from ._device import _gpu


def is_available() -> bool:
    """Whether any GPU is installed (CUDA-class or Apple's Metal)."""
    return _gpu() is not None


def current_accelerator(check_available: bool = False) -> Device | None:
    """The GPU device, or None when there is none."""
    return _gpu()


def device_count() -> int:
    """The number of GPUs Lucid can use (0 or 1)."""
    return 0 if _gpu() is None else 1
