"""The CNN kernels (conv with bias, channel sum, average pool, ReLU): each backend's native kernel agrees
with the composed default, and the ops built on them keep their gradients of every order."""

from __future__ import annotations

import contextlib
import itertools
import math
import types
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import lucid_core as lc
import lucid_nn.functional as F
from lucid_core import kernels


def _composed(device: lc.Device) -> types.SimpleNamespace:
    """A stand-in device with the same namespace and no native kernels: every call takes the default."""
    return types.SimpleNamespace(backend=types.SimpleNamespace(kernels={}), xp=device.xp)


def _native(device: lc.Device, name: str) -> None:
    if name not in device.backend.kernels:
        pytest.skip(f"{device.backend.name} has no native {name!r} kernel")


@pytest.fixture(autouse=True)
def _mlx_conv_everywhere(monkeypatch):
    """MLX keeps two conv kernels composed on its CPU device (slower there): test its mapping anyway."""
    from lucid_core import backends

    for b in backends():
        if hasattr(type(b), "conv_general_on_cpu"):
            monkeypatch.setattr(type(b), "conv_general_on_cpu", True)


def _host(device: lc.Device, a: np.ndarray) -> object:
    return lc.asarray(a, device=device)._data


def _numpy(device: lc.Device, a: object) -> np.ndarray:
    return np.asarray(device.backend.to_numpy(a))


@st.composite
def _conv_case(draw):
    nd = draw(st.integers(1, 3))
    groups = draw(st.sampled_from([1, 2, 3]))
    cg, og, n = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(nd))
    pads = tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(nd))
    size = tuple(draw(st.integers(1, 7 if nd < 3 else 5)) for _ in range(nd))
    return n, groups, cg, og, kernel, stride, dilation, pads, size


def _float64(device: lc.Device) -> None:
    if lc.float64 not in device.backend.dtypes:
        pytest.skip(f"{device} has no float64")


@contextlib.contextmanager
def _numpy_grid(on: bool) -> Iterator[None]:
    """The numpy backend's conv kernels with the padded grid for every row length (on) or none (off)."""
    from lucid_backend_numpy import _cnn

    saved = _cnn.GRID_BELOW
    _cnn.GRID_BELOW = 1 << 30 if on else 0
    try:
        yield
    finally:
        _cnn.GRID_BELOW = saved


@settings(max_examples=40, deadline=None)
@given(
    case=_conv_case(),
    seed=st.integers(0, 2**16),
    dtype=st.sampled_from(["float64", "float32"]),
    grid=st.booleans(),
)
# MLX 0.32's vjp gave a (2, 1, 1, 2) weight gradient for this (1x1 kernel, stride 3, padding (2, 0), 1x1 input)
@example(case=(1, 2, 1, 1, (1, 1), (1, 3), (1, 1), ((0, 0), (2, 0)), (1, 1)), seed=0, dtype="float32", grid=False)
def test_native_conv_kernels_match_the_composed_defaults(device, case, seed, dtype, grid):
    _native(device, "conv")
    _float64(device)
    with _numpy_grid(grid) if device.backend.name == "numpy" else contextlib.nullcontext():
        _check_conv_kernels(device, case, seed, dtype)


def _check_conv_kernels(device: lc.Device, case: tuple, seed: int, dtype: str) -> None:
    n, groups, cg, og, kernel, stride, dilation, pads, size = case
    out = kernels.conv_out(size, kernel, stride, pads, dilation)
    if min(out) <= 0:
        return
    rng = np.random.default_rng(seed)
    c, o = cg * groups, og * groups
    x = _host(device, rng.standard_normal((n, c, *size)).astype(dtype))
    w = _host(device, rng.standard_normal((o, cg, *kernel)).astype(dtype))
    b = _host(device, rng.standard_normal(o).astype(dtype))
    gy = _host(device, rng.standard_normal((n, o, *out)).astype(dtype))
    tol = 1e-12 if dtype == "float64" else 1e-4
    cases = {
        "conv": (x, w, stride, dilation, pads, groups),
        "conv_bias": (x, w, b, stride, dilation, pads, groups),
        "conv_input_grad": (gy, w, size, stride, dilation, pads, groups),
        "conv_weight_grad": (x, gy, kernel, stride, dilation, pads, groups),
        "channel_sum": (gy,),
    }
    for name, args in cases.items():
        if name not in device.backend.kernels:
            continue
        got = _numpy(device, kernels.call(device, name, *args))
        want = _numpy(device, kernels.call(_composed(device), name, *args))
        assert got.dtype == want.dtype and got.shape == want.shape, name
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=name)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_native_conv_bias_adds_the_bias_within_float_rounding(device, dtype):
    _native(device, "conv_bias")
    if getattr(lc, dtype) not in device.backend.dtypes:
        pytest.skip(f"{device} has no {dtype}")
    rng = np.random.default_rng(5)
    x = _host(device, rng.standard_normal((4, 3, 9, 8)).astype(dtype))
    w = _host(device, rng.standard_normal((5, 3, 3, 3)).astype(dtype))
    b = _host(device, rng.standard_normal(5).astype(dtype) * 10)
    geo = ((1, 1), (1, 1), ((1, 1), (1, 1)), 1)
    got = _numpy(device, kernels.call(device, "conv_bias", x, w, b, *geo))
    want = _numpy(device, kernels.call(_composed(device), "conv_bias", x, w, b, *geo))
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == "float32" else 1e-13, atol=1e-4)


def test_native_conv_kernels_read_non_contiguous_inputs(device):
    _native(device, "conv")
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 4, 8, 7)).astype("float32")
    w = rng.standard_normal((6, 4, 3, 2)).astype("float32")
    xt = device.xp.permute_dims(_host(device, np.ascontiguousarray(x.transpose(0, 1, 3, 2))), (0, 1, 3, 2))
    wh = _host(device, np.ascontiguousarray(w[:, :2]))
    geo = ((1, 2), (1, 1), ((1, 0), (2, 1)), 2)
    got = _numpy(device, kernels.call(device, "conv", xt, wh, *geo))
    want = _numpy(device, kernels.call(_composed(device), "conv", _host(device, x), wh, *geo))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@settings(max_examples=30, deadline=None)
@given(
    nd=st.integers(1, 2),
    kernel=st.integers(1, 3),
    stride=st.integers(1, 3),
    pad=st.integers(0, 2),
    divisor_array=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_native_avg_pool_matches_the_composed_default(device, nd, kernel, stride, pad, divisor_array, seed):
    _native(device, "avg_pool")
    _float64(device)
    k, s, pads = (kernel,) * nd, (stride,) * nd, ((pad, pad + 1),) * nd
    size = (6,) * nd
    out = kernels.conv_out(size, k, s, pads, (1,) * nd)
    rng = np.random.default_rng(seed)
    x = _host(device, rng.standard_normal((2, 3, *size)))
    div = _host(device, rng.uniform(1, 4, out)) if divisor_array else float(math.prod(k))
    got = _numpy(device, kernels.call(device, "avg_pool", x, k, s, pads, out, div))
    want = _numpy(device, kernels.call(_composed(device), "avg_pool", x, k, s, pads, out, div))
    assert got.shape == want.shape == (2, 3, *out)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32"])
def test_native_relu_matches_the_composed_default_bit_for_bit(device, dtype):
    _native(device, "relu")
    if getattr(lc, dtype) not in device.backend.dtypes:
        pytest.skip(f"{device} has no {dtype}")
    special = [-1.0, 0.0, -0.0, 2.0, np.inf, -np.inf, 1e-30] + ([np.nan] if dtype.startswith("f") else [])
    rng = np.random.default_rng(7)
    x = np.concatenate([np.array(special), rng.standard_normal(5000) * 3]).astype(dtype)  # large: the array path
    for a in (x, x[:7]):
        got = _numpy(device, kernels.call(device, "relu", _host(device, a)))
        want = _numpy(device, kernels.call(_composed(device), "relu", _host(device, a)))
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("padding, stride, groups", [(1, 1, 1), (0, 2, 2), ("same", 1, 1)])
def test_conv2d_with_bias_has_second_order_gradients(device, padding, stride, groups):
    _float64(device)
    rng = np.random.default_rng(8)
    x = lc.asarray(rng.standard_normal((2, 2, 5, 6)), device=device, requires_grad=True)
    w = lc.asarray(rng.standard_normal((4, 2 // groups, 3, 2)), device=device, requires_grad=True)
    b = lc.asarray(rng.standard_normal(4), device=device, requires_grad=True)

    def f(a, k, c):
        return F.conv2d(a, k, c, stride=stride, padding=padding, groups=groups)

    assert lc.gradcheck(f, [x, w, b])
    assert lc.gradgradcheck(f, [x, w, b])


def test_conv2d_with_bias_equals_conv_plus_bias(device):
    rng = np.random.default_rng(9)
    x = lc.asarray(rng.standard_normal((3, 2, 7, 7)).astype("float32"), device=device, requires_grad=True)
    w = lc.asarray(rng.standard_normal((4, 2, 3, 3)).astype("float32"), device=device, requires_grad=True)
    b = lc.asarray(rng.standard_normal(4).astype("float32"), device=device, requires_grad=True)
    y = F.conv2d(x, w, b, padding=1)
    y2 = F.conv2d(x, w, padding=1) + lc.reshape(b, (4, 1, 1))
    np.testing.assert_allclose(_to_numpy(y), _to_numpy(y2), rtol=1e-5, atol=1e-5)
    g = lc.asarray(rng.standard_normal(y.shape).astype("float32"), device=device)
    for a, c in zip(lc.grad(y, [x, w, b], g), lc.grad(y2, [x, w, b], g)):
        np.testing.assert_allclose(_to_numpy(a), _to_numpy(c), rtol=1e-5, atol=1e-4)


def _to_numpy(t: lc.Tensor) -> np.ndarray:
    return t.detach().to("numpy").numpy()


@pytest.mark.parametrize("ceil_mode, count_include_pad", list(itertools.product([False, True], [False, True])))
def test_avg_pool2d_has_second_order_gradients(device, ceil_mode, count_include_pad):
    _float64(device)
    x = lc.asarray(np.random.default_rng(10).standard_normal((1, 2, 5, 6)), device=device, requires_grad=True)

    def f(a):
        return F.avg_pool2d(a, 3, stride=2, padding=1, ceil_mode=ceil_mode, count_include_pad=count_include_pad) ** 2

    assert lc.gradcheck(f, [x])
    assert lc.gradgradcheck(f, [x])


@pytest.mark.parametrize("stride, padding", [(1, 0), (1, 1), (2, 1)])
def test_numpy_convolution_in_chunks_of_samples_has_the_same_bits(monkeypatch, stride, padding):
    # the NumPy backend runs a convolution's im2col columns and their products a few samples at a time
    # (COLS_CHUNK_BYTES); every sample's numbers are its own, so any chunking gives the same bits, except the
    # weight gradient's where the compiled product sums each chunk's samples (then the chunks' sums add in order:
    # within float32 rounding, and the same bits for any thread count, tested in test_numpy_threads)
    from lucid_backend_numpy import _cnn, _parallel

    rng = np.random.default_rng(7)
    x = lc.asarray(rng.standard_normal((5, 8, 11, 11), dtype=np.float32), device="numpy", requires_grad=True)
    w = lc.asarray(rng.standard_normal((16, 8, 3, 3), dtype=np.float32), device="numpy", requires_grad=True)
    b = lc.asarray(rng.standard_normal(16, dtype=np.float32), device="numpy", requires_grad=True)
    results = []
    for chunk in (1, 2 * 8 * 9 * 121 * 4, 1 << 40):  # one sample a chunk, two, the whole batch
        monkeypatch.setattr(_cnn, "COLS_CHUNK_BYTES", chunk)
        y = F.conv2d(x, w, b, stride=stride, padding=padding)
        y.backward(lc.ones_like(y) * 0.5)
        results.append([np.asarray(t).copy() for t in (y, x.grad, w.grad, b.grad)])
        x.grad = w.grad = b.grad = None
    for i in (0, 1, 3):
        assert results[0][i].tobytes() == results[1][i].tobytes() == results[2][i].tobytes()
    if _parallel.gemm_on():
        for r in results[1:]:
            np.testing.assert_allclose(r[2], results[0][2], rtol=1e-5, atol=1e-4)
    else:
        assert results[0][2].tobytes() == results[1][2].tobytes() == results[2][2].tobytes()
