"""Data-parallel scaling of Lucid over MPI: throughput at 1 and 2 processes and the communication hidden.

Workloads (float32, NumPy backend, one BLAS thread per process, a fixed batch per process):
  mlp  W1-like MLP 784-512-512-10 (0.67 M parameters, 2.7 MB of gradients), batch 64 per process, SGD
       with momentum, cross-entropy;
  cnn  the digits CNN of examples/train_digits.py (1x8x8 images, 0.33 M parameters), batch 64 per process.

For each workload the driver starts ``mpiexec -n P`` workers that time ``--steps`` training steps after a
warm-up and report the slowest rank's time. Configurations (interleaved, median of ``--repeats``):
  plain    1 process, no DDP                                  -> T1 (images/s)
  nocomm   2 processes each training alone, no communication  -> calibration: what the machine gives two
           processes; ceiling speedup = 2 T1 step / nocomm step (1.8x needs a ceiling above 1.8x)
  barrier  as nocomm plus a barrier after every backward: the cost of synchronising the ranks every step
           (waiting for the slower one) without moving any data
  ddp      2 processes, DDP with PyTorch's defaults (buckets concatenated each step, overlap with backward)
  views    as ddp with gradient_as_bucket_view=True (persistent buffers reduced in place, no concatenation)
  fused    2 processes, DDP with gradient_as_bucket_view=True and overlap_optimizer (the update of each
           bucket's parameters runs as its reduction lands, overlapping the later buckets' all-reduce)
  serial   as fused but overlap=False and the optimizer after backward: every all-reduce after backward
speedup = 2 T1 step / fused step; of ceiling = nocomm step / fused step;
hidden = (serial - fused) / (serial - nocomm): the part of the communication time the overlap hid.
``allreduce`` (the last column) is the bare cost of the buckets' all-reduces when both ranks arrive together
(a barrier first), i.e. the communication itself without waiting for a late peer.
Run: ``python benchmarks/bench_distributed.py [--steps 60] [--repeats 3] [--only mlp] [--bucket-cap-mb 1]
[--no-poll] [--async-progress]`` (``--no-poll``: DDP does not Test() the buckets in flight from its hooks;
``--async-progress``: MPICH's progress thread, ``MPIR_CVAR_ASYNC_PROGRESS=1``).
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
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    if args.mode in ("ddp", "views", "fused", "serial"):
        net = dist.DistributedDataParallel(
            model,
            bucket_cap_mb=args.bucket_cap_mb,
            gradient_as_bucket_view=args.mode != "ddp",
            overlap=args.mode != "serial",
        )
        net._poll = not args.no_poll
        if args.mode == "fused":
            net.overlap_optimizer(opt)
    if args.mode == "allreduce":  # the bare all-reduces of the buckets, both ranks arriving together
        ddp = dist.DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb)
        flats = [lc.zeros(sum(p.size for p in b.params)) for b in ddp._buckets]
        total = 0.0
        for i in range(args.warmup + args.steps):
            dist.barrier()
            t0 = time.perf_counter()
            for w in [dist.all_reduce(f, dist.ReduceOp.AVG, async_op=True) for f in flats]:
                w.wait()
            total += (time.perf_counter() - t0) if i >= args.warmup else 0.0
        spent = lc.asarray([total], dtype=lc.float64)
        dist.all_reduce(spent, dist.ReduceOp.MAX)
        if rank == 0:
            print("RESULT " + json.dumps({"step_s": spent.item() / args.steps}), flush=True)
        dist.destroy_process_group()
        return

    def step() -> None:
        loss = F.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        if args.mode == "barrier":
            dist.barrier()
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
    if args.async_progress:
        env["MPIR_CVAR_ASYNC_PROGRESS"] = "1"
    from lucid_distributed.run import find_tool

    mpiexec = find_tool("mpiexec") or "mpiexec"
    cmd = [mpiexec, "-n", str(procs), sys.executable, __file__, "--worker", "--model", model, "--mode", mode,
           "--steps", str(args.steps), "--warmup", str(args.warmup), "--batch", str(args.batch),
           "--bucket-cap-mb", str(args.bucket_cap_mb)] + (["--no-poll"] if args.no_poll else [])  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"worker failed: {' '.join(cmd)}\n{out.stdout}\n{out.stderr}")
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("RESULT "))
    return float(json.loads(line[7:])["step_s"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp", help=argparse.SUPPRESS)
    modes = ["plain", "nocomm", "barrier", "ddp", "views", "fused", "serial", "allreduce"]
    p.add_argument("--mode", choices=modes, default="plain", help=argparse.SUPPRESS)
    p.add_argument("--only", default="mlp,cnn", help="workloads, comma-separated (default: mlp,cnn)")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--batch", type=int, default=64, help="images per process per step")
    p.add_argument("--repeats", type=int, default=3, help="runs of each configuration (median reported)")
    p.add_argument("--bucket-cap-mb", type=float, default=1.0,
                   help="DDP bucket size; 1 MB splits the MLP into 4 buckets (25 MB would make one)")  # fmt: skip
    p.add_argument("--no-poll", action="store_true", help="DDP does not Test() the buckets in flight from its hooks")
    p.add_argument("--async-progress", action="store_true", help="MPICH's progress thread (MPIR_CVAR_ASYNC_PROGRESS=1)")
    args = p.parse_args()
    if args.worker:
        worker(args)
        return
    configs = [(1, "plain")] + [(2, m) for m in ("nocomm", "barrier", "ddp", "views", "fused", "serial", "allreduce")]
    print(f"# bench_distributed: {args.steps} steps, batch {args.batch}/process, buckets {args.bucket_cap_mb} MB, "
          f"median of {args.repeats}, {os.cpu_count()} cores, poll {not args.no_poll}, "
          f"async progress {args.async_progress}, load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print("| workload | 1 proc img/s | 2 proc no-comm img/s (ceiling) | 2 proc DDP img/s: defaults / views / fused "
          "| speedup (fused) | of ceiling | step fused / serial / barrier / no-comm (ms) | hidden "
          "| allreduce (ms) |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for model in args.only.split(","):
        times: dict[tuple[int, str], list[float]] = {c: [] for c in configs}
        for _ in range(args.repeats):  # interleaved, so machine noise hits every configuration alike
            for procs, mode in configs:
                times[(procs, mode)].append(run_worker(procs, model, mode, args))
        t = {c[1]: statistics.median(v) for c, v in times.items()}
        b = args.batch
        thr1, none, ddp, fused = b / t["plain"], 2 * b / t["nocomm"], 2 * b / t["ddp"], 2 * b / t["fused"]
        views = 2 * b / t["views"]
        comm = t["serial"] - t["nocomm"]
        hidden = (t["serial"] - t["fused"]) / comm if comm > 0 else float("nan")
        steps = " / ".join(f"{1e3 * t[m]:.2f}" for m in ("fused", "serial", "barrier", "nocomm"))
        print(f"| {model} | {thr1:.0f} | {none:.0f} ({none / thr1:.2f}x) | {ddp:.0f} / {views:.0f} / {fused:.0f} | "
              f"{fused / thr1:.2f}x | {100 * fused / none:.0f} % | {steps} | {100 * hidden:.0f} % | "
              f"{1e3 * t['allreduce']:.2f} |", flush=True)  # fmt: skip
        raw = {m: [round(1e3 * x, 2) for x in v] for (_, m), v in times.items()}
        print(f"#  raw step times (ms): {json.dumps(raw)}", flush=True)


if __name__ == "__main__":
    main()
