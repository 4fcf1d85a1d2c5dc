"""The CNN kernels one by one, the backend's native kernel against the composed path it replaces.

"composed" is what ran before the native kernels existed: each kernel's composed default from
``lucid_core.kernels`` (itself calling the backend's native ``im2col``/``col2im``), and for a conv with
bias the composed ``conv`` plus a broadcast add. Shapes are the W2 CNN's two layers and the MNIST net's
second conv (batch 64, float32). Times are this process's CPU time (``time.process_time``), the minimum
over repeats, at one BLAS thread: on a shared machine they move far less with the load than wall time.
Run: ``python benchmarks/bench_cnn_kernels.py [--device numpy] [--repeat 15]``.
"""

from __future__ import annotations

import argparse
import time
import timeit
import types
from collections.abc import Callable
from typing import Any

import numpy as np

import lucid_core as lc
from lucid_core import kernels
from lucid_core._registry import resolve_device

LAYERS = {  # name: (N, C, H, O, padding)
    "W2 conv1 1->16 28x28": (64, 1, 28, 16, 1),
    "W2 conv2 16->32 14x14": (64, 16, 14, 32, 1),
    "MNIST conv2 32->64 26x26": (64, 32, 26, 64, 0),
}


def _cpu_ms(fn: Callable[[], Any], repeat: int) -> float:
    return min(timeit.Timer(fn, timer=time.process_time).repeat(number=1, repeat=repeat)) * 1e3


def _cases(dev: Any, plain: Any, x: Any, w: Any, b: Any, gy: Any, geo: tuple[Any, ...], h: int) -> dict[str, Any]:
    """(native, composed) callables per kernel for one layer."""
    o = w.shape[0]
    return {
        "conv_bias": (
            lambda: kernels.call(dev, "conv_bias", x, w, b, *geo),
            lambda: kernels.call(plain, "conv", x, w, *geo) + dev.xp.reshape(b, (o, 1, 1)),
        ),
        "conv_weight_grad": (
            lambda: kernels.call(dev, "conv_weight_grad", x, gy, (3, 3), *geo),
            lambda: kernels.call(plain, "conv_weight_grad", x, gy, (3, 3), *geo),
        ),
        "conv_input_grad": (
            lambda: kernels.call(dev, "conv_input_grad", gy, w, (h, h), *geo),
            lambda: kernels.call(plain, "conv_input_grad", gy, w, (h, h), *geo),
        ),
        "channel_sum": (lambda: kernels.call(dev, "channel_sum", gy), lambda: kernels.call(plain, "channel_sum", gy)),
        "relu": (lambda: kernels.call(dev, "relu", gy), lambda: kernels.call(plain, "relu", gy)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="numpy")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    import sys

    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from bench_workloads import _limit_threads

    print(f"NumPy BLAS {_limit_threads(1)}; CPU ms, min of {args.repeat}")
    dev = resolve_device(args.device)
    native = dev.backend.kernels
    mine = ("conv", "conv_bias", "conv_input_grad", "conv_weight_grad", "channel_sum", "relu", "avg_pool")
    plain = types.SimpleNamespace(
        backend=types.SimpleNamespace(kernels={k: v for k, v in native.items() if k not in mine}), xp=dev.xp
    )
    rng = np.random.default_rng(0)

    def arr(*shape: int) -> Any:
        return lc.asarray(rng.standard_normal(shape).astype("float32"), device=dev)._data

    print("| kernel | shape | composed | native | speed-up |")
    print("|---|---|---:|---:|---:|")
    for label, (n, c, h, o, p) in LAYERS.items():
        x, w, b = arr(n, c, h, h), arr(o, c, 3, 3), arr(o)
        ho = h + 2 * p - 2
        gy = arr(n, o, ho, ho)
        geo = ((1, 1), (1, 1), ((p, p), (p, p)), 1)
        cases = _cases(dev, plain, x, w, b, gy, geo, h)
        for name, (new, old) in cases.items():
            if c == 1 and name == "conv_input_grad":
                continue  # the data's gradient: never computed in a train step
            t_old, t_new = _cpu_ms(old, args.repeat), _cpu_ms(new, args.repeat)
            print(f"| {name} | {label} | {t_old:.2f} | {t_new:.2f} | {t_old / t_new:.1f}x |")


if __name__ == "__main__":
    main()
