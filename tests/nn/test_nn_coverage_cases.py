"""Every case of ``fixtures/coverage_cases.py`` (the nn/functional names added for issue 33) against PyTorch:
outputs, integer outputs (indices) exactly, and gradients of ``sum(out * cot)`` for inputs and parameters."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import lucid_core as lc
import lucid_nn as nn
import lucid_nn.functional as F
from tests.nn.fixtures.coverage_cases import CASES, FUNCTIONAL, MODULES, Case, cotangent, make_inputs

FIX = json.loads((Path(__file__).parent / "fixtures" / "nn_coverage.json").read_text())["cases"]
API = SimpleNamespace(F=F, nn=nn, dt=lc.float64)


def _flatten(out: Any) -> list[lc.Tensor]:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _close(actual: Any, expected: Any, tol: float, what: str) -> None:
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64),
                               rtol=tol, atol=tol, err_msg=what)  # fmt: skip


def run_case(case: Case, device: lc.Device) -> None:
    ref = FIX[case.name]
    tensors = [
        lc.asarray(a, dtype=getattr(lc, case.dtype if a.dtype.kind == "f" else a.dtype.name), device=device,
                   requires_grad=i in case.grad)
        for i, a in enumerate(make_inputs(case))
    ]  # fmt: skip
    args: list[Any] = []
    m = None
    if case.module is not None:
        m = case.module(API).to(device)
        m.train(case.train)
        if case.dry_run:
            with lc.no_grad():
                case.call(API, m, *tensors)
        m.load_state_dict({k: lc.asarray(np.asarray(v), device=device) for k, v in ref["state"].items()})
        args = [m]
    outs = _flatten(case.call(API, *args, *tensors))
    assert len(outs) == len(ref["outs"]), f"{case.name}: {len(outs)} outputs, PyTorch gives {len(ref['outs'])}"
    total = None
    for k, (o, r) in enumerate(zip(outs, ref["outs"])):
        assert list(o.shape) == r["shape"], f"{case.name} output {k}: shape {o.shape}, PyTorch {tuple(r['shape'])}"
        if r["kind"] == "i":
            assert o.dtype.kind in "iu", f"{case.name} output {k}: expected integers, got {o.dtype.name}"
            np.testing.assert_array_equal(o.numpy(), np.asarray(r["values"]), err_msg=f"{case.name} output {k}")
            continue
        _close(o.detach().numpy(), r["values"], case.tol, f"{case.name} output {k}")
        if o.requires_grad:
            term = lc.sum(o * lc.asarray(cotangent(case, k, tuple(o.shape)), dtype=o.dtype, device=device))
            total = term if total is None else total + term
    if total is not None:
        total.backward()
    for i, g in ref["grads"].items():
        got = tensors[int(i)].grad
        if g is None:
            assert got is None or not np.any(got.numpy()), f"{case.name}: input {i} should get no gradient"
        else:
            assert got is not None, f"{case.name}: input {i} got no gradient"
            _close(got.numpy(), g, case.tol, f"{case.name} grad of input {i}")
    if m is not None:
        for n, p in m.named_parameters():
            g = ref["param_grads"][n]
            if g is None:
                assert p.grad is None or not np.any(p.grad.numpy()), f"{case.name}: {n} should get no gradient"
            else:
                assert p.grad is not None, f"{case.name}: parameter {n} got no gradient"
                _close(p.grad.numpy(), g, case.tol, f"{case.name} grad of {n}")
        buffers = dict(m.named_buffers())
        assert sorted(buffers) == sorted(ref["buffers_after"]), f"{case.name}: buffers differ from PyTorch's"
        for n, b in ref["buffers_after"].items():
            _close(buffers[n].numpy(), b, case.tol, f"{case.name} buffer {n} after the call")


@pytest.mark.parametrize("name", [c.name for c in FUNCTIONAL])
def test_functional_matches_torch(name: str, device: lc.Device) -> None:
    run_case(CASES[name], device)


@pytest.mark.parametrize("name", [c.name for c in MODULES])
def test_module_matches_torch(name: str, device: lc.Device) -> None:
    if name in DUPLICATE_WRITES and device.backend.name == "strict":
        # overlapping pooling windows hand the same index to two outputs; a plain Array API library can only
        # scatter, so the strict backend refuses a write it cannot order (saying so) instead of guessing
        with pytest.raises(IndexError, match="cannot choose between values assigned twice"):
            run_case(CASES[name], device)
        return
    run_case(CASES[name], device)


#: cases whose unpooling writes one position twice (MaxPool1d(3, 2): neighbouring windows share an element)
DUPLICATE_WRITES = ("MaxUnpool1d",)
