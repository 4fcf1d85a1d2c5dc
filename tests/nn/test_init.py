"""nn.init: PyTorch's gains, fans, distributions and bounds; in-place and outside the graph."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import lucid_core as lc
import lucid_nn as nn
from lucid_nn import init

_calculate_fan_in_and_fan_out = init._calculate_fan_in_and_fan_out
FIX = json.loads((Path(__file__).parent / "fixtures" / "nn_a.json").read_text())


def test_calculate_gain_matches_torch():
    for name, want in FIX["misc"]["gains"].items():
        assert init.calculate_gain(name) == pytest.approx(want)
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(FIX["misc"]["gain_leaky"])
    with pytest.raises(ValueError, match="Unsupported nonlinearity 'swish'"):
        init.calculate_gain("swish")


def test_fans_of_linear_and_conv_weights():
    assert _calculate_fan_in_and_fan_out(lc.empty((5, 3))) == (3, 5)
    assert _calculate_fan_in_and_fan_out(lc.empty((8, 4, 3, 3))) == (36, 72)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        _calculate_fan_in_and_fan_out(lc.empty((3,)))


def test_in_place_fills_keep_the_parameter_and_return_it(device):
    p = nn.Parameter(lc.empty((3, 4), device=device))
    assert init.constant_(p, 0.5) is p and p.requires_grad
    assert np.all(p.detach().numpy() == 0.5)
    assert np.all(init.zeros_(p).detach().numpy() == 0) and np.all(init.ones_(p).detach().numpy() == 1)
    np.testing.assert_array_equal(init.eye_(p).detach().numpy(), np.eye(3, 4))
    assert p.is_leaf and p.grad is None


def test_uniform_and_normal_statistics(device):
    t = lc.empty((200, 100), device=device)
    u = init.uniform_(t, -2.0, 3.0).numpy()
    assert u.min() >= -2 and u.max() < 3 and abs(u.mean() - 0.5) < 0.05
    n = init.normal_(t, 1.0, 0.5).numpy()
    assert abs(n.mean() - 1.0) < 0.01 and abs(n.std() - 0.5) < 0.01


def test_xavier_and_kaiming_bounds_and_stds(device):
    t = lc.empty((300, 200), device=device)
    a = math.sqrt(6 / 500)
    x = init.xavier_uniform_(t).numpy()
    assert x.max() <= a and x.max() > 0.95 * a
    assert abs(init.xavier_normal_(t, gain=2.0).numpy().std() - 2 * math.sqrt(2 / 500)) < 0.003
    b = math.sqrt(2) * math.sqrt(3 / 200)
    k = init.kaiming_uniform_(t, nonlinearity="relu").numpy()
    assert k.max() <= b and k.max() > 0.95 * b
    kn = init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu").numpy()
    assert abs(kn.std() - math.sqrt(2 / 300)) < 0.003
    with pytest.raises(ValueError, match="Mode 'fan_avg' not supported"):
        init.kaiming_uniform_(t, mode="fan_avg")


def test_trunc_normal_is_truncated_with_right_moments(device):
    t = init.trunc_normal_(lc.empty((400, 100), device=device), mean=0.5, std=1.0, a=-1.0, b=2.0).numpy()
    assert t.min() >= -1.0 and t.max() <= 2.0
    # mean of N(0.5, 1) truncated to [-1, 2] is 0.5 (symmetric interval)
    assert abs(t.mean() - 0.5) < 0.02
    s = init.trunc_normal_(lc.empty((40000,), device=device), std=0.02).numpy()
    assert abs(s.std() - 0.02) < 0.001


def test_orthogonal_rows_or_columns_are_orthonormal(device):
    for shape in ((4, 6), (6, 4), (3, 2, 2)):
        w = init.orthogonal_(lc.empty(shape, dtype=lc.float64, device=device), gain=2.0).numpy().reshape(shape[0], -1)
        small = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
        np.testing.assert_allclose(small, 4 * np.eye(small.shape[0]), atol=1e-8)


def test_dirac_makes_identity_convolution_weight(device):
    w = init.dirac_(lc.empty((2, 2, 3), device=device)).numpy()
    assert w[0, 0, 1] == 1 and w[1, 1, 1] == 1 and w.sum() == 2


def test_seeded_init_is_reproducible():
    lc.manual_seed(5)
    a = nn.Linear(4, 4).weight.detach().numpy()
    lc.manual_seed(5)
    b = nn.Linear(4, 4).weight.detach().numpy()
    np.testing.assert_array_equal(a, b)
