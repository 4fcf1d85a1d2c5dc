"""``lucid.device`` and the GPU questions PyTorch code asks (``cuda``, ``mps``, ``accelerator``).

Lucid's devices are its backends' (``numpy:cpu``, ``mlx:gpu``...). PyTorch's names map onto them:
``"cuda"``, ``"cuda:0"`` and ``"mps"`` mean Lucid's ``"gpu"``. The answers are truthful for whatever is
installed: a GPU is CUDA to PyTorch code unless it is Apple's Metal GPU, which is ``mps``.
"""

from __future__ import annotations

import sys
from typing import Any

import lucid_core as lc
from lucid_core import Device


class _DeviceType(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Device)


class device(metaclass=_DeviceType):  # noqa: N801 - PyTorch's name
    """``lucid.device("cpu")``, ``lucid.device("cuda", 0)``, ``lucid.device("mlx:gpu")``: a Lucid :class:`Device`.

    ``isinstance(x.device, lucid.device)`` holds for every tensor's device.
    """

    def __new__(cls, type: Device | str, index: int | None = None) -> Device:
        if isinstance(type, Device):
            return type
        if index not in (None, 0):
            raise RuntimeError(f"device index {index}: Lucid offers one device of each kind per backend")
        return lc.resolve_device(type)


def _gpu() -> Device | None:
    """The first installed GPU device, if any (without falling back to the CPU)."""
    for info in lc.backends():
        for d in info.devices:
            if d.endswith(":gpu"):
                return lc.resolve_device(d)
    return None


def gpu_is_metal() -> bool:
    """Whether this machine's GPU is Apple's Metal one (PyTorch calls it ``mps``, not ``cuda``)."""
    return sys.platform == "darwin"


def has_cuda() -> bool:
    """Whether a GPU that PyTorch would call CUDA is installed."""
    return _gpu() is not None and not gpu_is_metal()


def has_mps() -> bool:
    """Whether Apple's Metal GPU is installed (through a backend such as MLX)."""
    return _gpu() is not None and gpu_is_metal()
