"""A Lucid backend over dask.array, a lazy library, through ``array_api_compat.dask.array``.

Nothing is computed until a value is needed (``item()``, printing, ``numpy()``) or ``eval`` runs:
``eval`` hands back ``dask.persist``'s arrays, which the core rebinds into the tensors, so an
optimizer step (which evaluates its parameters) cuts each weight's task graph and the graph stays
bounded over a training loop. Shapes must be known ahead, so boolean-mask indexing is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lucid_core import hookimpl
from lucid_core.backend import ArrayAPIBackend, Backend


class DaskBackend(ArrayAPIBackend):
    """dask.array as a Lucid backend (device ``dask:cpu``), imported on first use."""

    def __init__(self) -> None:
        super().__init__(self._namespace, name="dask", capabilities={"lazy": True, "data_dependent_shapes": False})

    @staticmethod
    def _namespace() -> Any:
        import array_api_compat.dask.array as xp

        return xp

    def load(self) -> None:
        super().load()
        import dask
        import numpy

        self.dask, self.numpy = dask, numpy
        self._gen = numpy.random.default_rng(0)
        self.kernels["setitem"] = self._setitem

    def _setitem(self, array: Any, key: Any, value: Any) -> Any:
        out = array.copy()  # dask assigns into the array object: write into a new one, the core rebinds it
        arrays = [k for k in key if hasattr(k, "dtype")] if isinstance(key, tuple) else []
        if len(arrays) > 1 and len(key) == array.ndim and len(arrays) == len(key):
            # dask assigns through one integer array at most: address the elements by their flat positions
            xp = self.xp
            idx = xp.broadcast_arrays(*key)
            flat = idx[0] % array.shape[0]
            for k, n in zip(idx[1:], array.shape[1:]):
                flat = flat * n + k % n
            out = xp.reshape(out, (-1,))
            out[xp.reshape(flat, (-1,))] = xp.reshape(xp.broadcast_to(xp.asarray(value), flat.shape), (-1,))
            return xp.reshape(out, array.shape)
        out[key] = value
        return out

    def eval(self, *arrays: Any) -> Any:
        return self.dask.persist(*arrays)  # computed chunks, each a graph of one task per chunk

    def graph_size(self, array: Any) -> int:
        return len(array.__dask_graph__())

    def to_numpy(self, array: Any) -> Any:
        return self.numpy.asarray(array.compute())

    # random numbers from NumPy's generator, wrapped as dask arrays
    def seed(self, seed: int) -> None:
        self._gen = self.numpy.random.default_rng(seed)

    def get_rng_state(self) -> Any:
        return self._gen.bit_generator.state

    def set_rng_state(self, state: Any) -> None:
        self._gen.bit_generator.state = state

    def random_uniform(self, shape: tuple[int, ...], dtype: Any, device: Any) -> Any:
        return self.xp.asarray(self._gen.random(shape).astype(dtype.name))

    def random_normal(self, shape: tuple[int, ...], dtype: Any, device: Any) -> Any:
        return self.xp.asarray(self._gen.standard_normal(shape).astype(dtype.name))

    def random_integers(self, low: int, high: int, shape: tuple[int, ...], dtype: Any, device: Any) -> Any:
        return self.xp.asarray(self._gen.integers(low, high, size=shape).astype(dtype.name))


@hookimpl
def lucid_register_backends(register: Callable[[Backend], None]) -> None:
    """Register the ``dask`` backend (device ``dask:cpu``)."""
    register(DaskBackend())
