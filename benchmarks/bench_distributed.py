"""Data-parallel scaling of Lucid over MPI: throughput at 1 and 2 processes and the communication hidden.

Workloads (float32, NumPy backend, one BLAS thread per process, a fixed batch per process):
  mlp  W1-like MLP 784-512-512-10 (0.67 M parameters, 2.7 MB of gradients), batch 64 per process, SGD
       with momentum, cross-entropy;
  cnn  the digits CNN of examples/train_digits.py (1x8x8 images, 0.33 M parameters), batch 64 per process.

For each workload the driver starts ``mpiexec -n P`` workers that time ``--steps`` training steps after a
warm-up and report the slowest rank's time:
  1 process, plain model              -> throughput T1 (images/s)
  2 processes, DDP, overlap on        -> throughput T2; speedup T2/T1; scaling efficiency T2/(2 T1)
  2 processes, DDP, overlap off       -> every bucket's all-reduce starts after backward (``overlap=False``)
  2 processes, no communication       -> each rank trains alone: the compute time under the same load
hidden share = (t_off - t_on) / (t_off - t_nocomm): the part of the all-reduce time that overlap hid.
Run: ``python benchmarks/bench_distributed.py [--steps 60] [--repeats 3] [--only mlp] [--bucket-cap-mb 1]``
(on a quiet machine with at least 2 free cores; the median of --repeats runs is reported).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


# -- worker: one rank's timed loop ------------------------------------------------------------------------
def worker(args: argparse.Namespace) -> None:
    import lucid_core as lc
    import lucid_distributed as dist
    import lucid_nn as nn
    import lucid_nn.functional as F
    import lucid_optim as optim

    dist.init_process_group()
    rank = dist.get_rank()
    lc.manual_seed(0)
    batch = args.batch
    if args.model == "mlp":
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
        x = lc.randn(batch, 784)
    else:
        sys.path.insert(0, str(HERE.parent / "examples"))
        from train_digits import make_model

        model = make_model("cnn")
        x = lc.rand(batch, 1, 8, 8)
    y = lc.randint(0, 10, (batch,))
    net = model
    if args.mode in ("overlap", "serial"):
        net = dist.DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb, overlap=args.mode == "overlap")
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step() -> None:
        loss = F.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    elapsed = lc.asarray([time.perf_counter() - start], dtype=lc.float64)
    dist.all_reduce(elapsed, dist.ReduceOp.MAX)  # the job is as fast as its slowest rank
    if rank == 0:
        print("RESULT " + json.dumps({"step_s": elapsed.item() / args.steps}), flush=True)
    dist.destroy_process_group()


# -- driver -------------------------------------------------------------------------------------------------
def run_worker(procs: int, model: str, mode: str, args: argparse.Namespace) -> float:
    """Seconds per step of one job (the slowest rank's)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    from lucid_distributed.run import find_tool

    mpiexec = find_tool("mpiexec") or "mpiexec"
    cmd = [mpiexec, "-n", str(procs), sys.executable, __file__, "--worker", "--model", model, "--mode", mode,
           "--steps", str(args.steps), "--warmup", str(args.warmup), "--batch", str(args.batch),
           "--bucket-cap-mb", str(args.bucket_cap_mb)]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"worker failed: {' '.join(cmd)}\n{out.stdout}\n{out.stderr}")
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("RESULT "))
    return float(json.loads(line[7:])["step_s"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp", help=argparse.SUPPRESS)
    p.add_argument("--mode", choices=["plain", "overlap", "serial", "nocomm"], default="plain", help=argparse.SUPPRESS)
    p.add_argument("--only", default="mlp,cnn", help="workloads, comma-separated (default: mlp,cnn)")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--batch", type=int, default=64, help="images per process per step")
    p.add_argument("--repeats", type=int, default=3, help="runs of each configuration (median reported)")
    p.add_argument("--bucket-cap-mb", type=float, default=1.0,
                   help="DDP bucket size; 1 MB splits the MLP into 4 buckets (25 MB would make one)")  # fmt: skip
    args = p.parse_args()
    if args.worker:
        worker(args)
        return
    configs = [(1, "plain"), (2, "overlap"), (2, "serial"), (2, "nocomm")]
    print(f"# bench_distributed: {args.steps} steps, batch {args.batch}/process, buckets {args.bucket_cap_mb} MB, "
          f"median of {args.repeats}, {os.cpu_count()} cores")  # fmt: skip
    print("| workload | 1 proc img/s | 2 proc img/s | speedup | efficiency | step on / off / no-comm (ms) | hidden |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for model in args.only.split(","):
        times: dict[tuple[int, str], list[float]] = {c: [] for c in configs}
        for _ in range(args.repeats):  # interleaved, so machine noise hits every configuration alike
            for procs, mode in configs:
                times[(procs, mode)].append(run_worker(procs, model, mode, args))
        t = {c: statistics.median(v) for c, v in times.items()}
        t1, t_on, t_off, t_none = t[(1, "plain")], t[(2, "overlap")], t[(2, "serial")], t[(2, "nocomm")]
        thr1, thr2 = args.batch / t1, 2 * args.batch / t_on
        comm = t_off - t_none
        hidden = (t_off - t_on) / comm if comm > 0 else float("nan")
        steps = f"{1e3 * t_on:.2f} / {1e3 * t_off:.2f} / {1e3 * t_none:.2f}"
        print(f"| {model} | {thr1:.0f} | {thr2:.0f} | {thr2 / thr1:.2f}x | {100 * thr2 / (2 * thr1):.0f} % | "
              f"{steps} | {100 * hidden:.0f} % |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
