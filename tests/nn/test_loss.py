"""Losses: PyTorch's values for every reduction and option, stability for extreme logits, gradients."""

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
D = FIX["loss"]


def f64(device: lc.Device) -> lc.DType:
    if lc.float64 not in device.backend.dtypes:
        pytest.skip(f"{device} has no float64")
    return lc.float64


def T(a, device):
    return lc.asarray(a, dtype=lc.float64, device=device)


def I(a, device):  # noqa: E743
    return lc.asarray(a, dtype=lc.int64, device=device)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ls", [0.0, 0.2])
@pytest.mark.parametrize("kind", ["idx", "idx_w", "ign", "ign_w", "prob", "prob_w"])
def test_cross_entropy_matches_torch(device, reduction, ls, kind):
    f64(device)
    logits = T(D["logits"], device)
    target = T(D["probs"], device) if kind.startswith("prob") else I(D["tgt_ign" if "ign" in kind else "tgt"], device)
    weight = T(D["cw"], device) if kind.endswith("_w") else None
    got = F.cross_entropy(logits, target, weight=weight, reduction=reduction, label_smoothing=ls).numpy()
    want = D["ce"][f"{kind}_{reduction}_{ls}"]
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_cross_entropy_spatial_unbatched_and_extreme_gradient(device):
    f64(device)
    got = F.cross_entropy(T(D["spatial"], device), I(D["spatial_t"], device)).item()
    np.testing.assert_allclose(got, D["ce"]["spatial"], rtol=1e-10)
    got = F.cross_entropy(T(D["logits"][1], device), I(D["tgt"][1], device)).item()
    np.testing.assert_allclose(got, D["ce"]["unbatched"], rtol=1e-10)
    x = T(D["logits"], device).requires_grad_()
    F.cross_entropy(x, I(D["tgt"], device)).backward()
    assert np.all(np.isfinite(x.grad.numpy()))
    np.testing.assert_allclose(x.grad.numpy(), D["ce"]["grad_extreme"], rtol=1e-9, atol=1e-12)


def test_cross_entropy_float32_extreme_logits_stay_finite(device):
    x = lc.asarray([[1e4, -1e4], [-1e4, 1e4]], device=device).requires_grad_()
    loss = nn.CrossEntropyLoss()(x, lc.asarray([1, 1], device=device))
    loss.backward()
    assert np.isfinite(loss.item()) and abs(loss.item() - 1e4) < 1
    assert np.all(np.isfinite(x.grad.numpy()))


def test_nll_loss_matches_torch(device):
    f64(device)
    logp = F.log_softmax(T(D["logits"], device), 1)
    np.testing.assert_allclose(F.nll_loss(logp, I(D["tgt"], device)).item(), D["nll"]["mean"], rtol=1e-10)
    got = nn.NLLLoss(weight=T(D["cw"], device))(logp, I(D["tgt_ign"], device)).item()
    np.testing.assert_allclose(got, D["nll"]["w_mean"], rtol=1e-10)
    got = F.nll_loss(logp, I(D["tgt_ign"], device), reduction="none").numpy()
    np.testing.assert_allclose(got, D["nll"]["none"], rtol=1e-10)


ELEMENTWISE = {
    "mse": lambda a, b, d: F.mse_loss(a, b),
    "mse_sum": lambda a, b, d: nn.MSELoss(reduction="sum")(a, b),
    "l1": lambda a, b, d: nn.L1Loss()(a, b),
    "smooth_l1": lambda a, b, d: nn.SmoothL1Loss(reduction="none", beta=0.5)(a, b),
    "huber": lambda a, b, d: nn.HuberLoss(reduction="none", delta=0.7)(a, b),
    "bce": lambda a, b, d: nn.BCELoss()(T(D["p"], d), T(D["y01"], d)),
    "bce_w": lambda a, b, d: F.binary_cross_entropy(T(D["p"], d), T(D["y01"], d), T(D["pos_w"], d), reduction="none"),
    "bce_logits": lambda a, b, d: F.binary_cross_entropy_with_logits(
        T(D["bl_logits"], d), T(D["y01"], d), reduction="none"
    ),
    "bce_logits_pos": lambda a, b, d: nn.BCEWithLogitsLoss(pos_weight=T(D["pos_w"], d))(
        T(D["bl_logits"], d), T(D["y01"], d)
    ),
    "kl": lambda a, b, d: nn.KLDivLoss(reduction="batchmean")(F.log_softmax(a, 1), _kl_target(b)),
    "kl_none": lambda a, b, d: F.kl_div(F.log_softmax(a, 1), _kl_target(b), reduction="none"),
    "kl_log": lambda a, b, d: F.kl_div(F.log_softmax(a, 1), F.log_softmax(b, 1), reduction="sum", log_target=True),
    "cos_emb": lambda a, b, d: nn.CosineEmbeddingLoss(0.2, reduction="none")(a, b, I(D["y_pm"], d)),
    "margin_rank": lambda a, b, d: nn.MarginRankingLoss(0.3, reduction="none")(a[:, 0], b[:, 0], T(D["y_pm"], d)),
    "triplet": lambda a, b, d: nn.TripletMarginLoss(reduction="none")(a, b, lc.flip(a, axis=0)),
    "triplet_swap_p1": lambda a, b, d: F.triplet_margin_loss(a, b, lc.flip(a, axis=0), p=1, swap=True),
}


def _kl_target(b):
    t = F.softmax(b, 1)
    mask = lc.ones_like(t)
    mask[0, 0] = 0.0
    return t * mask


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_losses_match_torch(device, name):
    f64(device)
    got = ELEMENTWISE[name](T(D["a"], device), T(D["b"], device), device).numpy()
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, D[name], rtol=1e-9, atol=1e-12)


@given(st.integers(1, 3), st.integers(2, 4), st.floats(0.0, 0.3))
def test_cross_entropy_gradients(n, c, ls):
    x = (lc.randn(n, c, dtype=lc.float64) * 3).requires_grad_()
    t = lc.randint(0, c, (n,))
    w = lc.rand(c, dtype=lc.float64) + 0.5
    assert lc.gradcheck(lambda x: F.cross_entropy(x, t, weight=w, label_smoothing=ls), [x])


def test_loss_gradients(device):
    dt = f64(device)
    a = lc.randn(3, 2, dtype=dt, device=device).requires_grad_()
    b = lc.randn(3, 2, dtype=dt, device=device)
    y = lc.asarray([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=dt, device=device)
    assert lc.gradcheck(lambda a: F.mse_loss(a, b), [a])
    assert lc.gradcheck(lambda a: F.binary_cross_entropy_with_logits(a, y, pos_weight=b.abs()), [a])
    assert lc.gradcheck(lambda a: F.binary_cross_entropy(F.sigmoid(a), y), [a])
    assert lc.gradcheck(lambda a: F.kl_div(F.log_softmax(a, 1), F.softmax(b, 1), reduction="batchmean"), [a])
    assert lc.gradcheck(lambda a: F.cosine_embedding_loss(a, b, lc.asarray([1, -1, 1], device=device)), [a])
    assert lc.gradcheck(lambda a: F.triplet_margin_loss(a, b, lc.flip(b, axis=0), margin=5.0), [a])


def test_bce_with_logits_extreme_values_are_finite(device):
    x = lc.asarray([1000.0, -1000.0, 0.0], device=device).requires_grad_()
    t = lc.asarray([0.0, 1.0, 1.0], device=device)
    loss = F.binary_cross_entropy_with_logits(x, t, reduction="none")
    np.testing.assert_allclose(loss.detach().numpy(), [1000.0, 1000.0, np.log(2)], rtol=1e-6)
    loss.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, -1.0, -0.5], rtol=1e-6)


def test_bce_clamps_log_at_minus_100(device):
    loss = F.binary_cross_entropy(lc.asarray([0.0, 1.0], device=device), lc.asarray([1.0, 0.0], device=device))
    assert loss.item() == pytest.approx(100.0)


def test_loss_errors_name_the_problem(device):
    x = lc.ones((2, 3), device=device)
    with pytest.raises(ValueError, match="reduction must be one of"):
        F.mse_loss(x, x, reduction="avg")
    with pytest.raises(ValueError, match="expected target of shape \\(2,\\)"):
        F.cross_entropy(x, lc.asarray([[0, 1]], device=device))
    with pytest.raises(IndexError, match="target values must be in \\[0, 3\\)"):
        F.cross_entropy(x, lc.asarray([0, 7], device=device))
    x3 = lc.ones((3, 3), device=device)
    # an ignored row's target is set aside (counted as class 0), so an out-of-range ignore_index is no error
    with pytest.raises(IndexError, match="got \\[0, 5\\]"):
        F.cross_entropy(x3, lc.asarray([-100, 5, 1], device=device))
    with pytest.raises(IndexError, match="got \\[-2, 2\\]"):
        F.cross_entropy(x3, lc.asarray([2, -2, 9], device=device), ignore_index=9)
    assert F.cross_entropy(x3, lc.asarray([-100, 2, 1], device=device)).item() == pytest.approx(math.log(3))
    with pytest.raises(ValueError, match="weight should have one entry per class \\(3\\)"):
        F.cross_entropy(x, lc.asarray([0, 1], device=device), weight=lc.ones((2,), device=device))
    with pytest.raises(ValueError, match="should be between 0 and 1"):
        F.binary_cross_entropy(x * 2, x)
    with pytest.raises(ValueError, match="does not broadcast"):
        F.l1_loss(x, lc.ones((4,), device=device))
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        nn.MSELoss(reduction="x")
