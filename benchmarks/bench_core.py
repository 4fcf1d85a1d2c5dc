"""Core overhead benchmarks (the foundation issue's two workloads).

(a) per-op overhead: a chain of 500 element-wise ops on a (16,) tensor, forward plus backward, in
    microseconds per op, next to the same chain in bare NumPy (forward only) and, when installed,
    PyTorch (forward plus backward);
(b) 1024x1024 matmul forward plus backward (three products) in GFLOP/s, next to the array library's
    own matmul on the same arrays.

Lucid and the references run in alternating cycles and the medians are compared, so a noisy
machine shifts both alike. Run: ``python benchmarks/bench_core.py [--device numpy --device mlx]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable
from datetime import date
from typing import Any

import lucid_core as lc

N_OPS = 500  # 100 blocks of five element-wise ops


def lucid_chain(x: lc.Tensor) -> None:
    lc.eval(lucid_chain_grad(x))


def lucid_chain_grad(x: lc.Tensor) -> lc.Tensor:
    """The chain forward and backward; returns x's gradient and leaves ``x.grad`` None (what a compiled chain must
    return for its gradient to be computed: bench_compile.py)."""
    y = x
    for _ in range(N_OPS // 5):
        y = y * 1.0001
        y = y + 0.001
        y = lc.tanh(y)
        y = y - x
        y = lc.exp(y)
    y.sum().backward()
    g = x.grad
    x.grad = None
    return g


def numpy_chain(x) -> None:
    import numpy as np

    y = x
    for _ in range(N_OPS // 5):
        y = y * 1.0001
        y = y + 0.001
        y = np.tanh(y)
        y = y - x
        y = np.exp(y)


def torch_chain(x) -> None:
    import torch

    y = x
    for _ in range(N_OPS // 5):
        y = y * 1.0001
        y = y + 0.001
        y = torch.tanh(y)
        y = y - x
        y = torch.exp(y)
    y.sum().backward()
    x.grad = None


def alternate(fns: dict[str, Callable[[], Any]], cycles: int, warmup: int = 2) -> dict[str, float]:
    """Median seconds of each function, measured in alternating cycles (or as each reports them)."""
    return {k: statistics.median(v) for k, v in alternate_samples(fns, cycles, warmup).items()}


def alternate_samples(fns: dict[str, Callable[[], Any]], cycles: int, warmup: int = 2) -> dict[str, list[float]]:
    """Each function's seconds in each of ``cycles`` alternating cycles, after ``warmup`` untimed ones."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for i in range(cycles + warmup):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            reported = fn()
            # a function timed elsewhere (a worker process) returns its own seconds
            dt = reported if isinstance(reported, float) else time.perf_counter() - t0
            if i >= warmup:
                times[name].append(dt)
    return times


def per_op(device: str, cycles: int) -> dict[str, float]:
    import numpy as np

    x = lc.randn(16, device=device, requires_grad=True)
    fns: dict[str, Callable[[], None]] = {"lucid": lambda: lucid_chain(x)}
    xn = np.random.default_rng(0).standard_normal(16).astype(np.float32)
    fns["numpy"] = lambda: numpy_chain(xn)
    try:
        import torch

        torch.set_num_threads(os.cpu_count() or 1)
        xt = torch.randn(16, requires_grad=True)
        fns["torch"] = lambda: torch_chain(xt)
    except ImportError:
        pass
    med = alternate(fns, cycles)
    return {k: v / N_OPS * 1e6 for k, v in med.items()}


def matmul(device: str, n: int, cycles: int) -> tuple[float, float]:
    a = lc.randn(n, n, device=device, requires_grad=True)
    b = lc.randn(n, n, device=device, requires_grad=True)
    g = lc.ones(n, n, device=device)

    def lucid_step() -> None:
        y = a @ b
        y.backward(g)
        lc.eval(a.grad, b.grad)
        a.grad = b.grad = None

    xp, xa, xb, xg = a.device.xp, a.native, b.native, g.native
    backend = a.device.backend

    def library_step() -> None:
        c = xp.matmul(xa, xb)
        ga = xp.matmul(xg, xp.permute_dims(xb, (1, 0)))
        gb = xp.matmul(xp.permute_dims(xa, (1, 0)), xg)
        backend.eval(c, ga, gb)

    med = alternate({"lucid": lucid_step, "library": library_step}, cycles)
    flops = 3 * 2 * n**3
    return flops / med["lucid"] / 1e9, flops / med["library"] / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", action="append", help="device(s) to measure (default: every backend)")
    parser.add_argument("--matmul-size", type=int, default=1024)
    parser.add_argument("--cycles", type=int, default=15)
    args = parser.parse_args()
    devices = args.device or [b.name for b in lc.backends() if b.status == "ok"]
    print(f"{date.today()}, {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print()
    print(
        "| device | per-op fwd+bwd (µs/op) | NumPy fwd only (µs/op) | PyTorch fwd+bwd (µs/op) | Lucid/PyTorch "
        "| matmul fwd+bwd (GFLOP/s) | library matmul (GFLOP/s) | ratio |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for dev in devices:
        lc.manual_seed(0)
        us = per_op(dev, args.cycles)
        g, ref = matmul(dev, args.matmul_size, max(5, args.cycles // 2))
        torch_us = us.get("torch")
        torch_col = f"{torch_us:.2f}" if torch_us else "n/a"
        ratio = f"{us['lucid'] / torch_us:.2f}×" if torch_us else "n/a"
        print(
            f"| {dev} | {us['lucid']:.2f} | {us['numpy']:.2f} | {torch_col} | {ratio} "
            f"| {g:.1f} | {ref:.1f} | {g / ref:.0%} |"
        )


if __name__ == "__main__":
    main()
