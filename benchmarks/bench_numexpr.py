"""Does numexpr beat NumPy on the element-wise chains of a train step? (issue 17's question; answer in RESULTS.md)

Float32 chains the workloads run (GELU's tanh form, LayerNorm's affine normalisation, an Adam update, a sum
of squares) on a W5 feed-forward activation (1024x512) and a W2 first-conv activation (64x16x28x28), NumPy
against ``numexpr.evaluate`` at 1 and 2 threads (BLAS and numexpr limited alike); medians of 31 calls, best
of 3 rounds. Constants are float32 so numexpr does not compute in float64. Needs ``pip install numexpr``.
Run: ``python benchmarks/bench_numexpr.py``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numexpr as ne
import numpy as np
from threadpoolctl import threadpool_limits


def _median(f: Callable[[], object], reps: int = 31) -> float:
    f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def compare(name: str, shape: tuple[int, int], rng: np.random.Generator) -> None:
    """Print NumPy's and numexpr's times for each chain on arrays of ``shape``."""
    c, k, half, one = np.float32(0.7978845608), np.float32(0.044715), np.float32(0.5), np.float32(1)
    eps, lr = np.float32(1e-8), np.float32(1e-3)
    x, m = rng.standard_normal(shape, dtype=np.float32), rng.standard_normal(shape, dtype=np.float32)
    v = np.abs(rng.standard_normal(shape, dtype=np.float32))
    w, b = rng.standard_normal(shape[1], dtype=np.float32), rng.standard_normal(shape[1], dtype=np.float32)
    mean, rstd = x.mean(1, keepdims=True), 1 / np.sqrt(x.var(1, keepdims=True) + np.float32(1e-5))
    env = {"x": x, "m": m, "v": v, "w": w, "b": b, "mean": mean, "rstd": rstd, "c": c, "k": k}
    env.update(half=half, one=one, eps=eps, lr=lr)
    cases: dict[str, tuple[Callable[[], object], str]] = {
        "gelu (tanh form)": (lambda: half * x * (one + np.tanh(c * (x + k * x * x * x))),
                             "half*x*(one+tanh(c*(x+k*x*x*x)))"),
        "layer-norm affine": (lambda: (x - mean) * rstd * w + b, "(x-mean)*rstd*w+b"),
        "adam update": (lambda: m / (np.sqrt(v) + eps) * lr, "m/(sqrt(v)+eps)*lr"),
        "sum of squares": (lambda: np.sum(x * x), "sum(x*x)"),
    }  # fmt: skip
    for case, (numpy_fn, expr) in cases.items():
        out: dict[int, tuple[float, float]] = {}
        for n in (1, 2):
            ne.set_num_threads(n)
            with threadpool_limits(n):
                runs = [(_median(numpy_fn), _median(lambda e=expr: ne.evaluate(e, local_dict=env))) for _ in range(3)]
            out[n] = (min(a for a, _ in runs), min(e for _, e in runs))
        print(
            f"{name:30s} {case:18s} NumPy {out[1][0] * 1e6:7.0f} us | numexpr 1 thread {out[1][1] * 1e6:7.0f} us "
            f"(NumPy/numexpr {out[1][0] / out[1][1]:.2f}) | 2 threads {out[2][1] * 1e6:7.0f} us "
            f"({out[2][0] / out[2][1]:.2f})"
        )


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"numexpr {ne.__version__} (VML: {ne.use_vml}), NumPy {np.__version__}")
    compare("W5 FFN activation (1024, 512)", (1024, 512), rng)
    compare("W2 conv1 (64,16,28,28)", (1024, 784), rng)


if __name__ == "__main__":
    main()
