"""The declared kernel table: backends register only declared names, native kernels match the composed
defaults, and third-party ``setitem``/``index_add`` kernels are still called."""

from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lucid_core as lc
import lucid_nn.functional as F
from lucid_core import kernels
from lucid_core._registry import resolve_device
from lucid_core.backend import Backend


def test_every_kernel_a_backend_registers_is_declared(device):
    assert kernels.check_names(device.backend) == []


def test_every_declared_kernel_documents_its_signature():
    for name, k in kernels.KERNELS.items():
        assert k.name == name
        assert k.signature.startswith("(") and ("-> array" in k.signature or "-> (array" in k.signature)
        assert k.doc
        assert k.default is not None or name in kernels.UNARY


def test_an_undeclared_kernel_name_warns_when_the_backend_loads():
    class Typo(Backend):
        name = "typo"

        def load(self) -> None:
            self.kernels = {"sofmax": lambda x, axis: x}

    with pytest.warns(RuntimeWarning, match="sofmax"):
        Typo().ensure_loaded()


def _composed(device: lc.Device) -> types.SimpleNamespace:
    """A stand-in device with the same namespace and no native kernels: every call takes the default."""
    return types.SimpleNamespace(backend=types.SimpleNamespace(kernels={}), xp=device.xp)


@st.composite
def _geometry(draw):
    kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    stride = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    pads = tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(2))
    groups = draw(st.sampled_from([1, 2]))
    return kernel, stride, dilation, pads, groups


@settings(max_examples=25, deadline=None)
@given(geo=_geometry(), dtype=st.sampled_from(["float32", "float64"]))
def test_numpy_conv_kernels_match_the_composed_defaults(geo, dtype):
    kernel, stride, dilation, pads, groups = geo
    dev = resolve_device("numpy")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 7, 6)).astype(dtype)
    w = rng.standard_normal((6, 4 // groups, *kernel)).astype(dtype)
    out = kernels.conv_out(x.shape[2:], kernel, stride, pads, dilation)
    if min(out) <= 0:
        return
    gy = rng.standard_normal((2, 6, *out)).astype(dtype)
    plain = _composed(dev)
    cases = {
        "im2col": (x, kernel, stride, dilation, pads, out, -1.5),
        "col2im": (
            rng.standard_normal((2, 4, kernel[0] * kernel[1], *out)).astype(dtype),
            kernel,
            stride,
            dilation,
            pads,
            x.shape[2:],
        ),
        "conv": (x, w, stride, dilation, pads, groups),
        "conv_input_grad": (gy, w, x.shape[2:], stride, dilation, pads, groups),
        "conv_weight_grad": (x, gy, kernel, stride, dilation, pads, groups),
    }
    for name, args in cases.items():
        got = kernels.call(dev, name, *args)
        want = kernels.call(plain, name, *args)
        assert got.dtype == want.dtype and got.shape == want.shape, name
        if name in ("im2col", "col2im"):
            np.testing.assert_array_equal(got, want, err_msg=name)
        else:  # the GEMMs' shapes differ (padded grid), so BLAS may round the same sums differently
            tol = 1e-5 if dtype == "float32" else 1e-12
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=name)


def test_conv_second_order_gradients_with_dilation_and_uneven_padding(device):
    if lc.float64 not in device.backend.dtypes:
        pytest.skip(f"{device} has no float64")
    rng = np.random.default_rng(1)
    x = lc.asarray(rng.standard_normal((1, 2, 5, 5)), device=device, requires_grad=True)
    w = lc.asarray(rng.standard_normal((2, 2, 2, 3)), device=device, requires_grad=True)
    b = lc.asarray(rng.standard_normal(2), device=device, requires_grad=True)
    assert lc.gradgradcheck(lambda a, k, c: F.conv2d(a, k, c, padding="same", dilation=2), [x, w, b])


def test_third_party_setitem_and_index_add_kernels_are_called(monkeypatch):
    dev = resolve_device("numpy")
    seen = []
    native = dev.backend.kernels["index_add"]

    def setitem(array, key, value):
        seen.append("setitem")
        array[key] = value
        return array

    def index_add(zeros, key, values):
        seen.append("index_add")
        return native(zeros, key, values)

    monkeypatch.setitem(dev.backend.kernels, "setitem", setitem)
    monkeypatch.setitem(dev.backend.kernels, "index_add", index_add)
    t = lc.zeros(3, device=dev)
    t[1] = 5.0
    assert t.tolist() == [0.0, 5.0, 0.0]
    x = lc.asarray([0.0, 1.0, 2.0, 3.0], device=dev, requires_grad=True)
    x[lc.asarray([0, 0, 2], device=dev)].sum().backward()
    assert x.grad.tolist() == [2.0, 0.0, 1.0, 0.0]
    assert "setitem" in seen and "index_add" in seen


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_numpy_max_pool_tiles_grad_matches_the_composed_default_bit_for_bit(dtype):
    dev = resolve_device("numpy")
    rng = np.random.default_rng(2)
    x = rng.integers(0, 3, (2, 3, 7, 6)).astype(dtype)  # small integers: many ties within a tile
    kernel, out = (2, 2), (3, 3)  # the last row is a remainder the tiles ignore
    y = kernels.call(dev, "max_pool_tiles", x, kernel, out)
    gy = rng.standard_normal((2, 3, *out)).astype(dtype)
    got = kernels.call(dev, "max_pool_tiles_grad", gy, x, y, kernel, out)
    want = kernels.call(_composed(dev), "max_pool_tiles_grad", gy, x, y, kernel, out)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert got[:, :, 6].sum() == 0.0


def test_max_pool_second_order_gradients(device):
    if lc.float64 not in device.backend.dtypes:
        pytest.skip(f"{device} has no float64")
    x = lc.asarray(np.random.default_rng(3).permutation(72).reshape(1, 2, 6, 6) / 7.0, device=device)
    x.requires_grad = True
    assert lc.gradgradcheck(lambda a: F.max_pool2d(a, 2) ** 2, [x])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_numpy_relu_grad_matches_the_composed_default_bit_for_bit(dtype):
    dev = resolve_device("numpy")
    x = np.array([[-1.0, 0.0, -0.0, 2.0, np.nan, np.inf, -np.inf, 1e-30]] * 3, dtype=dtype)
    gy = np.array([[1.5, -2.0, 3.0, -0.0, 4.0, np.nan, np.inf, -7.0]] * 3, dtype=dtype)
    got = kernels.call(dev, "relu_grad", gy, x)
    want = kernels.call(_composed(dev), "relu_grad", gy, x)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()  # bits: +0 (never -0) where x <= 0 or NaN
    assert got.tobytes() == kernels.call(dev, "relu_grad", gy, x.T.copy().T).tobytes()


@pytest.mark.parametrize("shape, kernel", [((2, 3, 8, 6), (2, 2)), ((1, 2, 9), (3,)), ((2, 2, 6, 7, 4), (2, 3, 2))])
def test_numpy_max_pool_tiles_grad_is_bit_identical_on_exact_tilings(shape, kernel):
    dev = resolve_device("numpy")
    rng = np.random.default_rng(4)
    x = rng.integers(0, 4, shape).astype("float32")
    out = tuple(s // k for s, k in zip(shape[2:], kernel))
    y = kernels.call(dev, "max_pool_tiles", x, kernel, out)
    gy = rng.standard_normal(y.shape).astype("float32")
    got = kernels.call(dev, "max_pool_tiles_grad", gy, x, y, kernel, out)
    want = kernels.call(_composed(dev), "max_pool_tiles_grad", gy, x, y, kernel, out)
    assert got.tobytes() == want.tobytes()


def test_conv_backward_skips_the_input_gradient_nobody_needs(device, monkeypatch):
    import lucid_nn.functional as F
    from lucid_core import kernels

    calls = []
    real = kernels.call

    def spy(dev, name, *args):
        calls.append(name)
        return real(dev, name, *args)

    monkeypatch.setattr(kernels, "call", spy)
    x = lc.randn(2, 1, 6, 6, device=device)  # data: no gradient wanted
    w = lc.randn(3, 1, 3, 3, device=device, requires_grad=True)
    F.conv2d(x, w).sum().backward()
    assert "conv_weight_grad" in calls and "conv_input_grad" not in calls
    assert w.grad is not None and w.grad.shape == w.shape


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("gemm", [True, False])
def test_numpy_linear_matches_the_composed_default_bit_for_bit(dtype, gemm, monkeypatch):
    # the product then the bias, whether the bias goes into the compiled product (AVX-512) or is added after BLAS
    from lucid_backend_numpy import _parallel

    if not gemm:
        monkeypatch.setitem(_parallel._compiled, "gemm", None)
    dev = resolve_device("numpy")
    rng = np.random.default_rng(6)
    x = rng.standard_normal((100, 300)).astype(dtype)  # large enough for the compiled product
    w = rng.standard_normal((90, 300)).astype(dtype)
    b = rng.standard_normal(90).astype(dtype)
    plain = types.SimpleNamespace(backend=types.SimpleNamespace(kernels={}, inplace=dev.backend.inplace), xp=dev.xp)
    for bias in (b, None):
        got = kernels.call(dev, "linear", x, w, bias)
        want = kernels.call(plain, "linear", x, w, bias)
        assert got.dtype == want.dtype == np.dtype(dtype) and got.shape == (100, 90)
        assert got.tobytes() == want.tobytes()
