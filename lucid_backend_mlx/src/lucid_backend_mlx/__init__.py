"""Lucid's MLX backend, registered through the ``lucid`` entry point as ``mlx``.

Importing this module is cheap; MLX itself is imported when the backend is first used.
Devices: ``mlx:cpu`` always, ``mlx:gpu`` where MLX has a GPU (Metal, or MLX's CUDA build).
"""

from __future__ import annotations

from collections.abc import Callable

from lucid_core import hookimpl
from lucid_core.backend import Backend

from ._backend import MLXBackend

__all__ = ["MLXBackend", "lucid_register_backends"]


@hookimpl
def lucid_register_backends(register: Callable[[Backend], None]) -> None:
    """Register the ``mlx`` backend (devices ``mlx:gpu`` where available, ``mlx:cpu``)."""
    register(MLXBackend())
