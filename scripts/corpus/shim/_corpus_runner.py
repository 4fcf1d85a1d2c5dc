"""Runs one corpus program under torch or lucid and records what the comparison needs.

    python -m _corpus_runner --framework torch --record out.npz [--init-from torch.npz] [--steps 3] \
        -- entry.py ARG...

The program runs as ``__main__`` (``runpy``) in the current folder. The runner patches the framework's
``optim.Optimizer.__init__`` so every optimizer, when it is built, records its parameters (the initial
weights) and, in the lucid run with ``--init-from``, first copies in the torch run's initial weights, so
both runs start from the same numbers whatever each framework's initialisation draws. Each optimizer's
``step`` is wrapped: the gradients before and the parameters after its first ``--steps`` steps are
recorded, and the last parameters at exit. In the lucid run, the parameters after each recorded step are
then set to the torch run's (so each step is compared from equal starting numbers). What the program printed
is captured by the harness, not here.
The record (``.npz``) and a ``.json`` beside it (the error the program stopped on, counts) are written at
exit even when the program raises.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import runpy
import sys
import traceback
import types
from pathlib import Path
from typing import Any

import numpy as np

RECORD: dict[str, np.ndarray] = {}
OPTIMIZERS: list[Any] = []
STEPS: list[int] = []


def to_numpy(t: Any) -> np.ndarray:
    """A tensor of either framework as a NumPy array (only ``detach`` and ``numpy``: the smallest surface)."""
    return np.array(t.detach().numpy(), copy=True)


def record(name: str, value: Any) -> None:
    """Store an extra output under ``out/<name>`` (drivers call this; both runs must record the same names)."""
    RECORD[f"out/{name}"] = value if isinstance(value, np.ndarray) else np.asarray(to_numpy(value))


def _params(opt: Any) -> list[Any]:
    return [p for group in opt.param_groups for p in group["params"]]


def _resync(fw: Any, opt: Any, torch_record: dict[str, np.ndarray], prefix: str) -> None:
    """Copy the torch run's parameters after this step in, so that each recorded step of the lucid run starts
    from torch's numbers and its error is its own, not float32 noise carried over (Adam turns the noise in
    near-zero gradients into full-size updates)."""
    with fw.no_grad():
        for i, p in enumerate(_params(opt)):
            key = f"{prefix}/{i}"
            if key in torch_record and tuple(p.shape) == torch_record[key].shape:
                p.copy_(fw.tensor(torch_record[key]))


def _install(fw: Any, steps: int, init: dict[str, np.ndarray] | None) -> None:
    base = fw.optim.Optimizer
    original_init = base.__init__

    def patched_init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        if getattr(self, "_corpus_index", None) is not None:
            return  # a subclass calling __init__ twice
        j = len(OPTIMIZERS)
        self._corpus_index = j
        OPTIMIZERS.append(self)
        STEPS.append(0)
        params = _params(self)
        for i, p in enumerate(params):
            RECORD[f"o{j}/own_init/{i}"] = to_numpy(p)
        if init is not None:
            with fw.no_grad():
                for i, p in enumerate(params):
                    key = f"o{j}/init/{i}"
                    if key not in init:
                        raise RuntimeError(f"corpus: optimizer {j} has parameter {i} that the torch run did not have")
                    want = init[key]
                    if tuple(p.shape) != want.shape:
                        raise RuntimeError(
                            f"corpus: optimizer {j} parameter {i} has shape {tuple(p.shape)}, torch's {want.shape}"
                        )
                    p.copy_(fw.tensor(want))
        for i, p in enumerate(params):
            RECORD[f"o{j}/init/{i}"] = to_numpy(p)
        step = self.step

        def recorded_step(opt: Any, *a: Any, **kw: Any) -> Any:
            k = STEPS[j]
            if k < steps:
                for i, p in enumerate(_params(opt)):
                    if p.grad is not None:
                        RECORD[f"o{j}/s{k}/g/{i}"] = to_numpy(p.grad)
            out = step(*a, **kw)
            if k < steps:
                for i, p in enumerate(_params(opt)):
                    RECORD[f"o{j}/s{k}/p/{i}"] = to_numpy(p)
                if init is not None:
                    _resync(fw, opt, init, f"o{j}/s{k}/p")
            STEPS[j] = k + 1
            return out

        # a bound method, as schedulers expect (PyTorch's wraps ``optimizer.step.__func__``)
        self.step = types.MethodType(recorded_step, self)

    base.__init__ = patched_init


def _dropout_off(fw: Any) -> None:
    """Make dropout the identity (its masks are random draws that Lucid does not promise to reproduce)."""

    def identity(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002 -- PyTorch's argument name
        return input

    for name in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"):
        if hasattr(fw.nn.functional, name):
            setattr(fw.nn.functional, name, identity)
    for name in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"):
        if hasattr(fw.nn, name):
            getattr(fw.nn, name).forward = lambda self, x: x


def main(argv: list[str] | None = None) -> int:
    """Parse the runner's options, run the program, write the record."""
    parser = argparse.ArgumentParser(description="run one corpus program and record it")
    parser.add_argument("--framework", required=True, choices=["torch", "lucid"])
    parser.add_argument("--record", required=True, type=Path)
    parser.add_argument("--init-from", type=Path)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--dropout-off", action="store_true", help="dropout is the identity in this run")
    parser.add_argument("--default-dtype", help="the framework's default floating dtype in this run (float64)")
    parser.add_argument("entry")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args(argv)
    os.environ["CORPUS_FRAMEWORK"] = opts.framework
    fw = importlib.import_module(opts.framework)
    importlib.import_module(f"{opts.framework}.optim")
    # every generator seeded alike in both runs (programs that draw from Python's or NumPy's unseeded)
    fw.manual_seed(0)
    if opts.default_dtype:
        fw.set_default_dtype(getattr(fw, opts.default_dtype))
        os.environ["CORPUS_DTYPE"] = opts.default_dtype  # the image stand-ins follow
    random.seed(0)
    np.random.seed(0)
    init = dict(np.load(opts.init_from)) if opts.init_from else None
    _install(fw, opts.steps, init)
    if opts.dropout_off:
        importlib.import_module(f"{opts.framework}.nn.functional")
        _dropout_off(fw)
    error: dict[str, Any] | None = None
    entry = Path(opts.entry).resolve()
    sys.argv = [str(entry), *[a for a in opts.args if a != "--"]]
    sys.path.insert(0, str(entry.parent))
    try:
        runpy.run_path(str(entry), run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            error = {"type": "SystemExit", "message": str(exc.code), "where": ""}
    except BaseException as exc:  # noqa: BLE001 -- any failure of the program is the result being recorded
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if "_corpus_runner" not in f.filename]
        here = str(Path.cwd())
        program = [f for f in frames if f.filename.startswith(here)]
        where = program[-1] if program else (frames[-1] if frames else None)
        error = {
            "type": type(exc).__name__,
            "message": str(exc).splitlines()[0][:300] if str(exc) else "",
            "where": f"{Path(where.filename).name}:{where.lineno}: {where.line}" if where else "",
            "traceback": traceback.format_exc()[-4000:],
        }
    for j, opt in enumerate(OPTIMIZERS):
        for i, p in enumerate(_params(opt)):
            RECORD[f"o{j}/final/{i}"] = to_numpy(p)
    np.savez(opts.record, **RECORD)
    info = {"error": error, "optimizers": len(OPTIMIZERS), "steps": STEPS}
    opts.record.with_suffix(".json").write_text(json.dumps(info, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
