"""Per-sample gradients (issue 34): ``vmap(grad(loss))`` against a loop of backward passes and ``torch.func``.

Two models over a batch of 64, each example's gradient of every parameter:

- MLP: 784 -> 128 -> ReLU -> 128 -> ReLU -> 10, cross entropy;
- CNN: the W2 MNIST net of ``model_workloads.py`` (eval mode: its dropouts off), NLL of its log-softmax.

Three ways: Lucid's ``vmap(grad(loss), in_dims=(None, 0, 0))`` through ``functional_call``; a Python loop of 64
forward and backward passes on Lucid (one example each, the gradients copied out); ``torch.func`` (the same
``vmap(grad(...))`` with ``torch.func.functional_call``) in its own process with ``/work/torchvenv/bin/python``
(or ``--torch-python``), and PyTorch's own loop, to show what ratio of loop to transform PyTorch reaches.
Every measurement runs in a fresh process, at the default thread count and with one thread
(``OMP/OPENBLAS/MKL_NUM_THREADS=1`` and ``torch.set_num_threads(1)``). Medians of ``--repeats`` runs.

Run: ``python benchmarks/bench_func.py [--repeats 5] [--models mlp cnn]``. Not a test: numbers on a shared
machine are indicative only.
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BATCH = 64


def _mlp(mod: Any) -> Any:
    nn = mod.nn
    return nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))


def _setup(mod: Any, model_name: str) -> tuple[Any, Any, Any, Any]:
    """The model, its loss of one example ``loss(params, x, y)``, and a batch (x, y)."""
    mod.manual_seed(0)
    F = mod.nn.functional
    if model_name == "mlp":
        model = _mlp(mod)
        x = mod.randn(BATCH, 784)
    else:
        sys.path.insert(0, str(HERE))
        from model_workloads import _mnist_net

        model = _mnist_net(mod)
        x = mod.randn(BATCH, 1, 28, 28)
    model.eval()
    y = mod.randint(0, 10, (BATCH,))
    call = mod.func.functional_call

    def loss(params: Any, xi: Any, yi: Any) -> Any:
        out = call(model, params, (xi.unsqueeze(0),))
        if model_name == "mlp":
            return F.cross_entropy(out, yi.unsqueeze(0))
        return F.nll_loss(out, yi.unsqueeze(0))

    return model, loss, x, y


def _median_time(fn: Any, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _worker(framework: str, model_name: str, method: str, repeats: int, threads: int | None) -> float:
    if framework == "torch":
        import torch as mod

        if threads:
            mod.set_num_threads(threads)
    else:
        sys.path.insert(0, str(ROOT))
        import lucid as mod
    model, loss, x, y = _setup(mod, model_name)
    params = {k: v.detach() for k, v in model.named_parameters()}
    if method == "vmap":
        per_sample = mod.func.vmap(mod.func.grad(loss), in_dims=(None, 0, 0))

        def run() -> None:
            g = per_sample(params, x, y)
            if framework == "lucid":
                mod.eval(*g.values()) if hasattr(mod, "eval") else None
    else:

        def run() -> None:
            grads = {k: [] for k in params}
            for i in range(BATCH):
                model.zero_grad()
                loss(dict(model.named_parameters()), x[i], y[i]).backward()
                for k, p in model.named_parameters():
                    grads[k].append(p.grad.detach().clone())
            for k in grads:
                mod.stack(grads[k])

    return _median_time(run, repeats)


def _spawn(python: str, framework: str, model_name: str, method: str, repeats: int, threads: int | None) -> float:
    env = dict(os.environ)
    if threads:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
            env[var] = str(threads)
    cmd = [python, str(Path(__file__)), "--worker", framework, model_name, method, "--repeats", str(repeats)]
    if threads:
        cmd += ["--threads", str(threads)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, timeout=3600)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])["seconds"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--models", nargs="+", default=["mlp", "cnn"], choices=["mlp", "cnn"])
    ap.add_argument("--torch-python", default="/work/torchvenv/bin/python")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--worker", nargs=3, metavar=("FRAMEWORK", "MODEL", "METHOD"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        framework, model_name, method = args.worker
        print(json.dumps({"seconds": _worker(framework, model_name, method, args.repeats, args.threads)}))
        return
    have_torch = Path(args.torch_python).exists()
    print(f"per-sample gradients, batch {BATCH}, medians of {args.repeats} (seconds; shared machine: indicative)")
    print(f"{'model':5} {'threads':8} {'vmap(grad)':>11} {'loop x64':>10} {'torch.func':>11} {'torch loop':>11} "
          f"{'loop/vmap':>10} {'vmap/torch':>11} {'torch loop/func':>16}")  # fmt: skip
    for model_name in args.models:
        for threads in (None, 1):
            v = _spawn(sys.executable, "lucid", model_name, "vmap", args.repeats, threads)
            loop = _spawn(sys.executable, "lucid", model_name, "loop", args.repeats, threads)
            t = tl = None
            if have_torch:
                t = _spawn(args.torch_python, "torch", model_name, "vmap", args.repeats, threads)
                tl = _spawn(args.torch_python, "torch", model_name, "loop", args.repeats, threads)

            def cell(value: float | None, width: int, fmt: str) -> str:
                return f"{value:{width}{fmt}}" if value is not None else f"{'-':>{width}}"

            print(f"{model_name:5} {threads or 'default':8} {v:11.4f} {loop:10.4f} {cell(t, 11, '.4f')} "
                  f"{cell(tl, 11, '.4f')} {loop / v:10.1f} {cell(t and v / t, 11, '.2f')} "
                  f"{cell(t and tl / t, 16, '.1f')}")  # fmt: skip


if __name__ == "__main__":
    main()
