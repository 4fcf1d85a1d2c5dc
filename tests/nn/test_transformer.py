"""MultiheadAttention and the Transformer encoder/decoder layers: PyTorch state dicts give PyTorch's values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import lucid_core as lc
import lucid_nn as nn

FIX = json.loads((Path(__file__).parent / "fixtures" / "nn_b.json").read_text())["transformer"]
E, H = 8, 2


def T(a, device, dtype=lc.float64, requires_grad=False):
    return lc.asarray(np.asarray(a), dtype=dtype, device=device, requires_grad=requires_grad)


def _inputs(case, device):
    return {
        k: T(v, device, lc.bool if case["dtypes"][k] == "bool" else lc.float64, case["dtypes"][k] == "float64")
        for k, v in case["inputs"].items()
    }


def _check(m, case, outs, x, device):
    outs = [o for o in outs if o is not None]
    assert len(outs) == len(case["outs"])
    total = None
    for o, want, ct in zip(outs, case["outs"], case["cots"]):
        np.testing.assert_allclose(o.detach().numpy(), want, rtol=1e-8, atol=1e-11)
        term = (o * T(ct, device)).sum()
        total = term if total is None else total + term
    total.backward()
    for k, g in case["grads"].items():
        np.testing.assert_allclose(x[k].grad.numpy(), g, rtol=1e-7, atol=1e-10, err_msg=k)
    params = dict(m.named_parameters())
    for k, g in case["param_grads"].items():
        np.testing.assert_allclose(params[k].grad.numpy(), g, rtol=1e-7, atol=1e-10, err_msg=k)


def _load(m, case, device):
    assert sorted(m.state_dict()) == sorted(case["state"])
    m.load_state_dict({k: T(v, device) for k, v in case["state"].items()})
    return m


@pytest.mark.parametrize("name", ["mha", "mha_batch_first", "mha_kdim_vdim", "mha_bias_kv"])
def test_multihead_attention_matches_torch(name, device):
    case = FIX[name]
    m = _load(nn.MultiheadAttention(E, H, **case["kwargs"], dtype=lc.float64, device=device), case, device)
    x = _inputs(case, device)
    out = m(x["q"], x["k"], x["v"], key_padding_mask=x["kpm"], attn_mask=x["am"], average_attn_weights=False)
    _check(m, case, list(out), x, device)


@pytest.mark.parametrize("name", ["enc", "enc_pre_gelu_bf"])
def test_encoder_layer_stack_and_decoder_layer_match_torch(name, device):
    kw = FIX[name + "_layer"]["kwargs"]
    layer = nn.TransformerEncoderLayer(E, H, 16, dropout=0.0, **kw, dtype=lc.float64, device=device)
    case = FIX[name + "_layer"]
    _load(layer, case, device)
    x = _inputs(case, device)
    _check(layer, case, [layer(x["x"], src_mask=x["mask"], src_key_padding_mask=x["kpm"])], x, device)

    case = FIX[name + "_stack"]
    stack = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(E, dtype=lc.float64, device=device))
    _load(stack, case, device)
    x = _inputs(case, device)
    _check(stack, case, [stack(x["x"])], x, device)

    case = FIX["dec_" + name]
    dec = _load(nn.TransformerDecoderLayer(E, H, 16, dropout=0.0, **kw, dtype=lc.float64, device=device), case, device)
    x = _inputs(case, device)
    _check(dec, case, [dec(x["x"], x["mem"], tgt_mask=x["mask"])], x, device)


def test_encoder_copies_are_independent(device):
    layer = nn.TransformerEncoderLayer(E, H, 16, device=device)
    enc = nn.TransformerEncoder(layer, 3)
    w = [lyr.linear1.weight for lyr in enc.layers]
    assert len({id(t) for t in w}) == 3 and all(t is not layer.linear1.weight for t in w)
    np.testing.assert_array_equal(w[0].detach().numpy(), layer.linear1.weight.detach().numpy())
    with lc.no_grad():
        w[0].fill_(0.0)
    assert not np.allclose(w[1].detach().numpy(), 0.0)
    assert len(list(enc.parameters())) == 3 * len(list(layer.parameters()))


def test_decoder_stack_causal_mask_changes_only_earlier_positions(device):
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(E, H, 16, dropout=0.0, device=device), 1).eval()
    tgt, mem = lc.randn(4, 2, E, device=device), lc.randn(5, 2, E, device=device)
    free = dec(tgt, mem)
    causal = dec(tgt, mem, tgt_is_causal=True)
    assert free.shape == (4, 2, E)
    # the last position sees every target either way; the first one differs under a causal mask
    np.testing.assert_allclose(free.detach().numpy()[-1], causal.detach().numpy()[-1], rtol=1e-5, atol=1e-6)
    assert not np.allclose(free.detach().numpy()[0], causal.detach().numpy()[0])


def test_mha_init_follows_torch_and_weights_are_optional():
    lc.manual_seed(0)
    m = nn.MultiheadAttention(16, 4)
    assert [n for n, _ in m.named_parameters()] == [
        "in_proj_weight",
        "in_proj_bias",
        "out_proj.weight",
        "out_proj.bias",
    ]
    bound = (6 / (16 + 48)) ** 0.5  # xavier_uniform on the (48, 16) in-projection
    w = m.in_proj_weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert not m.in_proj_bias.detach().numpy().any() and not m.out_proj.bias.detach().numpy().any()
    x = lc.randn(3, 2, 16)
    out, weights = m(x, x, x, need_weights=False)
    assert out.shape == (3, 2, 16) and weights is None
    assert m(x, x, x)[1].shape == (2, 3, 3)


def test_transformer_errors_name_the_problem():
    with pytest.raises(ValueError, match="divisible by num_heads"):
        nn.MultiheadAttention(10, 3)
    with pytest.raises(ValueError, match="activation should be"):
        nn.TransformerEncoderLayer(8, 2, activation="swish")
    m = nn.MultiheadAttention(8, 2)
    with pytest.raises(ValueError, match="query has embed size 6 but the module expects 8"):
        m(lc.zeros((3, 2, 6)), lc.zeros((3, 2, 6)), lc.zeros((3, 2, 6)))
    with pytest.raises(ValueError, match="key_padding_mask should have shape"):
        x = lc.zeros((3, 2, 8))
        m(x, x, x, key_padding_mask=lc.zeros((2, 4), dtype=lc.bool))


# -- nn.Transformer: the full encoder-decoder model (fixtures from generate_nn_c.py) -------------------------

FULL = json.loads((Path(__file__).parent / "fixtures" / "nn_c.json").read_text())["transformer"]


def _full_model(case, device):
    d_model, nhead, n_enc, n_dec, ff = FULL["config"]
    dtype = getattr(lc, case["dtype"])
    m = nn.Transformer(d_model, nhead, n_enc, n_dec, ff, dropout=0.0, **case["kwargs"], dtype=dtype, device=device)
    assert list(m.state_dict()) == FULL["keys"]  # PyTorch's keys, in PyTorch's order
    m.load_state_dict({k: T(v, device, dtype) for k, v in FULL["states"][case["dtype"]].items()})
    return m, dtype


@pytest.mark.parametrize("name", sorted(FULL["cases"]))
def test_transformer_matches_torch_outputs_and_gradients(name, device):
    case = FULL["cases"][name]
    m, dtype = _full_model(case, device)
    tol = {"rtol": 1e-10, "atol": 1e-11} if dtype == lc.float64 else {"rtol": 1e-5, "atol": 1e-5}
    src = T(case["src"], device, dtype, requires_grad=True)
    tgt = T(case["tgt"], device, dtype, requires_grad=True)
    masks = {k: T(v, device, lc.bool if case["mask_dtypes"][k] == "bool" else dtype) for k, v in case["masks"].items()}
    out = m(src, tgt, **masks, **case["call"])
    assert out.dtype == dtype and out.shape == np.asarray(case["out"]).shape
    np.testing.assert_allclose(out.detach().numpy(), case["out"], **tol)
    (out * T(case["cot"], device, dtype)).sum().backward()
    np.testing.assert_allclose(src.grad.numpy(), case["grads"]["src"], **tol)
    np.testing.assert_allclose(tgt.grad.numpy(), case["grads"]["tgt"], **tol)
    params = dict(m.named_parameters())
    assert sorted(params) == sorted(case["param_grads"])
    for k, g in case["param_grads"].items():
        np.testing.assert_allclose(params[k].grad.numpy(), g, err_msg=k, **tol)


def test_square_subsequent_mask_is_torchs(device):
    mask = nn.Transformer.generate_square_subsequent_mask(3, device=device)
    assert mask.dtype == lc.float32 and mask.device == device
    np.testing.assert_array_equal(mask.numpy(), np.asarray(FULL["square_mask_3"]))
    assert nn.Transformer.generate_square_subsequent_mask(2, dtype=lc.float64).dtype == lc.float64
    with pytest.raises(ValueError, match="non-negative int"):
        nn.Transformer.generate_square_subsequent_mask(-1)


def test_transformer_init_is_xavier_on_matrices_and_layers_are_independent():
    lc.manual_seed(0)
    m = nn.Transformer(8, 2, 2, 1, 16)
    w = m.encoder.layers[0].linear1.weight.detach().numpy()
    bound = (6 / (8 + 16)) ** 0.5
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    a, b = (lyr.linear1.weight.detach().numpy() for lyr in m.encoder.layers)
    assert not np.allclose(a, b)  # re-initialised after cloning: the copies differ
    assert isinstance(m.encoder.norm, nn.LayerNorm) and isinstance(m.decoder.norm, nn.LayerNorm)
    assert len(m.decoder.layers) == 1 and m.d_model == 8 and m.nhead == 2


def test_transformer_custom_encoder_and_decoder_are_used(device):
    calls = []

    class Enc(nn.Module):
        def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
            calls.append(("enc", src.shape, is_causal))
            return src * 2

    class Dec(nn.Module):
        def forward(self, tgt, memory, **kw):
            calls.append(("dec", tgt.shape, memory.shape, kw["tgt_is_causal"]))
            return tgt + memory.mean()

    m = nn.Transformer(4, 2, custom_encoder=Enc(), custom_decoder=Dec(), device=device)
    assert list(m.state_dict()) == []
    out = m(lc.ones((3, 2, 4), device=device), lc.zeros((5, 2, 4), device=device), tgt_is_causal=True)
    np.testing.assert_allclose(out.numpy(), np.full((5, 2, 4), 2.0))
    assert calls == [("enc", (3, 2, 4), None), ("dec", (5, 2, 4), (3, 2, 4), True)]


def test_transformer_checks_batch_and_feature_sizes(device):
    m = nn.Transformer(4, 2, 1, 1, 8, device=device)
    with pytest.raises(RuntimeError, match="batch number of src and tgt must be equal"):
        m(lc.zeros((3, 2, 4), device=device), lc.zeros((3, 5, 4), device=device))
    with pytest.raises(RuntimeError, match=r"equal to d_model \(4\)"):
        m(lc.zeros((3, 2, 4), device=device), lc.zeros((3, 2, 6), device=device))
    with pytest.raises(ValueError, match="both be 3-D"):
        m(lc.zeros((3, 2, 4), device=device), lc.zeros((3, 4), device=device))
