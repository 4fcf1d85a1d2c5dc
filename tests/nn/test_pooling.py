"""Max/avg/adaptive pooling: PyTorch reference values, gradients, errors and the layers."""

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

FIX = json.loads((Path(__file__).parent / "fixtures" / "nn_b.json").read_text())["pooling"]


def T(a, device, dtype=lc.float64, requires_grad=False):
    return lc.asarray(np.asarray(a), dtype=dtype, device=device, requires_grad=requires_grad)


def run_case(fn, case, device):
    args = {k: T(v, device, requires_grad=True) for k, v in case["inputs"].items()}
    out = fn(**args, **case["kwargs"])
    if isinstance(out, tuple):
        out, idx = out
        assert idx.numpy().tolist() == case["indices"]
    np.testing.assert_allclose(out.detach().numpy(), case["out"], rtol=1e-9, atol=1e-12)
    (out * T(case["cot"], device)).sum().backward()
    for k, g in case["grads"].items():
        np.testing.assert_allclose(args[k].grad.numpy(), g, rtol=1e-9, atol=1e-12, err_msg=k)


def _fn_name(case_name: str) -> str:
    for name in sorted(F.__all__, key=len, reverse=True):
        if case_name == name or case_name.startswith(name + "_"):
            return name
    raise KeyError(case_name)


@pytest.mark.parametrize("name", sorted(FIX))
def test_functional_matches_torch(name, device):
    run_case(getattr(F, _fn_name(name)), FIX[name], device)


@given(
    k=st.integers(1, 3),
    stride=st.integers(1, 3),
    padding=st.integers(0, 1),
    ceil_mode=st.booleans(),
    include=st.booleans(),
)
def test_avg_pool2d_gradients_match_finite_differences(k, stride, padding, ceil_mode, include):
    padding = min(padding, k // 2)
    rng = np.random.default_rng(k + 3 * stride)
    x = lc.asarray(rng.standard_normal((1, 2, 5, 4)), dtype=lc.float64, requires_grad=True)
    assert lc.gradcheck(lambda a: F.avg_pool2d(a, k, stride, padding, ceil_mode, include), [x])


@given(k=st.integers(1, 3), stride=st.integers(1, 3), dilation=st.integers(1, 2), ceil_mode=st.booleans())
def test_max_pool2d_gradients_match_finite_differences(k, stride, dilation, ceil_mode):
    # distinct, well-separated values: the max of each window is unique and stable under perturbation
    rng = np.random.default_rng(k + 5 * stride)
    x = lc.asarray(rng.permutation(30).reshape(1, 1, 5, 6) * 0.1, dtype=lc.float64, requires_grad=True)
    assert lc.gradcheck(lambda a: F.max_pool2d(a, k, stride, k // 2, dilation, ceil_mode), [x])


def test_adaptive_pools_gradients_match_finite_differences(device):
    rng = np.random.default_rng(3)
    x = T(rng.permutation(35).reshape(1, 1, 5, 7) * 0.1, device, requires_grad=True)
    assert lc.gradcheck(lambda a: F.adaptive_avg_pool2d(a, (3, 4)), [x])
    assert lc.gradcheck(lambda a: F.adaptive_max_pool2d(a, (3, 4)), [x])


def test_tiled_fast_path_equals_window_path(device):
    x = lc.randn(2, 3, 8, 6, dtype=lc.float64, device=device)
    # padding=0 with stride == kernel uses a reshape; dilation 1 written as a tuple takes the same path,
    # so compare with return_indices (which forces the stacked-window path)
    fast = F.max_pool2d(x, 2)
    slow, _ = F.max_pool2d(x, 2, return_indices=True)
    np.testing.assert_array_equal(fast.numpy(), slow.numpy())


def test_unbatched_input_is_accepted(device):
    x = lc.randn(3, 6, 6, device=device)
    assert F.max_pool2d(x, 2).shape == (3, 3, 3)
    assert F.avg_pool1d(lc.randn(3, 6, device=device), 3).shape == (3, 2)
    assert F.adaptive_avg_pool2d(x, 1).shape == (3, 1, 1)


def test_pooling_errors_name_the_problem(device):
    with pytest.raises(ValueError, match=r"max_pool2d: expected input with 3 or 4 dimensions"):
        F.max_pool2d(lc.zeros((4, 4), device=device), 2)
    with pytest.raises(ValueError, match="at most half the kernel size"):
        F.max_pool2d(lc.zeros((1, 1, 4, 4), device=device), 2, padding=2)
    with pytest.raises(ValueError, match="smaller than the kernel"):
        F.avg_pool2d(lc.zeros((1, 1, 2, 2), device=device), 3)
    with pytest.raises(ValueError, match="output_size must be positive"):
        F.adaptive_avg_pool2d(lc.zeros((1, 1, 4, 4), device=device), 0)
    with pytest.raises(ValueError, match="stride must be positive"):
        F.max_pool1d(lc.zeros((1, 1, 4), device=device), 2, stride=0)


def test_pooling_layers_forward_and_repr(device):
    x = lc.randn(2, 3, 8, 8, device=device)
    m = nn.MaxPool2d(3, stride=2, padding=1)
    np.testing.assert_array_equal(m(x).numpy(), F.max_pool2d(x, 3, 2, 1).numpy())
    assert repr(m) == "MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)"
    assert repr(nn.AvgPool2d(2)) == "AvgPool2d(kernel_size=2, stride=2, padding=0)"
    assert repr(nn.AdaptiveAvgPool2d((1, 1))) == "AdaptiveAvgPool2d(output_size=(1, 1))"
    y, idx = nn.MaxPool2d(2, return_indices=True)(x)
    assert y.shape == idx.shape == (2, 3, 4, 4)
    assert nn.AvgPool1d(2)(lc.randn(2, 3, 8, device=device)).shape == (2, 3, 4)
    assert nn.MaxPool1d(2)(lc.randn(2, 3, 8, device=device)).shape == (2, 3, 4)
    assert nn.AdaptiveAvgPool1d(3)(lc.randn(2, 3, 8, device=device)).shape == (2, 3, 3)
    assert nn.AdaptiveMaxPool2d((2, None))(x).shape == (2, 3, 2, 8)
    assert nn.AdaptiveMaxPool1d(3)(lc.randn(2, 3, 8, device=device)).shape == (2, 3, 3)
