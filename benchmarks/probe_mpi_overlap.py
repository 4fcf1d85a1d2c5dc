"""How much of a non-blocking all-reduce MPI itself can hide under computation on this machine (no Lucid).

Two ranks (``mpiexec -n 2``), NumPy + mpi4py only, one BLAS thread: the all-reduce of the W1-like MLP's
first-layer gradient (784x512 float32, 1.6 MB, the bucket that backward produces last) against a block of
matmuls of that layer's forward (64x784 @ 784x512, ``--matmuls`` of them):
  comm      Allreduce alone (both ranks arrive together: a barrier first)
  compute   the matmuls alone
  overlap   Iallreduce, the matmuls, Wait            (MPI progresses only inside MPI calls)
  polled    Iallreduce, the matmuls with a Test() after each, Wait   (what DDP's hooks do)
hidden = (comm + compute - overlap) / comm. It bounds what any DDP design can hide with this transport:
Lucid's overlap cannot do better than MPI's own. Medians of ``--reps`` timed repetitions.
Run: ``python benchmarks/probe_mpi_overlap.py [--matmuls 4] [--reps 50] [--async-progress]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def worker(matmuls: int, reps: int) -> None:
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    grad = np.random.default_rng(comm.Get_rank()).random(784 * 512).astype(np.float32)
    x = np.random.default_rng(0).random((64, 784)).astype(np.float32)
    w = np.random.default_rng(1).random((784, 512)).astype(np.float32)

    def compute(poll: object = None) -> None:
        for _ in range(matmuls):
            x @ w
            if poll is not None:
                poll.Test()

    def comm_only() -> None:
        comm.Allreduce(MPI.IN_PLACE, grad, MPI.SUM)

    def overlap() -> None:
        req = comm.Iallreduce(MPI.IN_PLACE, grad, MPI.SUM)
        compute()
        req.Wait()

    def polled() -> None:
        req = comm.Iallreduce(MPI.IN_PLACE, grad, MPI.SUM)
        compute(req)
        req.Wait()

    cases = {"comm": comm_only, "compute": compute, "overlap": overlap, "polled": polled}
    times: dict[str, list[float]] = {k: [] for k in cases}
    for i in range(reps + 3):
        for name, fn in cases.items():  # interleaved: load changes hit every case alike
            comm.Barrier()
            t0 = time.perf_counter()
            fn()
            dt = time.perf_counter() - t0
            slowest = comm.allreduce(dt, MPI.MAX)
            if i >= 3:
                times[name].append(slowest)
    if comm.Get_rank() == 0:
        m = {k: 1e3 * statistics.median(v) for k, v in times.items()}
        serial = m["comm"] + m["compute"]
        print(f"comm {m['comm']:.2f} ms, compute {m['compute']:.2f} ms, serial sum {serial:.2f} ms")
        for k in ("overlap", "polled"):
            print(f"{k:8s} {m[k]:.2f} ms  hidden {100 * (serial - m[k]) / m['comm']:.0f} %")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--matmuls", type=int, default=4)
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("--async-progress", action="store_true", help="MPICH's progress thread")
    args = p.parse_args()
    if args.worker:
        worker(args.matmuls, args.reps)
        return
    from lucid_distributed.run import find_tool

    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    if args.async_progress:
        env["MPIR_CVAR_ASYNC_PROGRESS"] = "1"
    cmd = [find_tool("mpiexec") or "mpiexec", "-n", "2", sys.executable, __file__, "--worker",
           "--matmuls", str(args.matmuls), "--reps", str(args.reps)]  # fmt: skip
    print(f"# probe_mpi_overlap: {args.matmuls} matmuls, {args.reps} reps, async progress {args.async_progress}, "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    subprocess.run(cmd, check=True, env=env)


if __name__ == "__main__":
    main()
