"""Global random state: one seed drives every backend, so a seeded run repeats exactly."""

from __future__ import annotations

import random as _pyrandom
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .backend import Backend


class _RandomState:
    def __init__(self) -> None:
        self.seed: int | None = None
        # host-side RNG for shuffles and splits (lucid_data draws from it)
        self.host = _pyrandom.Random()


_rng = _RandomState()


def _backend_seed(seed: int, backend: Backend) -> int:
    # a distinct but reproducible stream per backend
    return (seed * 1_000_003 + sum(map(ord, backend.name))) % (2**63)


def seed_new_backend(backend: Backend) -> None:
    """Seed a backend that loads after ``manual_seed`` so its stream is reproducible too."""
    if _rng.seed is not None:
        try:
            backend.seed(_backend_seed(_rng.seed, backend))
        except NotImplementedError:
            pass


def manual_seed(seed: int) -> None:
    """Seed every backend's generator and the host RNG; the same seed repeats a run exactly."""
    from ._registry import _state

    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"manual_seed: seed must be an int, got {type(seed).__name__}")
    _rng.seed = seed
    _rng.host.seed(seed)
    for b in _state.backends.values():
        if b.loaded:
            seed_new_backend(b)


def initial_seed() -> int | None:
    """The seed last given to :func:`manual_seed`, or None."""
    return _rng.seed


def host_rng() -> _pyrandom.Random:
    """The global host-side RNG (seeded by :func:`manual_seed`), for shuffles and sampling indices."""
    return _rng.host


def get_rng_state() -> dict[str, Any]:
    """A picklable snapshot of every random stream (host and loaded backends), for checkpoints."""
    from ._registry import _state

    state: dict[str, Any] = {"seed": _rng.seed, "host": _rng.host.getstate(), "backends": {}}
    for name, b in _state.backends.items():
        if b.loaded:
            try:
                state["backends"][name] = b.get_rng_state()
            except NotImplementedError:
                pass
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore a snapshot from :func:`get_rng_state`."""
    from ._registry import get_backend

    if not isinstance(state, dict) or "host" not in state:
        raise ValueError("set_rng_state: expected a dict made by lucid_core.get_rng_state()")
    _rng.seed = state.get("seed")
    _rng.host.setstate(state["host"])
    for name, s in state.get("backends", {}).items():
        get_backend(name).set_rng_state(s)
