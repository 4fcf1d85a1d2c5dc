"""Global random state: one seed drives every backend, so a seeded run repeats exactly.

This module sits below the backend contract (a backend that loads after ``manual_seed`` seeds itself
from here); ``manual_seed`` and the RNG snapshots, which visit every registered backend, live in
:mod:`lucid_core._registry`.
"""

from __future__ import annotations

import random as _pyrandom
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .backend import Backend


class _RandomState:
    def __init__(self) -> None:
        self.seed: int | None = None
        # host-side RNG for shuffles and splits (lucid_data draws from it)
        self.host = _pyrandom.Random()


_rng = _RandomState()


def _backend_seed(seed: int, backend: Backend) -> int:
    """The seed a backend gets from ``manual_seed(seed)``: the seed itself where the backend reproduces
    PyTorch's generator (``Backend.exact_seed``, as ``torch.manual_seed`` seeds the CPU generator), else a
    distinct but reproducible stream per backend."""
    if backend.exact_seed:
        return seed
    return (seed * 1_000_003 + sum(map(ord, backend.name))) % (2**63)


def seed_new_backend(backend: Backend) -> None:
    """Seed a backend that loads after ``manual_seed`` so its stream is reproducible too."""
    if _rng.seed is not None:
        try:
            backend.seed(_backend_seed(_rng.seed, backend))
        except NotImplementedError:
            pass


def initial_seed() -> int | None:
    """The seed last given to :func:`manual_seed`, or None."""
    return _rng.seed


def host_rng() -> _pyrandom.Random:
    """The global host-side RNG (seeded by :func:`manual_seed`), for shuffles and sampling indices."""
    return _rng.host
