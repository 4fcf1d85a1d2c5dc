"""Shared helpers for the optimizer tests: the fixture cases and PyTorch's stored numbers."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np

import lucid_core as lc
import lucid_optim as optim
from tests.optim.fixtures import cases

FIXTURES = Path(__file__).resolve().parent / "fixtures"

TOLERANCE = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=1e-5, atol=1e-6)}


@cache
def optimizer_reference() -> dict[str, dict]:
    data = json.loads((FIXTURES / "optimizers.json").read_text())
    return {c["id"]: c for c in data["cases"]}


@cache
def scheduler_reference() -> dict[str, dict]:
    data = json.loads((FIXTURES / "schedulers.json").read_text())
    return {c["id"]: c for c in data["cases"]}


def supports(device: lc.Device, dtype_name: str) -> bool:
    return getattr(lc, dtype_name) in device.backend.dtypes


def make_params(device: lc.Device, dtype_name: str) -> list[lc.Parameter]:
    dtype = getattr(lc, dtype_name)
    return [
        lc.Parameter(lc.asarray(np.asarray(v, dtype=np.float64), device=device).astype(dtype))
        for v in cases.initial_params()
    ]


def build_optimizer(case: dict, params: list[lc.Parameter]) -> optim.Optimizer:
    cls = getattr(optim, case["optimizer"])
    return cls(cases.groups_for(case, params), **case["kwargs"])


def run_steps(case: dict, opt: optim.Optimizer, params: list[lc.Parameter], steps: range, dtype_name: str) -> dict:
    """Run ``steps`` (1-based) of the case's gradient rule; returns {step: flat params} at checkpoints."""
    dtype = getattr(lc, dtype_name)
    noise = cases.gradient_noise()
    snaps = {}
    for step in steps:
        if case["optimizer"] == "LBFGS":

            def closure() -> lc.Tensor:
                opt.zero_grad()
                loss = cases.closure_loss(case, params, lc)
                loss.backward()
                return loss

            opt.step(closure)
        else:
            for p, n in zip(params, noise[step - 1]):
                g = lc.asarray(np.asarray(n, dtype=np.float64), device=p.device).astype(dtype)
                p.grad = g + cases.GRAD_COUPLING * p.detach()
            opt.step()
        if step in cases.CHECKPOINTS:
            snaps[step] = [np.asarray(p.detach().astype(lc.float64)).reshape(-1) for p in params]
    return snaps


def assert_trajectory(case_id: str, dtype_name: str, snaps: dict) -> None:
    expected = optimizer_reference()[case_id]["trajectories"][dtype_name]
    for step, ref in zip(cases.CHECKPOINTS, expected):
        if step not in snaps:
            continue
        for got, want in zip(snaps[step], ref):
            np.testing.assert_allclose(got, np.asarray(want), **TOLERANCE[dtype_name], err_msg=f"{case_id} step {step}")
