"""How many threads a backend's kernels may use: ``LUCID_NUM_THREADS`` and ``set_num_threads``, like PyTorch's.

The core itself runs no threads. It keeps one number here, below the backend contract, so a backend
that loads reads it (:func:`threads_new_backend`); ``set_num_threads`` in the registry stores it and
hands it to every loaded backend through :meth:`lucid_core.Backend.set_num_threads`, whose default does
nothing. The default is the number of cores this process may run on (``os.sched_getaffinity``, which
respects ``taskset`` and container CPU sets), as PyTorch's intra-op default is; ``LUCID_NUM_THREADS``
in the environment overrides it at start-up.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .backend import Backend

__all__ = ["get_num_threads", "store_num_threads", "threads_new_backend"]

ENV = "LUCID_NUM_THREADS"


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS and Windows have no affinity call
        return os.cpu_count() or 1


def _check(n: object, where: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{where}: the number of threads must be an int >= 1, got {n!r}")
    return n


def _from_env() -> int:
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return _usable_cores()
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{ENV}={raw!r}: expected a whole number of threads >= 1") from None
    return _check(value, f"{ENV}={raw!r}")


_num_threads: int | None = None  # None until first asked: reading the environment is deferred


def get_num_threads() -> int:
    """The number of threads backends may use for one kernel (``LUCID_NUM_THREADS``, else the usable cores)."""
    global _num_threads
    if _num_threads is None:
        _num_threads = _from_env()
    return _num_threads


def store_num_threads(n: int) -> int:
    """Check and keep ``n`` (``set_num_threads`` in the registry then hands it to the loaded backends)."""
    global _num_threads
    _num_threads = _check(n, "set_num_threads")
    return _num_threads


def threads_new_backend(backend: Backend) -> None:
    """Give a backend that has just loaded the current setting."""
    backend.set_num_threads(get_num_threads())
