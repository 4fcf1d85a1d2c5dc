"""Linear, Bilinear, Flatten/Unflatten, Dropout and Embedding layers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lucid_core as lc
import lucid_nn as nn
from lucid_nn import functional as F

FIX = json.loads((Path(__file__).parent / "fixtures" / "nn_a.json").read_text())


def f64(device: lc.Device) -> lc.DType:
    if lc.float64 not in device.backend.dtypes:
        pytest.skip(f"{device} has no float64")
    return lc.float64


def T(a, device, dtype=lc.float64):
    return lc.asarray(a, dtype=dtype, device=device)


def test_linear_and_bilinear_match_torch(device):
    d = FIX["linear"]
    f64(device)
    y = F.linear(T(d["x"], device), T(d["w"], device), T(d["b"], device))
    np.testing.assert_allclose(y.numpy(), d["out"], rtol=1e-12)
    yb = F.bilinear(T(d["x"], device), T(d["x2"], device), T(d["wb"], device), T(d["b"], device))
    np.testing.assert_allclose(yb.numpy(), d["bilinear"], rtol=1e-10)


def test_linear_init_bounds_follow_torch():
    lc.manual_seed(0)
    m = nn.Linear(50, 40)
    bound = 1 / math.sqrt(50)  # kaiming_uniform(a=sqrt(5)) gives the same bound as the bias
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(b).max() <= bound and abs(w.std() - bound / math.sqrt(3)) < 0.01


def test_linear_without_bias_and_batched_input(device):
    m = nn.Linear(3, 2, bias=False).to(device)
    assert m.bias is None and list(m.state_dict()) == ["weight"]
    assert m(lc.ones((4, 5, 3), device=device)).shape == (4, 5, 2)


def test_linear_shape_error_names_the_sizes(device):
    with pytest.raises(ValueError, match="last dimension is 4 but weight of shape \\(2, 3\\) expects 3"):
        nn.Linear(3, 2).to(device)(lc.ones((1, 4), device=device))


@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.booleans())
def test_linear_gradients(n, fin, fout, bias):
    x = lc.randn(n, fin, dtype=lc.float64).requires_grad_()
    w = lc.randn(fout, fin, dtype=lc.float64).requires_grad_()
    b = lc.randn(fout, dtype=lc.float64).requires_grad_() if bias else None
    args = [x, w] + ([b] if bias else [])
    assert lc.gradcheck(lambda *a: F.linear(*a), args)


def test_bilinear_gradients(device):
    dt = f64(device)
    x1 = lc.randn(2, 3, dtype=dt, device=device).requires_grad_()
    x2 = lc.randn(2, 2, dtype=dt, device=device).requires_grad_()
    w = lc.randn(2, 3, 2, dtype=dt, device=device).requires_grad_()
    b = lc.randn(2, dtype=dt, device=device).requires_grad_()
    assert lc.gradcheck(F.bilinear, [x1, x2, w, b])


def test_bilinear_module_shapes_and_bounds():
    m = nn.Bilinear(4, 3, 5)
    assert m.weight.shape == (5, 4, 3) and np.abs(m.weight.detach().numpy()).max() <= 0.5
    assert m(lc.ones((2, 4)), lc.ones((2, 3))).shape == (2, 5)


def test_flatten_unflatten_round_trip(device):
    x = lc.randn(2, 3, 4, device=device)
    f = nn.Flatten()(x)
    assert f.shape == (2, 12)
    assert nn.Unflatten(1, (3, 4))(f).shape == (2, 3, 4)
    assert nn.Flatten(0, 1)(x).shape == (6, 4)
    with pytest.raises(ValueError, match="has 10 elements but dim 1"):
        nn.Unflatten(1, (2, 5))(f)


# -- dropout -------------------------------------------------------------------------------------------
def test_dropout_scales_kept_values_and_is_identity_in_eval(device):
    m = nn.Dropout(0.25)
    x = lc.ones((200, 50), device=device)
    y = m(x).numpy()
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    assert 0.7 < kept.mean() < 0.8
    m.eval()
    assert m(x) is x


def test_dropout2d_zeroes_whole_channels(device):
    y = nn.Dropout2d(0.5)(lc.ones((4, 16, 3, 3), device=device)).numpy()
    per_channel = y.reshape(4, 16, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1))
    assert 0 < (per_channel == 0).all(-1).sum() < 64


def test_dropout_extremes_and_errors(device):
    x = lc.ones((3,), device=device)
    assert F.dropout(x, 1.0).tolist() == [0.0, 0.0, 0.0]
    assert F.dropout(x, 0.0) is x
    with pytest.raises(ValueError, match="between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)


def test_dropout_gradient_uses_the_same_mask(device):
    x = lc.ones((100,), device=device).requires_grad_()
    y = F.dropout(x, 0.5)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())


# -- embedding -------------------------------------------------------------------------------------------
def test_embedding_matches_torch_including_padding_gradient(device):
    d = FIX["embedding"]
    dt = f64(device)
    w = T(d["w"], device).requires_grad_()
    y = F.embedding(lc.asarray(d["idx"], device=device), w, padding_idx=2)
    np.testing.assert_allclose(y.detach().numpy(), d["out"], rtol=1e-12)
    y.backward(T(d["gy"], device, dt))
    np.testing.assert_allclose(w.grad.numpy(), d["grad"], rtol=1e-12)
    assert np.all(w.grad.numpy()[2] == 0)


def test_embedding_module_init_and_padding_row(device):
    m = nn.Embedding(10, 4, padding_idx=-1).to(device)
    assert m.padding_idx == 9 and m.weight.detach().numpy()[9].tolist() == [0.0] * 4
    out = m(lc.asarray([[1, 9]], device=device))
    assert out.shape == (1, 2, 4)
    assert repr(m) == "Embedding(10, 4, padding_idx=9)"


def test_embedding_errors(device):
    m = nn.Embedding(3, 2).to(device)
    with pytest.raises(IndexError, match="indices span \\[0, 5\\] but there are 3 rows"):
        m(lc.asarray([0, 5], device=device))
    with pytest.raises(IndexError, match=r"indices span \[-1, 2\] but there are 3 rows \(expected 0 <= index < 3\)"):
        m(lc.asarray([-1, 2], device=device))  # PyTorch refuses negative indices too
    with pytest.raises(TypeError, match="indices must be an integer tensor"):
        m(lc.asarray([0.0], device=device))


def test_embedding_from_pretrained_and_max_norm(device):
    w = lc.asarray([[3.0, 4.0], [0.3, 0.4]], device=device)
    m = nn.Embedding.from_pretrained(w)
    assert not m.weight.requires_grad
    m2 = nn.Embedding(2, 2, max_norm=1.0).to(device)
    with lc.no_grad():
        m2.weight.copy_(w)
    out = m2(lc.asarray([0], device=device))
    np.testing.assert_allclose(np.linalg.norm(out.detach().numpy()), 1.0, rtol=1e-5)
    np.testing.assert_allclose(m2.weight.detach().numpy()[1], [0.3, 0.4], rtol=1e-6)  # untouched row
