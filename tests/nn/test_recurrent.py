"""RNN, LSTM, GRU and their cells: PyTorch state dicts load and give PyTorch's outputs and gradients."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import lucid_core as lc
import lucid_nn as nn

FIX = json.loads((Path(__file__).parent / "fixtures" / "nn_b.json").read_text())["recurrent"]


def T(a, device, dtype=lc.float64, requires_grad=False):
    return lc.asarray(np.asarray(a), dtype=dtype, device=device, requires_grad=requires_grad)


def _flatten(o):
    if isinstance(o, (tuple, list)):
        return [t for x in o for t in _flatten(x)]
    return [] if o is None else [o]


@pytest.mark.parametrize("name", sorted(FIX))
def test_recurrent_modules_match_torch(name, device):
    case = FIX[name]
    kw = dict(case["kwargs"])
    m = getattr(nn, case["cls"])(4, 3, **kw, dtype=lc.float64, device=device)
    assert list(m.state_dict()) == list(case["state"])  # PyTorch's names, in PyTorch's order
    m.load_state_dict({k: T(v, device) for k, v in case["state"].items()})
    x = {k: T(v, device, requires_grad=True) for k, v in case["inputs"].items()}
    if case["cls"] == "LSTM":
        out = m(x["x"], (x["h0"], x["c0"]))
    elif case["cls"].endswith("Cell"):
        out = m(x["x"])
    else:
        out = m(x["x"], x["h0"])
    flat = _flatten(out)
    assert len(flat) == len(case["outs"])
    for got, want in zip(flat, case["outs"]):
        np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-9, atol=1e-12)
    total = None
    for o, ct in zip(flat, case["cots"]):
        term = (o * T(ct, device)).sum()
        total = term if total is None else total + term
    total.backward()
    for k, g in case["grads"].items():
        np.testing.assert_allclose(x[k].grad.numpy(), g, rtol=1e-8, atol=1e-12, err_msg=k)
    params = dict(m.named_parameters())
    for k, g in case["param_grads"].items():
        np.testing.assert_allclose(params[k].grad.numpy(), g, rtol=1e-8, atol=1e-12, err_msg=k)


def test_lstm_gradients_match_finite_differences(device):
    m = nn.LSTM(2, 3, num_layers=2, bidirectional=True, dtype=lc.float64, device=device)
    x = lc.randn(3, 1, 2, dtype=lc.float64, device=device, requires_grad=True)
    assert lc.gradcheck(lambda a: m(a)[0], [x])


def test_gru_cell_gradients_match_finite_differences(device):
    cell = nn.GRUCell(3, 2, dtype=lc.float64, device=device)
    x = lc.randn(2, 3, dtype=lc.float64, device=device, requires_grad=True)
    h = lc.randn(2, 2, dtype=lc.float64, device=device, requires_grad=True)
    assert lc.gradcheck(lambda a, b: cell(a, b), [x, h])


def test_shapes_batch_first_unbatched_and_default_state(device):
    m = nn.GRU(4, 5, num_layers=2, batch_first=True, bidirectional=True, device=device)
    out, h = m(lc.randn(3, 7, 4, device=device))
    assert out.shape == (3, 7, 10) and h.shape == (4, 3, 5)
    out1, h1 = m(lc.randn(7, 4, device=device))
    assert out1.shape == (7, 10) and h1.shape == (4, 5)
    lstm = nn.LSTM(4, 5, proj_size=2, device=device)
    out, (h, c) = lstm(lc.randn(6, 2, 4, device=device))
    assert out.shape == (6, 2, 2) and h.shape == (1, 2, 2) and c.shape == (1, 2, 5)


def test_unbatched_equals_batch_of_one(device):
    m = nn.LSTM(3, 2, dtype=lc.float64, device=device)
    x = lc.randn(5, 3, dtype=lc.float64, device=device)
    out, (h, _) = m(x)
    out_b, (h_b, _) = m(x[:, None])
    np.testing.assert_allclose(out.detach().numpy(), out_b.detach().numpy()[:, 0], rtol=1e-12)
    np.testing.assert_allclose(h.detach().numpy(), h_b.detach().numpy()[:, 0], rtol=1e-12)


def test_dropout_between_layers_only_in_training(device):
    m = nn.RNN(3, 8, num_layers=2, dropout=0.5, dtype=lc.float64, device=device)
    x = lc.randn(4, 2, 3, dtype=lc.float64, device=device)
    m.eval()
    a, _ = m(x)
    b, _ = m(x)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    m.train()
    c, _ = m(x)
    assert not np.allclose(a.detach().numpy(), c.detach().numpy())


def test_init_bounds_and_names_follow_torch():
    lc.manual_seed(0)
    m = nn.GRU(10, 16, num_layers=2, bidirectional=True)
    names = [n for n, _ in m.named_parameters()]
    assert names[:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    assert "weight_ih_l1_reverse" in names and m.weight_ih_l1.shape == (48, 32)
    bound = 1 / math.sqrt(16)
    vals = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
    assert np.abs(vals).max() <= bound and np.abs(vals).max() > 0.95 * bound
    assert repr(m) == "GRU(10, 16, num_layers=2, bidirectional=True)"
    assert repr(nn.LSTMCell(3, 4, bias=False)) == "LSTMCell(3, 4, bias=False)"
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu")) == "RNNCell(3, 4, nonlinearity=relu)"


def test_recurrent_errors_name_the_problem(device):
    m = nn.LSTM(4, 3, device=device)
    with pytest.raises(ValueError, match="input has 5 features but input_size is 4"):
        m(lc.zeros((2, 1, 5), device=device))
    with pytest.raises(ValueError, match=r"expected input with 3 dimensions \(L, N, H_in\)"):
        m(lc.zeros((2, 1, 1, 4), device=device))
    with pytest.raises(ValueError, match=r"expected h_0 of shape \(1, 2, 3\)"):
        m(lc.zeros((5, 2, 4), device=device), (lc.zeros((1, 3, 3), device=device), lc.zeros((1, 2, 3), device=device)))
    with pytest.raises(ValueError, match="hx must be a tuple"):
        m(lc.zeros((5, 2, 4), device=device), lc.zeros((1, 2, 3), device=device))
    with pytest.raises(ValueError, match="unknown nonlinearity"):
        nn.RNN(2, 2, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="proj_size"):
        nn.LSTM(2, 3, proj_size=3)
