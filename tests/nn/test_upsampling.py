"""interpolate / Upsample (nearest, linear, bilinear, trilinear) and the Fold/Unfold modules."""

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

FIX = json.loads((Path(__file__).parent / "fixtures" / "nn_b.json").read_text())["upsampling"]


def T(a, device, dtype=lc.float64, requires_grad=False):
    return lc.asarray(np.asarray(a), dtype=dtype, device=device, requires_grad=requires_grad)


@pytest.mark.parametrize("name", sorted(FIX))
def test_interpolate_matches_torch(name, device):
    case = FIX[name]
    x = T(case["inputs"]["input"], device, requires_grad=True)
    y = F.interpolate(x, **case["kwargs"])
    np.testing.assert_allclose(y.detach().numpy(), case["out"], rtol=1e-9, atol=1e-12)
    (y * T(case["cot"], device)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), case["grads"]["input"], rtol=1e-9, atol=1e-12)


@given(h=st.integers(1, 4), w=st.integers(1, 4), oh=st.integers(1, 6), ow=st.integers(1, 6), align=st.booleans())
def test_bilinear_gradients_match_finite_differences(h, w, oh, ow, align):
    rng = np.random.default_rng(h * 7 + w)
    x = lc.asarray(rng.standard_normal((1, 1, h, w)), dtype=lc.float64, requires_grad=True)
    assert lc.gradcheck(lambda a: F.interpolate(a, size=(oh, ow), mode="bilinear", align_corners=align), [x])


def test_nearest_integer_upsampling_repeats_pixels(device):
    x = T([[[[1.0, 2.0], [3.0, 4.0]]]], device)
    y = F.interpolate(x, scale_factor=2)
    assert y.numpy()[0, 0].tolist() == [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]]


def test_bilinear_align_corners_keeps_corners_and_is_exact_on_ramps(device):
    ramp = np.add.outer(np.arange(3.0), 10 * np.arange(4.0))[None, None]
    y = F.interpolate(T(ramp, device), size=(5, 7), mode="bilinear", align_corners=True).numpy()[0, 0]
    np.testing.assert_allclose(y, np.add.outer(np.linspace(0, 2, 5), 10 * np.linspace(0, 3, 7)), atol=1e-12)


def test_interpolate_errors_name_the_problem(device):
    x = lc.zeros((1, 1, 4, 4), device=device)
    with pytest.raises(ValueError, match="exactly one of size and scale_factor"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="unknown mode 'cubic'"):
        F.interpolate(x, size=2, mode="cubic")
    with pytest.raises(ValueError, match="mode 'linear' expects a 3-D input"):
        F.interpolate(x, size=2, mode="linear")
    with pytest.raises(ValueError, match="align_corners can only be set"):
        F.interpolate(x, size=2, align_corners=True)


def test_upsample_modules(device):
    x = lc.randn(2, 3, 4, 5, dtype=lc.float64, device=device)
    up = nn.Upsample(scale_factor=2, mode="bilinear")
    np.testing.assert_array_equal(up(x).numpy(), F.interpolate(x, scale_factor=2.0, mode="bilinear").numpy())
    assert repr(up) == "Upsample(scale_factor=2.0, mode='bilinear')"
    assert repr(nn.Upsample(size=(3, 3))) == "Upsample(size=(3, 3), mode='nearest')"
    np.testing.assert_array_equal(
        nn.UpsamplingBilinear2d(size=(7, 9))(x).numpy(),
        F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=True).numpy(),
    )
    assert nn.UpsamplingNearest2d(scale_factor=3)(x).shape == (2, 3, 12, 15)


def test_fold_and_unfold_modules_invert_non_overlapping_patches(device):
    x = lc.randn(2, 3, 6, 4, dtype=lc.float64, device=device)
    cols = nn.Unfold(kernel_size=2, stride=2)(x)
    assert cols.shape == (2, 12, 6)
    back = nn.Fold(output_size=(6, 4), kernel_size=2, stride=2)(cols)
    np.testing.assert_array_equal(back.numpy(), x.numpy())
    assert repr(nn.Unfold(3)) == "Unfold(kernel_size=3, dilation=1, padding=0, stride=1)"
