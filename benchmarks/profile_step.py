"""Where a train step's time goes, per op, forward and backward (issue 17's "profile first").

Every ``lucid_core.Function`` subclass gets its ``forward`` and ``backward`` wrapped in a timer; each
timed region is charged its *exclusive* time (nested timed regions are subtracted), so the rows add
up to the timed total. A row is ``(phase, op, part)``:

- phase ``forward`` / ``backward``: whether ``loss.backward()`` is running; ops that a backward
  formula calls (a matmul inside Linear's gradient) are charged to the backward phase under their
  own name, and ``part`` says ``kernel`` (the op's ``forward``, where the array library runs) or
  ``grad glue`` (the Python of an op's ``backward`` method itself) or ``raw grad`` (its ``backward_raw``,
  the first-order gradient on native arrays, kernels included);
- ``(untimed)`` is the rest of the step: autograd's engine loop, gradient accumulation, the
  optimizer, ``zero_grad`` and Python between ops.

The workloads are ``bench_workloads.py``'s W2 (CNN, batch 64) and W5 (transformer block B16 T64
d128) by default, or W1, GPT and MNIST, built by its ``lucid_train_step``. Timer overhead (two
``perf_counter`` calls per region) inflates small ops a little; compare rows of one run. Run:
``python benchmarks/profile_step.py [--only W2,W5] [--steps 20] [--device numpy] [--top 25]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

from lucid_core import Function

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_workloads import _limit_threads, lucid_train_step

Key = tuple[str, str, str]


class Profiler:
    """Exclusive time and call counts per (phase, op, part), collected by wrapping Function methods."""

    def __init__(self) -> None:
        self.times: dict[Key, float] = defaultdict(float)
        self.calls: dict[Key, int] = defaultdict(int)
        self.in_backward = 0
        self._stack: list[float] = []  # time spent in children of each open region
        self._patched: list[tuple[type, str, Any]] = []

    def _wrap(self, name: str, part: str, fn: Callable[..., Any], is_backward: bool) -> Callable[..., Any]:
        clock = time.perf_counter
        stack = self._stack

        def timed(*args: Any, **kwargs: Any) -> Any:
            if is_backward:
                self.in_backward += 1
            key = ("backward" if self.in_backward else "forward", name, part)
            stack.append(0.0)
            t0 = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                total = clock() - t0
                child = stack.pop()
                self.times[key] += total - child
                self.calls[key] += 1
                if stack:
                    stack[-1] += total
                if is_backward:
                    self.in_backward -= 1

        return timed

    def install(self) -> None:
        """Wrap ``forward``/``backward`` of every Function subclass defined so far."""
        for cls in _subclasses(Function):
            for attr, part in (("forward", "kernel"), ("backward", "grad glue"), ("backward_raw", "raw grad")):
                raw = cls.__dict__.get(attr)
                if raw is None:
                    continue
                fn = raw.__func__ if isinstance(raw, staticmethod) else raw
                wrapped = self._wrap(cls.__name__, part, fn, attr != "forward")
                setattr(cls, attr, staticmethod(wrapped) if isinstance(raw, staticmethod) else wrapped)
                self._patched.append((cls, attr, raw))

    def uninstall(self) -> None:
        """Put the original methods back."""
        for cls, attr, raw in reversed(self._patched):
            setattr(cls, attr, raw)
        self._patched.clear()


def _subclasses(cls: type) -> Iterator[type]:
    seen: set[type] = set()
    todo = list(cls.__subclasses__())
    while todo:
        c = todo.pop()
        if c in seen:
            continue
        seen.add(c)
        todo.extend(c.__subclasses__())
        yield c


def profile(workload: str, device: str, steps: int) -> tuple[float, Profiler]:
    """Mean step time (seconds, untimed run) and the per-op profile of ``steps`` timed steps."""
    step = lucid_train_step(workload, device)
    for _ in range(3):  # warm-up: lazy imports, caches, the optimizer's state
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    plain = (time.perf_counter() - t0) / steps
    prof = Profiler()
    prof.install()
    try:
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        timed = (time.perf_counter() - t0) / steps
    finally:
        prof.uninstall()
    for k in prof.times:
        prof.times[k] /= steps
    for k in prof.calls:
        prof.calls[k] //= steps
    prof.times[("step", "(untimed)", "engine, optimizer, glue")] = timed - sum(prof.times.values())
    return plain, prof


def report(workload: str, device: str, plain: float, prof: Profiler, top: int) -> None:
    """Print the rows sorted by time, with per-phase totals."""
    total = sum(prof.times.values())
    print(f"\n{workload} on lucid {device}: {plain * 1e3:.2f} ms/step unprofiled, {total * 1e3:.2f} ms profiled")
    phases: dict[str, float] = defaultdict(float)
    for (phase, _, _), t in prof.times.items():
        phases[phase] += t
    print("  " + ", ".join(f"{p} {t * 1e3:.2f} ms ({t / total:.0%})" for p, t in sorted(phases.items())))
    print(f"  {'phase':<9} {'op':<24} {'part':<24} {'calls':>5} {'ms':>8} {'share':>6}")
    rows = sorted(prof.times.items(), key=lambda kv: -kv[1])
    for (phase, op, part), t in rows[:top]:
        n = prof.calls.get((phase, op, part), 0)
        print(f"  {phase:<9} {op:<24} {part:<24} {n:>5} {t * 1e3:>8.3f} {t / total:>6.1%}")
    rest = rows[top:]
    if rest:
        print(f"  ... {len(rest)} more rows, {sum(t for _, t in rest) * 1e3:.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="W2,W5", help="comma-separated workloads (W1, W2, W5, GPT, MNIST)")
    parser.add_argument("--device", default="numpy", help="Lucid device (default numpy)")
    parser.add_argument("--steps", type=int, default=20, help="steps to average (default 20)")
    parser.add_argument("--top", type=int, default=25, help="rows to print per workload (default 25)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1: steady on a shared box)")
    args = parser.parse_args()
    blas = _limit_threads(args.threads)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; NumPy BLAS {blas}")
    for w in args.only.split(","):
        plain, prof = profile(w, args.device, args.steps)
        report(w, args.device, plain, prof, args.top)


if __name__ == "__main__":
    main()
