"""A Lucid backend over ``array-api-strict``: the whole plugin is this file.

array-api-strict implements exactly the Array API standard and nothing more, so it shows what
Lucid's generic adapter supplies on its own (random numbers, host transfer, einsum, the scatter
behind indexing gradients). Its arrays live on a CPU "device".
"""

from __future__ import annotations

from collections.abc import Callable

from lucid_core import hookimpl
from lucid_core.backend import ArrayAPIBackend, Backend


class StrictBackend(ArrayAPIBackend):
    """``array_api_strict`` as a Lucid backend, imported on first use."""

    def __init__(self) -> None:
        super().__init__(self._namespace, name="strict", device_types=("cpu",))

    @staticmethod
    def _namespace():  # imported lazily: plugin discovery stays cheap
        import array_api_strict

        return array_api_strict

    def to_numpy(self, array):
        import numpy

        return numpy.asarray(array)  # array-api-strict exports the buffer protocol


@hookimpl
def lucid_register_backends(register: Callable[[Backend], None]) -> None:
    """Register the ``strict`` backend (device ``strict:cpu``)."""
    register(StrictBackend())
