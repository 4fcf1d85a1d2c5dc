"""Workload suite of the performance issue: Lucid (each installed backend) against PyTorch CPU.

W1 MLP 784-512-512-10 train step (batch 128, SGD with momentum, cross-entropy);
W2 CNN train step (64x1x28x28: conv 3x3 1->16 pad 1, ReLU, 2x2 max-pool, conv 3x3 16->32 pad 1, ReLU,
   2x2 max-pool, linear 1568->10; SGD with momentum, cross-entropy);
W3 per-op overhead: bench_core's chain of 500 element-wise ops on a (16,) tensor, forward+backward, µs/op;
W4 1024x1024 matmul forward+backward (three products) in GFLOP/s, next to NumPy's own three products;
W5 Transformer encoder block (batch 16, sequence 64, d_model 128, 4 heads, feed-forward 512, dropout 0,
   batch_first) train step with Adam on the mean squared output;
W6 peak memory of one steady-state W1 and W5 step (see ``peak_memory``);
GPT, MNIST: nanoGPT-shaped and pytorch/examples MNIST-net train steps (``model_workloads.py``: written once
   against PyTorch's API, run on torch and on the ``lucid`` face).

Every timed workload builds one step function per framework, then runs the frameworks in alternating
cycles (lucid numpy, lucid mlx, torch, lucid numpy, ...) so machine noise hits each alike; the table
shows medians and the Lucid/PyTorch ratio of the same run. PyTorch and NumPy's BLAS get the same
number of threads (all cores unless ``--threads N``); on a small shared machine ``--threads 1`` avoids
their thread pools spinning against each other. Results and method: benchmarks/RESULTS.md. Run:
``python benchmarks/bench_workloads.py [--quick] [--threads N] [--cycles N] [--device numpy] [--only W1,W3]
[--isolate] [--markdown]``.

``--isolate`` is how a user runs each framework: every (framework, thread setting) pair gets its own worker
process (its own allocator, thread pools and caches), at the default threads AND at one thread, all
alternating in the same cycles, on W1, W2, W5, GPT and MNIST (``model_workloads.py``) and W3 (each cycle the
median of the steps a worker runs back to back for ``SECONDS_PER_REQUEST``; workers started afresh
``GENERATIONS`` times per workload, the cycles shared out among them), plus each worker's peak resident memory
(RSS, what ``top`` shows: ``VmHWM`` above the RSS the worker had after importing its framework, so library
code is not counted). ``--markdown`` prints only the README-ready table (same-run medians and ratios) headed
by the command that produced it.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import platform
import signal
import statistics
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from datetime import date
from typing import Any

import lucid_core as lc
import lucid_nn as nn
import lucid_nn.functional as F
import lucid_optim as optim

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_core import N_OPS, alternate, alternate_samples, lucid_chain, torch_chain
from model_workloads import model_train_step

Step = Callable[[], None]

try:
    if os.environ.get("LUCID_BENCH_NO_TORCH"):  # a Lucid worker process (--isolate): PyTorch stays out
        raise ImportError
    import torch  # left at its default threads here: main() and the workers set them
except ImportError:  # PyTorch is optional: its columns read "n/a"
    torch = None


# -- models -----------------------------------------------------------------------------------------
def _mlp(mod: Any, device: Any = None) -> Any:
    kw = {} if device is None else {"device": device}
    return mod.Sequential(
        mod.Linear(784, 512, **kw), mod.ReLU(), mod.Linear(512, 512, **kw), mod.ReLU(), mod.Linear(512, 10, **kw)
    )


def _cnn(mod: Any, device: Any = None) -> Any:
    kw = {} if device is None else {"device": device}
    return mod.Sequential(
        mod.Conv2d(1, 16, 3, padding=1, **kw), mod.ReLU(), mod.MaxPool2d(2),
        mod.Conv2d(16, 32, 3, padding=1, **kw), mod.ReLU(), mod.MaxPool2d(2),
        mod.Flatten(), mod.Linear(32 * 7 * 7, 10, **kw),
    )  # fmt: skip


def _encoder(mod: Any, device: Any = None) -> Any:
    kw = {} if device is None else {"device": device}
    return mod.TransformerEncoderLayer(128, 4, dim_feedforward=512, dropout=0.0, batch_first=True, **kw)


CLASSIFIERS = {"W1": (_mlp, (128, 784)), "W2": (_cnn, (64, 1, 28, 28))}


# -- step builders ----------------------------------------------------------------------------------
def lucid_train_step(workload: str, device: str) -> Step:
    """One train step (zero_grad, forward, loss, backward, optimizer step) of ``workload`` on Lucid."""
    if workload in ("GPT", "MNIST"):  # written once against PyTorch's API, run on the lucid face
        import lucid

        lc.set_default_device(device)
        return model_train_step(workload, lucid)
    lc.manual_seed(0)
    if workload == "W5":
        model = _encoder(nn, device)
        x = lc.randn(16, 64, 128, device=device)
        opt = optim.Adam(model.parameters(), lr=1e-3)

        def loss_fn() -> lc.Tensor:
            return lc.mean(lc.square(model(x)))
    else:
        make, shape = CLASSIFIERS[workload]
        model = make(nn, device)
        x = lc.randn(*shape, device=device)
        y = lc.randint(0, 10, (shape[0],), device=device)
        opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def loss_fn() -> lc.Tensor:
            return F.cross_entropy(model(x), y)

    params = list(model.parameters())

    def step() -> None:
        opt.zero_grad()
        loss_fn().backward()
        opt.step()
        lc.eval(*params)

    return step


def torch_train_step(workload: str) -> Step:
    """The same train step on PyTorch CPU."""
    if workload in ("GPT", "MNIST"):
        return model_train_step(workload, torch)
    torch.manual_seed(0)
    if workload == "W5":
        model = _encoder(torch.nn)
        x = torch.randn(16, 64, 128)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)

        def loss_fn() -> Any:
            return model(x).square().mean()
    else:
        make, shape = CLASSIFIERS[workload]
        model = make(torch.nn)
        x = torch.randn(*shape)
        y = torch.randint(0, 10, (shape[0],))
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def loss_fn() -> Any:
            return torch.nn.functional.cross_entropy(model(x), y)

    def step() -> None:
        opt.zero_grad()
        loss_fn().backward()
        opt.step()

    return step


def per_op_steps(devices: list[str]) -> dict[str, Step]:
    fns: dict[str, Step] = {}
    for dev in devices:
        x = lc.randn(16, device=dev, requires_grad=True)
        fns[dev] = lambda x=x: lucid_chain(x)
    if torch is not None:
        xt = torch.randn(16, requires_grad=True)
        fns["torch"] = lambda: torch_chain(xt)
    return fns


def matmul_steps(devices: list[str], n: int) -> dict[str, Step]:
    import numpy as np

    fns: dict[str, Step] = {}
    for dev in devices:
        a = lc.randn(n, n, device=dev, requires_grad=True)
        b = lc.randn(n, n, device=dev, requires_grad=True)
        g = lc.ones(n, n, device=dev)

        def step(a: lc.Tensor = a, b: lc.Tensor = b, g: lc.Tensor = g) -> None:
            (a @ b).backward(g)
            lc.eval(a.grad, b.grad)
            a.grad = b.grad = None

        fns[dev] = step
    rng = np.random.default_rng(0)
    an, bn = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    gn = np.ones((n, n), np.float32)

    def numpy_step() -> None:
        an @ bn, gn @ bn.T, an.T @ gn

    fns["numpy (library)"] = numpy_step
    if torch is not None:
        at = torch.randn(n, n, requires_grad=True)
        bt = torch.randn(n, n, requires_grad=True)
        gt = torch.ones(n, n)

        def torch_step() -> None:
            (at @ bt).backward(gt)
            at.grad = bt.grad = None

        fns["torch"] = torch_step
    return fns


# -- one process per framework (--isolate) -----------------------------------------------------------
ISOLATED = ("W1", "W2", "W5", "GPT", "MNIST", "W3")  # what --isolate runs by default, in this order
LABELS = {
    "W1": "W1 MLP train step",
    "W2": "W2 CNN train step",
    "W5": "W5 Transformer block step",
    "GPT": "nanoGPT-shaped GPT step (2 layers, 64-dim)",
    "MNIST": "pytorch/examples MNIST net step",
    "W3": f"W3 per-op fwd+bwd ({N_OPS} ops)",
}


class WorkerStep:
    """A workload run in its own process: allocator, thread pools and caches belong to one framework.

    The worker builds the step once, then times steps back to back per request (``SECONDS_PER_REQUEST``) and
    reports their median in seconds, so the alternating cycles compare the frameworks without the pipe's latency.
    ``threads`` None leaves both libraries at their defaults (as a user gets them); a number sets PyTorch's and
    Lucid's.

    Between its requests a worker is stopped (SIGSTOP, resumed with SIGCONT): thread pools keep spinning
    after their work (OpenBLAS's threads for about 0.1 s, OpenMP's for a while), and a spinning idle
    worker would take a core from the framework being timed. Measured on 2 cores before this: PyTorch's
    W5 step at 39 ms next to an idle Lucid worker whose BLAS threads spun, 17.5 ms next to one whose did
    not, which made PyTorch's default threads look slower than its one thread.
    """

    def __init__(self, framework: str, workload: str, threads: int | None) -> None:
        import subprocess

        env = dict(os.environ)
        if framework != "torch":
            env["LUCID_BENCH_NO_TORCH"] = "1"
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", framework, "--only", workload]
        if threads is not None:
            cmd += ["--threads", str(threads)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self._ask("ready")

    def _signal(self, name: str) -> None:
        sig = getattr(signal, name, None)  # POSIX only: elsewhere idle workers run on
        if sig is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def _ask(self, msg: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._signal("SIGCONT")
        self.proc.stdin.write(msg + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"benchmark worker {self.proc.args} exited (code {self.proc.wait()})")
        self._signal("SIGSTOP")  # its pools' spinning threads must not run while another worker is timed
        return line.strip()

    def __call__(self) -> float:
        return float(self._ask("run"))

    def peak_rss(self) -> float:
        """Bytes of resident memory at the worker's peak, above what it held after importing its framework."""
        return float(self._ask("mem"))

    def close(self) -> None:
        """Stop the worker process."""
        self._signal("SIGCONT")
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait()


def _proc_status(field: str) -> float | None:
    """A ``/proc/self/status`` memory field (``VmRSS``, ``VmHWM``) in bytes; None off Linux."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _reset_peak_rss() -> bool:
    """Restart the kernel's peak-RSS count (``VmHWM``) from the current RSS (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _worker_step(framework: str, workload: str) -> Step:
    if workload == "W3":
        if framework == "torch":
            xt = torch.randn(16, requires_grad=True)
            return lambda: torch_chain(xt)
        x = lc.randn(16, device=framework, requires_grad=True)
        return lambda: lucid_chain(x)
    return torch_train_step(workload) if framework == "torch" else lucid_train_step(workload, framework)


def _warm_up(framework: str) -> None:
    """One tiny train step with each optimizer the workloads use, so the memory a framework sets up once
    (autograd engine, optimizer and layer code, thread pools) is in the baseline, not in the workload's peak."""
    mod: Any = torch if framework == "torch" else __import__("lucid")
    if framework != "torch":
        lc.set_default_device(framework)
    model = mod.nn.Sequential(mod.nn.Conv2d(1, 2, 3), mod.nn.ReLU(), mod.nn.MaxPool2d(2), mod.nn.Flatten(),
                              mod.nn.Linear(8, 4), mod.nn.LayerNorm(4))  # fmt: skip
    for opt in (mod.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), mod.optim.Adam(model.parameters()),
                mod.optim.AdamW(model.parameters()), mod.optim.Adadelta(model.parameters())):  # fmt: skip
        opt.zero_grad()
        mod.nn.functional.cross_entropy(model(mod.randn(2, 1, 6, 6)), mod.tensor([0, 1])).backward()
        opt.step()


#: a worker runs steps back to back per request for at least this long (and at least MIN_STEPS_PER_REQUEST
#: steps), reporting their median: a user runs steps in a loop, while a step right after the worker is resumed
#: runs with cold caches and its thread pools asleep. Three steps a request (sessions 6-9) measured the resume
#: too, and more for PyTorch than for Lucid: W1 at default threads 0.77x with three steps, 1.05x with thirty,
#: where PyTorch's own loop runs as fast as the thirty (session 10, benchmarks/RESULTS.md)
SECONDS_PER_REQUEST = 0.25
MIN_STEPS_PER_REQUEST = 3
#: workers are started afresh this many times per workload, the cycles shared out among them: one process of
#: PyTorch's in about eight ran W1 50 % slower throughout (its own loop, no other process running), and a
#: table from one process per framework then showed that process's luck
GENERATIONS = 3


def serve(framework: str, workload: str) -> None:
    """The worker side of :class:`WorkerStep`: build the step, then time its steps for each ``run`` line.

    ``mem`` answers the peak RSS since the step was built, above the RSS after the framework's import and a
    tiny warm-up step (:func:`_warm_up`), in bytes; ``ready`` answers ``ready``.
    """
    import time

    _warm_up(framework)
    gc.collect()
    base = _proc_status("VmRSS")
    if not _reset_peak_rss():
        base = None  # the peak cannot be restarted: report nothing rather than the import's peak
    step = _worker_step(framework, workload)
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "run":
            times: list[float] = []
            start = time.perf_counter()
            while len(times) < MIN_STEPS_PER_REQUEST or time.perf_counter() - start < SECONDS_PER_REQUEST:
                t0 = time.perf_counter()
                step()
                times.append(time.perf_counter() - t0)
            print(sorted(times)[len(times) // 2], flush=True)
        elif cmd == "mem":
            peak = _proc_status("VmHWM")
            print(peak - base if peak is not None and base is not None else "nan", flush=True)
        elif cmd == "ready":
            print("ready", flush=True)


# -- peak memory ------------------------------------------------------------------------------------
@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence the profiler's C++ log lines (written to file descriptor 2, out of Python's reach)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def peak_memory(workload: str, framework: str, steps: int = 3) -> float | None:
    """Peak bytes of memory the workload holds at once: model, data, optimizer state, activations, gradients.

    Method, the same for each framework: run the workload once untraced (so lazy imports and one-time
    caches are not counted), then start tracing, build the model and data afresh, run ``steps`` train
    steps, and report the high-water mark of live allocations made since tracing began. Lucid on NumPy:
    ``tracemalloc`` (NumPy reports every array buffer to it; Python objects such as graph nodes count
    too). PyTorch: its profiler's allocator events (``profile_memory=True``): each allocation and free
    of the CPU allocator, summed in time order, the same bookkeeping tracemalloc does. MLX: its own
    ``get_peak_memory`` above ``get_active_memory`` at the start.
    """
    if framework == "torch" and torch is None:
        return None
    warm = torch_train_step(workload) if framework == "torch" else lucid_train_step(workload, framework)
    warm()
    del warm
    gc.collect()
    if framework == "torch":
        from torch._C._profiler import _EventType
        from torch.profiler import ProfilerActivity, profile

        with _quiet_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            step = torch_train_step(workload)
            for _ in range(steps):
                step()
        allocs, todo = [], list(prof.profiler.kineto_results.experimental_event_tree())
        while todo:
            e = todo.pop()
            todo.extend(e.children)
            if e.tag == _EventType.Allocation:
                allocs.append((e.start_time_ns, e.extra_fields.alloc_size))
        live = peak = 0
        for _, size in sorted(allocs):
            live += size
            peak = max(peak, live)
        return float(peak)
    if framework == "mlx":
        import mlx.core as mx

        start = mx.get_active_memory()
        mx.reset_peak_memory()
        step = lucid_train_step(workload, framework)
        for _ in range(steps):
            step()
        return float(mx.get_peak_memory() - start)
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        step = lucid_train_step(workload, framework)
        for _ in range(steps):
            step()
        return float(tracemalloc.get_traced_memory()[1] - start)
    finally:
        tracemalloc.stop()


# -- report -----------------------------------------------------------------------------------------
TARGETS = {"W1": 1.5, "W2": 2.5, "W3": 1.5, "W5": 2.0, "W6 W1": 1.5, "MNIST": 1.2, "GPT": 1.2}


def _fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "n/a"
    if unit == "MiB":
        return f"{v / 2**20:.1f}"
    return f"{v:.2f}" if v < 100 else f"{v:.0f}"


def _limit_threads(n: int) -> str:
    """Give PyTorch and NumPy's BLAS the same number of threads; describes the BLAS setting."""
    if torch is not None:
        torch.set_num_threads(n)
    if hasattr(lc, "set_num_threads"):  # Lucid's own pool (older revisions have none)
        lc.set_num_threads(n)
    import numpy  # noqa: F401 - load the BLAS so threadpoolctl can see it

    try:
        import threadpoolctl
    except ImportError:
        return "threads left at its default (threadpoolctl not installed)"
    threadpoolctl.threadpool_limits(n, user_api="blas")
    return (
        ", ".join(
            sorted(
                {
                    f"{p['internal_api']} {p['num_threads']} threads"
                    for p in threadpoolctl.threadpool_info()
                    if p["user_api"] == "blas"
                }
            )
        )
        or "not found"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", action="append", help="Lucid device(s); default: every installed backend")
    parser.add_argument("--cycles", type=int, default=None, help="timed cycles per workload (default 15, quick 4)")
    parser.add_argument("--quick", action="store_true", help="a short run: few cycles, W4 at 512x512")
    parser.add_argument(
        "--threads", type=int, default=None, help="BLAS and PyTorch threads, the same for both (default: all cores)"
    )
    parser.add_argument(
        "--only", default=None, help="comma-separated workloads (default W1-W6; with --isolate W1,W2,W5,GPT,MNIST,W3)"
    )
    parser.add_argument(
        "--isolate",
        action="store_true",
        help="each framework in its own worker process, at default threads and at one thread (or --threads N)",
    )
    parser.add_argument("--markdown", action="store_true", help="--isolate: print the README-ready table only")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # internal: serve one framework's step
    args = parser.parse_args()
    if args.worker:
        if args.threads:
            _limit_threads(args.threads)
        serve(args.worker, args.only)
        return
    devices = args.device or [b.name for b in lc.backends() if b.status == "ok"]
    if args.isolate:
        isolate_main(args, devices)
        return
    args.only = args.only or "W1,W2,W3,W4,W5,W6"
    threads = args.threads or os.cpu_count() or 1
    blas = _limit_threads(threads)
    cycles = args.cycles or (4 if args.quick else 15)
    only = set(args.only.split(","))
    n = 512 if args.quick else 1024
    frameworks = devices + (["torch"] if torch is not None else [])
    rows: list[tuple[str, str, dict[str, float | None], str, float | None]] = []

    def ratio_row(label: str, unit: str, res: dict[str, float | None], key: str) -> None:
        ref = res.get("torch")
        r = res["numpy"] / ref if ref and res.get("numpy") is not None else None
        rows.append((label, unit, res, key, r))

    for w, label in (
        ("W1", "W1 MLP train step"),
        ("W2", "W2 CNN train step"),
        ("W5", "W5 Transformer block step"),
        ("MNIST", "MNIST example net train step"),
        ("GPT", "GPT (nanoGPT-shaped) train step"),
    ):
        if w not in only:
            continue
        fns: dict[str, Step] = {d: lucid_train_step(w, d) for d in devices}
        if torch is not None:
            fns["torch"] = torch_train_step(w)
        med = alternate(fns, cycles)
        ratio_row(label, "ms", {k: v * 1e3 for k, v in med.items()}, w)
    if "W3" in only:
        med = alternate(per_op_steps(devices), max(cycles, 5))
        ratio_row(f"W3 per-op fwd+bwd ({N_OPS} ops)", "µs/op", {k: v / N_OPS * 1e6 for k, v in med.items()}, "W3")
    if "W4" in only:
        med = alternate(matmul_steps(devices, n), max(cycles // 2, 3))
        gf = {k: 3 * 2 * n**3 / v / 1e9 for k, v in med.items()}
        lib = gf.pop("numpy (library)")
        res: dict[str, float | None] = dict(gf)
        rows.append((f"W4 matmul {n}² fwd+bwd (numpy's own: {lib:.1f})", "GFLOP/s", res, "W4", gf["numpy"] / lib))
    if "W6" in only:
        for w, label in (("W1", "W6 peak memory, W1 step"), ("W5", "W6 peak memory, W5 step")):
            res = {f: peak_memory(w, f) for f in frameworks}
            ratio_row(label, "MiB", res, f"W6 {w}")

    print(f"{date.today()}, {platform.machine()} {platform.processor() or ''}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, "
          f"torch {torch.__version__ + f' ({torch.get_num_threads()} threads)' if torch else 'not installed'}, "
          f"NumPy BLAS {blas}, "
          f"{cycles} cycles")  # fmt: skip
    print()
    head = ["workload", "unit", *[f"lucid {d}" for d in devices], *(["torch"] if torch else []),
            "numpy / torch", "target", "met"]  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["---", "---"] + ["---:"] * (len(head) - 4) + ["---", "---"]) + "|")
    for label, unit, res, key, r in rows:
        cells = [_fmt(res.get(f), unit) for f in frameworks]
        if key == "W4":
            target, met = ">= 90% of numpy", "yes" if r is not None and r >= 0.9 else "no"
            rtxt = f"{r:.0%} of numpy" if r is not None else "n/a"
        elif key in TARGETS:
            target = f"<= {TARGETS[key]}x"
            met = "n/a" if r is None else ("yes" if r <= TARGETS[key] else "no")
            rtxt = f"{r:.2f}x" if r is not None else "n/a"
        else:
            target, met, rtxt = "-", "-", f"{r:.2f}x" if r is not None else "n/a"
        print("| " + " | ".join([label, unit, *cells, rtxt, target, met]) + " |")


# -- --isolate: each framework in its own process, default threads and one thread --------------------
ISOLATED_TARGETS = {"W1": 1.0, "W2": 1.0, "W5": 1.1, "GPT": 1.2, "MNIST": 1.2, "W3": 0.8, "mem W1": 1.2, "mem W5": 1.2}
SLOW = {"GPT", "MNIST"}  # steps of 0.1-3 s: a third of the cycles (at least 3)


def _mode_name(threads: int | None) -> str:
    return "default threads" if threads is None else f"{threads} thread{'s' if threads > 1 else ''}"


def isolate_main(args: argparse.Namespace, devices: list[str]) -> None:
    """Run the isolated comparison and print its table (see the module docstring)."""
    import time

    only = [w for w in ISOLATED if w in (args.only.split(",") if args.only else ISOLATED)]
    frameworks = devices + (["torch"] if torch is not None else [])
    modes: list[int | None] = [args.threads] if args.threads else [None, 1]
    cycles = args.cycles or (4 if args.quick else 15)
    load0 = os.getloadavg()[0]
    t_start = time.time()
    times: dict[tuple[str, int | None], dict[str, float]] = {}
    mems: dict[tuple[str, int | None], dict[str, float]] = {}
    for w in only:
        n = max(3, cycles // 3) if w in SLOW else cycles
        gens = min(GENERATIONS, n)
        print(
            f"{w}: {n} cycles over {len(frameworks) * len(modes)} workers, started {gens} times",
            file=sys.stderr,
            flush=True,
        )
        samples: dict[tuple[str, int | None], list[float]] = {}
        for g in range(gens):
            workers = {(f, m): WorkerStep(f, w, m) for m in modes for f in frameworks}
            try:
                share = n * (g + 1) // gens - n * g // gens
                got = alternate_samples({k: v for k, v in workers.items()}, share, warmup=1)  # type: ignore[misc]
                for key, v in got.items():
                    samples.setdefault(key, []).extend(v)  # type: ignore[arg-type]
                if w in ("W1", "W5") and g == gens - 1:
                    for (f, m), wk in workers.items():
                        mems.setdefault((w, m), {})[f] = wk.peak_rss()
            finally:
                for wk in workers.values():
                    wk.close()
        for (f, m), v in samples.items():
            times.setdefault((w, m), {})[f] = statistics.median(v) * (1e6 / N_OPS if w == "W3" else 1e3)
    import numpy

    cmd = "python benchmarks/bench_workloads.py " + " ".join(sys.argv[1:])
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    caption = (
        f"{date.today()}, {platform.machine()}, {cores} usable cores, "
        f"load average {load0:.1f} -> {os.getloadavg()[0]:.1f} over {time.time() - t_start:.0f} s, "
        f"Python {platform.python_version()}, NumPy {numpy.__version__}, "
        f"torch {torch.__version__ if torch else 'not installed'}; medians of {cycles} cycles "
        f"({max(3, cycles // 3)} for {', '.join(sorted(SLOW))}), each the median of the steps one worker ran "
        f"back to back for {SECONDS_PER_REQUEST} s; each framework in its own process, started {GENERATIONS} "
        "times per workload"
    )
    head = ["workload", "unit"]
    for m in modes:
        head += [f"{f} ({_mode_name(m)})" for f in frameworks] + [f"numpy / torch ({_mode_name(m)})"]
    head.append("target")
    rows: list[list[str]] = []

    def add(label: str, unit: str, table: dict[tuple[str, int | None], dict[str, float]], w: str, key: str) -> None:
        cells = [label, unit]
        for m in modes:
            res = table.get((w, m), {})
            for f in frameworks:
                v = res.get(f)
                cells.append("n/a" if v is None or v != v else (f"{v / 2**20:.1f}" if unit == "MiB" else _fmt(v, unit)))
            num, ref = res.get("numpy"), res.get("torch")
            cells.append(f"{num / ref:.2f}x" if num is not None and ref and num == num and ref == ref else "n/a")
        cells.append(f"<= {ISOLATED_TARGETS[key]}x" if key in ISOLATED_TARGETS else "-")
        rows.append(cells)

    for w in only:
        add(LABELS[w], "µs/op" if w == "W3" else "ms", times, w, w)
    for w in ("W1", "W5"):
        if (w, modes[0]) in mems:
            add(f"peak RSS above import, {w} step", "MiB", mems, w, f"mem {w}")
    if args.markdown:
        print(f"`{cmd}`\n\n{caption}:\n")
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join(["---", "---"] + ["---:"] * (len(head) - 3) + ["---"]) + "|")
        for r in rows:
            print("| " + " | ".join(r) + " |")
        return
    print(caption)
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        print("  ".join(c.ljust(wd) if i == 0 else c.rjust(wd) for i, (c, wd) in enumerate(zip(r, widths))))


if __name__ == "__main__":
    main()
