"""``lucid.cuda``: PyTorch's CUDA questions, answered for the installed GPU backend.

``is_available()`` is True when a backend offers a GPU that is not Apple's Metal GPU (that one is
``lucid.backends.mps``). Lucid has one device of each kind per backend, so ``device_count()`` is 0 or 1.
"""

from __future__ import annotations

import lucid_core as lc

from .._device import _gpu, has_cuda


def is_available() -> bool:
    """Whether a CUDA-class GPU is installed."""
    return has_cuda()


def device_count() -> int:
    """The number of CUDA-class GPUs Lucid can use (0 or 1)."""
    return 1 if has_cuda() else 0


def current_device() -> int:
    """The index of the current GPU (always 0)."""
    if not has_cuda():
        raise RuntimeError("lucid.cuda.current_device(): no CUDA-class GPU is installed")
    return 0


def get_device_name(device: lc.DeviceLike | int = None) -> str:
    """The GPU device's name."""
    gpu = _gpu()
    if gpu is None or not has_cuda():
        raise RuntimeError("lucid.cuda.get_device_name(): no CUDA-class GPU is installed")
    return str(gpu)


def manual_seed(seed: int) -> None:
    """Seed the generators (Lucid has one seed for every device)."""
    lc.manual_seed(seed)


manual_seed_all = manual_seed


def synchronize(device: lc.DeviceLike | int = None) -> None:
    """Wait for queued GPU work (Lucid's lazy backends compute when a value is read; nothing to wait for)."""


def empty_cache() -> None:
    """Release cached GPU memory (a no-op: Lucid's backends manage their own memory)."""


def is_initialized() -> bool:
    """Whether a GPU is ready to use."""
    return has_cuda()


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the GPU computes in bfloat16 (every Lucid GPU backend holds bfloat16; False without a GPU)."""
    return has_cuda()


def __getattr__(name: str) -> object:
    if name == "amp":  # ``lucid.cuda.amp``, PyTorch's deprecated spellings, loaded on first use
        import importlib

        return importlib.import_module(f"{__name__}.amp")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
