"""Losses refuse or warn about targets as PyTorch 2.13 does (its texts, checked by hand against torch).

A regression loss whose target has another shape that broadcasts warns (the classic (N,) target against (N, 1)
predictions gives an (N, N) loss); ``binary_cross_entropy`` refuses probabilities outside [0, 1], NaN included.
"""

from __future__ import annotations

import warnings

import pytest

import lucid_core as lc
import lucid_nn.functional as F

BROADCAST_WARNING = (
    r"Using a target size \({t}\) that is different to the input size \({x}\)\. This will likely lead to "
    r"incorrect results due to broadcasting\. Please ensure they have the same size\."
)
REGRESSION = [F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss]


@pytest.mark.parametrize("loss", REGRESSION, ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    ("xs", "ts", "xtext", "ttext"),
    [((3, 1), (3,), r"3, 1", r"3,"), ((3,), (1,), r"3,", r"1,"), ((3,), (), r"3,", r"")],
)
def test_broadcasting_target_warns_with_pytorch_text(
    loss: object, xs: tuple, ts: tuple, xtext: str, ttext: str, device: lc.Device
) -> None:
    x, t = lc.ones(xs, device=device), lc.zeros(ts, device=device)
    pattern = BROADCAST_WARNING.format(t=rf"\({ttext}\)", x=rf"\({xtext}\)")
    with pytest.warns(UserWarning, match=pattern):
        loss(x, t)


@pytest.mark.parametrize("loss", REGRESSION, ids=lambda f: f.__name__)
def test_same_shape_target_does_not_warn(loss: object, device: lc.Device) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss(lc.ones((3, 2), device=device), lc.zeros((3, 2), device=device))


@pytest.mark.parametrize("target", [[1.5, 0.0], [-0.1, 0.0], [float("nan"), 0.0]])
def test_bce_refuses_targets_outside_zero_one(target: list, device: lc.Device) -> None:
    x = lc.asarray([0.5, 0.2], device=device)
    with pytest.raises(RuntimeError, match="all elements of target should be between 0 and 1"):
        F.binary_cross_entropy(x, lc.asarray(target, device=device))


@pytest.mark.parametrize("x", [[1.5, 0.2], [-0.5, 0.2], [float("nan"), 0.2]])
def test_bce_refuses_inputs_outside_zero_one(x: list, device: lc.Device) -> None:
    with pytest.raises(ValueError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(lc.asarray(x, device=device), lc.asarray([1.0, 0.0], device=device))


def test_bce_accepts_the_closed_interval(device: lc.Device) -> None:
    x = lc.asarray([0.0, 1.0, 0.5], device=device)
    out = F.binary_cross_entropy(x, lc.asarray([0.0, 1.0, 1.0], device=device), reduction="none")
    assert out.tolist()[:2] == [0.0, 0.0]
