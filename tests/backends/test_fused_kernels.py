"""The fused nn kernels (layer_norm, gelu, scaled_dot_product_attention, cross_entropy, softmax): each
backend's native kernel agrees with the composed default, the ops built on them have correct gradients
of first and second order, and NumPy's float32 GELU stays within its stated error bound."""

from __future__ import annotations

import math
import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lucid_core as lc
import lucid_nn.functional as F
from lucid_core import kernels
from lucid_core._registry import resolve_device

FUSED = (
    "layer_norm", "layer_norm_grad", "gelu", "gelu_grad", "scaled_dot_product_attention",
    "scaled_dot_product_attention_grad", "cross_entropy", "cross_entropy_grad", "softmax", "log_softmax",
)  # fmt: skip
_fixture_ok = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _composed(device: lc.Device) -> types.SimpleNamespace:
    """The device's namespace with no native kernels: every call takes the composed default."""
    return types.SimpleNamespace(backend=types.SimpleNamespace(kernels={}), xp=device.xp)


def _dtypes(device: lc.Device) -> list[lc.DType]:
    return [d for d in (lc.float32, lc.float64) if d in device.backend.dtypes]


def _tol(dtype: lc.DType) -> float:
    return 2e-5 if dtype is lc.float32 else 1e-11


def _close(device: lc.Device, got, want, dtype: lc.DType, what: str) -> None:
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want), what
    for i, (g, w) in enumerate(zip(got, want)):
        g = np.asarray(device.backend.to_numpy(g))
        w = np.asarray(device.backend.to_numpy(w))
        assert g.shape == w.shape and g.dtype == w.dtype, (what, i, g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=_tol(dtype), atol=_tol(dtype), err_msg=f"{what}[{i}]")


def _arr(device: lc.Device, a: np.ndarray, dtype: lc.DType):
    return lc.asarray(a, dtype=dtype, device=device)._data


def _check(device: lc.Device, name: str, dtype: lc.DType, *args) -> None:
    if name not in device.backend.kernels:
        return
    got = kernels.call(device, name, *args)
    want = kernels.call(_composed(device), name, *args)
    _close(device, got, want, dtype, name)


def test_the_fused_kernels_are_declared_with_composed_defaults():
    for name in FUSED:
        assert kernels.KERNELS[name].default is not None, name


@_fixture_ok
@given(
    rows=st.integers(1, 6),
    d=st.integers(1, 33),
    affine=st.sampled_from(["none", "weight", "both"]),
    seed=st.integers(0, 2**16),
)
def test_layer_norm_kernels_match_the_composed_defaults(device, rows, d, affine, seed):
    rng = np.random.default_rng(seed)
    for dtype in _dtypes(device):
        x = _arr(device, rng.standard_normal((2, rows, d)) * 3 + 1, dtype)
        w = None if affine == "none" else _arr(device, rng.standard_normal(d), dtype)
        b = _arr(device, rng.standard_normal(d), dtype) if affine == "both" else None
        _check(device, "layer_norm", dtype, x, w, b, 1e-5)
        _, mean, rstd = kernels.call(_composed(device), "layer_norm", x, w, b, 1e-5)
        gy = _arr(device, rng.standard_normal((2, rows, d)), dtype)
        _check(device, "layer_norm_grad", dtype, gy, x, mean, rstd, w)


@_fixture_ok
@given(shape=st.sampled_from([(7,), (3, 5), (2, 3, 4)]), approximate=st.sampled_from(["none", "tanh"]))
def test_gelu_kernels_match_the_composed_defaults(device, shape, approximate):
    rng = np.random.default_rng(sum(shape))
    for dtype in _dtypes(device):
        x = _arr(device, rng.standard_normal(shape) * 3, dtype)
        gy = _arr(device, rng.standard_normal(shape), dtype)
        _check(device, "gelu", dtype, x, approximate)
        _check(device, "gelu_grad", dtype, gy, x, approximate)


@_fixture_ok
@given(
    lengths=st.tuples(st.integers(1, 6), st.integers(1, 6)),
    e=st.integers(1, 5),
    causal=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_attention_kernels_match_the_composed_defaults(device, lengths, e, causal, seed):
    rng = np.random.default_rng(seed)
    length, source = lengths
    for dtype in _dtypes(device):
        q = _arr(device, rng.standard_normal((2, 3, length, e)), dtype)
        k = _arr(device, rng.standard_normal((2, 3, source, e)), dtype)
        v = _arr(device, rng.standard_normal((2, 3, source, e + 1)), dtype)
        scale = 1 / math.sqrt(e)
        _check(device, "scaled_dot_product_attention", dtype, q, k, v, scale, causal)
        _, w = kernels.call(_composed(device), "scaled_dot_product_attention", q, k, v, scale, causal)
        gy = _arr(device, rng.standard_normal((2, 3, length, e + 1)), dtype)
        _check(device, "scaled_dot_product_attention_grad", dtype, gy, q, k, v, w, scale)


@_fixture_ok
@given(
    n=st.integers(1, 7),
    c=st.integers(1, 9),
    smoothing=st.sampled_from([0.0, 0.1, 1.0]),
    seed=st.integers(0, 2**16),
)
def test_cross_entropy_and_softmax_kernels_match_the_composed_defaults(device, n, c, smoothing, seed):
    rng = np.random.default_rng(seed)
    t = rng.integers(0, c, n)
    t[rng.random(n) < 0.3] = -100
    target = lc.asarray(t, device=device)._data
    for dtype in _dtypes(device):
        x = _arr(device, rng.standard_normal((n, c)) * 5, dtype)
        _check(device, "cross_entropy", dtype, x, target, -100, smoothing)
        _, logp = kernels.call(_composed(device), "cross_entropy", x, target, -100, smoothing)
        g = _arr(device, rng.standard_normal(n) * (t != -100), dtype)
        _check(device, "cross_entropy_grad", dtype, g, logp, target, -100, smoothing)
        for axis in (0, 1):
            _check(device, "softmax", dtype, x, axis)
            _check(device, "log_softmax", dtype, x, axis)


def test_softmax_kernels_keep_infinite_rows_as_the_composed_default(device):
    for dtype in _dtypes(device):
        x = _arr(device, np.array([[-np.inf, 0.0, 1.0], [-np.inf, -np.inf, -np.inf], [-np.inf, 3.0, -np.inf]]), dtype)
        for name in ("softmax", "log_softmax"):
            got = np.asarray(device.backend.to_numpy(kernels.call(device, name, x, 1)))
            want = np.asarray(device.backend.to_numpy(kernels.call(_composed(device), name, x, 1)))
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            np.testing.assert_allclose(got[~np.isnan(got)], want[~np.isnan(want)], rtol=1e-6)


def test_numpy_float32_gelu_is_within_its_error_bound_and_float64_is_exact():
    from scipy import special

    dev = resolve_device("numpy")
    x64 = np.concatenate([np.linspace(-12, 12, 20001), np.random.default_rng(0).standard_normal(5000) * 4])
    exact = x64 * 0.5 * (1.0 + special.erf(x64 * (1.0 / math.sqrt(2.0))))  # the composed ops' arithmetic
    dexact = 0.5 * (1.0 + special.erf(x64 / math.sqrt(2.0))) + x64 * np.exp(-0.5 * x64 * x64) / math.sqrt(2 * math.pi)
    x32 = x64.astype(np.float32)
    xs = x32.astype(np.float64)  # the float32 inputs, exactly
    exact32 = xs * 0.5 * (1.0 + special.erf(xs / math.sqrt(2.0)))
    # erfc approximated to 1.5e-7 (Phi to 7.5e-8), its polynomial evaluated in float32: Phi within 3e-7
    # (about 2 float32 ulps of 1; SciPy's erf in float32 gives 1e-7), then a few roundings of the product
    y = kernels.call(dev, "gelu", x32, "none").astype(np.float64)
    assert np.all(np.abs(y - exact32) <= np.abs(xs) * 3e-7 + 4 * np.finfo(np.float32).eps * np.abs(exact32))
    g = kernels.call(dev, "gelu_grad", np.ones_like(x32), x32, "none").astype(np.float64)
    dexact32 = 0.5 * (1.0 + special.erf(xs / math.sqrt(2.0))) + xs * np.exp(-0.5 * xs * xs) / math.sqrt(2 * math.pi)
    assert np.max(np.abs(g - dexact32)) < 5e-7
    # float64: SciPy's erf in the composed arithmetic, bit for bit
    np.testing.assert_array_equal(kernels.call(dev, "gelu", x64, "none"), exact)
    assert np.max(np.abs(kernels.call(dev, "gelu_grad", np.ones_like(x64), x64, "none") - dexact)) < 1e-15


def _f64(device: lc.Device, *shape: int, seed: int = 0) -> lc.Tensor:
    a = np.random.default_rng(seed).standard_normal(shape)
    return lc.asarray(a, dtype=lc.float64, device=device, requires_grad=True)


def _needs_f64(device: lc.Device) -> None:
    if lc.float64 not in device.backend.dtypes:
        pytest.skip(f"{device} has no float64")


@pytest.mark.parametrize("affine", ["none", "weight", "both"])
def test_layer_norm_first_and_second_order_gradients(device, affine):
    _needs_f64(device)
    x = _f64(device, 2, 3, 5)
    w = _f64(device, 5, seed=1) if affine != "none" else None
    b = _f64(device, 5, seed=2) if affine == "both" else None
    params = [p for p in (w, b) if p is not None]

    def fn(x, *p):
        return F.layer_norm(x, 5, *p)

    assert lc.gradcheck(fn, [x, *params])
    assert lc.gradgradcheck(fn, [x, *params])
    w2 = _f64(device, 3, 5, seed=3)  # several normalised axes: flattened into one
    assert lc.gradcheck(lambda x, w: F.layer_norm(x, (3, 5), w), [x, w2])


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_first_and_second_order_gradients(device, approximate):
    _needs_f64(device)
    x = _f64(device, 3, 4)
    assert lc.gradcheck(lambda t: F.gelu(t, approximate), [x])
    assert lc.gradgradcheck(lambda t: F.gelu(t, approximate), [x])


@pytest.mark.parametrize("causal", [False, True])
def test_fused_attention_first_and_second_order_gradients(device, causal):
    _needs_f64(device)
    q, k, v = _f64(device, 2, 2, 4, 3, seed=0), _f64(device, 2, 2, 5, 3, seed=1), _f64(device, 2, 2, 5, 2, seed=2)

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    assert lc.gradcheck(fn, [q, k, v])
    assert lc.gradgradcheck(fn, [q, k, v])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.25])
def test_fused_cross_entropy_gradients_and_composed_semantics(device, reduction, smoothing):
    _needs_f64(device)
    x = _f64(device, 5, 4)
    t = lc.asarray([0, 3, -100, 2, 1], device=device)

    def fn(x):
        return F.cross_entropy(x, t, reduction=reduction, label_smoothing=smoothing)

    assert lc.gradcheck(fn, [x])
    assert lc.gradgradcheck(fn, [x])
    # the composed definition: (1 - s) * nll + s / C * -sum(logp) over the rows not ignored
    logp = F.log_softmax(x, dim=1)
    valid = lc.asarray([1.0, 1.0, 0.0, 1.0, 1.0], dtype=lc.float64, device=device)
    picked = lc.stack([logp[i, int(c)] if int(c) >= 0 else logp[i, 0] for i, c in enumerate(t.tolist())])
    rows = ((1 - smoothing) * -picked + smoothing / 4 * -lc.sum(logp, axis=1)) * valid
    want = {"none": rows, "sum": lc.sum(rows), "mean": lc.sum(rows) / lc.sum(valid)}[reduction]
    np.testing.assert_allclose(fn(x).detach().to("numpy").numpy(), want.detach().to("numpy").numpy(), rtol=1e-12)


@pytest.mark.parametrize("causal", [False, True])
def test_packed_self_attention_matches_the_composed_path_with_gradients(device, causal):
    import lucid_nn as nn

    _needs_f64(device)
    lc.manual_seed(0)
    m = nn.MultiheadAttention(6, 2, batch_first=True, device=device, dtype=lc.float64)
    x = _f64(device, 2, 4, 6)

    def fused(t):  # self-attention without weights: the packed kernel path
        return m(t, t, t, need_weights=False, is_causal=causal)[0]

    mask = lc.triu(lc.full((4, 4), -math.inf, dtype=lc.float64, device=device), k=1) if causal else None
    want = m(x, x, x, need_weights=True, attn_mask=mask)[0]  # the composed ops
    np.testing.assert_allclose(fused(x).detach().to("numpy").numpy(), want.detach().to("numpy").numpy(), atol=1e-12)
    assert lc.gradcheck(fused, [x])
    assert lc.gradgradcheck(fused, [x])
