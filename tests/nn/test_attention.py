"""scaled_dot_product_attention and multi_head_attention_forward: PyTorch values, masks, gradients, errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import lucid_core as lc
from lucid_nn import functional as F

FIX = json.loads((Path(__file__).parent / "fixtures" / "nn_b.json").read_text())["attention"]


def T(a, device, dtype=lc.float64, requires_grad=False):
    return lc.asarray(np.asarray(a), dtype=dtype, device=device, requires_grad=requires_grad)


@pytest.mark.parametrize("name", sorted(FIX))
def test_sdpa_matches_torch(name, device):
    case = FIX[name]
    args = {
        k: T(v, device, lc.bool if case["dtypes"][k] == "bool" else lc.float64, case["dtypes"][k] == "float64")
        for k, v in case["inputs"].items()
    }
    y = F.scaled_dot_product_attention(**args, **case["kwargs"])
    np.testing.assert_allclose(y.detach().numpy(), case["out"], rtol=1e-9, atol=1e-12)
    (y * T(case["cot"], device)).sum().backward()
    for k, g in case["grads"].items():
        np.testing.assert_allclose(args[k].grad.numpy(), g, rtol=1e-9, atol=1e-12, err_msg=k)


def test_sdpa_fully_masked_rows_give_zeros_and_finite_gradients(device):
    q = lc.randn(1, 3, 4, dtype=lc.float64, device=device, requires_grad=True)
    mask = T([[True, False], [False, False], [True, True]], device, lc.bool)
    y = F.scaled_dot_product_attention(q, q[:, :2], q[:, :2], attn_mask=mask)
    assert y.detach().numpy()[0, 1].tolist() == [0.0] * 4
    y.sum().backward()
    assert np.isfinite(q.grad.numpy()).all()


def test_sdpa_gradients_match_finite_differences(device):
    rng = np.random.default_rng(0)
    q, k, v = (T(rng.standard_normal(s), device, requires_grad=True) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 3)))
    assert lc.gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True), [q, k, v])


def test_sdpa_causal_equals_explicit_lower_triangular_mask(device):
    q = lc.randn(2, 4, 3, dtype=lc.float64, device=device)
    causal = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    mask = lc.tril(lc.ones((4, 4), dtype=lc.bool, device=device))
    np.testing.assert_allclose(
        causal.numpy(), F.scaled_dot_product_attention(q, q, q, attn_mask=mask).numpy(), rtol=1e-12
    )
    # the first query sees only the first key
    np.testing.assert_allclose(causal.numpy()[:, 0], q.numpy()[:, 0], rtol=1e-12)


def test_sdpa_dropout_keeps_expectation_and_zeroes_weights(device):
    q = lc.zeros((1, 1, 4), device=device)
    v = lc.ones((1, 200, 4), device=device)
    y = F.scaled_dot_product_attention(q, lc.zeros((1, 200, 4), device=device), v, dropout_p=0.5).numpy()
    # uniform weights 1/200, half dropped, the rest doubled: the mean stays near 1
    assert abs(y.mean() - 1.0) < 0.25 and not np.allclose(y, 1.0)


def test_sdpa_errors_name_the_problem(device):
    q = lc.zeros((2, 3, 4), device=device)
    with pytest.raises(ValueError, match="query and key embed sizes differ"):
        F.scaled_dot_product_attention(q, lc.zeros((2, 3, 5), device=device), q)
    with pytest.raises(ValueError, match="either attn_mask or is_causal"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=lc.ones((3, 3), dtype=lc.bool, device=device), is_causal=True)
    with pytest.raises(ValueError, match="key and value have different lengths"):
        F.scaled_dot_product_attention(q, q, lc.zeros((2, 2, 4), device=device))


def test_multi_head_attention_forward_unbatched_matches_batched(device):
    rng = np.random.default_rng(1)
    e, h = 4, 2
    w = T(rng.standard_normal((3 * e, e)) * 0.5, device)
    ow = T(rng.standard_normal((e, e)) * 0.5, device)
    x = T(rng.standard_normal((5, e)), device)
    args = (e, h, w, None, None, None, False, 0.0, ow, None)
    out, weights = F.multi_head_attention_forward(x, x, x, *args)
    out_b, weights_b = F.multi_head_attention_forward(x[:, None], x[:, None], x[:, None], *args)
    np.testing.assert_allclose(out.numpy(), out_b.numpy()[:, 0], rtol=1e-12)
    assert weights.shape == (5, 5) and weights_b.shape == (1, 5, 5)
    np.testing.assert_allclose(weights.numpy().sum(-1), 1.0, rtol=1e-12)
    with pytest.raises(ValueError, match="attn_mask should have shape"):
        F.multi_head_attention_forward(x, x, x, *args, attn_mask=lc.zeros((4, 4), device=device))
