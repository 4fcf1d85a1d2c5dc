"""A Lucid backend over JAX: ``jax.numpy`` is an Array API namespace, so the plugin is this file.

JAX arrays are immutable: writes (``x[i] = v``, the scatter behind indexing gradients) go through
``.at[]`` kernels that return a new array, and the core rebinds it into the tensor. Lucid needs
int64 (indices) and offers float64, so loading the backend turns on JAX's 64-bit types
(``jax_enable_x64``); without them ``ArrayAPIBackend`` refuses to claim dtypes JAX would narrow.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lucid_core import hookimpl
from lucid_core.backend import ArrayAPIBackend, Backend


class JaxBackend(ArrayAPIBackend):
    """``jax.numpy`` as a Lucid backend (device ``jax:cpu``), imported on first use."""

    def __init__(self) -> None:
        super().__init__(self._namespace, name="jax", device_types=("cpu",))

    @staticmethod
    def _namespace() -> Any:
        import jax

        jax.config.update("jax_enable_x64", True)  # int64 indices and float64, as Lucid promises
        return jax.numpy

    def load(self) -> None:
        super().load()
        import jax

        self.jax = jax
        self.seed(0)
        self.kernels.update(
            setitem=lambda array, key, value: array.at[key].set(value),
            index_add=lambda zeros, key, values: zeros.at[key].add(values),  # repeated indices accumulate
            getitem=lambda array, key: array[key],  # NumPy-style indexing, natively
            erf=jax.scipy.special.erf,
        )

    # random numbers from a counter-based key, split for each draw
    def seed(self, seed: int) -> None:
        self._key = self.jax.random.key(seed % (1 << 63))

    def get_rng_state(self) -> Any:
        return self.jax.random.key_data(self._key).tolist()

    def set_rng_state(self, state: Any) -> None:
        self._key = self.jax.random.wrap_key_data(self.jax.numpy.asarray(state, dtype="uint32"))

    def _next(self) -> Any:
        self._key, sub = self.jax.random.split(self._key)
        return sub

    def random_uniform(self, shape: tuple[int, ...], dtype: Any, device: Any) -> Any:
        return self.jax.random.uniform(self._next(), shape, dtype=self.native_dtype(dtype))

    def random_normal(self, shape: tuple[int, ...], dtype: Any, device: Any) -> Any:
        return self.jax.random.normal(self._next(), shape, dtype=self.native_dtype(dtype))

    def random_integers(self, low: int, high: int, shape: tuple[int, ...], dtype: Any, device: Any) -> Any:
        return self.jax.random.randint(self._next(), shape, low, high, dtype=self.native_dtype(dtype))


@hookimpl
def lucid_register_backends(register: Callable[[Backend], None]) -> None:
    """Register the ``jax`` backend (device ``jax:cpu``)."""
    register(JaxBackend())
