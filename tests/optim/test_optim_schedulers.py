"""LRScheduler base behaviour: initial_lr, last_lr, verbose, state_dict checks, errors, and WarmupCosine's shape."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

import lucid_core as lc
import lucid_optim as optim
from lucid_optim import lr_scheduler as sch


def sgd(n_groups: int = 1, lr: float = 0.1) -> optim.SGD:
    groups = [{"params": [lc.Parameter(lc.zeros(2))]} for _ in range(n_groups)]
    return optim.SGD(groups, lr=lr, momentum=0.9)


def test_scheduler_writes_initial_lr_and_base_lrs() -> None:
    opt = sgd(2)
    sched = sch.ExponentialLR(opt, gamma=0.5)
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.1]
    assert sched.base_lrs == [0.1, 0.1]
    sched.step()
    assert sched.last_lr == sched.get_last_lr() == [0.05, 0.05]
    assert sched.last_epoch == 1 and sched._step_count == 2


def test_step_with_epoch_uses_the_closed_form() -> None:
    opt = sgd()
    sched = sch.StepLR(opt, step_size=3, gamma=0.5)
    sched.step(7)
    assert sched.last_epoch == 7
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1 * 0.25)


def test_verbose_prints_each_change(capsys: pytest.CaptureFixture[str]) -> None:
    opt = sgd()
    sched = sch.StepLR(opt, step_size=2, gamma=0.5, verbose=True)
    sched.step()
    sched.step()
    out = capsys.readouterr().out.splitlines()
    assert out == ["Epoch 0: setting learning rates to [0.1].", "Epoch 2: setting learning rates to [0.05]."]


def test_load_state_dict_checks_the_group_count() -> None:
    state = sch.StepLR(sgd(2), step_size=2).state_dict()
    assert state["_group_count"] == 2 and "optimizer" not in state
    with pytest.raises(ValueError, match="saved with 2 param groups, the optimizer has 1"):
        sch.StepLR(sgd(1), step_size=2).load_state_dict(state)


def test_state_dict_is_a_copy() -> None:
    sched = sch.MultiStepLR(sgd(), milestones=[2, 4])
    state = sched.state_dict()
    state["base_lrs"][0] = 5.0
    assert sched.base_lrs == [0.1]


def test_resuming_without_initial_lr_raises_key_error() -> None:
    with pytest.raises(KeyError, match="initial_lr"):
        sch.StepLR(sgd(), step_size=2, last_epoch=3)


def test_non_optimizer_is_rejected() -> None:
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        sch.StepLR([], step_size=2)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        sch.ReduceLROnPlateau(object())


def test_base_get_lr_must_be_overridden() -> None:
    with pytest.raises(NotImplementedError, match="get_lr"):
        sch.LRScheduler(sgd())


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda o: sch.ConstantLR(o, factor=1.5), "factor"),
        (lambda o: sch.LinearLR(o, start_factor=0.0), "start_factor"),
        (lambda o: sch.CosineAnnealingWarmRestarts(o, T_0=0), "T_0"),
        (lambda o: sch.CyclicLR(o, 0.01, 0.1, mode="wiggle"), "mode"),
        (lambda o: sch.CyclicLR(o, [0.01, 0.02], 0.1), "one value per param group"),
        (lambda o: sch.OneCycleLR(o, 0.1), "total_steps"),
        (lambda o: sch.OneCycleLR(o, 0.1, total_steps=10, anneal_strategy="exp"), "anneal_strategy"),
        (lambda o: sch.ReduceLROnPlateau(o, factor=1.0), "factor"),
        (lambda o: sch.ReduceLROnPlateau(o, mode="up"), "mode"),
        (lambda o: sch.SequentialLR(o, [sch.StepLR(o, 2)], milestones=[3]), "one milestone fewer"),
        (lambda o: sch.ChainedScheduler([]), "at least one"),
        (lambda o: sch.WarmupCosine(o, warmup_steps=20, total_steps=10), "warmup_steps"),
    ],
)
def test_invalid_arguments_raise(make, match) -> None:
    with pytest.raises(ValueError, match=match):
        make(sgd())


def test_cycling_momentum_needs_an_optimizer_with_momentum() -> None:
    opt = optim.Adagrad([lc.Parameter(lc.zeros(2))], lr=0.1)
    with pytest.raises(ValueError, match="momentum or beta1"):
        sch.CyclicLR(opt, 0.01, 0.1)
    sch.CyclicLR(opt, 0.01, 0.1, cycle_momentum=False)
    assert opt.param_groups[0]["lr"] == 0.01


def test_composites_reject_plateau_and_foreign_optimizers() -> None:
    opt, other = sgd(), sgd()
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        sch.ChainedScheduler([sch.ReduceLROnPlateau(opt)])
    with pytest.raises(ValueError, match="same optimizer"):
        sch.SequentialLR(opt, [sch.StepLR(opt, 2), sch.StepLR(other, 2)], milestones=[3])


def test_plateau_reduces_after_patience_and_respects_min_lr() -> None:
    opt = sgd(lr=1.0)
    sched = sch.ReduceLROnPlateau(opt, patience=1, factor=0.5, min_lr=0.3)
    for metric in (1.0, 1.0, 1.0, 1.0, 1.0, 1.0):
        sched.step(metric)
    assert opt.param_groups[0]["lr"] == 0.3
    assert sched.get_last_lr() == [0.3]


@given(
    warmup=st.integers(0, 20),
    extra=st.integers(1, 50),
    eta_min=st.floats(0.0, 0.05),
    start=st.floats(0.0, 1.0),
)
def test_warmup_cosine_rises_then_falls_within_bounds(warmup: int, extra: int, eta_min: float, start: float) -> None:
    opt = sgd(lr=0.1)
    sched = sch.WarmupCosine(opt, warmup_steps=warmup, total_steps=warmup + extra, eta_min=eta_min,
                           warmup_start_factor=start)  # fmt: skip
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(warmup + extra + 5):
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    rising, falling = lrs[: warmup + 1], lrs[warmup:]
    assert all(a <= b + 1e-15 for a, b in pairwise(rising))
    assert all(a >= b - 1e-15 for a, b in pairwise(falling))
    assert lrs[warmup] == pytest.approx(0.1)
    assert lrs[-1] == pytest.approx(eta_min)
    assert all(min(eta_min, 0.1 * start) - 1e-12 <= x <= 0.1 + 1e-12 for x in lrs)
