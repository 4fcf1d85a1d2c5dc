"""The cost of a JVP of the W5 transformer block against its forward pass (issue 34), Lucid and PyTorch.

``TransformerEncoderLayer(128, 4, 512, dropout=0, batch_first=True)`` on (8, 64, 128) float32: the forward pass
and ``func.jvp(block, (x,), (t,))``, both with graph recording on (parameters require grad, as a user's module)
and under ``no_grad``. PyTorch's CPU flash attention has no forward-mode rule, so its JVP runs with the math
attention backend (``sdpa_kernel(SDPBackend.MATH)``), forward and JVP alike. Each framework runs in its own
process, at its default thread count and at one thread; medians of ``--repeats`` timings.

Run: ``python benchmarks/bench_jvp.py [--repeats 30]``. Not a test: a shared machine's numbers are indicative.
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

ROOT = Path(__file__).resolve().parent.parent


def _median(fn: Any, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _worker(framework: str, repeats: int, threads: int | None) -> dict[str, float]:
    if framework == "torch":
        import torch as mod
        from torch.nn.attention import SDPBackend, sdpa_kernel

        if threads:
            mod.set_num_threads(threads)
        math_only = sdpa_kernel(SDPBackend.MATH)  # kept referenced: the context ends when it is collected
        math_only.__enter__()
    else:
        sys.path.insert(0, str(ROOT))
        import lucid as mod
    mod.manual_seed(0)
    block = mod.nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, batch_first=True)
    x, t = mod.randn(8, 64, 128), mod.randn(8, 64, 128)
    out = {}
    for mode, ctx in (("grad", mod.enable_grad), ("no_grad", mod.no_grad)):
        with ctx():
            out[f"forward_{mode}"] = _median(lambda: block(x), repeats)
            out[f"jvp_{mode}"] = _median(lambda: mod.func.jvp(block, (x,), (t,)), repeats)
    return out


def _spawn(python: str, framework: str, repeats: int, threads: int | None) -> dict[str, float]:
    env = dict(os.environ)
    cmd = [python, str(Path(__file__)), "--worker", framework, "--repeats", str(repeats)]
    if threads:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "LUCID_NUM_THREADS"):
            env[var] = str(threads)
        cmd += ["--threads", str(threads)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, timeout=1800)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--torch-python", default="/work/torchvenv/bin/python")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(_worker(args.worker, args.repeats, args.threads)))
        return
    frameworks = [("lucid", sys.executable)]
    if Path(args.torch_python).exists():
        frameworks.append(("torch", args.torch_python))
    print(f"W5 block JVP vs forward, medians of {args.repeats} (ms; shared machine: indicative)")
    print(f"{'framework':9} {'threads':8} {'mode':8} {'forward':>8} {'jvp':>8} {'jvp/fwd':>8}")
    for threads in (None, 1):
        for name, python in frameworks:
            r = _spawn(python, name, args.repeats, threads)
            for mode in ("grad", "no_grad"):
                f, j = r[f"forward_{mode}"] * 1e3, r[f"jvp_{mode}"] * 1e3
                print(f"{name:9} {threads or 'default':8} {mode:8} {f:8.2f} {j:8.2f} {j / f:8.2f}")


if __name__ == "__main__":
    main()
