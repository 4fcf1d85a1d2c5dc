"""DataLoader workers (issue 20): a pure-Python per-sample transform, Lucid against PyTorch.

Each sample is a 32x32 "image" made and blurred (3x3 box filter, ``--passes`` times, default 12: about
11 ms per sample on the development machine, the weight of the transform the issue measured) in pure
Python, then turned into a tensor: the kind of decode-and-augment work that holds the GIL, so only processes
can spread it over the cores. 256 samples, batch 8, one epoch per measurement (worker start-up
included, as every epoch pays it without ``persistent_workers``):

- Lucid: ``num_workers=0``, 2 thread workers, 2 process workers (the default start method);
- PyTorch: ``num_workers=0`` and 2 worker processes (its default, ``fork`` on Linux).

Each framework runs in its own subprocess (so neither's imports, thread pools or start method affect
the other) and the two are driven in alternating cycles (2 warm-up + ``--cycles`` timed; the first
warm-up starts any forkserver), so load spikes hit both alike. The table shows medians; the ratios
come from the same run. Targets: Lucid's 2 processes >= 1.7x faster than its 0 workers, and no slower
than PyTorch's 2 processes. Run: ``python benchmarks/bench_data.py [--cycles 7] [--samples 256]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import date
from typing import Any

SIDE = 32
CONFIGS = {"lucid": ["0", "2 threads", "2 processes"], "torch": ["0", "2 processes"]}
TARGET_SPEEDUP = 1.7


def transform(i: int, passes: int) -> list[float]:
    """The per-sample work, in pure Python: a pseudo-random image, box-blurred ``passes`` times, normalized."""
    state = (i * 2654435761 + 12345) % 2**32
    img = []
    for _ in range(SIDE * SIDE):
        state = (1103515245 * state + 12345) % 2**31
        img.append(state / 2**31)
    for _ in range(passes):
        out = [0.0] * (SIDE * SIDE)
        for r in range(1, SIDE - 1):
            for c in range(1, SIDE - 1):
                k = r * SIDE + c
                out[k] = (
                    img[k - SIDE - 1] + img[k - SIDE] + img[k - SIDE + 1]
                    + img[k - 1] + img[k] + img[k + 1]
                    + img[k + SIDE - 1] + img[k + SIDE] + img[k + SIDE + 1]
                ) / 9.0  # fmt: skip
        img = out
    mean = sum(img) / len(img)
    return [v - mean for v in img]


class LucidImages:
    """The dataset on Lucid: a (1, 32, 32) float32 tensor and an int label per sample."""

    def __init__(self, n: int, passes: int) -> None:
        self.n, self.passes = n, passes

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        import lucid_core as lc

        return lc.asarray(transform(i, self.passes), dtype=lc.float32).reshape(1, SIDE, SIDE), i % 10


class TorchImages:
    """The same dataset on PyTorch."""

    def __init__(self, n: int, passes: int) -> None:
        self.n, self.passes = n, passes

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        import torch

        return torch.tensor(transform(i, self.passes), dtype=torch.float32).reshape(1, SIDE, SIDE), i % 10


def _seconds(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _epoch(framework: str, config: str, samples: int, passes: int, batch: int) -> float:
    """Seconds for one epoch of ``config`` (workers started inside the timed region)."""
    workers = 0 if config == "0" else int(config.split()[0])
    if framework == "lucid":
        from lucid_data import DataLoader

        kind = "thread" if "thread" in config else "process"
        loader = DataLoader(LucidImages(samples, passes), batch_size=batch, num_workers=workers, worker_type=kind)
    else:
        from torch.utils.data import DataLoader as TorchLoader

        loader = TorchLoader(TorchImages(samples, passes), batch_size=batch, num_workers=workers)
    t0 = time.perf_counter()
    n = 0
    for x, _ in loader:
        n += x.shape[0]
    dt = time.perf_counter() - t0
    assert n == samples, (framework, config, n)
    return dt


def serve(framework: str, samples: int, passes: int, batch: int) -> None:
    """Subprocess side: read a config name per line, answer with the epoch's seconds."""
    if framework == "torch":
        import torch

        print(f"ready torch {torch.__version__}", flush=True)
    else:
        import lucid_data  # noqa: F401

        print("ready lucid", flush=True)
    for line in sys.stdin:
        config = line.strip()
        if not config:
            break
        print(f"{_epoch(framework, config, samples, passes, batch):.6f}", flush=True)


class _Server:
    def __init__(self, framework: str, args: argparse.Namespace) -> None:
        cmd = [sys.executable, os.path.abspath(__file__), "--serve", framework]
        cmd += ["--samples", str(args.samples), "--passes", str(args.passes), "--batch-size", str(args.batch_size)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.banner = self._line()

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"benchmark subprocess {self.proc.args} exited with code {self.proc.wait()}")
        return line.strip()

    def time(self, config: str) -> float:
        assert self.proc.stdin is not None
        self.proc.stdin.write(config + "\n")
        self.proc.stdin.flush()
        return float(self._line())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=7, help="timed cycles (after 2 warm-up cycles)")
    parser.add_argument("--samples", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--passes", type=int, default=12, help="blur passes per sample (the work per sample)")
    parser.add_argument("--serve", choices=sorted(CONFIGS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.samples, args.passes, args.batch_size)
        return

    frameworks = ["lucid"]
    try:
        import importlib.util

        if importlib.util.find_spec("torch") is not None:
            frameworks.append("torch")
    except ValueError:
        pass
    servers = {f: _Server(f, args) for f in frameworks}
    times: dict[tuple[str, str], list[float]] = {(f, c): [] for f in frameworks for c in CONFIGS[f]}
    try:
        for cycle in range(args.cycles + 2):
            for f in frameworks:
                for c in CONFIGS[f]:
                    dt = servers[f].time(c)
                    if cycle >= 2:
                        times[(f, c)].append(dt)
    finally:
        for s in servers.values():
            s.close()
    med = {k: statistics.median(v) for k, v in times.items()}

    per_sample = min(_seconds(lambda: transform(0, args.passes)) for _ in range(5))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    torch_banner = servers["torch"].banner.split()[-1] if "torch" in servers else "not installed"
    print(
        f"{date.today()}, {platform.machine()}, {os.cpu_count()} cores (load average {load:.1f}), "
        f"Python {platform.python_version()}, torch {torch_banner}; {args.samples} samples, batch "
        f"{args.batch_size}, ~{per_sample * 1e3:.1f} ms of Python per sample, {args.cycles} cycles, medians"
    )
    print()
    print("| framework | 0 workers (s) | 2 threads (s) | 2 processes (s) | 2 processes vs 0 |")
    print("|---|---:|---:|---:|---:|")
    for f in frameworks:
        cells = [f"{med[(f, c)]:.3f}" if (f, c) in med else "n/a" for c in ("0", "2 threads", "2 processes")]
        speedup = med[(f, "0")] / med[(f, "2 processes")]
        print(f"| {f} | {' | '.join(cells)} | {speedup:.2f}x |")
    print()
    speedup = med[("lucid", "0")] / med[("lucid", "2 processes")]
    print(
        f"- Lucid 2 processes vs 0 workers: {speedup:.2f}x "
        f"(target >= {TARGET_SPEEDUP}x: {'met' if speedup >= TARGET_SPEEDUP else 'not met'})"
    )
    if "torch" in servers:
        ratio = med[("lucid", "2 processes")] / med[("torch", "2 processes")]
        print(
            f"- Lucid / PyTorch, 2 processes: {ratio:.2f}x the time (target <= 1.00x: "
            f"{'met' if ratio <= 1.0 else 'not met'}); 0 workers: "
            f"{med[('lucid', '0')] / med[('torch', '0')]:.2f}x"
        )


if __name__ == "__main__":
    main()
