"""Memory and time per rank of FSDP (``fully_shard`` per layer) against DDP, over MPI on this machine.

Workload: an MLP of ``--layers`` Linear(``--width``, ``--width``) layers with tanh (float64, NumPy backend,
one BLAS thread per process), Adam, batch 16 per process, each layer a unit. Per rank it reports

  rest    bytes of parameters + gradients + optimizer state the rank holds between steps (counted
          tensor by tensor: what FSDP shards);
  peak    rest + the most bytes of gathered parameters and whole gradients alive at once during a step
          (FSDP's own count, ``lucid_distributed.fsdp.memory_stats``); DDP's peak is its rest;
  traced  the peak of Python's allocation tracer during one step above what was allocated before it
          (NumPy reports its buffers to tracemalloc): real memory, activations included;
  step    milliseconds per step (median of ``--steps`` after two warm-up steps), the slowest rank.

Run: ``python benchmarks/bench_fsdp.py [--ranks 1 2 4] [--layers 8] [--width 256] [--steps 10]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import tracemalloc

WORKER = "--worker"


def worker(mode: str, layers: int, width: int, steps: int) -> None:
    import lucid_core as lc
    import lucid_distributed as dist
    import lucid_nn as nn
    import lucid_optim as optim
    from lucid_distributed import fsdp

    dist.init_process_group()
    rank = dist.get_rank()
    lc.manual_seed(0)
    mods = []
    for _ in range(layers):
        mods += [nn.Linear(width, width), nn.Tanh()]
    model = nn.Sequential(*mods).to(dtype=lc.float64)
    if mode == "fsdp":
        for m in model:
            if isinstance(m, nn.Linear):
                fsdp.fully_shard(m)
        fsdp.fully_shard(model)
        run = model
    else:
        run = dist.DistributedDataParallel(model)
    opt = optim.Adam(run.parameters(), lr=1e-3)
    x = lc.randn(16, width, dtype=lc.float64)
    y = lc.randn(16, width, dtype=lc.float64)

    def step() -> None:
        opt.zero_grad()
        nn.functional.mse_loss(run(x), y).backward()
        opt.step()

    def rest() -> int:
        ps = list(run.parameters())
        ts = ps + [p.grad for p in ps if p.grad is not None]
        ts += [v for s in opt.state.values() for v in s.values() if isinstance(v, lc.Tensor)]
        return sum(t.size * t.dtype.itemsize for t in ts)

    step()
    step()
    fsdp.memory_stats(reset_peak=True)
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    step()
    traced = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    peak = rest() + (fsdp.memory_stats()["peak_unsharded_bytes"] if mode == "fsdp" else 0)
    times = []
    for _ in range(steps):
        dist.barrier()
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    times.sort()
    mine = lc.asarray([times[len(times) // 2]], dtype=lc.float64)
    dist.all_reduce(mine, dist.ReduceOp.MAX)
    if rank == 0:
        print(json.dumps({"rest": rest(), "peak": peak, "traced": traced, "step_ms": 1e3 * float(mine[0].item())}))
    dist.destroy_process_group()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    from lucid_distributed.run import find_tool

    mpiexec = find_tool("mpiexec")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    params = args.layers * (args.width * args.width + args.width)
    print(f"MLP {args.layers} x Linear({args.width}, {args.width}), {params / 1e6:.2f} M float64 parameters, Adam")
    print(f"{'ranks':>5} {'mode':>5} {'rest MB':>8} {'peak MB':>8} {'traced MB':>9} {'step ms':>8}")
    for n in args.ranks:
        for mode in ("ddp", "fsdp"):
            cmd = [mpiexec, "-n", str(n), sys.executable, __file__, WORKER, mode, str(args.layers), str(args.width)]
            out = subprocess.run([*cmd, str(args.steps)], capture_output=True, text=True, env=env, check=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            print(
                f"{n:>5} {mode:>5} {r['rest'] / 1e6:>8.2f} {r['peak'] / 1e6:>8.2f} {r['traced'] / 1e6:>9.2f} "
                f"{r['step_ms']:>8.1f}"
            )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == WORKER:
        worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    else:
        main()
