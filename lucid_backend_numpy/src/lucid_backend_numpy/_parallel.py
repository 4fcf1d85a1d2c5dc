"""Kernels split along their batch over a small persistent thread pool (``lucid_core.set_num_threads``).

NumPy runs one thread per call except inside BLAS, yet it releases the GIL in its copy, ufunc and
matmul loops, so Python threads that each take a slice of the batch run on separate cores. A kernel
uses it like this::

    out = np.empty(shape, dtype)                    # allocated here, on the calling thread
    def part(lo, hi):                               # writes out[lo:hi] only, from x[lo:hi]
        np.multiply(x[lo:hi], y[lo:hi], out=out[lo:hi])
    parallel_batches(part, x.shape[0], work=x.size)

Rules for ``part``: it writes a disjoint slice of arrays allocated beforehand (workers allocating
their own results would spread buffers over per-thread malloc arenas, and concatenating them costs
a copy), and each output element is computed exactly as the whole-batch call computes it (a slice of
the batch never changes a sum inside one sample), so the result is bit-identical to one thread.
``work`` is the number of elements the call touches; below :data:`MIN_WORK` per thread the call runs
on the calling thread, where the pool's hand-off (tens of microseconds, more on a loaded machine)
would cost more than it saves.

While a split call runs, BLAS is held at one thread (each worker's GEMMs are small; a multi-threaded
BLAS inside each worker would oversubscribe the cores); outside, BLAS keeps ``n`` threads. Two pools on
the same cores stall each other: after a threaded BLAS call OpenBLAS's threads keep spinning for about
0.1 s, and a split that starts then finds its core taken. So while the pool is busy (a split within the
last :data:`BUSY_SECONDS`, as in a CNN step) the backend's ``matmul`` splits large 2-D products over this
pool too, and BLAS's threads stay asleep; otherwise BLAS threads them, whose spinning threads hand off
work faster than this pool (a wake-up costs 70-180 us on a 2-core VM). MNIST's step: 120-130 ms with BLAS
threading its products next to the conv splits, 80-90 ms with them split here. BLAS is reached through
``threadpoolctl`` (OpenBLAS, MKL, BLIS and FlexiBLAS, under whatever symbol prefix the NumPy wheel uses);
without it BLAS is left alone.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

__all__ = ["MIN_WORK", "num_threads", "parallel_batches", "pool_busy", "set_num_threads"]

MIN_WORK = 1 << 19
"""Elements per thread below which a kernel stays on the calling thread (measured: benchmarks/RESULTS.md)."""

BUSY_SECONDS = 0.2
"""How long after a split the pool counts as busy (OpenBLAS's threads spin about 0.1 s after a call)."""

_lock = threading.Lock()
_state: dict[str, Any] = {"n": 1, "pool": None, "blas": None, "blas_n": None, "regions": 0, "busy_until": 0.0}
_local = threading.local()  # .worker is True on the pool's threads: a nested split runs serially


def _blas() -> list[Any]:
    """threadpoolctl's controllers of the BLAS libraries NumPy loaded (empty when unavailable)."""
    if _state["blas"] is None:
        try:
            from threadpoolctl import ThreadpoolController

            libs = ThreadpoolController().select(user_api="blas").lib_controllers
        except Exception:  # noqa: BLE001 - threadpoolctl missing or unable to inspect this process
            libs = []
        # NumPy's own BLAS when it can be told apart: another library's (PyTorch's, in the same
        # process) is not ours to tune
        _state["blas"] = [c for c in libs if "numpy" in c.filepath] or libs
    return _state["blas"]


def _set_blas_threads(n: int) -> None:
    for lib in _blas():
        lib.set_num_threads(n)


def blas_threads() -> int | None:
    """BLAS's current thread count (the first library's), or None when it cannot be read."""
    libs = _blas()
    return libs[0].get_num_threads() if libs else None


def set_num_threads(n: int, first: bool = False) -> None:
    """Split kernels over ``n`` threads and give BLAS ``n`` threads for the calls made outside a split.

    ``first`` (the call when the backend loads) only lowers BLAS's count, never raises it, so
    ``OPENBLAS_NUM_THREADS=1`` or an earlier ``threadpoolctl`` limit is kept unless the user calls
    ``set_num_threads`` later.
    """
    with _lock:
        if n != _state["n"]:
            _state["pool"] = None  # the old pool's idle threads exit once it is garbage
        _state["n"] = n
        current = blas_threads()
        _state["blas_n"] = min(n, current) if first and current else n
        if _state["regions"] == 0 and current is not None and current != _state["blas_n"]:
            _set_blas_threads(_state["blas_n"])


def num_threads() -> int:
    """The number of threads a split kernel uses."""
    return _state["n"]


def _mark_worker() -> None:
    _local.worker = True


def _pool() -> ThreadPoolExecutor:
    pool = _state["pool"]
    if pool is None:
        pool = ThreadPoolExecutor(_state["n"] - 1, thread_name_prefix="lucid-numpy", initializer=_mark_worker)
        _state["pool"] = pool
    return pool


def _after_fork() -> None:
    # a forked child (DataLoader workers) inherits the pool object but not its threads, and a lock
    # another thread held at the fork would stay held forever
    global _lock
    _lock = threading.Lock()
    _state["pool"] = None
    _state["regions"] = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def pool_busy() -> bool:
    """Whether kernels were split over the pool within the last :data:`BUSY_SECONDS` (then large products
    are split over it too, rather than waking BLAS's threads; see the module docstring)."""
    return _state["n"] > 1 and time.monotonic() < _state["busy_until"]


def chunks(n_items: int, work: int) -> int:
    """How many slices :func:`parallel_batches` cuts ``n_items`` batch entries touching ``work`` elements into."""
    if getattr(_local, "worker", False):
        return 1
    return max(1, min(_state["n"], n_items, work // MIN_WORK))


def parallel_batches(fn: Callable[[int, int], object], n_items: int, work: int, busy: bool = True) -> None:
    """Call ``fn(lo, hi)`` over consecutive slices of ``range(n_items)``, on up to ``num_threads()`` threads.

    ``work`` (elements touched) decides whether splitting pays; ``fn`` must write only its slice of
    preallocated outputs (see the module docstring). Returns when every slice is done; the first
    exception raised by a slice is re-raised here. A split marks the pool busy (:func:`pool_busy`) unless
    ``busy`` is False: a product split only because the pool was busy must not keep it so, or products
    would stay off BLAS's threads for good once any kernel had split.
    """
    k = chunks(n_items, work)
    if k == 1:
        fn(0, n_items)
        return
    bounds = [n_items * i // k for i in range(k + 1)]
    if busy:
        _state["busy_until"] = time.monotonic() + BUSY_SECONDS
    with _lock:
        pool = _pool()
        _state["regions"] += 1
        if _state["regions"] == 1 and _state["blas_n"] not in (None, 1):
            _set_blas_threads(1)
    try:
        futures: list[Future[object]] = [pool.submit(fn, bounds[i], bounds[i + 1]) for i in range(1, k)]
        try:
            fn(bounds[0], bounds[1])
        finally:
            errors = [f.exception() for f in futures]
        for e in errors:
            if e is not None:
                raise e
    finally:
        with _lock:
            _state["regions"] -= 1
            if _state["regions"] == 0 and _state["blas_n"] not in (None, 1):
                _set_blas_threads(_state["blas_n"])
