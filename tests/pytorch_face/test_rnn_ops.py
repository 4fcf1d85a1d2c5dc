"""torch.lstm / gru / rnn_tanh / rnn_relu (lucid/_rnn_ops.py) against PyTorch: values, gradients, dropout, errors.

Values and gradients: every case of ``fixtures/rnn_ops_cases.py`` (1 and 2 layers, uni- and bidirectional,
batch_first both ways, with and without biases, and the packed overload) against ``fixtures/rnn_ops.npz``
(written once by ``casebook.py`` with PyTorch 2.13). Then float64 finite-difference checks, the dropout
path (drawn, so checked by behaviour) and the errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import lucid
from tests.pytorch_face.fixtures import casebook
from tests.pytorch_face.fixtures import rnn_ops_cases as cases

TORCH = casebook.load("rnn_ops")


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_matches_pytorch(name):
    casebook.assert_matches_pytorch(cases, TORCH, name, 0.0001, 1e-09)


def _f64(a):
    return lucid.tensor(a.astype(np.float64), requires_grad=True)


@pytest.mark.parametrize("mode", sorted(cases.GATES))
@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
def test_gradcheck_float64(mode, packed):
    rng = np.random.default_rng(3)
    params = [_f64(w) for w in cases.weights(mode, 1, 2, True, 4, np.float64)]
    hs = [_f64(h) for h in cases.states(mode, 1, 2, 2, 5, np.float64)]
    x = _f64(rng.normal(size=(3, 2, cases.H_IN)) if not packed else rng.normal(size=(3, cases.H_IN)))
    fn = getattr(lucid, mode)
    n = len(hs)

    def f(x, *rest):
        hx = tuple(rest[:n]) if mode == "lstm" else rest[0]
        ps = list(rest[n:])
        if packed:
            return fn(x, lucid.tensor([2, 1]), hx, ps, True, 1, 0.0, False, True)
        return fn(x, hx, ps, True, 1, 0.0, False, True, False)

    assert lucid.autograd.gradcheck(f, (x, *hs, *params))


def _lstm_args(layers=2, dropout=0.0, train=False, bidirectional=False):
    params = [lucid.tensor(w) for w in cases.weights("lstm", layers, 2 if bidirectional else 1, True, 9)]
    h0, c0 = (lucid.tensor(h) for h in cases.states("lstm", layers, 2 if bidirectional else 1, 2, 10))
    x = lucid.tensor(np.random.default_rng(11).normal(size=(5, 2, cases.H_IN)).astype(np.float32))
    return x, (h0, c0), params, True, layers, dropout, train, bidirectional, False


def test_dropout_between_layers_draws_when_training():
    x, hx, ps, *_ = _lstm_args()
    eval_out = lucid.lstm(x, hx, ps, True, 2, 0.5, False, False, False)
    lucid.manual_seed(0)
    out, h_n, c_n = lucid.lstm(x, hx, ps, True, 2, 0.5, True, False, False)
    assert out.shape == eval_out[0].shape == (5, 2, cases.HIDDEN)
    assert h_n.shape == c_n.shape == (2, 2, cases.HIDDEN)
    assert not np.allclose(out.numpy(), eval_out[0].numpy())
    # the first layer's state is computed before any dropout
    np.testing.assert_allclose(h_n.numpy()[0], eval_out[1].numpy()[0], rtol=1e-6)
    # no dropout with p=0 or a single layer, even when training
    for args in [(True, 2, 0.0, True), (True, 1, 0.9, True)]:
        layers = args[1]
        x1, hx1, ps1, *_ = _lstm_args(layers)
        a = lucid.lstm(x1, hx1, ps1, args[0], layers, args[2], args[3], False, False)
        b = lucid.lstm(x1, hx1, ps1, args[0], layers, args[2], False, False, False)
        np.testing.assert_array_equal(a[0].numpy(), b[0].numpy())


def test_gru_dropout_changes_output_and_keeps_shape():
    rng = np.random.default_rng(1)
    ps = [lucid.tensor(w) for w in cases.weights("gru", 2, 2, True, 2)]
    h0 = lucid.tensor(cases.states("gru", 2, 2, 3, 3)[0])
    x = lucid.tensor(rng.normal(size=(3, 4, cases.H_IN)).astype(np.float32))
    lucid.manual_seed(1)
    out, h_n = lucid.gru(x, h0, ps, True, 2, 0.7, True, True, True)
    ref, _ = lucid.gru(x, h0, ps, True, 2, 0.7, False, True, True)
    assert out.shape == ref.shape == (3, 4, 2 * cases.HIDDEN) and h_n.shape == (4, 3, cases.HIDDEN)
    assert not np.allclose(out.numpy(), ref.numpy())


def test_rejects_bad_arguments():
    x, hx, ps, *_ = _lstm_args(layers=1)
    with pytest.raises(RuntimeError, match="expected 4 tensors in params"):
        lucid.lstm(x, hx, ps[:3], True, 1, 0.0, False, False, False)
    with pytest.raises(TypeError, match=r"two hidden states \(h_0, c_0\)"):
        lucid.lstm(x, hx[0], ps, True, 1, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match=r"expected h_0 of shape \(1, 2, 4\), got \(1, 3, 4\)"):
        lucid.lstm(x, (lucid.zeros(1, 3, 4), hx[1]), ps, True, 1, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match="input must be 3-D"):
        lucid.lstm(x[0], hx, ps, True, 1, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match="expects w_ih"):
        lucid.lstm(lucid.zeros(5, 2, 7), hx, ps, True, 1, 0.0, False, False, False)
    with pytest.raises(TypeError, match="9 positional arguments"):
        lucid.lstm(x, hx, ps, True, 1, 0.0, False, False)
    with pytest.raises(RuntimeError, match="non-increasing"):
        lucid.lstm(lucid.zeros(10, 3), lucid.tensor([2, 2, 2, 2, 3]), hx, ps, True, 1, 0.0, False, False)
    with pytest.raises(RuntimeError, match="sum to 11 but data has 10 rows"):
        lucid.lstm(lucid.zeros(10, 3), lucid.tensor([4, 4, 3]), hx, ps, True, 1, 0.0, False, False)
    gps = [lucid.tensor(w) for w in cases.weights("gru", 1, 1, True, 0)]
    with pytest.raises(TypeError, match="hx must be a tensor"):
        lucid.gru(x, hx, gps, True, 1, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match="hx must be 3-D"):
        lucid.gru(x, hx[0][0], gps, True, 1, 0.0, False, False, False)
