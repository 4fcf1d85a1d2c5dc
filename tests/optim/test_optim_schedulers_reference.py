"""Every scheduler reproduces PyTorch's learning-rate (and momentum) sequence, also across a state_dict round trip."""

from __future__ import annotations

import math
from typing import Any

import pytest
from optim_reference import cases, scheduler_reference

import lucid_core as lc
import lucid_optim as optim
from lucid_optim import lr_scheduler as sched_mod

SPECS = cases.SCHEDULER_CASES


def make_optimizer(spec: dict) -> optim.Optimizer:
    params = [lc.Parameter(lc.zeros(2)), lc.Parameter(lc.zeros(3))]
    groups = [{"params": [params[0]], "lr": cases.SCHED_LRS[0]}, {"params": [params[1]], "lr": cases.SCHED_LRS[1]}]
    if spec.get("optimizer", "SGD") == "Adam":
        return optim.Adam(groups, lr=0.1, betas=(0.9, 0.999))
    return optim.SGD(groups, lr=0.1, momentum=0.9)


def make_scheduler(spec: dict, opt: optim.Optimizer) -> Any:
    kind, kw = spec["scheduler"], dict(spec.get("kwargs", {}))
    if kind in ("LambdaLR", "MultiplicativeLR"):
        return getattr(sched_mod, kind)(opt, cases.LAMBDAS[kw["lr_lambda"]])
    if kind == "SequentialLR":
        return sched_mod.SequentialLR(
            opt, [make_scheduler(s, opt) for s in spec["children"]], milestones=kw["milestones"]
        )
    if kind == "ChainedScheduler":
        return sched_mod.ChainedScheduler([make_scheduler(s, opt) for s in spec["children"]])
    return getattr(sched_mod, kind)(opt, **kw)


def record(opt: optim.Optimizer) -> dict:
    g = opt.param_groups
    mom = [x["betas"][0] for x in g] if "betas" in g[0] else [x["momentum"] for x in g]
    return {"lr": [float(x["lr"]) for x in g], "momentum": [float(m) for m in mom]}


def run(spec: dict, roundtrip: bool) -> list[dict]:
    opt = make_optimizer(spec)
    sched = make_scheduler(spec, opt)
    seq = [record(opt)]
    for t in range(cases.SCHED_STEPS):
        opt.step()
        if spec["scheduler"] == "ReduceLROnPlateau":
            sched.step(cases.plateau_metric(t))
        else:
            sched.step()
        seq.append(record(opt))
        assert sched.get_last_lr() == [g["lr"] for g in opt.param_groups]
        if roundtrip and t + 1 == cases.SCHED_ROUNDTRIP_AT:
            o_state, s_state = opt.state_dict(), sched.state_dict()
            opt = make_optimizer(spec)
            sched = make_scheduler(spec, opt)
            opt.load_state_dict(o_state)
            sched.load_state_dict(s_state)
    return seq


def assert_sequences_close(got: list[dict], want: list[dict], what: str) -> None:
    assert len(got) == len(want) == cases.SCHED_STEPS + 1
    for step, (g, w) in enumerate(zip(got, want)):
        for key in ("lr", "momentum"):
            for a, b in zip(g[key], w[key]):
                assert math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15), f"{what}: {key} at step {step}: {a} != {b}"


def test_fixture_covers_every_case() -> None:
    assert set(scheduler_reference()) == {s["id"] for s in SPECS}


@pytest.mark.parametrize("spec", SPECS, ids=[s["id"] for s in SPECS])
def test_lr_sequence_matches_pytorch(spec: dict) -> None:
    assert_sequences_close(run(spec, roundtrip=False), scheduler_reference()[spec["id"]]["sequence"], spec["id"])


@pytest.mark.parametrize("spec", SPECS, ids=[s["id"] for s in SPECS])
def test_lr_sequence_survives_state_dict_round_trip(spec: dict) -> None:
    assert_sequences_close(run(spec, roundtrip=True), scheduler_reference()[spec["id"]]["roundtrip"], spec["id"])
