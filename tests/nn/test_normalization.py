"""BatchNorm (running stats, momentum, eval), LayerNorm, GroupNorm, InstanceNorm, RMSNorm."""

from __future__ import annotations

import json
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


def T(a, device):
    return lc.asarray(a, dtype=lc.float64, device=device)


CASES = {
    "bn1d": lambda: nn.BatchNorm1d(3, momentum=0.1),
    "bn1d_cumulative": lambda: nn.BatchNorm1d(3, momentum=None),
    "bn2d_noaffine": lambda: nn.BatchNorm2d(3, momentum=0.3, affine=False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_batchnorm_training_running_stats_and_eval_match_torch(device, case):
    d = FIX["batchnorm"][case]
    m = CASES[case]().to(device, f64(device))
    if m.affine:
        with lc.no_grad():
            m.weight.copy_(lc.linspace(0.5, 1.5, 3, dtype=lc.float64, device=device))
            m.bias.copy_(lc.linspace(-0.2, 0.3, 3, dtype=lc.float64, device=device))
    for x, y in zip(d["xs"], d["ys"]):
        np.testing.assert_allclose(m(T(x, device)).detach().numpy(), y, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(m.running_mean.numpy(), d["running_mean"], rtol=1e-10)
    np.testing.assert_allclose(m.running_var.numpy(), d["running_var"], rtol=1e-10)
    assert m.num_batches_tracked.item() == d["num_batches_tracked"]
    assert m.num_batches_tracked.dtype == lc.int64
    m.eval()
    np.testing.assert_allclose(m(T(d["x_eval"], device)).detach().numpy(), d["y_eval"], rtol=1e-10, atol=1e-12)


def test_batchnorm_state_dict_keys_like_torch():
    assert list(nn.BatchNorm1d(2).state_dict()) == [
        "weight", "bias", "running_mean", "running_var", "num_batches_tracked",
    ]  # fmt: skip
    assert list(nn.BatchNorm1d(2, affine=False, track_running_stats=False).state_dict()) == []


def test_batchnorm_without_running_stats_uses_batch_stats_in_eval(device):
    m = nn.BatchNorm1d(2, track_running_stats=False).to(device).eval()
    y = m(lc.asarray([[1.0, 2.0], [3.0, 6.0]], device=device)).detach().numpy()
    np.testing.assert_allclose(y, [[-1, -1], [1, 1]], atol=1e-4)


def test_batchnorm_errors(device):
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        nn.BatchNorm1d(3).to(device)(lc.ones((1, 3), device=device))
    with pytest.raises(ValueError, match="expected 4D input \\(got 2D input\\)"):
        nn.BatchNorm2d(3)(lc.ones((2, 3), device=device))


def test_batchnorm_gradients(device):
    dt = f64(device)
    x = lc.randn(4, 3, dtype=dt, device=device).requires_grad_()
    w = lc.randn(3, dtype=dt, device=device).requires_grad_()
    b = lc.randn(3, dtype=dt, device=device).requires_grad_()
    assert lc.gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), [x, w, b])


def test_norms_match_torch(device):
    d = FIX["norms"]
    f64(device)
    x, w, b, wl, bl = (T(d[k], device) for k in ("x", "w", "b", "wl", "bl"))
    checks = {
        "layer_norm": F.layer_norm(x, (3, 3), wl, bl),
        "layer_norm_last": F.layer_norm(x, 3),
        "group_norm": F.group_norm(x, 2, w, b),
        "instance_norm": F.instance_norm(x, weight=w, bias=b),
        "rms_norm": F.rms_norm(x, (3, 3), wl),
        "rms_norm_eps": F.rms_norm(x, (3,), None, 1e-3),
    }
    for name, got in checks.items():
        np.testing.assert_allclose(got.numpy(), d[name], rtol=1e-9, atol=1e-12, err_msg=name)


def test_norm_modules_match_functional(device):
    d = FIX["norms"]
    f64(device)
    x = T(d["x"], device)
    ln = nn.LayerNorm((3, 3)).to(device, lc.float64)
    with lc.no_grad():
        ln.weight.copy_(T(d["wl"], device))
        ln.bias.copy_(T(d["bl"], device))
    np.testing.assert_allclose(ln(x).detach().numpy(), d["layer_norm"], rtol=1e-9)
    gn = nn.GroupNorm(2, 4).to(device, lc.float64)
    with lc.no_grad():
        gn.weight.copy_(T(d["w"], device))
        gn.bias.copy_(T(d["b"], device))
    np.testing.assert_allclose(gn(x).detach().numpy(), d["group_norm"], rtol=1e-9)
    inn = nn.InstanceNorm2d(4, affine=True).to(device, lc.float64)
    with lc.no_grad():
        inn.weight.copy_(T(d["w"], device))
        inn.bias.copy_(T(d["b"], device))
    np.testing.assert_allclose(inn(x).detach().numpy(), d["instance_norm"], rtol=1e-9)
    np.testing.assert_allclose(inn(x[0]).detach().numpy(), d["instance_norm"][0], rtol=1e-9)  # unbatched
    rn = nn.RMSNorm(3, eps=1e-3).to(device, lc.float64)
    np.testing.assert_allclose(rn(x).detach().numpy(), d["rms_norm_eps"], rtol=1e-9)


def test_instance_norm_tracks_running_stats(device):
    m = nn.InstanceNorm2d(2, track_running_stats=True).to(device)
    x = lc.randn(3, 2, 4, 4, device=device) * 3 + 1
    m(x)
    assert m.num_batches_tracked.item() == 0  # PyTorch's instance norm never counts batches
    assert np.all(m.running_mean.numpy() != 0)
    m.eval()
    assert m(x).shape == x.shape


@given(st.integers(1, 3), st.integers(2, 4))
def test_layer_norm_gradients(n, d):
    x = lc.randn(n, d, dtype=lc.float64).requires_grad_()
    w = lc.randn(d, dtype=lc.float64).requires_grad_()
    b = lc.randn(d, dtype=lc.float64).requires_grad_()
    assert lc.gradcheck(lambda x, w, b: F.layer_norm(x, d, w, b), [x, w, b])


def test_group_instance_rms_gradients(device):
    dt = f64(device)
    x = lc.randn(2, 4, 3, dtype=dt, device=device).requires_grad_()
    w = lc.randn(4, dtype=dt, device=device).requires_grad_()
    assert lc.gradcheck(lambda x, w: F.group_norm(x, 2, w, None), [x, w])
    assert lc.gradcheck(lambda x: F.instance_norm(x), [x])
    assert lc.gradcheck(lambda x: F.rms_norm(x, 3), [x])


def test_layer_norm_shape_error(device):
    with pytest.raises(ValueError, match="expected input with shape \\[\\*, 4\\]"):
        nn.LayerNorm(4)(lc.ones((2, 3), device=device))
    with pytest.raises(ValueError, match="must be divisible by num_groups"):
        nn.GroupNorm(3, 4)
