"""The NumPy backend's compiled float32 product (``_gemm.c``) against NumPy's BLAS ``a @ b``, in GFLOP/s.

For each shape (m x k times k x n) and thread count, the kernel (on each instruction set this CPU has, unless
``--isa``) and BLAS alternate in rounds so that machine noise hits both alike; the table shows medians over the
rounds of wall time (with threads, each side's block starts after 0.2 s asleep, so that the other's spinning
threads have parked), and at one thread also of the calling thread's CPU time (on a shared, loaded machine the
steadier figure: the work runs on that thread). Only the compiled library is loaded, not the backend, so BLAS keeps
its own threads (set with threadpoolctl). Run: ``python benchmarks/bench_gemm.py [--rounds 31] [--threads 1,2]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from lucid_backend_numpy import _native

SHAPES = [(128, 784, 256), (128, 256, 10), (128, 784, 512), (128, 512, 512), (1024, 1024, 1024)]
ISAS = {2: "AVX-512", 1: "AVX2+FMA"}


def _timed(fn: Callable[[], object], reps: int, settle: float) -> tuple[float, float]:
    """(wall, this thread's CPU) seconds per call over ``reps`` calls, after ``settle`` seconds asleep (the other
    side's spinning threads, Lucid's pool or OpenBLAS's, park meanwhile instead of taking the cores)."""
    time.sleep(settle)
    fn()
    w, c = time.perf_counter(), time.thread_time()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - w) / reps, (time.thread_time() - c) / reps


def _kernel(lib: Any, a: np.ndarray, b: np.ndarray, out: np.ndarray, parts: int) -> Callable[[], object]:
    m, k = a.shape
    n = b.shape[1]
    pa, pb, pc = a.ctypes.data, b.ctypes.data, out.ctypes.data

    def run() -> None:
        if lib.lucid_gemm_f32(m, n, k, pa, k, 1, pb, n, 1, pc, n, None, parts) != 0:
            raise RuntimeError("lucid_gemm_f32 failed")

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=31, help="alternating rounds per shape (median over them)")
    parser.add_argument("--threads", default=f"1,{os.cpu_count()}", help="thread counts, comma-separated")
    parser.add_argument("--isa", type=int, default=None, help="only this level (2 AVX-512, 1 AVX2+FMA)")
    args = parser.parse_args()
    lib = _native.load()
    if lib is None or not lib.lucid_gemm_available():
        raise SystemExit("no compiled product here (not built, or neither AVX-512 nor AVX2 + FMA)")
    most = lib.lucid_gemm_available()
    levels = [args.isa] if args.isa else [lv for lv in (2, 1) if lv <= most]
    rng = np.random.default_rng(0)
    print(f"| m x k x n | threads | {' | '.join(ISAS[lv] for lv in levels)} | NumPy BLAS | ratio | (GFLOP/s, median)")
    print("|---|---:|" + "---:|" * (len(levels) + 2))
    for m, k, n in SHAPES:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        out = np.empty((m, n), dtype=np.float32)
        flops = 2.0 * m * n * k
        reps = max(1, int(2e8 // flops))
        for threads in (int(t) for t in args.threads.split(",")):
            lib.lucid_pool_threads(threads)
            settle = 0.2 if threads > 1 else 0.0
            runs = {lv: _kernel(lib, a, b, out, threads) for lv in levels}
            wall: dict[Any, list[float]] = {key: [] for key in [*levels, "blas"]}
            cpu: dict[Any, list[float]] = {key: [] for key in wall}
            with threadpool_limits(limits=threads, user_api="blas"):
                for _ in range(args.rounds):
                    for lv in levels:
                        lib.lucid_gemm_set_isa(lv)
                        w, c = _timed(runs[lv], reps, settle)
                        wall[lv].append(w)
                        cpu[lv].append(c)
                    lib.lucid_pool_park()
                    w, c = _timed(lambda a=a, b=b, out=out: np.matmul(a, b, out=out), reps, settle)
                    wall["blas"].append(w)
                    cpu["blas"].append(c)
            lib.lucid_gemm_set_isa(most)
            gf = {key: flops / statistics.median(v) / 1e9 for key, v in wall.items()}
            cells = [f"{gf[lv]:.1f}" for lv in levels] + [f"{gf['blas']:.1f}", f"{gf[levels[0]] / gf['blas']:.2f}"]
            if threads == 1:  # CPU time of the calling thread: what the work cost, whatever else ran
                cg = {key: flops / statistics.median(v) / 1e9 for key, v in cpu.items()}
                cells = [f"{gf[lv]:.1f} (cpu {cg[lv]:.1f})" for lv in levels] + [
                    f"{gf['blas']:.1f} (cpu {cg['blas']:.1f})",
                    f"{gf[levels[0]] / gf['blas']:.2f} (cpu {cg[levels[0]] / cg['blas']:.2f})",
                ]
            print(f"| {m} x {k} x {n} | {threads} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
