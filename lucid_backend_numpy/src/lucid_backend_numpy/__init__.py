"""Lucid's NumPy backend: the default CPU backend, registered through the ``lucid`` entry point.

Importing this module is cheap; NumPy itself is imported when the backend is first used.
"""

from __future__ import annotations

from collections.abc import Callable

from lucid_core import hookimpl
from lucid_core.backend import Backend

from ._backend import NumpyBackend

__all__ = ["NumpyBackend", "lucid_register_backends"]


@hookimpl
def lucid_register_backends(register: Callable[[Backend], None]) -> None:
    """Register the ``numpy`` backend (device ``numpy:cpu``)."""
    register(NumpyBackend())
