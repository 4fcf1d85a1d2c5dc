"""Every optimizer and option combination follows PyTorch's parameter trajectory (fixtures from torch 2.13)."""

from __future__ import annotations

import numpy as np
import pytest
from optim_reference import (
    assert_trajectory,
    build_optimizer,
    cases,
    make_params,
    optimizer_reference,
    run_steps,
    supports,
)

import lucid_core as lc

CASES = [(c, dt) for c in cases.OPTIMIZER_CASES for dt in c["dtypes"]]
IDS = [f"{c['id']}-{dt}" for c, dt in CASES]


def test_fixture_covers_every_case() -> None:
    assert set(optimizer_reference()) == {c["id"] for c in cases.OPTIMIZER_CASES}


QUADRATIC = [c for c in cases.OPTIMIZER_CASES if c.get("problem") == "quadratic"]


@pytest.mark.parametrize("case", QUADRATIC, ids=[c["id"] for c in QUADRATIC])
def test_float32_lbfgs_fixture_is_not_chaotic(case: dict) -> None:
    # PyTorch's own float32 and float64 runs agree well inside the float32 tolerance, so rounding noise is not
    # amplified (on lbfgs_loss they drift apart by 1e-3, which is why float32 LBFGS is only checked here)
    ref = optimizer_reference()[case["id"]]["trajectories"]
    for f32, f64 in zip(ref["float32"], ref["float64"]):
        for a, b in zip(f32, f64):
            np.testing.assert_allclose(a, b, rtol=2.5e-6, atol=0, err_msg=case["id"])


@pytest.mark.parametrize(("case", "dtype_name"), CASES, ids=IDS)
def test_trajectory_matches_pytorch(device: lc.Device, case: dict, dtype_name: str) -> None:
    if not supports(device, dtype_name):
        pytest.skip(f"{device} has no {dtype_name}")
    params = make_params(device, dtype_name)
    opt = build_optimizer(case, params)
    snaps = run_steps(case, opt, params, range(1, cases.STEPS + 1), dtype_name)
    assert_trajectory(case["id"], dtype_name, snaps)


@pytest.mark.parametrize(("case", "dtype_name"), CASES, ids=IDS)
def test_trajectory_survives_state_dict_round_trip(device: lc.Device, case: dict, dtype_name: str) -> None:
    if not supports(device, dtype_name):
        pytest.skip(f"{device} has no {dtype_name}")
    params = make_params(device, dtype_name)
    opt = build_optimizer(case, params)
    run_steps(case, opt, params, range(1, cases.ROUNDTRIP_AT + 1), dtype_name)
    saved = opt.state_dict()
    fresh = build_optimizer(case, params)
    fresh.load_state_dict(saved)
    snaps = run_steps(case, fresh, params, range(cases.ROUNDTRIP_AT + 1, cases.STEPS + 1), dtype_name)
    assert snaps
    assert_trajectory(case["id"], dtype_name, snaps)
