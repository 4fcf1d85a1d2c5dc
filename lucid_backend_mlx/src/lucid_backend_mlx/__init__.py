"""Lucid's MLX backend, registered through the ``lucid`` entry point as ``mlx``.

Importing this module is cheap; MLX itself is imported when the backend is first used.
Devices: ``mlx:cpu`` always, ``mlx:gpu`` where MLX has a GPU (Metal, or MLX's CUDA build).
"""

from __future__ import annotations

from collections.abc import Callable

from lucid_core import hookimpl
from lucid_core.backend import Backend

from ._backend import MLXBackend

__all__ = ["MLXBackend", "lucid_compile_plan", "lucid_register_backends"]


@hookimpl
def lucid_register_backends(register: Callable[[Backend], None]) -> None:
    """Register the ``mlx`` backend (devices ``mlx:gpu`` where available, ``mlx:cpu``)."""
    register(MLXBackend())


@hookimpl
def lucid_compile_plan(backend: Backend, pure: Callable[..., tuple]) -> Callable[..., tuple] | None:
    """A compiled function's pure plan on MLX arrays, handed to ``mx.compile`` (one fused graph per shape).

    ``LUCID_MLX_COMPILE=0`` declines (plans then replay op by op)."""
    import os

    if backend.name != "mlx" or os.environ.get("LUCID_MLX_COMPILE", "1") == "0":
        return None
    import mlx.core as mx

    return mx.compile(pure)
