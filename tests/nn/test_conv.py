"""Convolutions, transposed convolutions, unfold/fold: PyTorch reference values, gradients, errors, layers."""

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

FIX = json.loads((Path(__file__).parent / "fixtures" / "nn_b.json").read_text())["conv"]
FUNCTIONAL = {k: v for k, v in FIX.items() if "inputs" in v}


def T(a, device, dtype=lc.float64, requires_grad=False):
    return lc.asarray(np.asarray(a), dtype=dtype, device=device, requires_grad=requires_grad)


def run_case(fn, case, device):
    """Call ``fn`` on the case's inputs; check the output and the gradients of sum(out * cot)."""
    args = {
        k: T(v, device, lc.bool if case["dtypes"][k] == "bool" else lc.float64, case["dtypes"][k] == "float64")
        for k, v in case["inputs"].items()
    }
    out = fn(**args, **case["kwargs"])
    if isinstance(out, tuple):
        out, idx = out
        assert idx.numpy().tolist() == case["indices"]
    np.testing.assert_allclose(out.detach().numpy(), case["out"], rtol=1e-9, atol=1e-12)
    (out * T(case["cot"], device)).sum().backward()
    for k, g in case["grads"].items():
        np.testing.assert_allclose(args[k].grad.numpy(), g, rtol=1e-9, atol=1e-12, err_msg=k)


@pytest.mark.parametrize("name", sorted(FUNCTIONAL))
def test_functional_matches_torch(name, device):
    fn = getattr(F, name) if hasattr(F, name) else getattr(F, name.split("_")[0])  # conv2d_basic -> conv2d
    run_case(fn, FUNCTIONAL[name], device)


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv2d_layer_padding_modes_match_torch(mode, device):
    case = FIX[f"Conv2d_{mode}"]
    m = nn.Conv2d(**case["kwargs"], dtype=lc.float64, device=device)
    m.load_state_dict({k: T(v, device) for k, v in case["state"].items()})
    np.testing.assert_allclose(m(T(case["x"], device)).detach().numpy(), case["out"], rtol=1e-9, atol=1e-12)


def test_conv_transpose2d_output_size_matches_torch(device):
    case = FIX["ConvTranspose2d_output_size"]
    m = nn.ConvTranspose2d(**case["kwargs"], dtype=lc.float64, device=device)
    m.load_state_dict({k: T(v, device) for k, v in case["state"].items()})
    y = m(T(case["x"], device), output_size=case["output_size"])
    np.testing.assert_allclose(y.detach().numpy(), case["out"], rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="requested output size"):
        m(T(case["x"], device), output_size=[9, 9])


@given(
    stride=st.integers(1, 2),
    padding=st.integers(0, 2),
    dilation=st.integers(1, 2),
    groups=st.sampled_from([1, 2]),
    k=st.integers(1, 3),
    bias=st.booleans(),
)
def test_conv2d_gradients_match_finite_differences(stride, padding, dilation, groups, k, bias):
    rng = np.random.default_rng(stride + 3 * padding + 7 * dilation + 11 * groups + 13 * k)
    x = lc.asarray(rng.standard_normal((1, 2, 5, 6)), dtype=lc.float64, requires_grad=True)
    w = lc.asarray(rng.standard_normal((2, 2 // groups, k, k)), dtype=lc.float64, requires_grad=True)
    b = lc.asarray(rng.standard_normal(2), dtype=lc.float64, requires_grad=True)
    inputs = [x, w, b] if bias else [x, w]

    def f(*a):
        return F.conv2d(a[0], a[1], a[2] if bias else None, stride, padding, dilation, groups)

    assert lc.gradcheck(f, inputs)


@given(
    stride=st.integers(1, 2),
    padding=st.integers(0, 1),
    output_padding=st.integers(0, 1),
    groups=st.sampled_from([1, 2]),
)
def test_conv_transpose2d_gradients_match_finite_differences(stride, padding, output_padding, groups):
    if output_padding >= stride:
        output_padding = 0
    rng = np.random.default_rng(stride + 5 * padding + 7 * groups)
    x = lc.asarray(rng.standard_normal((1, 2, 3, 4)), dtype=lc.float64, requires_grad=True)
    w = lc.asarray(rng.standard_normal((2, 2 // groups, 2, 3)), dtype=lc.float64, requires_grad=True)
    assert lc.gradcheck(lambda a, b: F.conv_transpose2d(a, b, None, stride, padding, output_padding, groups), [x, w])


def test_conv_second_order_gradients(device):
    rng = np.random.default_rng(0)
    x = T(rng.standard_normal((1, 2, 4, 4)), device, requires_grad=True)
    w = T(rng.standard_normal((2, 1, 2, 2)), device, requires_grad=True)
    assert lc.gradgradcheck(lambda a, b: F.conv2d(a, b, stride=2, padding=1, groups=2), [x, w])


def test_unfold_then_fold_counts_window_overlaps(device):
    x = lc.ones((1, 1, 4, 5), device=device)
    y = F.fold(F.unfold(x, 3, padding=1), (4, 5), 3, padding=1)
    # each pixel is covered by as many 3x3 windows as fit around it (corners 4, edges 6, inside 9)
    assert y.numpy()[0, 0].tolist() == [[4, 6, 6, 6, 4], [6, 9, 9, 9, 6], [6, 9, 9, 9, 6], [4, 6, 6, 6, 4]]


def test_conv1x1_equals_channel_matmul(device):
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((6, 3, 1, 1))
    y = F.conv2d(T(x, device), T(w, device))
    np.testing.assert_allclose(y.numpy(), np.einsum("nchw,oc->nohw", x, w[:, :, 0, 0]), rtol=1e-12)


def test_conv_errors_name_the_problem(device):
    x = lc.zeros((3, 8, 8), device=device)
    w = lc.zeros((2, 4, 3, 3), device=device)
    with pytest.raises(
        ValueError, match=r"conv2d: expected input with 4 dimensions \(N, C, H, W\), got shape \(3, 8, 8\)"
    ):
        F.conv2d(x, w)
    with pytest.raises(ValueError, match=r"conv2d: input has 3 channels but weight expects 4 \(groups=1\)"):
        F.conv2d(lc.zeros((1, 3, 8, 8), device=device), w)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        F.conv2d(lc.zeros((1, 4, 8, 8), device=device), w, stride=2, padding="same")
    with pytest.raises(ValueError, match="smaller than the kernel"):
        F.conv2d(lc.zeros((1, 4, 2, 2), device=device), w)
    with pytest.raises(ValueError, match="output_padding"):
        F.conv_transpose2d(
            lc.zeros((1, 2, 3, 3), device=device), lc.zeros((2, 1, 3, 3), device=device), output_padding=1
        )
    with pytest.raises(ValueError, match="fold: input has 5 blocks"):
        F.fold(lc.zeros((1, 4, 5), device=device), (4, 4), 2)
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding_mode"):
        nn.Conv2d(3, 4, 3, padding_mode="mirror")


def test_conv_layers_initialise_and_print_like_torch():
    lc.manual_seed(0)
    m = nn.Conv2d(16, 32, 3)
    bound = 1 / math.sqrt(16 * 9)  # kaiming_uniform(a=sqrt(5)) and the bias share this bound
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert m.weight.shape == (32, 16, 3, 3) and np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert np.abs(b).max() <= bound
    assert repr(m) == "Conv2d(16, 32, kernel_size=(3, 3), stride=(1, 1))"
    t = nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2, bias=False)
    assert t.weight.shape == (4, 3, 3, 3) and t.bias is None
    assert repr(t) == "ConvTranspose2d(4, 6, kernel_size=(3, 3), stride=(2, 2), groups=2, bias=False)"
    assert [n for n, _ in nn.Conv1d(2, 3, 2).named_parameters()] == ["weight", "bias"]
    assert repr(nn.Conv1d(2, 3, 3, padding="same", padding_mode="circular")).endswith(
        "padding='same', padding_mode=circular)"
    )


def test_conv_layers_run_on_every_dimension(device):
    for layer, shape, want in (
        (nn.Conv1d(2, 3, 3, padding=1, device=device), (2, 2, 7), (2, 3, 7)),
        (nn.Conv3d(2, 3, 2, stride=2, device=device), (1, 2, 4, 4, 6), (1, 3, 2, 2, 3)),
        (nn.ConvTranspose1d(2, 3, 3, stride=2, device=device), (2, 2, 4), (2, 3, 9)),
        (nn.ConvTranspose3d(2, 3, 2, stride=2, device=device), (1, 2, 2, 2, 2), (1, 3, 4, 4, 4)),
    ):
        y = layer(lc.randn(*shape, device=device))
        assert y.shape == want
        y.sum().backward()
        assert layer.weight.grad is not None and layer.weight.grad.shape == layer.weight.shape
