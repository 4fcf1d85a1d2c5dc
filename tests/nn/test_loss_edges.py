"""Losses at the edges of their domains match PyTorch's values and gradients (fixtures: loss_edges.json).

Probabilities exactly 0 and 1 (BCE's gradient stays finite, issue 13), -inf log-probabilities and logits,
zero targets, huge logits, rates of 0 and variances under the floor (Poisson/Gaussian NLL), the kinks of
Huber/SmoothL1 and the hinges of the margin losses.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import lucid_core as lc
import lucid_nn as nn
from lucid_nn import functional as F

CASES = json.loads((Path(__file__).parent / "fixtures" / "loss_edges.json").read_text())["cases"]
DTYPES = {"float64": lc.float64, "float32": lc.float32, "int64": lc.int64}
NAMES = {"input": "x", "input1": "x1", "input2": "x2"}  # PyTorch's argument names -> Lucid's
# Where PyTorch's gradient is NaN only because its backward multiplies a masked-out 0 by log(0), Lucid
# gives the true, finite derivative: the Stirling term is 0 for targets <= 1, so it adds nothing there.
FINITE_WHERE_TORCH_IS_NAN = {("poisson_full_small_targets", "target")}


def _run(name: str, device: lc.Device) -> None:
    case = CASES[name]
    for dt in case["dtypes"].values():
        if dt == "float64" and not device.backend.capabilities.get("float64", True):
            pytest.skip(f"{device} has no float64")
    args = {
        k: lc.asarray(v, dtype=DTYPES[case["dtypes"][k]], device=device, requires_grad=k in case["grads"])
        for k, v in case["inputs"].items()
    }
    out = getattr(F, case["fn"])(**{NAMES.get(k, k): v for k, v in args.items()}, **case["kwargs"])
    tol = {"rtol": 1e-5, "atol": 1e-6} if "float32" in case["dtypes"].values() else {"rtol": 1e-9, "atol": 1e-12}
    np.testing.assert_allclose(out.detach().numpy(), case["out"], **tol, err_msg=f"{name}: value")
    (out * lc.asarray(case["cot"], dtype=out.dtype, device=device)).sum().backward()
    for k, want in case["grads"].items():
        got, want = args[k].grad.numpy(), np.asarray(want, dtype=float)
        if (name, k) in FINITE_WHERE_TORCH_IS_NAN:
            assert np.isnan(want).any() and np.isfinite(got).all(), f"{name}: {k}"
            got, want = got[~np.isnan(want)], want[~np.isnan(want)]
        np.testing.assert_allclose(got, want, **tol, err_msg=f"{name}: gradient of {k}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_loss_edge_matches_torch(name, device):
    _run(name, device)


def test_bce_gradient_is_finite_at_probabilities_zero_and_one(device):
    x = lc.asarray([0.0, 1.0, 0.0, 1.0], device=device, requires_grad=True)
    t = lc.asarray([0.0, 1.0, 1.0, 0.0], device=device)
    loss = F.binary_cross_entropy(x, t)
    loss.backward()
    assert np.isfinite(loss.item()) and loss.item() == pytest.approx(50.0)  # two clamped logs of -100, mean
    assert np.isfinite(x.grad.numpy()).all()
    assert x.grad.tolist()[:2] == [0.0, 0.0]  # right answers with certainty: no push


def test_poisson_full_target_gradient_is_the_true_derivative(device):
    # for targets <= 1 the Stirling term is masked to 0, so d loss / d target = -x there
    x = lc.asarray([0.1, -0.5], device=device)
    t = lc.asarray([0.0, 0.0], device=device, requires_grad=True)
    F.poisson_nll_loss(x, t, full=True, reduction="sum").backward()
    np.testing.assert_allclose(t.grad.numpy(), [-0.1, 0.5], rtol=1e-6)


def test_gaussian_nll_checks_var(device):
    x = lc.ones((2, 3), device=device)
    with pytest.raises(ValueError, match="var has negative entries"):
        F.gaussian_nll_loss(x, x, -lc.ones((2, 3), device=device))
    with pytest.raises(ValueError, match=r"var of shape \(3,\) does not fit input of shape \(2, 3\)"):
        F.gaussian_nll_loss(x, x, lc.ones(3, device=device))


def test_likelihood_loss_modules_hold_their_options(device):
    x, t = lc.asarray([0.5, 1.0], device=device), lc.asarray([1.0, 2.0], device=device)
    m = nn.PoissonNLLLoss(log_input=False, full=True, reduction="sum")
    np.testing.assert_allclose(m(x, t).item(), F.poisson_nll_loss(x, t, False, True, 1e-8, "sum").item())
    g = nn.GaussianNLLLoss(eps=0.5, reduction="none")
    np.testing.assert_allclose(
        g(x, t, lc.zeros(2, device=device)).numpy(), 0.5 * (np.log(0.5) + np.array([0.25, 1.0]) / 0.5), rtol=1e-6
    )


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_without_ignored_rows_has_the_bits_of_the_weighted_path(device, reduction, smoothing):
    # with no target equal to ignore_index (outside the targets' range) the op skips the row weights; an
    # ignore_index inside the range that no target hits takes the weighted path: the same loss and gradient bits
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((37, 5)).astype("float32")
    t = lc.asarray(rng.choice([0, 2, 3, 4], 37), device=device)  # class 1 never appears
    out = []
    for ignore in (-100, 1):
        x = lc.asarray(x0, device=device, requires_grad=True)
        loss = F.cross_entropy(x, t, ignore_index=ignore, reduction=reduction, label_smoothing=smoothing)
        loss.sum().backward()
        out.append(
            (np.asarray(lc.to_device(loss.detach(), "numpy")._data), np.asarray(lc.to_device(x.grad, "numpy")._data))
        )
    assert out[0][0].tobytes() == out[1][0].tobytes()
    assert out[0][1].tobytes() == out[1][1].tobytes()
    assert float(out[0][0].sum()) != 0.0
