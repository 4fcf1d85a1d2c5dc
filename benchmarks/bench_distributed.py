"""Data-parallel scaling of Lucid over MPI, judged against the machine's own ceiling.

Workloads (float32, NumPy backend, one BLAS thread per process, a fixed batch per process):
  mlp  W1 MLP 784-512-512-10 (0.67 M parameters, 2.7 MB of gradients), batch 64 per process, SGD with
       momentum, cross-entropy;
  w2   the W2 CNN of bench_workloads.py (64x1x28x28: conv 1->16, pool, conv 16->32, pool, linear 1568->10),
       batch 64 per process, SGD with momentum;
  gpt  the nanoGPT-shaped model of model_workloads.py (2 layers, 64-dim, context 64, tied embeddings;
       0.11 M parameters), batch 12 sequences per process, AdamW, through the ``lucid`` face;
  cnn  the digits CNN of examples/train_digits.py (1x8x8 images), batch 64 per process.

For each workload the driver starts ``mpiexec -n P`` workers that time ``--steps`` training steps after a
warm-up and report the slowest rank's time. Configurations (interleaved, median of ``--repeats``), with
N = ``--procs`` (default 2):
  plain    1 process, no DDP                                  -> T1 (samples/s)
  nocomm   N processes each training alone, no communication  -> the machine's ceiling for N processes:
           what N processes that never talk get (on 2 vCPUs about 1.6-1.75x, not 2x)
  barrier  as nocomm plus a barrier after every backward: the cost of synchronising the ranks every step
  ddp      N processes, DDP with PyTorch's defaults (buckets concatenated each step, overlap with backward)
  views    as ddp with gradient_as_bucket_view=True (persistent buffers reduced in place)
  fused    DDP with gradient_as_bucket_view=True and overlap_optimizer
  serial   as fused but overlap=False and the optimizer after backward: every all-reduce after backward
speedup = N T1 step / DDP step; of ceiling = nocomm step / DDP step (DDP's throughput as a share of N
processes that do not communicate); hidden = (serial - fused) / (serial - nocomm).
``allreduce`` (the last column) is the bare cost of the buckets' all-reduces when all ranks arrive together.

``--ranks 1,2,4,8,16`` instead runs the simulated many-rank check: a small float64 MLP (20-64-64-4, batch 4
per rank) under DDP on 1 ... 16 processes of this machine (MPICH oversubscribes without a flag): every rank
also trains the one-process reference on the whole global batch and the job reports the largest parameter
difference (correctness at every N) with the step time, the bare all-reduce time of the gradients, and
the time per sample, so the table shows how the cost grows with N when N exceeds the cores.

Run: ``python benchmarks/bench_distributed.py [--steps 60] [--repeats 3] [--only mlp,w2,gpt] [--procs 2]
[--bucket-cap-mb 1] [--no-poll] [--async-progress] [--ranks 1,2,4,8,16]``.
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
from typing import Any

HERE = Path(__file__).resolve().parent


def build_workload(name: str, batch: int) -> tuple[Any, Any, Any]:
    """The model and one batch (inputs, targets) of ``name`` for one process."""
    import lucid_core as lc
    import lucid_nn as nn

    if name == "mlp":
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
        return model, lc.randn(batch, 784), lc.randint(0, 10, (batch,))
    if name == "w2":
        model = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 7 * 7, 10),
        )  # fmt: skip
        return model, lc.randn(batch, 1, 28, 28), lc.randint(0, 10, (batch,))
    if name == "gpt":
        import lucid

        sys.path.insert(0, str(HERE))
        from model_workloads import GPT_CONFIG, _gpt

        c = GPT_CONFIG
        model = _gpt(lucid)
        shape = (batch, c["block_size"])
        return model, lucid.randint(0, c["vocab_size"], shape), lucid.randint(0, c["vocab_size"], shape)
    sys.path.insert(0, str(HERE.parent / "examples"))
    from train_digits import make_model

    return make_model("cnn"), lc.rand(batch, 1, 8, 8), lc.randint(0, 10, (batch,))


def many_ranks(args: argparse.Namespace) -> None:
    """One rank of the simulated many-rank run: DDP against the one-process reference, timed."""
    import lucid_core as lc
    import lucid_distributed as dist
    import lucid_nn as nn
    import lucid_nn.functional as F
    import lucid_optim as optim

    rank, n = dist.get_rank(), dist.get_world_size()
    per = 4
    lc.manual_seed(1)  # the same global batches on every rank
    xs = lc.randn(args.steps + args.warmup, n * per, 20, dtype=lc.float64)
    ys = lc.randn(args.steps + args.warmup, n * per, 4, dtype=lc.float64)

    def make() -> Any:
        lc.manual_seed(0)
        return nn.Sequential(nn.Linear(20, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 4)).to(
            dtype=lc.float64
        )

    model, ref = make(), make()
    ddp = dist.DistributedDataParallel(model, bucket_cap_mb=0.01)
    opt, ref_opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9), optim.SGD(ref.parameters(), lr=0.05,
                                                                                  momentum=0.9)  # fmt: skip
    mine = slice(rank * per, (rank + 1) * per)
    spent = 0.0
    for k in range(args.warmup + args.steps):
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad()
        F.mse_loss(ddp(xs[k, mine]), ys[k, mine]).backward()
        opt.step()
        spent += time.perf_counter() - t0 if k >= args.warmup else 0.0
        ref_opt.zero_grad()
        F.mse_loss(ref(xs[k]), ys[k]).backward()
        ref_opt.step()
    diff = max(float(lc.max(lc.abs(p - q)).item()) for p, q in zip(model.parameters(), ref.parameters()))
    flats = [lc.zeros(sum(p.size for p in b.params), dtype=lc.float64) for b in ddp._buckets]
    reduce_s = 0.0
    for i in range(args.warmup + args.steps):
        dist.barrier()
        t0 = time.perf_counter()
        for w in [dist.all_reduce(f, dist.ReduceOp.AVG, async_op=True) for f in flats]:
            w.wait()
        reduce_s += time.perf_counter() - t0 if i >= args.warmup else 0.0
    out = lc.asarray([spent, reduce_s, diff], dtype=lc.float64)
    dist.all_reduce(out, dist.ReduceOp.MAX)
    if rank == 0:
        step_s, ar_s, worst = (float(v) for v in out.tolist())
        print("RESULT " + json.dumps({"step_s": step_s / args.steps, "allreduce_s": ar_s / args.steps,
                                      "max_diff": worst, "buckets": len(flats)}), flush=True)  # fmt: skip
    dist.destroy_process_group()


# -- worker: one rank's timed loop ------------------------------------------------------------------------
def worker(args: argparse.Namespace) -> None:
    import lucid_core as lc
    import lucid_distributed as dist
    import lucid_nn.functional as F
    import lucid_optim as optim

    dist.init_process_group()
    rank = dist.get_rank()
    if args.mode == "many":
        many_ranks(args)
        return
    lc.manual_seed(0)
    batch = args.batch
    model, x, y = build_workload(args.model, batch)
    net = model
    opt = (
        optim.AdamW(model.parameters(), lr=1e-3)
        if args.model == "gpt"
        else optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    )
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
        loss = net(x, y) if args.model == "gpt" else F.cross_entropy(net(x), y)
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
BATCH = {"mlp": 64, "w2": 64, "gpt": 12, "cnn": 64}  # samples (sequences for gpt) per process per step


def run_worker(procs: int, model: str, mode: str, args: argparse.Namespace) -> dict[str, float]:
    """The RESULT of one job (``step_s``: seconds per step of the slowest rank)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    if args.async_progress:
        env["MPIR_CVAR_ASYNC_PROGRESS"] = "1"
    from lucid_distributed.run import find_tool

    mpiexec = find_tool("mpiexec") or "mpiexec"
    batch = args.batch or BATCH[model]
    cmd = [mpiexec, "-n", str(procs), sys.executable, __file__, "--worker", "--model", model, "--mode", mode,
           "--steps", str(args.steps), "--warmup", str(args.warmup), "--batch", str(batch),
           "--bucket-cap-mb", str(args.bucket_cap_mb)] + (["--no-poll"] if args.no_poll else [])  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"worker failed: {' '.join(cmd)}\n{out.stdout}\n{out.stderr}")
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[7:])


def scaling_table(args: argparse.Namespace) -> None:
    """One process, N processes without communication (the ceiling) and N-rank DDP, per workload."""
    n = args.procs
    modes = ("nocomm", "barrier", "ddp", "views", "fused", "serial", "allreduce")
    configs = [(1, "plain")] + [(n, m) for m in modes]
    print(f"# bench_distributed: {n} processes, {args.steps} steps, buckets {args.bucket_cap_mb} MB, median of "
          f"{args.repeats}, {os.cpu_count()} cores, poll {not args.no_poll}, async progress {args.async_progress}, "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"| workload | 1 proc samples/s | {n} proc no-comm (ceiling) | {n} proc DDP: defaults / views / fused "
          "| best DDP speedup | best DDP of ceiling | step best / serial / barrier / no-comm (ms) | hidden "
          "| allreduce (ms) |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for model in args.only.split(","):
        times: dict[tuple[int, str], list[float]] = {c: [] for c in configs}
        for _ in range(args.repeats):  # interleaved, so machine noise hits every configuration alike
            for procs, mode in configs:
                times[(procs, mode)].append(run_worker(procs, model, mode, args)["step_s"])
        t = {c[1]: statistics.median(v) for c, v in times.items()}
        b = args.batch or BATCH[model]
        thr1, none = b / t["plain"], n * b / t["nocomm"]
        ddp, views, fused = (n * b / t[m] for m in ("ddp", "views", "fused"))
        best = min(("ddp", "views", "fused"), key=lambda m: t[m])
        comm = t["serial"] - t["nocomm"]
        hidden = (t["serial"] - t["fused"]) / comm if comm > 0 else float("nan")
        steps = " / ".join(f"{1e3 * t[m]:.2f}" for m in (best, "serial", "barrier", "nocomm"))
        print(f"| {model} | {thr1:.0f} | {none:.0f} ({none / thr1:.2f}x) | {ddp:.0f} / {views:.0f} / {fused:.0f} | "
              f"{n * b / t[best] / thr1:.2f}x ({best}) | **{100 * t['nocomm'] / t[best]:.0f} %** | {steps} | "
              f"{100 * hidden:.0f} % | {1e3 * t['allreduce']:.2f} |", flush=True)  # fmt: skip
        raw = {m: [round(1e3 * x, 2) for x in v] for (_, m), v in times.items()}
        print(f"#  raw step times (ms): {json.dumps(raw)}", flush=True)


def many_ranks_table(args: argparse.Namespace) -> None:
    """The simulated many-rank run: correctness and cost of DDP on 1 ... 16 processes of this machine."""
    ranks = [int(r) for r in args.ranks.split(",")]
    print(f"# bench_distributed --ranks: float64 MLP 20-64-64-4, batch 4 per rank, {args.steps} steps, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print("| ranks | max parameter diff vs one process | step (ms) | bare all-reduce (ms) | step per sample (ms) |")
    print("| --- | --- | --- | --- | --- |")
    for n in ranks:
        r = run_worker(n, "mlp", "many", args)
        print(f"| {n} | {r['max_diff']:.1e} | {1e3 * r['step_s']:.2f} | {1e3 * r['allreduce_s']:.2f} | "
              f"{1e3 * r['step_s'] / (4 * n):.3f} |", flush=True)  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--model", choices=sorted(BATCH), default="mlp", help=argparse.SUPPRESS)
    modes = ["plain", "nocomm", "barrier", "ddp", "views", "fused", "serial", "allreduce", "many"]
    p.add_argument("--mode", choices=modes, default="plain", help=argparse.SUPPRESS)
    p.add_argument("--only", default="mlp,w2,gpt", help="workloads, comma-separated (default: mlp,w2,gpt; also cnn)")
    p.add_argument("--procs", type=int, default=2, help="processes of the DDP and no-communication rows (default 2)")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--batch", type=int, default=None, help="samples per process per step (default: per workload)")
    p.add_argument("--repeats", type=int, default=3, help="runs of each configuration (median reported)")
    p.add_argument("--bucket-cap-mb", type=float, default=1.0,
                   help="DDP bucket size; 1 MB splits the MLP into 4 buckets (25 MB would make one)")  # fmt: skip
    p.add_argument("--no-poll", action="store_true", help="DDP does not Test() the buckets in flight from its hooks")
    p.add_argument("--async-progress", action="store_true", help="MPICH's progress thread (MPIR_CVAR_ASYNC_PROGRESS=1)")
    p.add_argument("--ranks", default=None, help="the simulated many-rank run on these world sizes (e.g. 1,2,4,8,16)")
    p.add_argument("--no-scaling", action="store_true", help="skip the scaling table (with --ranks: only that run)")
    args = p.parse_args()
    if args.worker:
        worker(args)
        return
    if not args.no_scaling:
        scaling_table(args)
    if args.ranks:
        many_ranks_table(args)


if __name__ == "__main__":
    main()
