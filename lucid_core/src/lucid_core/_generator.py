"""``Generator``: independent random streams (PyTorch's ``torch.Generator``) over the backends' own state.

A backend keeps one random state; a Generator keeps its own snapshot per backend and swaps it in for the
duration of a draw (:func:`drawing_from`), so the contract needs nothing beyond ``seed`` and the state
snapshots every backend already has.
"""

from __future__ import annotations

import contextlib
import functools
import random as _pyrandom
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ._random import _backend_seed
from ._registry import resolve_device

if TYPE_CHECKING:
    from .backend import Backend

__all__ = ["DEFAULT_SEED", "Generator", "attach", "drawing_from"]


#: PyTorch's default CPU seed (``torch.Generator().initial_seed()``)
DEFAULT_SEED = 67280421310721


class Generator:
    """An independent random stream, PyTorch's ``torch.Generator``: ``Generator().manual_seed(42)``.

    Draws made with ``generator=g`` (``lucid.rand(3, generator=g)``, ``random_split(..., generator=g)``) come
    from ``g`` and leave the global stream (``manual_seed``) untouched. ``g`` keeps one state per backend it
    has drawn on: a draw swaps ``g``'s state into the backend, draws, and swaps the global state back (see
    :func:`drawing_from`), so ``Generator().manual_seed(s)`` gives the numbers that ``manual_seed(s)`` gives,
    which on the numpy backend are PyTorch's. ``host`` is its Python-side RNG, for shuffles and splits.
    A generator is not meant to be shared between threads that draw at the same time.
    """

    def __init__(self, device: Any = "cpu") -> None:
        self.device = resolve_device(device)
        self._initial_seed = DEFAULT_SEED
        self._states: dict[str, Any] = {}  # backend name -> snapshot; absent: fresh from the seed
        self.host = _pyrandom.Random(DEFAULT_SEED)

    def manual_seed(self, seed: int) -> Generator:
        """Reset the stream from ``seed``; returns the generator (``g = Generator().manual_seed(0)``)."""
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise TypeError(f"Generator.manual_seed: seed must be an int, got {type(seed).__name__}")
        seed = seed % (1 << 64)  # PyTorch reads the seed as an unsigned 64-bit integer
        self._initial_seed = seed
        self._states.clear()
        self.host.seed(seed)
        return self

    def seed(self) -> int:
        """Reseed from a non-deterministic source; returns the new seed."""
        s = _pyrandom.SystemRandom().getrandbits(63)
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed the stream started from (PyTorch's default, 67280421310721, until ``manual_seed``)."""
        return self._initial_seed

    def get_state(self) -> Any:
        """The whole state as a uint8 tensor (JSON bytes), for :meth:`set_state` or a checkpoint."""
        import json

        from .ops.creation import asarray

        version, words, gauss = self.host.getstate()
        blob = {"seed": self._initial_seed, "host": [version, list(words), gauss], "backends": self._states}
        return asarray(list(json.dumps(blob).encode()), dtype="uint8", device="cpu")

    def set_state(self, new_state: Any) -> Generator:
        """Restore a state from :meth:`get_state`; returns the generator."""
        import json

        try:
            blob = json.loads(bytes(int(v) for v in new_state.tolist()).decode())
            version, words, gauss = blob["host"]
            self.host.setstate((version, tuple(words), gauss))
            self._initial_seed = int(blob["seed"])
            self._states = dict(blob["backends"])
        except (AttributeError, TypeError, ValueError, KeyError) as exc:
            raise RuntimeError(
                f"Generator.set_state: expected the uint8 tensor made by Generator.get_state(), got "
                f"{type(new_state).__name__} ({exc})"
            ) from None
        return self

    def __repr__(self) -> str:
        return f"<lucid.Generator device={self.device} initial_seed={self._initial_seed}>"


@contextlib.contextmanager
def drawing_from(generator: Generator | None, backend: Backend) -> Iterator[None]:
    """Within the block, ``backend``'s draws come from ``generator`` (nothing changes when it is None).

    The global state is saved and restored around the block, and the generator's advanced state kept.
    """
    if generator is None:
        yield
        return
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a lucid.Generator, got {type(generator).__name__}")
    saved = backend.get_rng_state()
    try:
        state = generator._states.get(backend.name)
        if state is None:
            backend.seed(_backend_seed(generator._initial_seed, backend))
        else:
            backend.set_rng_state(state)
        yield
        generator._states[backend.name] = backend.get_rng_state()
    finally:
        backend.set_rng_state(saved)


_GENERATOR_METHODS = ("uniform_", "normal_", "random_", "exponential_", "bernoulli_", "cauchy_", "geometric_",
                      "log_normal_")  # fmt: skip


def _accepting_generator(method: Any) -> Any:
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, generator: Generator | None = None, **kwargs: Any) -> Any:
        if generator is None:
            return method(self, *args, **kwargs)
        with drawing_from(generator, self._device.backend):
            return method(self, *args, **kwargs)

    wrapper.__lucid_generator__ = True  # type: ignore[attr-defined]
    return wrapper


def attach(tensor_type: type) -> None:
    """Give the Tensor's in-place random methods (``uniform_``, ``normal_``, ...) PyTorch's ``generator=``."""
    for name in _GENERATOR_METHODS:
        method = getattr(tensor_type, name, None)
        if method is not None and not getattr(method, "__lucid_generator__", False):
            setattr(tensor_type, name, _accepting_generator(method))
