"""Activation functions and layers: PyTorch's values (fixture), stability, gradients, reprs."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lucid_core as lc
import lucid_nn as nn
from lucid_nn import functional as F
from tests.nn.fixtures.activation_cases import ACTIVATIONS

FIX = json.loads((Path(__file__).parent / "fixtures" / "nn_a.json").read_text())
FUNCS = {name: partial(case, F) for name, case in ACTIVATIONS.items()}  # the cases PyTorch ran, on Lucid


MODULES = {
    "relu": nn.ReLU(), "relu6": nn.ReLU6(), "leaky_relu": nn.LeakyReLU(0.2), "elu": nn.ELU(1.5), "selu": nn.SELU(),
    "celu": nn.CELU(0.7), "gelu": nn.GELU(), "gelu_tanh": nn.GELU("tanh"), "silu": nn.SiLU(), "mish": nn.Mish(),
    "sigmoid": nn.Sigmoid(), "tanh": nn.Tanh(), "hardtanh": nn.Hardtanh(-2.0, 1.5), "hardsigmoid": nn.Hardsigmoid(),
    "hardswish": nn.Hardswish(), "softplus": nn.Softplus(), "softplus_beta": nn.Softplus(2.0, 5.0),
    "softsign": nn.Softsign(), "logsigmoid": nn.LogSigmoid(), "softmax0": nn.Softmax(0), "softmax1": nn.Softmax(1),
    "log_softmax1": nn.LogSoftmax(1), "softmin1": nn.Softmin(1), "glu": nn.GLU(),
}  # fmt: skip


def f64(device: lc.Device) -> lc.DType:
    if lc.float64 not in device.backend.dtypes:
        pytest.skip(f"{device} has no float64")
    return lc.float64


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_functional_matches_torch_including_extreme_inputs(device, name):
    x = lc.asarray(FIX["activation"]["x"], dtype=f64(device), device=device)
    got = FUNCS[name](x).detach().numpy()
    want = np.array(FIX["activation"]["out"][name])
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_matches_functional(device, name):
    x = lc.asarray(FIX["activation"]["x"], dtype=f64(device), device=device)
    np.testing.assert_allclose(
        MODULES[name](x).detach().numpy(), np.array(FIX["activation"]["out"][name]), rtol=1e-6, atol=1e-7
    )


def test_prelu_per_channel_matches_torch(device):
    d = FIX["prelu"]
    m = nn.PReLU(3, dtype=f64(device), device=device)
    with lc.no_grad():
        m.weight.copy_(lc.asarray(d["w"], dtype=lc.float64, device=device))
    np.testing.assert_allclose(
        m(lc.asarray(d["x"], dtype=lc.float64, device=device)).detach().numpy(), d["out"], rtol=1e-12
    )
    assert m.weight.shape == (3,)
    assert nn.PReLU().weight.tolist() == [0.25]


def test_prelu_rejects_wrong_channel_count(device):
    with pytest.raises(ValueError, match="slopes but the input has 4 channels"):
        F.prelu(lc.ones((2, 4), device=device), lc.ones((3,), device=device))


GRAD_FUNCS = [n for n in FUNCS if n not in ("relu", "relu6", "hardtanh", "hardsigmoid", "hardswish", "leaky_relu")]


@pytest.mark.parametrize("name", GRAD_FUNCS)
def test_gradients_match_finite_differences(device, name):
    lc.manual_seed(3)
    x = (lc.randn(3, 4, dtype=f64(device), device=device) * 2).requires_grad_()
    assert lc.gradcheck(FUNCS[name], [x], atol=1e-6, rtol=1e-4)


@pytest.mark.parametrize("name", ["relu", "relu6", "hardtanh", "hardsigmoid", "hardswish", "leaky_relu"])
def test_piecewise_gradients_away_from_kinks(device, name):
    # values in (0.3, 0.9) + offsets keep clear of every kink (0, +-1, +-3, 6)
    base = lc.asarray([[-4.5, -2.5, -0.6, 0.4], [1.7, 2.2, 4.0, 7.0]], dtype=f64(device), device=device)
    x = base.requires_grad_()
    assert lc.gradcheck(FUNCS[name], [x], atol=1e-6, rtol=1e-4)


def test_prelu_gradient_wrt_weight(device):
    x = lc.asarray([[-1.0, 2.0], [0.5, -3.0]], dtype=f64(device), device=device).requires_grad_()
    w = lc.asarray([0.2, -0.4], dtype=lc.float64, device=device).requires_grad_()
    assert lc.gradcheck(F.prelu, [x, w])


@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.floats(-50, 50))
def test_softmax_sums_to_one_and_log_softmax_agrees(shape, shift):
    x = lc.randn(*shape, dtype=lc.float64) * 10 + shift
    s = F.softmax(x, -1)
    np.testing.assert_allclose(lc.sum(s, axis=-1).detach().numpy(), 1.0, rtol=1e-12)
    np.testing.assert_allclose(
        lc.exp(F.log_softmax(x, -1)).detach().numpy(), s.detach().numpy(), rtol=1e-10, atol=1e-300
    )


def test_softmax_of_huge_logits_is_finite(device):
    x = lc.asarray([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4]], device=device)
    assert np.all(np.isfinite(F.softmax(x, 1).detach().numpy()))
    lp = F.log_softmax(x, 1).detach().numpy()
    assert np.all(np.isfinite(lp))
    np.testing.assert_allclose(lp[1], np.log(1 / 3), rtol=1e-6)


def test_softmax_second_order_gradient(device):
    x = lc.randn(2, 3, dtype=f64(device), device=device).requires_grad_()
    assert lc.gradgradcheck(lambda v: F.log_softmax(v, 1), [x])


def test_softmax_dim_out_of_range_names_the_dim(device):
    with pytest.raises(IndexError, match="dim 2 is out of range for a 2-D tensor"):
        F.softmax(lc.ones((2, 2), device=device), 2)


def test_glu_rejects_odd_dimension(device):
    with pytest.raises(ValueError, match="halving dimension must be even"):
        F.glu(lc.ones((2, 3), device=device))


def test_gelu_rejects_unknown_approximation():
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh'"):
        nn.GELU("erf")


def test_reprs_match_torch():
    assert repr(nn.LeakyReLU(0.2)) == "LeakyReLU(negative_slope=0.2)"
    assert repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)"
    assert repr(nn.GELU("tanh")) == "GELU(approximate='tanh')"
