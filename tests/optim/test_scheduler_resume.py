"""A resumed scheduler reproduces the uninterrupted run step for step (issue 13, seed 000's load order).

The resume follows the seed exactly: ``opt.load_state_dict(s)``, then ``sched = Scheduler(opt)`` (whose
constructor resets the groups' rates), then ``sched.load_state_dict(t)``. Two param groups, SGD with momentum.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import lucid_core as lc
import lucid_optim as optim
from lucid_optim import lr_scheduler as sch

STEPS, SAVE_AT = 12, 5


def _model(device: Any) -> list[lc.Parameter]:
    return [
        lc.Parameter(lc.asarray([1.0, -2.0], device=device)),
        lc.Parameter(lc.asarray([0.5, 3.0, -1.0], device=device)),
    ]


def _optimizer(params: list[lc.Parameter]) -> optim.SGD:
    groups = [{"params": [params[0]], "lr": 0.1}, {"params": [params[1]], "lr": 0.05}]
    return optim.SGD(groups, lr=0.1, momentum=0.9)


def _loss(params: list[lc.Parameter]) -> lc.Tensor:
    a, b = params
    return (a * a).sum() + ((b - 1.0) * (b - 1.0) * b).sum()


Make = Callable[[optim.Optimizer], Any]

SCHEDULERS: dict[str, Make] = {
    "StepLR": lambda opt: sch.StepLR(opt, step_size=3, gamma=0.5),
    "OneCycleLR": lambda opt: sch.OneCycleLR(opt, max_lr=[0.2, 0.1], total_steps=STEPS + 1),
    "CosineAnnealingWarmRestarts": lambda opt: sch.CosineAnnealingWarmRestarts(opt, T_0=4, T_mult=2, eta_min=0.01),
    "ReduceLROnPlateau": lambda opt: sch.ReduceLROnPlateau(opt, factor=0.5, patience=0, threshold=0.5),
    "ExponentialLR": lambda opt: sch.ExponentialLR(opt, gamma=0.8),
    "LambdaLR": lambda opt: sch.LambdaLR(opt, lr_lambda=lambda e: 1.0 / (1 + e)),
    "LinearLR": lambda opt: sch.LinearLR(opt, start_factor=0.2, total_iters=8),
    "CosineAnnealingLR": lambda opt: sch.CosineAnnealingLR(opt, T_max=7, eta_min=0.001),
    "PolynomialLR": lambda opt: sch.PolynomialLR(opt, total_iters=10, power=2.0),
    "CyclicLR": lambda opt: sch.CyclicLR(opt, base_lr=0.01, max_lr=[0.2, 0.1], step_size_up=3),
    "ChainedScheduler": lambda opt: sch.ChainedScheduler(
        [sch.StepLR(opt, step_size=2, gamma=0.5), sch.ExponentialLR(opt, gamma=0.9)]
    ),
    "SequentialLR": lambda opt: sch.SequentialLR(
        opt,
        [sch.LinearLR(opt, start_factor=0.25, total_iters=3), sch.StepLR(opt, step_size=2, gamma=0.5)],
        milestones=[4],
    ),
}


def _step(params: list[lc.Parameter], opt: optim.Optimizer, sched: Any) -> float:
    opt.zero_grad()
    loss = _loss(params)
    loss.backward()
    opt.step()
    if isinstance(sched, sch.ReduceLROnPlateau):
        sched.step(loss.item())
    else:
        sched.step()
    return loss.item()


def _snapshot(params: list[lc.Parameter], opt: optim.Optimizer) -> tuple[Any, ...]:
    return (
        [p.tolist() for p in params],
        [g["lr"] for g in opt.param_groups],
        [g["momentum"] for g in opt.param_groups],
    )


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_resumed_run_equals_the_uninterrupted_one(name: str) -> None:
    make = SCHEDULERS[name]
    device = "numpy"
    # the uninterrupted run, saving at SAVE_AT
    params = _model(device)
    opt = _optimizer(params)
    sched = make(opt)
    trace = []
    for i in range(STEPS):
        if i == SAVE_AT:
            saved = ([p.tolist() for p in params], opt.state_dict(), sched.state_dict(), _snapshot(params, opt))
        _step(params, opt, sched)
        trace.append(_snapshot(params, opt))

    # the resumed run: fresh objects, loaded in the seed's order
    values, opt_state, sched_state, at_save = saved
    params2 = [lc.Parameter(lc.asarray(v, device=device)) for v in values]
    opt2 = _optimizer(params2)
    opt2.load_state_dict(opt_state)
    sched2 = make(opt2)
    sched2.load_state_dict(sched_state)
    assert [g["lr"] for g in opt2.param_groups] == sched2.get_last_lr()
    assert _snapshot(params2, opt2) == at_save
    for i in range(SAVE_AT, STEPS):
        _step(params2, opt2, sched2)
        assert _snapshot(params2, opt2) == trace[i], f"{name}: step {i} differs after resuming"
    assert sched2.get_last_lr() == sched.get_last_lr()


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_load_state_dict_restores_the_rates_of_the_saved_step(name: str) -> None:
    opt = _optimizer(_model("numpy"))
    sched = SCHEDULERS[name](opt)
    for _ in range(SAVE_AT):
        _step(opt.param_groups[0]["params"] + opt.param_groups[1]["params"], opt, sched)
    state, lrs = sched.state_dict(), [g["lr"] for g in opt.param_groups]
    for g in opt.param_groups:
        g["lr"] = 123.0  # what a freshly built scheduler (or anything else) may have left there
    sched.load_state_dict(state)
    assert [g["lr"] for g in opt.param_groups] == lrs == sched.get_last_lr()
