"""What the process group's agreement check costs per collective call, over MPI on 2 processes.

Every checked collective first all-gathers a 16-integer signature (collective, op, source, dtype, shape)
so that ranks passing different tensors raise instead of reducing garbage. This times ``all_reduce``
of float32 tensors of several sizes with the check on and off (toggled in lockstep on both ranks,
interleaved, the median of ``--repeats`` rounds of ``--calls`` calls each, a barrier before every round)
and the bare signature exchange. Run: ``python benchmarks/bench_collective_check.py [--calls 2000]``
(it starts ``mpiexec -n 2`` itself, one BLAS thread per process).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

SIZES = (1, 1024, 65536, 1048576)  # float32 elements: 4 B, 4 KiB, 256 KiB, 4 MiB


def worker(calls: int, repeats: int) -> None:
    import lucid_core as lc
    import lucid_distributed as dist
    from lucid_distributed import _group

    dist.init_process_group("mpi")
    comm = _group._group()
    rows = []
    for size in SIZES:
        t = lc.ones((size,))
        n = max(20, calls if size <= 65536 else calls // 20)
        times: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(repeats):
            for check in (True, False):
                _group._state.check = check
                dist.barrier()
                start = time.perf_counter()
                for _ in range(n):
                    dist.all_reduce(t)
                times[check].append((time.perf_counter() - start) / n)
        on, off = statistics.median(times[True]), statistics.median(times[False])
        rows.append((size, on, off))
    sig = _group._signature("all_reduce", lc.ones((3, 3)), dist.ReduceOp.SUM, None)
    bare = []
    for _ in range(repeats):
        dist.barrier()
        start = time.perf_counter()
        for _ in range(calls):
            comm.gather_signatures(sig, "all_reduce")
        bare.append((time.perf_counter() - start) / calls)
    if comm.rank == 0:
        print(f"{'float32 elements':>16} {'check on':>10} {'check off':>10} {'cost':>9} {'ratio':>6}")
        for size, on, off in rows:
            print(f"{size:>16} {on * 1e6:>8.1f}us {off * 1e6:>8.1f}us {(on - off) * 1e6:>7.1f}us {on / off:>6.2f}")
        print(f"bare signature exchange (gather_signatures): {statistics.median(bare) * 1e6:.1f} us")
    dist.destroy_process_group()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.calls, args.repeats)
        return
    from lucid_distributed.run import find_tool

    mpiexec = find_tool("mpiexec")
    if mpiexec is None:
        raise SystemExit("mpiexec not found: pip install mpi4py mpich")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    cmd = [mpiexec, "-n", "2", sys.executable, __file__, "--worker", "--calls", str(args.calls),
           "--repeats", str(args.repeats)]  # fmt: skip
    sys.exit(subprocess.call(cmd, env=env))


if __name__ == "__main__":
    main()
