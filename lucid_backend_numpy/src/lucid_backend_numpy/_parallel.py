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
on the calling thread, where the pool's hand-off would cost more than it saves.

The hand-off decides what is worth splitting. Waking a sleeping thread costs 70-180 us on a 2-core VM
(the kernel has to wake an idle CPU), as long as a 200k-element ``exp``. OpenMP and OpenBLAS avoid that
by letting idle workers spin for a while, and so does this pool on Linux: a worker waits for its next
slice in ``pthread_spin_lock`` (through ``ctypes``, which releases the GIL), so a hand-off costs a few
microseconds while the pool is in use. It spins for :data:`BUSY_SECONDS` after the last split, then a
housekeeping thread parks it on an ordinary event (no CPU used); the next split wakes it the slow way.
Elsewhere (macOS, Windows, or ``LUCID_NUMPY_SPIN=0``) the workers always sleep between slices and only
kernels of about a millisecond or more are split (:data:`MIN_WORK` is larger).

While a split call runs, BLAS is held at one thread (each worker's GEMMs are small; a multi-threaded
BLAS inside each worker would oversubscribe the cores); outside, BLAS keeps ``n`` threads. Two pools on
the same cores stall each other: after a threaded BLAS call OpenBLAS's threads keep spinning for about
0.1 s, and a split that starts then finds its core taken. So while the pool is busy (a split within the
last :data:`BUSY_SECONDS`) the backend's ``matmul`` splits large 2-D products over this pool too, and
BLAS's threads stay asleep; otherwise BLAS threads them. BLAS is reached through ``threadpoolctl``
(OpenBLAS, MKL, BLIS and FlexiBLAS, under whatever symbol prefix the NumPy wheel uses); without it BLAS
is left alone.

The compiled kernels (``_ckernels.c``) split in C instead, over the pool of ``_pool.c`` (no GIL between
slices; :func:`compiled_parts` decides how many), and OpenBLAS 0.3.28+ runs its jobs on that same pool
(:func:`attach_native`), so products and compiled kernels share one set of spinning workers. This Python
pool remains for the NumPy-level kernels (convolutions, pooling); when it starts splitting it parks the
compiled pool's workers, and while it is busy the compiled kernels run their slices on its threads
(:func:`run_compiled`), one compiled call each.
"""

from __future__ import annotations

import atexit
import math
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ._native import ptr

__all__ = [
    "COMPILED_MIN_WORK",
    "MIN_WORK",
    "attach_native",
    "compiled_parts",
    "gemm",
    "gemm_into",
    "gemm_isa",
    "gemm_on",
    "gemm_sum_into",
    "num_threads",
    "parallel_batches",
    "pool_busy",
    "run_compiled",
    "set_num_threads",
    "settle_blas",
]

BUSY_SECONDS = 0.2
"""How long after a split the pool counts as busy, and its workers spin (OpenBLAS's spin about 0.1 s)."""


def _spin_locks() -> Any:
    """glibc/musl's ``pthread_spin_init/lock/unlock`` through ctypes, or None where they cannot be used.

    Both C libraries unlock with a plain atomic store, so a lock may be released by a thread other than
    the one that took it: that is how one thread hands a slice to another here.
    """
    choice = os.environ.get("LUCID_NUMPY_SPIN", "1")
    if choice not in ("0", "1"):
        raise ValueError(f"LUCID_NUMPY_SPIN={choice!r}: expected '1' (workers spin, the default) or '0' (they sleep)")
    if not sys.platform.startswith("linux") or choice == "0":
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None)  # the process's C library; calls through CDLL release the GIL
        init, lock, unlock = libc.pthread_spin_init, libc.pthread_spin_lock, libc.pthread_spin_unlock
    except (ImportError, OSError, AttributeError):  # pragma: no cover - no ctypes or no spin locks
        return None
    init.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lock.argtypes = unlock.argtypes = [ctypes.c_void_p]
    init.restype = lock.restype = unlock.restype = ctypes.c_int
    return ctypes, init, lock, unlock


_SPIN = _spin_locks()

MIN_WORK = 1 << 17 if _SPIN is not None else 1 << 19
"""Elements per thread below which a kernel stays on the calling thread (measured: benchmarks/RESULTS.md)."""

COMPILED_MIN_WORK = 1 << 14
"""Elements per thread below which a compiled kernel stays on the calling thread (the compiled pool's hand-off
costs microseconds while its workers spin; measured: benchmarks/RESULTS.md)."""

_lock = threading.Lock()
_state: dict[str, Any] = {"n": 1, "pool": None, "blas": None, "blas_n": None, "blas_low": False, "busy_until": 0.0}
# the compiled kernels' pool (_pool.c); "gemm": the library when its float32 product (_gemm.c: AVX-512 or AVX2 + FMA)
# runs here; "gemm_bf16": the library when its bfloat16 product (_gemm_bf16.c: AVX512_BF16) does
_compiled: dict[str, Any] = {"lib": None, "routed": [], "callback": None, "gemm": None, "gemm_bf16": None}
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


def _deterministic() -> bool:
    raw = os.environ.get("LUCID_DETERMINISTIC", "1").strip()
    if raw not in ("", "0", "1"):
        raise ValueError(
            f"LUCID_DETERMINISTIC={raw!r}: expected '1' (the default: bits independent of the thread "
            "count) or '0' (BLAS threads its products: faster, bits depend on the thread count)"
        )
    return raw != "0"


#: products keep their bits whatever the thread count and timing (see docs/backends.md, "Determinism"):
#: BLAS always runs at one thread, on slices of a fixed size; ``LUCID_DETERMINISTIC=0`` lets BLAS thread them
DETERMINISTIC = _deterministic()
#: rows per BLAS call of a deterministic product: a shape-only partition, the same for any thread count
DETERMINISTIC_ROWS = 128


def set_num_threads(n: int, first: bool = False) -> None:
    """Split kernels over ``n`` threads and give BLAS ``n`` threads for the calls made outside a split.

    ``first`` (the call when the backend loads) only lowers BLAS's count, never raises it, so
    ``OPENBLAS_NUM_THREADS=1`` or an earlier ``threadpoolctl`` limit is kept unless the user calls
    ``set_num_threads`` later.
    """
    with _lock:
        if n != _state["n"] and _state["pool"] is not None:
            _state["pool"].close()
            _state["pool"] = None
        _state["n"] = n
        if _compiled["lib"] is not None:
            _compiled["lib"].lucid_pool_threads(n)
        current = blas_threads()
        _state["blas_n"] = min(n, current) if first and current else n
        if DETERMINISTIC:
            _state["blas_n"] = 1  # OpenBLAS's bits depend on its thread count
        _state["blas_low"] = False
        if current is not None and current != _state["blas_n"]:
            _set_blas_threads(_state["blas_n"])


def attach_native(lib: Any) -> None:
    """Use the compiled kernels' thread pool (``_pool.c``, in ``lib`` from ``_native.load``): sized like this
    one, and, where NumPy's BLAS is OpenBLAS 0.3.28 or later, running OpenBLAS's jobs as well, so that BLAS and
    the compiled kernels share one set of spinning workers (``LUCID_NUMPY_BLAS_POOL=0`` leaves OpenBLAS's
    threads alone; then compiled kernels split only while BLAS runs at one thread)."""
    if lib is None or _compiled["lib"] is lib or not lib.lucid_pool_available():
        return
    choice = os.environ.get("LUCID_NUMPY_BLAS_POOL", "1")
    if choice not in ("0", "1"):
        raise ValueError(
            f"LUCID_NUMPY_BLAS_POOL={choice!r}: expected '1' (OpenBLAS runs its jobs on Lucid's pool, the default) "
            "or '0' (on its own threads)"
        )
    _compiled["lib"] = lib
    lib.lucid_pool_threads(_state["n"])
    if choice == "1":
        route_blas(True)
    gemm_choice = os.environ.get("LUCID_NUMPY_GEMM", "1")
    if gemm_choice not in ("0", "1"):
        raise ValueError(
            f"LUCID_NUMPY_GEMM={gemm_choice!r}: expected '1' (float32 products on Lucid's own kernel where the "
            "CPU has AVX-512 or AVX2 with FMA, the default) or '0' (always NumPy's BLAS)"
        )
    _compiled["gemm"] = lib if gemm_choice == "1" and lib.lucid_gemm_available() else None
    _compiled["gemm_bf16"] = lib if gemm_choice == "1" and lib.lucid_gemm_bf16_available() else None


def _openblas_hooks() -> tuple[Any, Any, int] | None:
    """For NumPy's OpenBLAS (a pthreads build of 0.3.28 or later): its ``openblas_set_threads_callback_function``,
    the address of its thread count (``blas_num_threads``) and its MAX_THREADS; None where there is none."""
    import ctypes
    import re

    for c in _blas():
        if c.internal_api != "openblas" or getattr(c, "threading_layer", "pthreads") != "pthreads":
            continue
        try:
            dll = ctypes.CDLL(c.filepath)
        except OSError:  # pragma: no cover - threadpoolctl found it loaded, so it opens
            continue

        def symbol(name: str, dll: Any = dll) -> Any:
            names = [f"{p}{name}{s}" for p in ("", "scipy_") for s in ("", "64_", "_64")]
            return next((getattr(dll, n) for n in names if hasattr(dll, n)), None)

        setter, config = symbol("openblas_set_threads_callback_function"), symbol("openblas_get_config")
        if setter is None:  # OpenBLAS < 0.3.28: its own threads stay
            continue
        setter.argtypes, setter.restype = [ctypes.c_void_p], None
        own, most = None, 0
        try:
            own = ctypes.addressof(ctypes.c_int.in_dll(dll, "blas_num_threads"))
            config.restype = ctypes.c_char_p
            found = re.search(rb"MAX_THREADS=(\d+)", config() or b"")
            most = int(found.group(1)) if found else 0
        except (ValueError, AttributeError):  # pragma: no cover - not exported: BLAS jobs take indices 0..
            own = None
        return setter, own, most
    return None


def route_blas(on: bool) -> bool:
    """Run OpenBLAS's jobs on the compiled pool (``on``) or on OpenBLAS's own threads; whether they now run on
    the pool. Switch only while no BLAS call is running (OpenBLAS reads the callback at each threaded call)."""
    import ctypes

    lib = _compiled["lib"]
    if lib is None:
        return False
    if _compiled["callback"] is None:
        _compiled["callback"] = ctypes.cast(lib.lucid_blas_threads, ctypes.c_void_p)
    hooks = _openblas_hooks()
    if hooks is None:
        _compiled["routed"] = []
        return False
    setter, own, most = hooks
    lib.lucid_pool_blas_info(own, most)
    setter(_compiled["callback"] if on else None)
    _compiled["routed"] = [setter] if on else []
    return on


def compiled_parts(n_items: int, work: int) -> int:
    """How many slices a compiled kernel over ``n_items`` rows, heads or elements (``work`` elements touched)
    is cut into on the compiled pool; 1 runs it on the calling thread. Not while this Python pool is busy (its
    workers spin on the other cores), and, unless BLAS runs on the compiled pool, not while BLAS has threads
    of its own (they spin about 0.1 s after each product)."""
    n = _state["n"]
    if n == 1 or work < 2 * COMPILED_MIN_WORK or _compiled["lib"] is None or getattr(_local, "worker", False):
        return 1  # (the work test first: most calls are small, and this runs once per kernel call)
    if not _compiled["routed"] and _state["blas_n"] not in (None, 1):
        return 1
    if time.monotonic() < _state["busy_until"]:
        return 1
    return max(1, min(n, n_items, work // COMPILED_MIN_WORK))


#: the smallest (rows, columns, depth) a product takes to the compiled kernel; below it BLAS's small-matrix paths
#: win (a 128 x 10 x 512 product: 36 us against OpenBLAS's 27; 512 x 192 x 64: 72 against 86)
GEMM_MIN = (48, 64, 32)
#: and the fewest multiply-adds (a 32 x 196 x 144 convolution product: 23 us against OpenBLAS's 13)
GEMM_MIN_WORK = 2**21


def _big_enough(m: int, n: int, k: int) -> bool:
    """Whether an m x k by k x n product is worth the compiled kernel (GEMM_MIN, GEMM_MIN_WORK)."""
    return m >= GEMM_MIN[0] and n >= GEMM_MIN[1] and k >= GEMM_MIN[2] and m * n * k >= GEMM_MIN_WORK


def _operand(a: Any) -> tuple[int, int, int] | None:
    """(address, row stride, column stride) in elements for a C-contiguous matrix or a transposed one; else None."""
    if a.flags.c_contiguous:
        return ptr(a), a.shape[1], 1
    t = a.T
    if t.flags.c_contiguous:
        return ptr(t), 1, a.shape[0]
    return None


def gemm(np: Any, a: Any, b: Any, bias: Any = None) -> Any:
    """``a @ b`` (``+ bias``) for float32 matrices on the compiled kernel (``_gemm.c``), or None where it does not
    apply (neither AVX-512 nor AVX2 + FMA, other dtypes, strided operands, small products): then BLAS multiplies.
    Split over the compiled pool like the other kernels; every element is summed in the same order whatever the
    split, with the same bits on either instruction set.

    ``bias`` (a C-contiguous float32 vector of ``b``'s columns) is added to each row as the rows of C are written
    the last time, with the bits of ``(a @ b) + bias`` and without another pass over C (which, after a product
    split over two cores, reads half of C from the other core's cache: 27 against 10 us for 128 x 512)."""
    lib = _compiled["gemm"]
    if lib is None or a.dtype != np.float32 or b.dtype != np.float32:
        return None
    m, k = a.shape
    n = b.shape[1]
    if b.shape[0] != k or not _big_enough(m, n, k):
        return None
    if bias is not None and (bias.dtype != np.float32 or bias.shape != (n,) or not bias.flags.c_contiguous):
        return None
    pa, pb = _operand(a), _operand(b)
    if pa is None or pb is None:
        return None
    out = np.empty((m, n), dtype=np.float32)
    panels, tiles = -(-n // 32), -(-m // 12)
    parts = compiled_parts(max(panels, tiles), m * n * k // 16)
    if lib.lucid_gemm_f32(m, n, k, *pa, *pb, ptr(out), n, ptr(bias), parts) != 0:
        return None  # a thread could not allocate its buffer: BLAS's turn
    return out


def _strided(x: Any, nb: int) -> tuple[int, int, int, int] | None:
    """(address, batch stride, row stride, column stride) in elements for a stack of ``nb`` matrices,
    each C-contiguous or a transpose (a 2-D ``x`` is shared: batch stride 0), or None where the matrices are
    otherwise strided or the stack has no single batch stride. Never a copy: the address must stay valid while
    the caller holds ``x``."""
    sb = span = 0
    count = 1
    for size, stride in zip(reversed(x.shape[:-2]), reversed(x.strides[:-2])):
        count *= size
        if size == 1:
            continue
        if span and stride != span:  # the leading axes do not fold into one
            return None
        if not span:
            sb = stride
        span = stride * size
    if x.ndim > 2 and count != nb:
        return None
    size = x.itemsize
    rs, cs = x.strides[-2] // size, x.strides[-1] // size
    if min(rs, cs, sb) < 0 or (rs != 1 and cs != 1):
        return None
    return x.__array_interface__["data"][0], sb // size, rs, cs


def gemm_into(np: Any, a: Any, b: Any, out: Any) -> bool:
    """``np.matmul(a, b, out=out)`` for float32 stacks on the compiled kernel, one thread (the convolutions call it
    from this pool's slices); False where it does not apply (see :func:`gemm`; ``out`` may then hold partial
    results): the caller multiplies. ``a`` or ``b`` may be one matrix shared by the stack; ``out`` is C-contiguous."""
    lib = _compiled["gemm"]
    if lib is None or a.dtype != np.float32 or b.dtype != np.float32 or out.dtype != np.float32:
        return False
    m, k = a.shape[-2:]
    n = b.shape[-1]
    if b.shape[-2] != k or not _big_enough(m, n, k):
        return False
    if not out.flags.c_contiguous or out.shape[-2:] != (m, n):
        return False
    nb = out.size // (m * n) if out.size else 0
    pa, pb = _strided(a, nb), _strided(b, nb)
    if pa is None or pb is None or nb == 0:
        return False
    c = out.__array_interface__["data"][0]
    return lib.lucid_gemm_batch_f32(nb, m, n, k, *pa, *pb, c, m * n, n, 1) == 0


def gemm_bf16_on() -> bool:
    """Whether bfloat16 products run on the compiled AVX512_BF16 kernel here (built, the CPU has it, not turned off)."""
    return _compiled["gemm_bf16"] is not None


def gemm_bf16(np: Any, a: Any, b: Any, bias: Any = None, out: Any = None, parts: int | None = None) -> Any:
    """``a @ b`` for bfloat16 operands (2-D, or stacks of matrices with one batch stride, each C-contiguous or a
    transpose; a 2-D operand is shared by the stack) on the compiled AVX512_BF16 product (``_gemm_bf16.c``):
    float32 products and sums, rounded to bfloat16 once, as PyTorch's CPU bfloat16 GEMM; ``+ bias`` (2-D only: a
    C-contiguous float32 vector of ``b``'s columns) is added to the float32 sums before the rounding. None where it
    does not apply (no such CPU, not built, ``LUCID_NUMPY_GEMM=0``, other layouts, products too small to gain): then the
    caller multiplies in float32 and rounds, which gives the same numbers within float32 rounding. ``out``: a
    C-contiguous array of the result's shape to write into (returned): bfloat16, or float32 for the sums
    unrounded; ``parts``: the slices (default:
    as the pool allows; 1 from a slice of this pool's own split)."""
    lib = _compiled["gemm_bf16"]
    if lib is None or a.ndim < 2 or b.ndim < 2:
        return None
    m, k = a.shape[-2:]
    n = b.shape[-1]
    if b.shape[-2] != k or m * n * k < GEMM_MIN_WORK // 4 or min(m, n) < 16:
        return None
    if bias is not None and (bias.dtype != np.float32 or bias.shape != (n,) or not bias.flags.c_contiguous):
        return None
    try:
        lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return None
    nb = math.prod(lead)
    if (a.ndim > 2 and a.shape[:-2] != lead) or (b.ndim > 2 and b.shape[:-2] != lead) or nb == 0:
        return None
    ua, ub = a.view(np.uint16), b.view(np.uint16)
    pa, pb = _strided(ua, nb), _strided(ub, nb)
    if pa is None or pb is None:
        return None
    if out is None:
        out = np.empty((*lead, m, n), dtype=a.dtype)
    elif out.shape != (*lead, m, n) or out.dtype not in (a.dtype, np.float32) or not out.flags.c_contiguous:
        return None
    f32_out = int(out.dtype == np.float32)
    c = out.__array_interface__["data"][0]
    if parts is None:
        parts = compiled_parts(max(-(-n // 32), -(-m // 12)), m * n * k // 32)
    if nb == 1 and a.ndim == b.ndim == 2:
        done = lib.lucid_gemm_bf16(m, n, k, pa[0], pa[2], pa[3], pb[0], pb[2], pb[3], c, n, ptr(bias), f32_out, parts)
    elif bias is not None:
        return None
    else:
        done = lib.lucid_gemm_batch_bf16(nb, m, n, k, *pa, *pb, c, m * n, n, f32_out, parts)
    return out if done == 0 else None


#: the smallest conversion worth the compiled loop (below it the ctypes call costs more than ml_dtypes' loop)
CONVERT_MIN = 2048


def convert_bf16(np: Any, x: Any, dtype: Any) -> Any:
    """``x.astype(dtype)`` between float32 and bfloat16 (``x`` C-contiguous) in one compiled pass: ml_dtypes' bits
    (to nearest, ties to even; a NaN becomes the quiet NaN of its sign), ~10x faster than its loop. None where it
    does not apply (other dtypes or layouts, small arrays, kernels not built): the caller converts."""
    lib = _compiled["lib"]
    if lib is None or x.size < CONVERT_MIN or not x.flags.c_contiguous:
        return None
    to_bf16 = x.dtype == np.float32
    if to_bf16 == (x.dtype.name == "bfloat16") or dtype.name != ("bfloat16" if to_bf16 else "float32"):
        return None
    out = np.empty(x.shape, dtype=dtype)
    parts = compiled_parts(x.size, 3 * x.size)
    (lib.lucid_f32_to_bf16 if to_bf16 else lib.lucid_bf16_to_f32)(ptr(x), ptr(out), x.size, parts)
    return out


def gemm_on() -> bool:
    """Whether float32 products run on the compiled kernel here (AVX-512 or AVX2 + FMA, built, not turned off)."""
    return _compiled["gemm"] is not None


#: the compiled product's micro-kernels by ``lucid_gemm_available()``'s level (all give the same bits)
GEMM_ISAS = {2: "AVX-512", 1: "AVX2+FMA"}


def gemm_isa() -> str | None:
    """Which instruction set the compiled float32 product runs on here ("AVX-512" or "AVX2+FMA"), or None where
    it does not run (no such CPU, not built, ``LUCID_NUMPY_GEMM=0``, or the backend not loaded yet)."""
    lib = _compiled["gemm"]
    return None if lib is None else GEMM_ISAS.get(lib.lucid_gemm_available())


def gemm_sum_into(np: Any, a: Any, b: Any, out: Any) -> bool:
    """``out = a[0] @ b[0] + a[1] @ b[1] + ...`` for float32 stacks (``(T, m, k)`` and ``(T, k, n)``, each matrix
    C-contiguous or a transpose) on the compiled kernel, one thread, summed term after term in one fixed order;
    False where it does not apply (no compiled product here, other dtypes or layouts, small sums): the caller sums
    otherwise."""
    lib = _compiled["gemm"]
    if lib is None or a.dtype != np.float32 or b.dtype != np.float32 or out.dtype != np.float32:
        return False
    terms, m, k = a.shape
    n = b.shape[-1]
    if m < 24 or n < 16 or m * n * k * terms < GEMM_MIN_WORK or b.shape != (terms, k, n) or out.shape != (m, n):
        return False
    pa, pb = _strided(a, terms), _strided(b, terms)
    if pa is None or pb is None or not out.flags.c_contiguous:
        return False
    return lib.lucid_gemm_sum_f32(terms, m, n, k, *pa, *pb, ptr(out), n, 1) == 0


def run_compiled(call: Callable[[int, int, int], object], n_items: int, work: int) -> None:
    """Run a compiled kernel over items ``0 .. n_items`` (rows, heads or elements; ``work`` elements touched):
    ``call(lo, hi, parts)`` computes items ``lo .. hi`` in ``parts`` slices on the compiled pool. While this
    Python pool is busy (a CNN step: its workers hold the cores) the slices run on its threads instead, one
    compiled call each, as every kernel's did before the compiled pool."""
    if time.monotonic() < _state["busy_until"] and chunks(n_items, work) > 1:
        parallel_batches(lambda lo, hi: call(lo, hi, 1), n_items, work)
        return
    call(0, n_items, compiled_parts(n_items, work))


def num_threads() -> int:
    """The number of threads a split kernel uses."""
    return _state["n"]


def _mark_worker() -> None:
    _local.worker = True


def _first_slice(
    fn: Callable[[int, int], object], bounds: list[int], others: Callable[[], list[BaseException | None]]
) -> None:
    """Runs the first slice on the calling thread, then waits for the others (``others`` returns their
    errors); re-raises the first error of any slice."""
    try:
        fn(bounds[0], bounds[1])
    finally:
        errors = others()
    for e in errors:
        if e is not None:
            raise e


class _SleepingPool:
    """Workers that sleep between slices (``concurrent.futures``): where spin locks are unavailable."""

    def __init__(self, workers: int) -> None:
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="lucid-numpy", initializer=_mark_worker)

    def run(self, fn: Callable[[int, int], object], bounds: list[int]) -> None:
        futures: list[Future[object]] = [
            self._executor.submit(fn, bounds[i], bounds[i + 1]) for i in range(1, len(bounds) - 1)
        ]
        _first_slice(fn, bounds, lambda: [f.exception() for f in futures])

    def close(self) -> None:
        self._executor.shutdown(wait=False)


_PARK, _EXIT = object(), object()


class _Spinner:
    """One worker thread and its two spin locks: ``go`` (held while it has nothing to do) and ``done``
    (held while its slice runs). It waits in ``pthread_spin_lock(go)`` with the GIL released."""

    def __init__(self, index: int) -> None:
        ctypes, init, self._lock, self._unlock = _SPIN
        self._cells = (ctypes.c_int * 32)()  # the two locks 64 bytes apart: separate cache lines
        self.go = ctypes.addressof(self._cells)
        self.done = self.go + 64
        init(self.go, 0)
        init(self.done, 0)
        self._lock(self.go)
        self._lock(self.done)
        self.job: Any = None
        self.error: BaseException | None = None
        self.parked = True  # it starts asleep; the first post wakes it
        self.wake = threading.Event()
        self.thread = threading.Thread(target=self._loop, name=f"lucid-numpy-{index}", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        _mark_worker()
        self.wake.wait()
        self.wake.clear()
        while True:
            self._lock(self.go)  # spins, GIL released, until post() releases it
            job = self.job
            self.job = None
            if job is _EXIT:
                self._unlock(self.done)
                return
            if job is _PARK:
                self._unlock(self.done)
                self.wake.wait()  # asleep until the next post
                self.wake.clear()
                continue
            fn, lo, hi = job
            try:
                fn(lo, hi)
            except BaseException as e:  # noqa: BLE001 - re-raised on the calling thread
                self.error = e
            self._unlock(self.done)

    def post(self, job: Any) -> None:
        self.job = job
        self._unlock(self.go)
        if self.parked:
            self.parked = False
            self.wake.set()

    def wait(self) -> BaseException | None:
        self._lock(self.done)  # spins, GIL released, until the slice is done
        error, self.error = self.error, None
        return error


class _SpinningPool:
    """Workers that spin between slices for :data:`BUSY_SECONDS`, then park (see the module docstring)."""

    def __init__(self, workers: int) -> None:
        self.dispatch = threading.Lock()  # one split at a time; a second caller runs its kernel serially
        self.spinners = [_Spinner(i) for i in range(workers)]
        self.closed = False
        self.kick = threading.Event()
        threading.Thread(target=self._housekeeper, name="lucid-numpy-park", daemon=True).start()

    def run(self, fn: Callable[[int, int], object], bounds: list[int]) -> None:
        if not self.dispatch.acquire(blocking=False):
            fn(bounds[0], bounds[-1])
            return
        try:
            if self.closed:
                fn(bounds[0], bounds[-1])
                return
            used = self.spinners[: len(bounds) - 2]
            if any(s.parked for s in used):
                self.kick.set()
            for i, s in enumerate(used, 1):
                s.post((fn, bounds[i], bounds[i + 1]))
            # let the woken workers take the GIL while this thread does not hold it: a thread that finds
            # the GIL taken sleeps on a condition variable, and its wake-up is the slow hand-off again
            # (a 64k-element exp split: 60 against 90 us, one thread 85 us)
            os.sched_yield()
            _first_slice(fn, bounds, lambda: [s.wait() for s in used])
        finally:
            self.dispatch.release()

    def _park_all(self) -> None:
        for s in self.spinners:
            if not s.parked:
                s.post(_PARK)
                s.wait()
                s.parked = True

    def _housekeeper(self) -> None:
        """Parks the spinning workers once the pool has been idle for :data:`BUSY_SECONDS`."""
        while True:
            self.kick.wait()  # asleep while the workers are
            self.kick.clear()
            while not self.closed:
                delay = _state["busy_until"] - time.monotonic()  # spin while the pool is busy
                if delay > 0:
                    time.sleep(delay)
                    continue
                with self.dispatch:
                    if self.closed:
                        return
                    if time.monotonic() < _state["busy_until"]:
                        continue
                    self._park_all()
                break
            if self.closed:
                return

    def close(self) -> None:
        """Stops the workers (parked or spinning) and the housekeeper."""
        with self.dispatch:
            if self.closed:
                return
            self.closed = True
            for s in self.spinners:
                s.post(_EXIT)
                s.wait()
            self.kick.set()


def _pool() -> Any:
    pool = _state["pool"]
    if pool is None:
        pool = (_SpinningPool if _SPIN is not None else _SleepingPool)(_state["n"] - 1)
        _state["pool"] = pool
    return pool


def _close_pool() -> None:
    pool = _state["pool"]
    _state["pool"] = None
    if pool is not None:
        pool.close()


atexit.register(_close_pool)  # no worker spinning while the interpreter shuts down


def _after_fork() -> None:
    # a forked child (DataLoader workers) inherits the pool object but not its threads, and a lock
    # another thread held at the fork would stay held forever
    global _lock
    _lock = threading.Lock()
    _state["pool"] = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def pool_busy() -> bool:
    """Whether kernels were split over the pool within the last :data:`BUSY_SECONDS` (then large products
    are split over it too, rather than waking BLAS's threads; see the module docstring)."""
    return _state["n"] > 1 and time.monotonic() < _state["busy_until"]


def settle_blas() -> None:
    """Give BLAS back its ``n`` threads once the pool is no longer busy (called before BLAS products).

    BLAS stays at one thread from the first split until then, not just during each split: a threaded
    BLAS call between two splits would wake OpenBLAS's threads onto the core where a pool worker spins.
    The pool's own housekeeping thread does not do it, as a BLAS call may be running on another thread.
    """
    if _state["blas_low"] and not pool_busy():
        with _lock:
            if _state["blas_low"]:
                _state["blas_low"] = False
                _set_blas_threads(_state["blas_n"])


def chunks(n_items: int, work: int) -> int:
    """How many slices :func:`parallel_batches` cuts ``n_items`` batch entries touching ``work`` elements into."""
    if getattr(_local, "worker", False):
        return 1
    return max(1, min(_state["n"], n_items, work // MIN_WORK))


def parallel_batches(
    fn: Callable[[int, int], object], n_items: int, work: int, busy: bool = True, align: int = 1
) -> None:
    """Call ``fn(lo, hi)`` over consecutive slices of ``range(n_items)``, on up to ``num_threads()`` threads.

    ``work`` (elements touched) decides whether splitting pays; ``fn`` must write only its slice of
    preallocated outputs (see the module docstring). Returns when every slice is done; the first
    exception raised by a slice is re-raised here. A split marks the pool busy (:func:`pool_busy`) and
    keeps its workers spinning unless ``busy`` is False: a product split only because the pool was busy
    must not keep it so, or products would stay off BLAS's threads for good once any kernel had split.

    Every slice but the last starts and ends at a multiple of ``align``. Row sums taken as matrix-vector
    products need it: BLAS works on groups of rows (4 in OpenBLAS's x86 kernels), and a row's bits depend
    on where its group starts and whether it falls in the remainder (64 covers any group of 2^k <= 64).
    """
    k = chunks(n_items, work)
    units = -(-n_items // align)
    if k == 1 or units == 1:
        fn(0, n_items)
        return
    k = min(k, units)
    bounds = [min(n_items, units * i // k * align) for i in range(k + 1)]
    if busy:
        now = time.monotonic()
        if now >= _state["busy_until"] and _compiled["lib"] is not None:
            _compiled["lib"].lucid_pool_park()  # the compiled pool's workers stop spinning: these take the cores
        _state["busy_until"] = now + BUSY_SECONDS
    with _lock:
        pool = _pool()
        if not _state["blas_low"] and _state["blas_n"] not in (None, 1):
            _state["blas_low"] = True
            _set_blas_threads(1)
    pool.run(fn, bounds)
