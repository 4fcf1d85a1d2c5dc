"""Mixed-precision benchmark (issue 35): the bfloat16 product and W1/W5 train steps under bfloat16 autocast.

(a) a 1024x1024x1024 product in bfloat16 and in float32, GF/s;
(b) W1 (MLP 784-512-512-10, batch 128, SGD with momentum, cross-entropy) and W5 (a Transformer encoder layer,
    batch 16, sequence 64, d_model 128, 4 heads, feed-forward 512, dropout 0, Adam, mean square), the shapes of
    ``bench_workloads.py``, one train step in float32 and one with forward and loss under
    ``autocast("cpu", dtype=bfloat16)``, in milliseconds.

Each framework runs the same code (written once against PyTorch's API, ``mod`` is ``lucid`` or ``torch``) in its
own process, at its default threads and then at one thread, in one invocation; ``--torch-python`` names PyTorch's
interpreter. Medians of ``--repeat`` runs. Indicative only on a shared machine. Run:
``python benchmarks/bench_amp.py [--torch-python PATH] [--repeat N]``.

Where the CPU has AVX512_BF16 the NumPy backend's bfloat16 product is ``_gemm_bf16.c`` (``vdpbf16ps``); elsewhere
it is float32's product on widened operands, rounded once: slower than float32 by the two conversions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

N = 1024


def _median_ms(fn: Callable[[], Any], repeat: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def product_gflops(mod: Any, dtype: Any, repeat: int) -> float:
    """GF/s of one ``N x N @ N x N`` product in ``dtype``."""
    a, b = mod.randn(N, N).to(dtype), mod.randn(N, N).to(dtype)

    def run() -> None:
        c = a @ b
        _sync(mod, c)

    ms = _median_ms(run, repeat)
    return 2 * N**3 / (ms * 1e-3) / 1e9


def _sync(mod: Any, t: Any) -> None:
    """Compute ``t`` now on lazy backends (PyTorch's CPU tensors are eager)."""
    if mod.__name__ == "lucid":
        mod.eval(t)


def train_step(mod: Any, workload: str, amp: bool) -> Callable[[], None]:
    """One train step of ``workload`` (``"W1"`` or ``"W5"``), forward and loss under bfloat16 autocast if ``amp``."""
    mod.manual_seed(0)
    nn, F = mod.nn, mod.nn.functional
    if workload == "W1":
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
        x, y = mod.randn(128, 784), mod.randint(0, 10, (128,))
        opt = mod.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def loss_fn() -> Any:
            return F.cross_entropy(model(x), y)
    else:
        model = nn.TransformerEncoderLayer(128, 4, dim_feedforward=512, dropout=0.0, batch_first=True)
        x = mod.randn(16, 64, 128)
        opt = mod.optim.Adam(model.parameters(), lr=1e-3)

        def loss_fn() -> Any:
            return model(x).float().square().mean()

    def step() -> None:
        opt.zero_grad()
        with mod.autocast("cpu", dtype=mod.bfloat16, enabled=amp):
            loss = loss_fn()
        loss.backward()
        opt.step()
        _sync(mod, loss)

    return step


def measure(mod: Any, repeat: int) -> dict[str, float]:
    """Every number of this benchmark for one framework."""
    out = {
        "product_float32_gflops": product_gflops(mod, mod.float32, repeat),
        "product_bfloat16_gflops": product_gflops(mod, mod.bfloat16, repeat),
    }
    for w in ("W1", "W5"):
        out[f"{w}_float32_ms"] = _median_ms(train_step(mod, w, amp=False), repeat)
        out[f"{w}_bf16_autocast_ms"] = _median_ms(train_step(mod, w, amp=True), repeat)
    return out


def _child(framework: str, threads: int | None, repeat: int) -> None:
    """Measure one framework in this process (at its default threads, or at ``threads``) and print JSON."""
    if framework == "torch":
        import torch as mod
    else:
        import lucid as mod
    if threads is not None:
        mod.set_num_threads(threads)
    print(json.dumps(measure(mod, repeat)))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--torch-python", default=os.environ.get("TORCH_PYTHON", "/work/torchvenv/bin/python"))
    p.add_argument("--child", choices=["lucid", "torch"], help=argparse.SUPPRESS)
    p.add_argument("--threads", type=int, default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        _child(args.child, args.threads, args.repeat)
        return
    for threads in (None, 1):  # what a user gets, then one thread; each framework in its own process
        results = {}
        for name, python in (("lucid", sys.executable), ("torch", args.torch_python)):
            cmd = [python, __file__, "--child", name, "--repeat", str(args.repeat)]
            cmd += [] if threads is None else ["--threads", str(threads)]
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=1800)
                results[name] = json.loads(done.stdout.strip().splitlines()[-1])
            except (OSError, subprocess.SubprocessError, ValueError) as exc:
                print(f"{name} not measured ({type(exc).__name__}: {exc})", file=sys.stderr)
        if "lucid" not in results:
            continue
        print(f"\n-- {'default threads' if threads is None else f'{threads} thread'} (medians of {args.repeat})")
        print(f"{'':30s}" + "".join(f"{k:>12s}" for k in results))
        for k in results["lucid"]:
            print(f"{k:30s}" + "".join(f"{results[f][k]:12.2f}" for f in results))
        lu = results["lucid"]
        gain = lu["product_bfloat16_gflops"] / lu["product_float32_gflops"]
        print(f"Lucid bf16/f32 product: {gain:.2f}x (goal >= 1.6x)")
        if "torch" in results:
            t = results["torch"]
            for w in ("W1", "W5"):
                ratio = lu[f"{w}_bf16_autocast_ms"] / t[f"{w}_bf16_autocast_ms"]
                print(f"{w} under autocast, Lucid / PyTorch: {ratio:.2f}x" + (" (goal <= 1.0x)" if w == "W5" else ""))


if __name__ == "__main__":
    main()
