"""MLX-specific behaviour of the ``mlx`` backend: devices, laziness, dtypes, gaps MLX leaves, random numbers."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest
import scipy.special as sp

mx = pytest.importorskip("mlx.core")

import lucid_core as lc  # noqa: E402
from lucid_backend_mlx import _namespace as ns  # noqa: E402
from lucid_backend_mlx._backend import gpu_available  # noqa: E402


@pytest.fixture
def mlx() -> lc.Backend:
    return lc.get_backend("mlx")


def _np(t: lc.Tensor) -> np.ndarray:
    return np.asarray(t.detach().numpy())


# -- registration and devices ------------------------------------------------------------------------


def test_registered_through_the_entry_point(mlx):
    row = next(b for b in lc.backends() if b.name == "mlx")
    assert row.status == "ok"
    assert row.distribution == "lucid-backend-mlx"
    assert "mlx:cpu" in row.devices


def test_default_device_is_gpu_when_present_else_cpu(mlx):
    expected = "gpu" if gpu_available(mx) else "cpu"
    assert mlx.default_device.type == expected
    assert lc.resolve_device("mlx") is mlx.default_device
    assert str(lc.resolve_device("mlx:cpu")) == "mlx:cpu"


@pytest.mark.skipif(gpu_available(mx), reason="this machine has an MLX GPU")
def test_gpu_request_without_gpu_names_available_devices(mlx, monkeypatch):
    with pytest.raises(RuntimeError, match=r"'mlx' has no 'gpu' device on this machine; it offers \['mlx:cpu'\]"):
        lc.tensor([1.0], device="mlx:gpu")
    # plain "gpu" falls back to the CPU with a warning (tests/core/test_tensor_methods.py); strict, it names them
    monkeypatch.setenv("LUCID_STRICT_DEVICE", "1")
    with pytest.raises(RuntimeError, match=r"no installed backend offers a 'gpu' device \(available devices: \["):
        lc.tensor([1.0], device="gpu")


def test_plugin_import_does_not_import_mlx():
    code = "import sys, lucid_backend_mlx; print('mlx' in sys.modules, 'mlx.core' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


# -- laziness -------------------------------------------------------------------------------------------


def test_forward_and_backward_stay_lazy_and_eval_is_one_call(mlx, monkeypatch):
    x = lc.randn(3, 4, device="mlx:cpu", requires_grad=True)
    calls = []
    real_eval = mx.eval
    monkeypatch.setattr(mx, "eval", lambda *a: (calls.append(len(a)), real_eval(*a)))
    y = (lc.tanh(x) * 2.0).sum()
    y.backward()
    assert calls == []  # nothing evaluated yet
    lc.eval(y, x.grad)
    assert calls == [2]
    assert isinstance(x.grad.native, mx.array)


def test_item_tolist_numpy_and_repr_evaluate(mlx):
    x = lc.arange(4, device="mlx:cpu").astype(lc.float32) * 0.5
    assert x.tolist() == [0.0, 0.5, 1.0, 1.5]
    assert x.sum().item() == 3.0
    assert np.array_equal(x.numpy(), np.array([0.0, 0.5, 1.0, 1.5], dtype=np.float32))
    assert "device=mlx:cpu" in repr(x) and "1.5" in repr(x)
    assert bool(x[1] > 0.4)


# -- dtypes ----------------------------------------------------------------------------------------------


def test_python_ints_are_int64_and_integer_results_widen(mlx):
    assert lc.tensor([1, 2], device="mlx:cpu").dtype is lc.int64
    assert lc.arange(5, device="mlx:cpu").dtype is lc.int64
    i32 = lc.tensor([1, 2], dtype=lc.int32, device="mlx:cpu")
    assert lc.sum(i32).dtype is lc.int64
    assert lc.argmax(lc.tensor([1.0, 3.0], device="mlx:cpu")).dtype is lc.int64
    assert lc.argsort(lc.tensor([1.0, 3.0], device="mlx:cpu")).dtype is lc.int64


def test_host_float64_keeps_its_dtype(mlx):
    t = lc.asarray(np.array([1.0, 2.0]), device="mlx:cpu")
    assert t.dtype is lc.float64
    assert t.native.dtype == mx.float64


def test_complex128_is_refused_with_advice(mlx):
    with pytest.raises(TypeError, match="does not support dtype complex128"):
        lc.zeros(2, dtype=lc.complex128, device="mlx:cpu")
    with pytest.raises(TypeError, match=r"MLX has no dtype matching complex128; convert the data first"):
        lc.asarray(np.array([1 + 2j]), device="mlx:cpu")


def test_float64_is_refused_on_a_device_without_it():
    gpu_ns = ns.MLXNamespace(mx.cpu, "mlx:gpu", float64=False)
    with pytest.raises(TypeError, match="MLX cannot compute in float64 on mlx:gpu.*use device 'mlx:cpu'"):
        gpu_ns.zeros((2,), dtype=mx.float64)
    with pytest.raises(TypeError, match="MLX cannot compute in float64"):
        gpu_ns.astype(mx.array([1.0]), mx.float64)
    assert gpu_ns.zeros((2,), dtype=mx.float32).dtype == mx.float32


# -- moving between backends ------------------------------------------------------------------------------


def test_to_and_from_numpy_keeps_values_grad_and_dtype(mlx):
    a = lc.tensor([1.0, -2.0, 3.0], dtype=lc.float64, device="numpy", requires_grad=True)
    b = a.to("mlx:cpu")
    assert b.device == "mlx:cpu" and b.requires_grad and b.dtype is lc.float64
    c = (b * b).to("numpy")
    assert c.device == "numpy:cpu"
    c.sum().backward()
    assert np.allclose(_np(a.grad), [2.0, -4.0, 6.0])
    assert a.grad.device == "numpy:cpu"


def test_mlx_to_numpy_shares_memory(mlx):
    t = lc.tensor([1.0, 2.0], device="mlx:cpu")
    arr = t.numpy()
    arr2 = t.numpy()
    assert np.shares_memory(arr, arr2)


# -- gaps filled ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fn", "ref"),
    [
        (ns.exp, np.exp), (ns.sin, np.sin), (ns.cos, np.cos), (ns.erf, sp.erf), (ns.sigmoid, sp.expit),
    ],
)  # fmt: skip
def test_float64_functions_are_float64_accurate(fn, ref):
    x = np.concatenate([np.linspace(-30, 30, 601), [0.0, -0.0, 1e-300, 7.0, -7.0, 700.0, -700.0]])
    got = np.asarray(fn(mx.array(x, dtype=mx.float64)))
    want = ref(x)
    np.testing.assert_allclose(got, want, rtol=5e-15, atol=5e-16)


def test_float64_functions_keep_nan_and_inf():
    x = mx.array([np.nan, np.inf, -np.inf], dtype=mx.float64)
    np.testing.assert_array_equal(np.asarray(ns.exp(x)), [np.nan, np.inf, 0.0])
    np.testing.assert_array_equal(np.asarray(ns.erf(x)), [np.nan, 1.0, -1.0])
    np.testing.assert_array_equal(np.asarray(ns.sigmoid(x)), [np.nan, 1.0, 0.0])


def test_logaddexp_and_logsumexp_float64():
    a = np.array([-1000.0, 0.5, 3.0, -np.inf, np.inf])
    b = np.array([-1000.0, -2.0, 40.0, -np.inf, 1.0])
    got = np.asarray(ns.logaddexp(mx.array(a, dtype=mx.float64), mx.array(b, dtype=mx.float64)))
    np.testing.assert_allclose(got, np.logaddexp(a, b), rtol=1e-15)
    x = np.random.default_rng(0).normal(size=(3, 5)) * 10
    got = np.asarray(ns.logsumexp(mx.array(x, dtype=mx.float64), (1,), False))
    np.testing.assert_allclose(got, sp.logsumexp(x, axis=1), rtol=1e-15)


def test_sign_signbit_copysign_hypot_follow_numpy():
    x = np.array([np.nan, -0.0, 0.0, -2.5, 3.0], dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(ns.sign(mx.array(x))), np.sign(x))
    np.testing.assert_array_equal(np.asarray(ns.signbit(mx.array(x))), np.signbit(x))
    y = np.array([1.0, -1.0, 2.0, -0.0, 5.0], dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(ns.copysign(mx.array(y), mx.array(x))), np.copysign(y, x))
    big = np.array([3e30, 0.0, np.inf], dtype=np.float32)
    np.testing.assert_allclose(np.asarray(ns.hypot(mx.array(big), mx.array(big))), np.hypot(big, big), rtol=1e-6)


def test_integer_matmul_and_einsum_are_exact(mlx):
    a = lc.tensor([[1, 2], [3, 4]], device="mlx:cpu")
    b = lc.tensor([[5, -6], [7, 8]], device="mlx:cpu")
    assert (a @ b).tolist() == [[19, 10], [43, 14]]
    assert (a @ b).dtype is lc.int64
    assert lc.einsum("ij,jk->ik", a, b).tolist() == [[19, 10], [43, 14]]


def test_nonzero_matches_numpy():
    x = np.array([[0, 1, 0], [2, 0, 3]], dtype=np.int32)
    got = ns.nonzero(mx.array(x))
    for g, w in zip(got, np.nonzero(x)):
        np.testing.assert_array_equal(np.asarray(g), w)
    assert all(np.asarray(g).size == 0 for g in ns.nonzero(mx.zeros((2, 2))))


def test_unique_functions_match_numpy():
    x = np.array([3, 1, 3, 2, 1, 3], dtype=np.int64)
    vals, idx, inv, counts = ns.unique_all(mx.array(x))
    v, i, n, c = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    for got, want in ((vals, v), (idx, i), (inv, n), (counts, c)):
        np.testing.assert_array_equal(np.asarray(got), want)


def test_argsort_descending_is_stable():
    x = np.array([1.0, 3.0, 1.0, 3.0, 2.0, 1.0], dtype=np.float32)
    got = np.asarray(ns.argsort(mx.array(x), descending=True))
    np.testing.assert_array_equal(got, np.argsort(-x, kind="stable"))


def test_reductions_over_no_axes_reduce_nothing():
    x = mx.array([[1.0, 2.0], [3.0, 4.0]])
    assert ns.sum(x, axis=()).shape == (2, 2)
    assert ns.max(x, axis=()).shape == (2, 2)


def test_cumulative_sum_include_initial():
    got = ns.cumulative_sum(mx.array([1, 2, 3], dtype=mx.int32), include_initial=True)
    assert got.tolist() == [0, 1, 3, 6] and got.dtype == mx.int64


def test_each_adapter_sits_under_its_own_name_in_the_namespace():
    # cumulative_sum and cumulative_prod come from one factory and share a __name__; each keeps its own key
    assert all(getattr(ns, name) is fn for name, fn in ns._ADAPTED.items())
    xp = ns.MLXNamespace()
    assert not hasattr(xp, "cumulative")
    x = mx.array([1.0, 2.0, 3.0])
    assert xp.cumulative_sum(x).tolist() == [1.0, 3.0, 6.0]
    assert xp.cumulative_prod(x).tolist() == [1.0, 2.0, 6.0]


def test_boolean_mask_kernel_and_bounds_check(mlx):
    x = mx.arange(6, dtype=mx.int64).reshape(2, 3)
    assert mlx.kernels["getitem"](x, (x > 2,)).tolist() == [3, 4, 5]
    assert mlx.kernels["getitem"](x, (slice(None), mx.array([True, False, True]))).tolist() == [[0, 2], [3, 5]]
    mlx.check_index_bounds = True
    try:
        with pytest.raises(IndexError, match="out of bounds for axis 1 with size 3"):
            mlx.kernels["getitem"](x, (slice(None), mx.array([0, 3])))
    finally:
        mlx.check_index_bounds = False


def test_index_gradient_accumulates_repeats(mlx):
    x = lc.tensor([1.0, 2.0, 3.0], device="mlx:cpu", requires_grad=True)
    x[lc.tensor([0, 0, 2, 0], device="mlx:cpu")].sum().backward()
    assert x.grad.tolist() == [3.0, 0.0, 1.0]


def test_setitem_is_seen_through_detached_views(mlx):
    w = lc.zeros(4, device="mlx:cpu")
    view = w.detach()
    view[lc.tensor([1, 3], device="mlx:cpu")] = 5.0
    assert w.tolist() == [0.0, 5.0, 0.0, 5.0]
    c = w.clone()
    w[0] = 7.0
    assert c.tolist()[0] == 0.0


# -- linalg and fft extensions ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [lc.float32, lc.float64])
def test_linalg_extension_matches_numpy(mlx, dtype):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)).astype(dtype.name)
    b = rng.standard_normal((4, 3)).astype(dtype.name)
    t = lambda v: lc.asarray(v, device="mlx:cpu")  # noqa: E731
    tol = 1e-4 if dtype is lc.float32 else 1e-10
    np.testing.assert_allclose(_np(lc.linalg.det(t(a))), np.linalg.det(a), rtol=tol)
    sign, logabs = lc.linalg.slogdet(t(a * [[[-1.0]], [[1.0]]]))
    want = np.linalg.slogdet(a * [[[-1.0]], [[1.0]]])
    np.testing.assert_allclose(_np(sign), want.sign)
    np.testing.assert_allclose(_np(logabs), want.logabsdet, rtol=tol)
    # a vector right-hand side, and a matrix one broadcast against the stack
    np.testing.assert_allclose(_np(lc.linalg.solve(t(a), t(b[0]))), np.linalg.solve(a, b[0]), rtol=10 * tol, atol=tol)
    np.testing.assert_allclose(_np(lc.linalg.solve(t(a), t(b[:3]))), np.linalg.solve(a, b[:3]), rtol=10 * tol, atol=tol)
    q, r = lc.linalg.qr(t(b), mode="complete")
    assert q.shape == (4, 4) and r.shape == (4, 3)
    np.testing.assert_allclose(_np(q @ r), b, atol=10 * tol)
    np.testing.assert_allclose(_np(q.mT @ q), np.eye(4), atol=10 * tol)
    u, s, vh = lc.linalg.svd(t(b), full_matrices=False)
    assert (u.shape, s.shape, vh.shape) == ((4, 3), (3,), (3, 3))
    np.testing.assert_allclose(_np(lc.linalg.pinv(t(b))), np.linalg.pinv(b), atol=10 * tol)
    assert lc.linalg.matrix_rank(t(np.ones((3, 3), dtype=dtype.name))).item() == 1
    assert lc.linalg.inv(t(a)).dtype is dtype


def test_linalg_gradient_on_mlx_matches_numpy(mlx):
    a = np.random.default_rng(1).standard_normal((3, 3)) + 3 * np.eye(3)
    grads = []
    for dev in ("numpy", "mlx:cpu"):
        x = lc.asarray(a, device=dev).requires_grad_()
        (g,) = lc.grad(lc.linalg.det(x) + lc.linalg.slogdet(x).logabsdet, [x])
        grads.append(_np(g))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-10)


def test_fft_extension_scales_for_every_norm(mlx):
    z = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    for norm in ("backward", "ortho", "forward"):
        got = _np(lc.fft.irfft(lc.fft.rfft(lc.asarray(z, device="mlx:cpu"), norm=norm), n=4, norm=norm))
        np.testing.assert_allclose(got, z, rtol=1e-5, atol=1e-6)
        got = _np(lc.fft.fftn(lc.asarray(z, device="mlx:cpu"), s=(2, 5), norm=norm))
        np.testing.assert_allclose(got, np.fft.fftn(z, s=(2, 5), axes=(0, 1), norm=norm), rtol=1e-4, atol=1e-5)


def test_fft_of_float64_is_refused_with_advice(mlx):
    with pytest.raises(TypeError, match="MLX has no complex128.*cast to float32"):
        lc.fft.fft(lc.asarray([1.0, 2.0], dtype=lc.float64, device="mlx:cpu"))


def test_complex_linalg_raises_a_clear_error(mlx):
    with pytest.raises((ValueError, RuntimeError), match="float32 or float64"):
        lc.eval(lc.linalg.inv(lc.asarray([[1 + 1j, 0], [0, 1]], device="mlx:cpu")))


def test_uint64_above_2_63_and_sin_of_negative_zero(mlx):
    big = 2**64 - 1
    assert lc.asarray([big, 3], dtype=lc.uint64, device="mlx:cpu").tolist() == [big, 3]
    assert lc.full((2,), big, dtype=lc.uint64, device="mlx:cpu").tolist() == [big, big]
    assert np.signbit(_np(lc.sin(lc.asarray([-0.0, 0.0], device="mlx:cpu")))).tolist() == [True, False]


# -- random numbers ----------------------------------------------------------------------------------------


def test_manual_seed_repeats_and_rng_state_round_trips(mlx):
    lc.manual_seed(123)
    a = lc.randn(5, device="mlx:cpu").tolist()
    state = pickle.loads(pickle.dumps(lc.get_rng_state()))
    b = lc.rand(5, device="mlx:cpu").tolist()
    lc.set_rng_state(state)
    assert lc.rand(5, device="mlx:cpu").tolist() == b
    lc.manual_seed(123)
    assert lc.randn(5, device="mlx:cpu").tolist() == a


def test_float64_uniform_has_full_precision(mlx):
    u = _np(lc.rand(2000, dtype=lc.float64, device="mlx:cpu"))
    assert u.dtype == np.float64 and u.min() >= 0.0 and u.max() < 1.0
    # float32-derived draws would all be multiples of 2**-24
    assert np.any(np.mod(u * 2.0**24, 1.0) != 0.0)
    assert abs(u.mean() - 0.5) < 0.03


def test_normal_and_integers_have_the_right_distribution(mlx):
    z = _np(lc.randn(4000, dtype=lc.float64, device="mlx:cpu"))
    assert abs(z.mean()) < 0.08 and abs(z.std() - 1.0) < 0.08
    k = _np(lc.randint(-3, 4, (2000,), device="mlx:cpu"))
    assert k.min() == -3 and k.max() == 3
    big = _np(lc.randint(0, 2**40, (200,), device="mlx:cpu"))
    assert big.max() < 2**40 and np.any(big % 2 == 1)
