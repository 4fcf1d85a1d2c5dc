"""The NumPy backend's compiled float32 kernels (``_ckernels.c``): the NumPy kernels' numbers within float32
rounding, the exact ones within the documented error, the same special values, the same bits from the AVX2
and the plain loops, and the switch that turns them off. (Split over threads: test_numpy_threads.py.)"""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import erf

import lucid_backend_numpy
from lucid_backend_numpy import _backend, _native

pytestmark = pytest.mark.skipif(
    _native.load() is None, reason="lucid_backend_numpy's compiled kernels are not built (no C compiler at install)"
)


@pytest.fixture(scope="module")
def kernels():
    """(compiled, NumPy) kernel tables of the NumPy backend."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LUCID_NUMPY_CKERNELS", "1")
        compiled = _backend._kernels(np)
        mp.setenv("LUCID_NUMPY_CKERNELS", "0")
        numpy_only = _backend._kernels(np)
    return compiled, numpy_only


def _values(rng: np.random.Generator, n: int = 50_000) -> np.ndarray:
    """Normal values at three scales, a dense sweep of [-12, 12], and float32's awkward points."""
    special = [0.0, -0.0, 1e-30, -1e-30, 1e-45, 5.0, -5.0, 9.0, -9.0, 13.3, -13.3, 40.0, -40.0, 3e38, -3e38]
    parts = [rng.standard_normal(n) * s for s in (0.1, 1.0, 4.0)] + [np.linspace(-12, 12, n), special]
    return np.concatenate(parts).astype(np.float32)


def _gelu64(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = x.astype(np.float64)
    cdf = 0.5 * (1.0 + erf(x / math.sqrt(2.0)))
    return x * cdf, cdf + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def test_gelu_and_its_gradient_match_the_exact_function_and_the_numpy_kernels(kernels):
    compiled, numpy_only = kernels
    rng = np.random.default_rng(0)
    x = _values(rng)
    g = rng.standard_normal(x.size).astype(np.float32)
    y, gx = compiled["gelu"](x, "none"), compiled["gelu_grad"](g, x, "none")
    assert y.dtype == gx.dtype == np.float32 and y.shape == gx.shape == x.shape
    ref, dref = _gelu64(x)
    # A&S 7.1.26 in float32: within 3.5e-7 of Phi (its own 1.5e-7 plus float32 arithmetic), times |x|
    assert np.all(np.abs(y - ref) <= 3.5e-7 * np.maximum(np.abs(x), 1.0) + 1e-37)
    assert np.all(np.abs(gx - dref * g) <= 4e-7 * np.abs(g) + 1e-37)
    np.testing.assert_allclose(y, numpy_only["gelu"](x, "none"), rtol=1e-6, atol=3e-7)
    np.testing.assert_allclose(gx, numpy_only["gelu_grad"](g, x, "none"), rtol=1e-6, atol=3e-7)


def test_gelu_special_values_are_pytorchs(kernels):
    compiled, numpy_only = kernels
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, -200.0, 200.0], dtype=np.float32)
    # PyTorch 2.13: gelu(inf) = inf, gelu(-inf) = nan (x * 0), nan stays nan; the gradient at +-inf is nan
    want = np.array([np.inf, np.nan, np.nan, 0.0, 0.0, 0.0, 200.0], dtype=np.float32)
    for k in (compiled, numpy_only):
        with np.errstate(invalid="ignore"):
            np.testing.assert_array_equal(k["gelu"](x, "none"), want)
            gx = k["gelu_grad"](np.ones_like(x), x, "none")
        np.testing.assert_array_equal(gx, [np.nan, np.nan, np.nan, 0.5, 0.5, 0.0, 1.0])


def _softmax64(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("d", [1, 7, 8, 64, 300])
def test_softmax_and_log_softmax_rows(kernels, d):
    compiled, numpy_only = kernels
    rng = np.random.default_rng(d)
    x = (rng.standard_normal((97, d)) * 6).astype(np.float32)
    p = compiled["softmax"](x, 1)
    np.testing.assert_allclose(p, _softmax64(x), rtol=2e-6, atol=1e-12)
    np.testing.assert_allclose(p, numpy_only["softmax"](x, 1), rtol=2e-6, atol=1e-12)
    lp = compiled["log_softmax"](x, -1)
    np.testing.assert_allclose(lp, np.log(_softmax64(x)), rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(lp, numpy_only["log_softmax"](x, -1), rtol=2e-6, atol=2e-6)


def test_softmax_rows_with_infinities_and_nan_match_the_numpy_kernels(kernels):
    compiled, numpy_only = kernels
    inf, nan = np.inf, np.nan
    x = np.array(
        [
            [-inf, -inf, -inf],
            [-inf, 0.0, 1.0],
            [inf, 0.0, 1.0],
            [nan, 0.0, 1.0],
            [100.0, -100.0, 0.0],
            [88.0, 89.0, 0.0],
        ],
        dtype=np.float32,
    )
    for name in ("softmax", "log_softmax"):
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            a, b = compiled[name](x, 1), numpy_only[name](x, 1)
        assert np.array_equal(np.isnan(a), np.isnan(b)), name
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-30, err_msg=name)


@pytest.mark.parametrize("affine", ["weight and bias", "weight", "bias", "none"])
def test_layer_norm_and_its_gradient_match_float64_and_the_numpy_kernels(kernels, affine):
    compiled, numpy_only = kernels
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((130, 37)) * 3 + 1).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    w = rng.standard_normal(37).astype(np.float32) if "weight" in affine else None
    b = rng.standard_normal(37).astype(np.float32) if "bias" in affine else None
    y, mean, rstd = compiled["layer_norm"](x, w, b, 1e-5)
    x64 = x.astype(np.float64)
    mu64 = x64.mean(-1, keepdims=True)
    r64 = 1 / np.sqrt(x64.var(-1, keepdims=True) + 1e-5)
    xhat = (x64 - mu64) * r64
    ref = xhat * (1 if w is None else w) + (0 if b is None else b)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(mean, mu64, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(rstd, r64, rtol=1e-6)
    for a, c in zip((y, mean, rstd), numpy_only["layer_norm"](x, w, b, 1e-5)):
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)
    gx, gw, gb = compiled["layer_norm_grad"](g, x, mean, rstd, w)
    gwx = g * (1 if w is None else w)
    ref_gx = r64 * (gwx - gwx.mean(-1, keepdims=True) - xhat * (gwx * xhat).mean(-1, keepdims=True))
    np.testing.assert_allclose(gx, ref_gx, rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(gw, (g * xhat).sum(0), rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(gb, g.sum(0), rtol=1e-5, atol=1e-5)
    for a, c in zip((gx, gw, gb), numpy_only["layer_norm_grad"](g, x, mean, rstd, w)):
        np.testing.assert_allclose(a, c, rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_and_its_gradient_match_the_numpy_kernels(kernels, causal):
    compiled, numpy_only = kernels
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((3, 4, 24, 16)).astype(np.float32) for _ in range(3))
    out, w = compiled["scaled_dot_product_attention"](q, k, v, 0.25, causal)
    out2, w2 = numpy_only["scaled_dot_product_attention"](q, k, v, 0.25, causal)
    np.testing.assert_allclose(out, out2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w, w2, rtol=1e-5, atol=1e-7)
    s = (q.astype(np.float64) * 0.25) @ np.swapaxes(k, -1, -2)
    if causal:
        s = np.where(np.tril(np.ones((24, 24), bool)), s, -np.inf)
    np.testing.assert_allclose(w, _softmax64(s), rtol=1e-5, atol=1e-7)
    gy = rng.standard_normal(out.shape).astype(np.float32)
    for a, c in zip(
        compiled["scaled_dot_product_attention_grad"](gy, q, k, v, w, 0.25),
        numpy_only["scaled_dot_product_attention_grad"](gy, q, k, v, w, 0.25),
    ):
        np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-5)


def _attention64(q, k, v, scale, causal):
    """Float64 attention and a function giving its gradients, the masked keys left out."""
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    s = (q * scale) @ np.swapaxes(k, -1, -2)
    keep = np.tril(np.ones(s.shape[-2:], bool)) if causal else np.ones(s.shape[-2:], bool)
    w = _softmax64(np.where(keep, s, -np.inf))

    def grads(gy):
        gy = gy.astype(np.float64)
        dw = gy @ np.swapaxes(v, -1, -2)
        ds = w * (dw - np.sum(dw * w, axis=-1, keepdims=True)) * scale
        return ds @ k, np.swapaxes(ds, -1, -2) @ q, np.swapaxes(w, -1, -2) @ gy

    return w @ v, w, grads


@settings(max_examples=40, deadline=None)
@given(
    heads=st.integers(1, 3),
    length=st.integers(1, 21),
    source=st.sampled_from([8, 16, 24, 40]),
    e=st.sampled_from([8, 16, 32]),
    ev=st.sampled_from([8, 24]),
    causal=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_compiled_attention_matches_float64(kernels, heads, length, source, e, ev, causal, seed):
    """The compiled attention (head dimensions and key count multiples of 8): 4-row tiles with 1-3 rows left,
    more queries than keys and fewer, causal rows shorter than a vector."""
    compiled, _ = kernels
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((heads, length, e)).astype(np.float32)
    k = rng.standard_normal((heads, source, e)).astype(np.float32)
    v = rng.standard_normal((heads, source, ev)).astype(np.float32)
    scale = 1 / math.sqrt(e)
    out, w = compiled["scaled_dot_product_attention"](q, k, v, scale, causal)
    ref, wref, grads = _attention64(q, k, v, scale, causal)
    assert out.dtype == w.dtype == np.float32 and out.shape == ref.shape and w.shape == wref.shape
    np.testing.assert_allclose(w, wref, rtol=2e-5, atol=1e-7)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=2e-6)
    if causal:
        assert np.all(w[:, np.triu_indices(length, 1, source)[0], np.triu_indices(length, 1, source)[1]] == 0)
    gy = rng.standard_normal(out.shape).astype(np.float32)
    for a, r in zip(compiled["scaled_dot_product_attention_grad"](gy, q, k, v, w, scale, causal), grads(gy)):
        assert a.dtype == np.float32 and a.shape == r.shape
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-5)


def test_compiled_causal_attention_never_reads_the_masked_keys(kernels):
    """As PyTorch's flash attention: a non-finite value or key past a query's position does not reach it."""
    compiled, numpy_only = kernels
    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal((2, 16, 8)).astype(np.float32) for _ in range(3))
    k[:, 9], v[:, 9] = np.nan, np.inf  # key 9: seen by queries 9.. only
    out, w = compiled["scaled_dot_product_attention"](q, k, v, 0.5, True)
    assert np.all(np.isfinite(out[:, :9])) and np.all(np.isfinite(w[:, :9]))
    gy = rng.standard_normal(out.shape).astype(np.float32)
    gq, _, _ = compiled["scaled_dot_product_attention_grad"](gy, q, k, v, w, 0.5, True)
    assert np.all(np.isfinite(gq[:, :9]))  # queries 0..8 (their gradients) never touch key 9
    # and they are what attention over keys 0..8 alone gives
    o2, w2 = numpy_only["scaled_dot_product_attention"](q[:, :9], k[:, :9], v[:, :9], 0.5, True)
    np.testing.assert_allclose(out[:, :9], o2, rtol=1e-5, atol=1e-6)
    g2 = numpy_only["scaled_dot_product_attention_grad"](gy[:, :9], q[:, :9], k[:, :9], v[:, :9], w2, 0.5)
    np.testing.assert_allclose(gq[:, :9], g2[0], rtol=1e-4, atol=1e-5)


def test_cross_entropy_matches_the_numpy_kernels(kernels):
    compiled, numpy_only = kernels
    rng = np.random.default_rng(6)
    x = (rng.standard_normal((50, 65)) * 4).astype(np.float32)
    t = rng.integers(0, 65, 50)
    t[3] = -100
    for smoothing in (0.0, 0.1):
        for a, c in zip(
            compiled["cross_entropy"](x, t, -100, smoothing), numpy_only["cross_entropy"](x, t, -100, smoothing)
        ):
            np.testing.assert_allclose(a, c, rtol=2e-6, atol=2e-6)


def test_avx512_avx2_and_plain_loops_give_the_same_bits(kernels):
    """Built without FMA contraction or fast-math: the machine's vector width does not change a result."""
    compiled, _ = kernels
    lib = _native.load()
    rng = np.random.default_rng(7)
    x = _values(rng, 5000).reshape(-1, 5)  # rows of 5: every kernel runs both its vector loop and its tail
    x2 = (rng.standard_normal((203, 61)) * 5).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    w = rng.standard_normal(61).astype(np.float32)

    def everything() -> list[np.ndarray]:
        with np.errstate(all="ignore"):
            y, mean, rstd = compiled["layer_norm"](x2, w, w, 1e-5)
            q = x2[:200].reshape(2, 4, 25, 61)
            o, att = compiled["scaled_dot_product_attention"](q, q, q, 0.3, True)
            qf = x2[:, :48].reshape(-1)[: 2 * 27 * 16 * 3].reshape(2, 3, 27, 16)  # the compiled attention: 8 | E, S
            kf = qf[:, :, :24]
            fused = []
            for causal in (False, True):
                of, af = compiled["scaled_dot_product_attention"](qf, kf, kf, 0.3, causal)
                fused += [of, af, *compiled["scaled_dot_product_attention_grad"](of, qf, kf, kf, af, 0.3, causal)]
            return [*fused,
                compiled["gelu"](x, "none"), compiled["gelu_grad"](g, x, "none"), compiled["softmax"](x2, 1),
                compiled["log_softmax"](x2, 1), y, mean, rstd, *compiled["layer_norm_grad"](x2, x2, mean, rstd, w),
                o, att, *compiled["scaled_dot_product_attention_grad"](o, q, q, q, att, 0.3),
            ]  # fmt: skip

    level = lib.lucid_simd_level()  # 2: GELU's AVX-512 loops too, 1: AVX2, 0: plain
    try:
        widest = everything()
        for lower in range(level - 1, -1, -1):
            assert lib.lucid_set_simd_level(lower) == lower
            for a, b in zip(widest, everything()):
                assert a.tobytes() == b.tobytes()
    finally:
        lib.lucid_set_simd_level(level)
    assert lib.lucid_simd_level() == level


def test_the_switch(monkeypatch):
    monkeypatch.setenv("LUCID_NUMPY_CKERNELS", "0")
    assert _native.load() is None
    monkeypatch.setenv("LUCID_NUMPY_CKERNELS", "yes")
    with pytest.raises(ValueError, match="LUCID_NUMPY_CKERNELS='yes'"):
        _native.load()
    monkeypatch.setenv("LUCID_NUMPY_CKERNELS", "1")
    assert _native.load() is not None
    monkeypatch.setitem(sys.modules, "lucid_backend_numpy._ckernels", None)  # as if it had not been built
    monkeypatch.delattr(lucid_backend_numpy, "_ckernels", raising=False)
    with pytest.raises(ImportError, match="compiled kernels are not built"):
        _native.load()
    monkeypatch.delenv("LUCID_NUMPY_CKERNELS")
    assert _native.load() is None  # unset: NumPy's kernels, quietly


@pytest.mark.parametrize("shape, kernel", [((3, 4, 9, 7), (2, 2)), ((2, 3, 10, 11), (3, 3)), ((2, 2, 6, 9), (2, 3))])
def test_max_pool_and_its_gradient_are_the_numpy_kernels_bits(kernels, shape, kernel):
    """Ties (small integers), NaN and infinities inside tiles, and rows and columns past the last tile."""
    compiled, numpy_only = kernels
    rng = np.random.default_rng(8)
    x = rng.integers(-2, 3, shape).astype(np.float32)
    x[0, 0, 0, 0], x[0, 1, 2, 3], x[1, 0, 4, 4] = np.nan, np.inf, -np.inf
    out = tuple(s // k for s, k in zip(shape[2:], kernel))
    y = compiled["max_pool_tiles"](x, kernel, out)
    assert y.tobytes() == numpy_only["max_pool_tiles"](x, kernel, out).tobytes()
    gy = rng.standard_normal(y.shape).astype(np.float32)
    with np.errstate(invalid="ignore", divide="ignore"):
        got = compiled["max_pool_tiles_grad"](gy, x, y, kernel, out)
        want = numpy_only["max_pool_tiles_grad"](gy, x, y, kernel, out)
    assert got.shape == x.shape and got.tobytes() == want.tobytes()
    # the NaN is its tile's maximum and takes the tile's gradient; each tile's gradient lands once
    assert got[0, 0, 0, 0] == gy[0, 0, 0, 0] and not np.isnan(got).any()
    tiles = got[:, :, : out[0] * kernel[0], : out[1] * kernel[1]].reshape(*y.shape[:2], out[0], kernel[0], out[1], -1)
    np.testing.assert_array_equal(tiles.sum(axis=(3, 5)), gy)
    assert ((tiles != 0).sum(axis=(3, 5)) <= 1).all()
    padded = np.zeros((*gy.shape[:2], gy.shape[2] + 2, gy.shape[3] + 3), np.float32)
    padded[:, :, 1:-1, 2:-1] = gy
    view = padded[:, :, 1:-1, 2:-1]  # a strided gradient, as a conv's padded input gradient gives
    with np.errstate(invalid="ignore", divide="ignore"):
        assert compiled["max_pool_tiles_grad"](view, x, y, kernel, out).tobytes() == got.tobytes()


def test_relu_grad_is_the_numpy_kernels_bits(kernels):
    compiled, numpy_only = kernels
    rng = np.random.default_rng(9)
    x = rng.standard_normal((64, 300)).astype(np.float32)
    x[0, :6] = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-45]
    g = rng.standard_normal(x.shape).astype(np.float32)
    g[1, :3] = [np.nan, -0.0, np.inf]
    got = compiled["relu_grad"](g, x)
    assert got.tobytes() == numpy_only["relu_grad"](g, x).tobytes()
    assert got.tobytes() == compiled["relu_grad"](g, np.asfortranarray(x)).tobytes()  # a non-contiguous x


@settings(max_examples=60, deadline=None)
@given(
    groups=st.sampled_from([1, 2, 3]),
    cg=st.integers(1, 3),
    og=st.integers(1, 3),
    n=st.integers(1, 3),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    pads=st.tuples(st.tuples(st.integers(0, 2), st.integers(0, 2)), st.tuples(st.integers(0, 2), st.integers(0, 2))),
    size=st.tuples(st.integers(1, 9), st.integers(1, 9)),
    seed=st.integers(0, 2**16),
)
def test_2d_conv_column_loops_are_the_numpy_kernels_bits(kernels, groups, cg, og, n, kernel, stride, dilation, pads,
                                                         size, seed):  # fmt: skip
    """The compiled im2col and col2im (any stride, dilation, padding, groups) feed BLAS the NumPy kernels'
    columns and add the gradient in their order: conv, its input and weight gradients, bit for bit (the NumPy
    kernels without their padded grid, which only adds dropped columns to the same products)."""
    from lucid_backend_numpy import _cnn
    from lucid_core.kernels import conv_out

    compiled, numpy_only = kernels
    out = conv_out(size, kernel, stride, pads, dilation)
    if min(out) <= 0:
        return
    rng = np.random.default_rng(seed)
    c, o = cg * groups, og * groups
    x = rng.standard_normal((n, c, *size)).astype(np.float32)
    w = rng.standard_normal((o, cg, *kernel)).astype(np.float32)
    gy = rng.standard_normal((n, o, *out)).astype(np.float32)
    saved, _cnn.GRID_BELOW = _cnn.GRID_BELOW, 0
    try:
        for name, args in {
            "conv": (x, w, stride, dilation, pads, groups),
            "conv_input_grad": (gy, w, size, stride, dilation, pads, groups),
            "conv_weight_grad": (x, gy, kernel, stride, dilation, pads, groups),
        }.items():
            got, want = compiled[name](*args), numpy_only[name](*args)
            assert got.shape == want.shape and got.dtype == want.dtype, name
            assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes(), name
    finally:
        _cnn.GRID_BELOW = saved


def test_address_is_numpys_pointer_and_refuses_what_a_kernel_would_misread():
    """``_native.ptr`` (the extension's buffer-protocol ``address``): NumPy's own data pointer, plus the offset in
    items; a strided view or an offset past the end raises instead of handing a kernel the wrong memory."""
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    assert _native.ptr(a) == a.ctypes.data
    assert _native.ptr(a, 7) == a.ctypes.data + 7 * 4
    assert _native.ptr(a, 24) == a.ctypes.data + 96  # one past the end: an empty slice's start
    assert _native.ptr(None) is None
    ro = np.ones(3, np.float32)
    ro.flags.writeable = False
    assert _native.ptr(ro) == ro.ctypes.data
    with pytest.raises(ValueError):
        _native.ptr(a[:, ::2])
    with pytest.raises(IndexError, match="outside"):
        _native.ptr(a, 25)
    with pytest.raises(IndexError, match="outside"):
        _native.ptr(a, -1)


def test_compiled_attention_takes_only_shapes_that_fit(kernels):
    """The C loops read the shapes they are given: arrays that do not fit one another go to the NumPy path,
    which names the mismatch, instead of reaching memory past an array's end."""
    compiled, _ = kernels
    rng = np.random.default_rng(12)
    q = rng.standard_normal((2, 16, 8)).astype(np.float32)
    kv = rng.standard_normal((2, 24, 8)).astype(np.float32)
    out, w = compiled["scaled_dot_product_attention"](q, kv, kv, 0.5, True)
    with pytest.raises(ValueError):
        compiled["scaled_dot_product_attention"](q, kv[:, :, :4], kv, 0.5, True)  # k's head dimension
    with pytest.raises(ValueError):  # an output gradient of the wrong width
        compiled["scaled_dot_product_attention_grad"](np.ones((2, 16, 16), np.float32), q, kv, kv, w, 0.5, True)
    with pytest.raises(ValueError):  # weights for other keys
        compiled["scaled_dot_product_attention_grad"](out, q, kv, kv, w[:, :, :16], 0.5, True)
