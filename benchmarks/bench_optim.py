"""Optimizer step time for 1 M parameters: SGD with momentum and Adam.

Lucid runs on every installed backend (or the ``--device`` ones); when PyTorch is importable the
table adds its single-tensor (for-loop) and ``foreach`` implementations on the same sizes. The
parameters are 10 tensors of 100,000 float32 values; each timed call is one ``step()`` after a
fixed gradient was set. Prints a markdown table of medians. Run:
``python benchmarks/bench_optim.py [--repeats 30] [--device numpy --device mlx]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import lucid_core as lc
import lucid_optim as optim

N_TENSORS, N_EACH = 10, 100_000
CONFIGS = {
    "SGD momentum": ("SGD", {"lr": 1e-3, "momentum": 0.9}),
    "Adam": ("Adam", {"lr": 1e-3}),
}


def median_ms(fn: Callable[[], None], repeats: int) -> float:
    fn()  # warm up: state initialisation
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def lucid_step(device: str, name: str, kwargs: dict) -> Callable[[], None]:
    lc.manual_seed(0)
    params = [lc.Parameter(lc.randn(N_EACH, device=device)) for _ in range(N_TENSORS)]
    for p in params:
        p.grad = lc.randn(N_EACH, device=device) * 0.01
    opt = getattr(optim, name)(params, **kwargs)
    return opt.step


def torch_step(name: str, kwargs: dict, foreach: bool) -> Callable[[], None]:
    import torch

    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(N_EACH)) for _ in range(N_TENSORS)]
    for p in params:
        p.grad = torch.randn(N_EACH) * 0.01
    opt = getattr(torch.optim, name)(params, foreach=foreach, **kwargs)
    return opt.step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--device", action="append", help="Lucid device(s); default: every installed backend")
    args = parser.parse_args()
    devices = args.device or [b.name for b in lc.backends() if b.status == "ok"]
    try:
        import torch

        torch.set_num_threads(torch.get_num_threads())
        has_torch = True
    except ImportError:
        has_torch = False

    header = ["optimizer", *[f"lucid {d} (ms)" for d in devices]]
    if has_torch:
        header += ["torch for-loop (ms)", "torch foreach (ms)"]
    rows = []
    for label, (name, kwargs) in CONFIGS.items():
        row = [label] + [f"{median_ms(lucid_step(d, name, kwargs), args.repeats):.3f}" for d in devices]
        if has_torch:
            row += [f"{median_ms(torch_step(name, kwargs, fe), args.repeats):.3f}" for fe in (False, True)]
        rows.append(row)
    print(f"Step time, {N_TENSORS} x {N_EACH:,} float32 parameters, median of {args.repeats}"
          + ("" if has_torch else " (PyTorch not installed: its columns are skipped)"))  # fmt: skip
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
