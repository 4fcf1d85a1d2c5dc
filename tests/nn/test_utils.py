"""nn.utils: gradient clipping and parameter <-> vector conversion."""

from __future__ import annotations

import numpy as np
import pytest

import lucid_core as lc
import lucid_nn as nn
from lucid_nn import utils

clip_grad_norm_, clip_grad_value_ = utils.clip_grad_norm_, utils.clip_grad_value_
parameters_to_vector, vector_to_parameters = utils.parameters_to_vector, utils.vector_to_parameters


def _params_with_grads(device):
    a = nn.Parameter(lc.zeros((2,), device=device))
    b = nn.Parameter(lc.zeros((2, 2), device=device))
    a.grad = lc.asarray([3.0, 0.0], device=device)
    b.grad = lc.asarray([[0.0, 4.0], [0.0, 0.0]], device=device)
    return a, b


def test_clip_grad_norm_scales_all_grads_together(device):
    a, b = _params_with_grads(device)
    total = clip_grad_norm_([a, b], max_norm=1.0)
    assert total.item() == pytest.approx(5.0)
    np.testing.assert_allclose(a.grad.numpy(), [0.6, 0.0], rtol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), [[0.0, 0.8], [0.0, 0.0]], rtol=1e-5)


def test_clip_grad_norm_leaves_small_grads_and_supports_inf_norm(device):
    a, b = _params_with_grads(device)
    assert clip_grad_norm_([a, b], max_norm=10.0).item() == pytest.approx(5.0)
    assert a.grad.tolist() == [3.0, 0.0]
    assert clip_grad_norm_([a, b], max_norm=2.0, norm_type="inf").item() == pytest.approx(4.0)
    np.testing.assert_allclose(b.grad.numpy().max(), 2.0, rtol=1e-5)


def test_clip_grad_norm_errors_on_nonfinite(device):
    a, _ = _params_with_grads(device)
    a.grad = lc.asarray([float("inf"), 0.0], device=device)
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(a, 1.0, error_if_nonfinite=True)


def test_clip_grad_value(device):
    a, b = _params_with_grads(device)
    clip_grad_value_([a, b], 1.5)
    assert a.grad.tolist() == [1.5, 0.0] and b.grad.tolist() == [[0.0, 1.5], [0.0, 0.0]]


def test_parameters_to_vector_and_back(device):
    m = nn.Linear(3, 2).to(device)
    v = parameters_to_vector(m.parameters())
    assert v.shape == (8,)
    w = m.weight
    vector_to_parameters(lc.arange(8, dtype=lc.float32, device=device), m.parameters())
    assert m.weight is w and m.weight.detach().numpy().ravel().tolist() == [0, 1, 2, 3, 4, 5]
    assert m.bias.tolist() == [6.0, 7.0]
    with pytest.raises(ValueError, match="vector has 3 elements but the parameters hold 8"):
        vector_to_parameters(lc.ones((3,), device=device), m.parameters())
