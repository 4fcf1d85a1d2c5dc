"""The compiled kernels' thread pool (``lucid_backend_numpy/_pool.c``): OpenBLAS runs its jobs on it (one set
of spinning workers for BLAS and the compiled kernels), with the same bits as on OpenBLAS's own threads; it
runs every job of a BLAS call at once (they wait for one another), from any thread, nested or forked."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import lucid_core as lc
from lucid_backend_numpy import _backend, _native, _parallel

pytestmark = pytest.mark.skipif(
    _native.load() is None or not _native.load().lucid_pool_available(),
    reason="lucid_backend_numpy's compiled kernels (and their POSIX-threads pool) are not built here",
)


@pytest.fixture
def two_threads(monkeypatch):
    b = lc.get_backend("numpy")
    b.ensure_loaded()
    before = lc.get_num_threads()
    # threaded BLAS is the opt-in, non-deterministic path (LUCID_DETERMINISTIC=0; see docs/backends.md)
    deterministic = _parallel.DETERMINISTIC
    monkeypatch.setattr(_parallel, "DETERMINISTIC", False)
    lc.set_num_threads(2)
    _parallel._state["busy_until"] = 0.0  # an earlier test's Python-pool split is over: BLAS gets its threads
    _parallel.settle_blas()  # (its thread count picks OpenBLAS's code path, so the bits: products compare alike)
    yield _parallel._compiled["lib"]
    monkeypatch.setattr(_parallel, "DETERMINISTIC", deterministic)
    lc.set_num_threads(before)


def _routed() -> bool:
    return bool(_parallel._compiled["routed"])


def test_openblas_jobs_run_on_the_pool_with_openblas_own_bits(two_threads):
    if not _routed():
        pytest.skip("NumPy's BLAS here is not an OpenBLAS with openblas_set_threads_callback_function (>= 0.3.28)")
    lib = two_threads
    rng = np.random.default_rng(0)
    a = rng.standard_normal((768, 64)).astype(np.float32)
    b = rng.standard_normal((64, 256)).astype(np.float32)
    calls = lib.lucid_pool_blas_calls()
    routed = a @ b
    assert lib.lucid_pool_blas_calls() > calls  # OpenBLAS handed its jobs to the pool
    assert _parallel.route_blas(False) is False
    try:
        calls = lib.lucid_pool_blas_calls()
        own = a @ b
        assert lib.lucid_pool_blas_calls() == calls  # on OpenBLAS's own threads now
    finally:
        assert _parallel.route_blas(True) is True
    assert routed.tobytes() == own.tobytes()


_DOJOB = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_int)


def _callback(lib):
    fn = lib.lucid_blas_threads
    fn.argtypes = [ctypes.c_int, _DOJOB, ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int]
    fn.restype = None
    return fn


def _first_thread_index(jobs: int) -> int:
    """The OpenBLAS thread index of a call's job 0: past OpenBLAS's own workers (0 .. its threads - 2), whose
    per-thread state its own queued jobs (an LU's) still use, where that fits in its MAX_THREADS."""
    hooks = _parallel._openblas_hooks() if _routed() else None
    if hooks is None or hooks[1] is None:
        return 0
    own = ctypes.c_int.from_address(hooks[1]).value - 1
    return own if own > 0 and own + jobs <= hooks[2] else 0


@pytest.mark.parametrize("jobs", [1, 2, 3, 5])
def test_the_blas_callback_runs_every_job_at_once_each_as_its_own_thread_index(two_threads, jobs):
    """OpenBLAS's jobs of one call wait for one another's packed panels: all must run at the same time (a
    barrier of ``jobs`` parties passes only then), each as its own OpenBLAS thread (per-thread buffers)."""
    together = threading.Barrier(jobs, timeout=30)
    seen: list[tuple[int, int, int]] = []
    size = 16
    buf = (ctypes.c_char * (size * jobs))()
    base = ctypes.addressof(buf)

    @_DOJOB
    def dojob(thread: int, job: int, data: int) -> None:
        together.wait()
        seen.append((thread, (job - base) // size, data))

    _callback(two_threads)(1, dojob, jobs, size, base, 7)
    first = _first_thread_index(jobs)
    assert sorted(seen) == [(first + i, i, 7) for i in range(jobs)]


def test_a_blas_call_from_inside_a_pool_job_still_runs_its_jobs_at_once(two_threads):
    """A job that itself makes a threaded BLAS call (the pool's workers are busy with the outer call): the inner
    call's jobs get threads of their own, all at once, instead of waiting forever for a busy worker."""
    fn = _callback(two_threads)
    inner_seen: list[int] = []
    inner_together = threading.Barrier(2, timeout=30)

    @_DOJOB
    def inner(thread: int, job: int, data: int) -> None:
        inner_together.wait()
        inner_seen.append(thread)

    buf = (ctypes.c_char * 16)()
    base = ctypes.addressof(buf)

    @_DOJOB
    def outer(thread: int, job: int, data: int) -> None:
        if job == base + 8:  # job 1, on a pool worker
            fn(1, inner, 2, 8, job, 0)

    fn(1, outer, 2, 8, base, 0)
    first = _first_thread_index(2)
    assert sorted(inner_seen) == [first, first + 1]


def test_products_and_compiled_splits_from_several_threads_at_once(two_threads):
    """Four Python threads making threaded products and split layer norms at the same time: every result is
    the one a single thread computes (a second caller waits for the pool, or runs its kernel itself)."""
    k = _backend._kernels(np)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((512, 128)).astype(np.float32)
    b = rng.standard_normal((128, 384)).astype(np.float32)
    x = rng.standard_normal((4096, 64)).astype(np.float32)
    want_mm = a @ b
    want_ln = k["layer_norm"](x, None, None, 1e-5)[0]
    errors: list[str] = []

    def work() -> None:
        for _ in range(20):
            if (a @ b).tobytes() != want_mm.tobytes():
                errors.append("matmul")
            if k["layer_norm"](x, None, None, 1e-5)[0].tobytes() != want_ln.tobytes():
                errors.append("layer_norm")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_a_forked_child_starts_its_own_workers(two_threads, monkeypatch):
    monkeypatch.setattr(_parallel, "COMPILED_MIN_WORK", 1)
    k = _backend._kernels(np)
    rng = np.random.default_rng(2)
    a = rng.standard_normal((768, 64)).astype(np.float32)
    b = rng.standard_normal((64, 256)).astype(np.float32)
    x = rng.standard_normal((256, 64)).astype(np.float32)
    want = (a @ b).tobytes(), k["layer_norm"](x, None, None, 1e-5)[0].tobytes()  # the parent's workers run now
    pid = os.fork()
    if pid == 0:  # the child has none of those threads: its calls must start new ones, not wait on them
        code = 1
        try:
            import signal

            signal.alarm(30)  # a hang ends the child (and fails the test) instead of the suite
            got = (a @ b).tobytes(), k["layer_norm"](x, None, None, 1e-5)[0].tobytes()
            code = 0 if got == want else 1
        finally:
            os._exit(code)  # never back into pytest in the child
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_blas_pool_setting_is_checked_and_can_be_turned_off():
    code = "import lucid_core as lc; lc.zeros(1, device='numpy'); from lucid_backend_numpy import _parallel as p; "
    env = {**os.environ, "LUCID_NUMPY_BLAS_POOL": "0"}
    out = subprocess.run(
        [sys.executable, "-c", code + "print(bool(p._compiled['routed']))"], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr
    env["LUCID_NUMPY_BLAS_POOL"] = "yes"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "LUCID_NUMPY_BLAS_POOL='yes': expected '1'" in out.stderr


def test_compiled_splits_wait_while_openblas_own_threads_spin(two_threads):
    """Unrouted, with BLAS at two threads of its own, compiled kernels are not split (OpenBLAS's workers spin
    on the other core for about 0.1 s after each product)."""
    if not _routed():
        assert _parallel.compiled_parts(1000, 10**7) == 1
        return
    _parallel.route_blas(False)
    try:
        assert _parallel.compiled_parts(1000, 10**7) == 1
    finally:
        _parallel.route_blas(True)
    assert _parallel.compiled_parts(1000, 10**7) == 2


_LU_AND_PRODUCT = """
import threading, numpy as np, lucid_core as lc
lc.zeros(1, device="numpy")
lc.set_num_threads(2)
rng = np.random.default_rng(0)
m, b = rng.standard_normal((800, 800)), rng.standard_normal((800, 4))
x, y = rng.standard_normal((768, 64)).astype(np.float32), rng.standard_normal((64, 256)).astype(np.float32)
want_lu, want_mm = np.linalg.solve(m, b), x @ y
bad = []
def lu():
    for _ in range(30):
        bad.extend(["lu"] if not np.array_equal(np.linalg.solve(m, b), want_lu) else [])
def mm():
    for _ in range(1500):
        bad.extend(["mm"] if not np.array_equal(x @ y, want_mm) else [])
threads = [threading.Thread(target=lu), threading.Thread(target=mm)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(bad)
"""


def test_another_threads_lu_runs_beside_pool_products():
    """OpenBLAS still queues an LU's jobs (getrf_parallel) on its own workers: products on the pool at the same
    time must not take those workers' per-thread slots (they did at first: the LU then waited forever)."""
    out = subprocess.run([sys.executable, "-c", _LU_AND_PRODUCT], capture_output=True, text=True, timeout=240)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


def test_parked_workers_wake_for_the_next_split(two_threads, monkeypatch):
    """``lucid_pool_park`` (the Python pool taking the cores) puts spinning workers to sleep; the next split or
    product wakes them and gives the same bits."""
    if not _routed():
        pytest.skip("compiled kernels split only with OpenBLAS's jobs on the pool")
    monkeypatch.setattr(_parallel, "COMPILED_MIN_WORK", 1)
    k = _backend._kernels(np)
    x = np.random.default_rng(3).standard_normal((512, 64)).astype(np.float32)
    lc.set_num_threads(1)
    want = k["layer_norm"](x, None, None, 1e-5)[0].tobytes()
    lc.set_num_threads(2)
    for _ in range(3):
        two_threads.lucid_pool_park()
        assert _parallel.compiled_parts(512, 2 * x.size) == 2
        assert k["layer_norm"](x, None, None, 1e-5)[0].tobytes() == want
