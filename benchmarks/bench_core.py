"""Core overhead benchmarks (the foundation issue's W3 and W4).

(a) per-op overhead: a chain of 500 element-wise ops on a (16,) tensor, forward plus backward, in
    microseconds per op; (b) 1024x1024 matmul forward plus backward in GFLOP/s, next to the array
    library's own matmul measured in the same run. Run: ``python benchmarks/bench_core.py [--device mlx]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import lucid_core as lc


def per_op_us(device: str, n_ops: int = 500, repeats: int = 30) -> float:
    x = lc.randn(16, device=device, requires_grad=True)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        y = x
        for _ in range(n_ops // 5):
            y = y * 1.0001
            y = y + 0.001
            y = lc.tanh(y)
            y = y - x
            y = lc.exp(y * 0.01)
        loss = y.sum()
        loss.backward()
        lc.eval(x.grad)
        times.append(time.perf_counter() - t0)
        x.grad = None
    return statistics.median(times) / (n_ops + 1) * 1e6


def matmul_gflops(device: str, n: int = 1024, repeats: int = 7) -> tuple[float, float]:
    a = lc.randn(n, n, device=device, requires_grad=True)
    b = lc.randn(n, n, device=device, requires_grad=True)
    flops = 3 * 2 * n**3  # forward plus two matmuls in backward
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        y = a @ b
        y.backward(lc.ones_like(y))
        lc.eval(a.grad, b.grad)
        times.append(time.perf_counter() - t0)
        a.grad = b.grad = None
    lucid = flops / statistics.median(times) / 1e9
    # the library's own matmul on the same native arrays, same three products
    xa, xb, g = a.native, b.native, lc.ones_like(a).native
    xp = a.device.xp
    ref = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        c = xp.matmul(xa, xb)
        ga = xp.matmul(g, xp.permute_dims(xb, (1, 0)))
        gb = xp.matmul(xp.permute_dims(xa, (1, 0)), g)
        a.device.backend.eval(c, ga, gb)
        ref.append(time.perf_counter() - t0)
    return lucid, flops / statistics.median(ref) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", action="append", help="device(s) to measure (default: every backend)")
    parser.add_argument("--matmul-size", type=int, default=1024)
    args = parser.parse_args()
    devices = args.device or [str(b.name) for b in lc.backends() if b.status == "ok"]
    print("| device | per-op overhead (µs/op) | matmul fwd+bwd (GFLOP/s) | library matmul (GFLOP/s) | ratio |")
    print("|---|---|---|---|---|")
    for dev in devices:
        lc.manual_seed(0)
        us = per_op_us(dev)
        g, ref = matmul_gflops(dev, args.matmul_size)
        print(f"| {dev} | {us:.2f} | {g:.1f} | {ref:.1f} | {g / ref:.0%} |")


if __name__ == "__main__":
    main()
