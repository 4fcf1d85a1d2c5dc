"""Graph capture (issue 36): Lucid eager and ``lucid.compile``d against PyTorch eager and ``torch.compile``.

Workloads (``bench_workloads.py``'s step builders, unchanged): W3 per-op overhead (500 element-wise ops on a
(16,) tensor, forward and backward, µs/op), W1 MLP, W2 CNN, W5 Transformer block, GPT (nanoGPT-shaped) and
MNIST (pytorch/examples' net) train steps, each ``zero_grad / forward / loss / backward / step``.

Every (framework, mode, threads) configuration runs in its own worker process, as a user runs it: at the
default threads and at one thread (``OMP_NUM_THREADS=1`` and the framework's own setting), all of them in turn in
each of ``--rounds`` rounds of the same invocation; a worker times steps back to back for ``--seconds`` after
warming up (and, compiled, after its first two calls, which record and confirm the plan: their time is reported
as the compile time). The table gives each configuration's median over rounds and the ratio to PyTorch eager at
the same threads. ``torch.compile`` needs a C++ compiler; where it fails its column reads the error's type.

Run: ``python benchmarks/bench_compile.py [--only W3,W2,W5,GPT] [--rounds 3] [--seconds 1.5] [--device mlx]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import date

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = ("W3", "W1", "W2", "W5", "GPT", "MNIST")
CONFIGS = (("lucid", "eager"), ("lucid", "compile"), ("torch", "eager"), ("torch", "compile"))


def _worker(framework: str, mode: str, workload: str, threads: str, seconds: float) -> None:
    """Build one step, compile it if asked, time it; print one JSON line (Lucid on ``$LUCID_BENCH_DEVICE``)."""
    device = os.environ.get("LUCID_BENCH_DEVICE", "numpy")
    sys.path.insert(0, HERE)
    if framework == "lucid":
        os.environ["LUCID_BENCH_NO_TORCH"] = "1"
    import bench_workloads as bw

    if framework == "torch":
        import torch

        if threads == "1":
            torch.set_num_threads(1)
        if workload == "W3":
            xt = torch.randn(16, requires_grad=True)
            step = lambda: bw.torch_chain(xt)  # noqa: E731
        else:
            step = bw.torch_train_step(workload)
        if mode == "compile":
            step = torch.compile(step)
    else:
        import lucid
        import lucid_core as lc

        if threads == "1":
            lc.set_num_threads(1)
        if workload == "W3":
            x = lc.randn(16, requires_grad=True, device=device)
            from bench_core import lucid_chain_grad

            step = lambda: lucid_chain_grad(x)  # noqa: E731
        else:
            step = bw.lucid_train_step(workload, device)
        if mode == "compile":
            step = lucid.compile(step)
    run = step
    if framework == "lucid":
        import lucid_core as lc

        def run() -> None:  # evaluate what the step returns (lazy backends compute only then)
            out = step()
            if isinstance(out, lc.Tensor):
                lc.eval(out)

    t0 = time.perf_counter()
    run()
    run()
    compile_s = time.perf_counter() - t0
    for _ in range(3):
        run()
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 5:
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    out = {"median": statistics.median(times), "compile_s": compile_s, "steps": len(times)}
    if framework == "lucid" and mode == "compile":
        out["replays"] = step.stats["replays"]
    print(json.dumps(out))


def _run(framework: str, mode: str, workload: str, threads: str, seconds: float, python: str) -> dict:
    env = dict(os.environ)
    if threads == "1":
        env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    cmd = [python, __file__, "--worker", framework, mode, workload, threads, str(seconds)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["failed"])[-1]
        return {"error": last.split(":")[0][:40]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default=",".join(WORKLOADS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=1.5)
    parser.add_argument("--no-torch-compile", action="store_true", help="skip torch.compile (slow to compile)")
    parser.add_argument("--device", default="numpy", help="Lucid's device (numpy, mlx)")
    parser.add_argument(
        "--torch-python",
        default=sys.executable,
        help="the Python whose environment has PyTorch (and Lucid), for the PyTorch workers",
    )
    parser.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        fw, mode, w, th, s = args.worker
        _worker(fw, mode, w, th, float(s))
        return
    os.environ["LUCID_BENCH_DEVICE"] = args.device
    configs = [c for c in CONFIGS if not (args.no_torch_compile and c == ("torch", "compile"))]
    workloads = args.only.split(",")
    print(f"{date.today()}, {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"command: python benchmarks/bench_compile.py --only {args.only} --rounds {args.rounds} --seconds "
          f"{args.seconds} --device {args.device}{' --no-torch-compile' if args.no_torch_compile else ''}")  # fmt: skip
    results: dict = {}
    for _ in range(args.rounds):
        for w in workloads:
            for th in ("default", "1"):
                for fw, mode in configs:
                    r = _run(fw, mode, w, th, args.seconds, args.torch_python if fw == "torch" else sys.executable)
                    results.setdefault((w, th, fw, mode), []).append(r)
    print()
    head = "| workload | threads | " + " | ".join(f"{fw} {mode}" for fw, mode in configs)
    print(head + " | lucid compile / torch eager | lucid compile / lucid eager | lucid compile time |")
    print("|" + "---|" * (len(configs) + 5))
    for w in workloads:
        for th in ("default", "1"):
            cells, med = [], {}
            for fw, mode in configs:
                rs = results[(w, th, fw, mode)]
                ok = [r["median"] for r in rs if "median" in r]
                if not ok:
                    cells.append(rs[0].get("error", "n/a"))
                    continue
                m = statistics.median(ok)
                med[(fw, mode)] = m
                scale, unit = (1e6 / 500, "µs/op") if w == "W3" else (1e3, "ms")
                cells.append(f"{m * scale:.2f} {unit}")
            lc_c, lc_e, t_e = med.get(("lucid", "compile")), med.get(("lucid", "eager")), med.get(("torch", "eager"))
            r1 = f"{lc_c / t_e:.2f}" if lc_c and t_e else "n/a"
            r2 = f"{lc_c / lc_e:.2f}" if lc_c and lc_e else "n/a"
            ct = [r["compile_s"] for r in results[(w, th, "lucid", "compile")] if "compile_s" in r]
            print(f"| {w} | {th} | " + " | ".join(cells) + f" | {r1} | {r2} | {statistics.median(ct):.2f} s |")


if __name__ == "__main__":
    main()
