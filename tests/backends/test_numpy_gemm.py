"""The float32 matrix product for AVX-512 and AVX2 + FMA CPUs (``lucid_backend_numpy/_gemm.c``): within float32
rounding of the exact product for every shape, edge and layout; the same bits whatever the split over threads; used
by the backend's 2-D products and the convolutions above a size, NumPy's BLAS below it and for everything else."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lucid_core as lc
from lucid_backend_numpy import _native, _parallel

LIB = _native.load()
HAVE = LIB is not None and bool(LIB.lucid_gemm_available())
needs_gemm = pytest.mark.skipif(not HAVE, reason="no AVX-512 or AVX2 + FMA here (or no compiled kernels)")


def _operand(x: np.ndarray) -> tuple[int, int, int]:
    """(address, row stride, column stride) of a float32 matrix, in elements."""
    return x.ctypes.data, x.strides[0] // 4, x.strides[1] // 4


def _matrix(rng: np.random.Generator, rows: int, cols: int, transposed: bool) -> np.ndarray:
    if transposed:  # the transpose of a row-major (cols, rows) array, as a linear layer's weight.T
        return rng.standard_normal((cols, rows), dtype=np.float32).T
    return rng.standard_normal((rows, cols), dtype=np.float32)


def _gemm(a: np.ndarray, b: np.ndarray, parts: int = 1, bias: np.ndarray | None = None) -> np.ndarray:
    m, k = a.shape
    n = b.shape[1]
    c = np.full((m, n), np.nan, dtype=np.float32)  # every element must be written
    address = None if bias is None else bias.ctypes.data
    assert LIB.lucid_gemm_f32(m, n, k, *_operand(a), *_operand(b), c.ctypes.data, n, address, parts) == 0
    return c


def _check_close(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """Within the error bound of any float32 summation order: |c - ab| <= k u |a| |b| (u = 2^-24), doubled."""
    exact = a.astype(np.float64) @ b.astype(np.float64)
    bound = 2 * max(a.shape[1], 1) * 2.0**-24 * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))
    assert np.all(np.abs(c - exact) <= bound + 1e-30), np.max(np.abs(c - exact) - bound)


@pytest.fixture
def three_threads():
    lc.get_backend("numpy").ensure_loaded()
    before = lc.get_num_threads()
    lc.set_num_threads(3)
    yield
    lc.set_num_threads(before)


@needs_gemm
@settings(max_examples=60, deadline=None)
@given(
    m=st.integers(1, 40), n=st.integers(1, 80), k=st.integers(0, 40), ta=st.booleans(), tb=st.booleans(),
    seed=st.integers(0, 2**16),
)  # fmt: skip
def test_every_shape_and_layout_is_the_product(m, n, k, ta, tb, seed):
    rng = np.random.default_rng(seed)
    a, b = _matrix(rng, m, k, ta), _matrix(rng, k, n, tb)
    _check_close(_gemm(a, b), a, b)


@needs_gemm
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize(
    "m, n, k",
    [(12, 32, 256), (13, 33, 257), (128, 512, 784), (400, 600, 70), (25, 1030, 520), (1, 1, 1000)],
)
def test_tiles_depth_blocks_and_panel_chunks_with_their_edges(m, n, k, ta, tb):
    # 12 x 32 tiles, 256-deep blocks, 16 panels packed at once: each at, just past and well past its size
    rng = np.random.default_rng(m * n + k)
    a, b = _matrix(rng, m, k, ta), _matrix(rng, k, n, tb)
    _check_close(_gemm(a, b), a, b)


@needs_gemm
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize(
    "m, n, k", [(12, 32, 256), (13, 33, 257), (128, 512, 784), (25, 70, 520), (5, 3, 0), (1, 40, 1)]
)
def test_a_bias_is_added_with_the_bits_of_the_product_then_the_bias(three_threads, m, n, k, tb):
    # added as C's rows are written after the last depth block: (A @ B) + bias, rounded as two steps, on full
    # tiles, edge tiles and edge columns alike, for any split
    rng = np.random.default_rng(m + n + k)
    a, b = _matrix(rng, m, k, False), _matrix(rng, k, n, tb)
    bias = rng.standard_normal(n, dtype=np.float32) * 100
    bias[0] = -0.0
    want = _gemm(a, b) + bias
    for parts in (1, 2, 3):
        assert _gemm(a, b, parts, bias).tobytes() == want.tobytes()


@needs_gemm
def test_the_linear_kernel_fuses_the_bias_with_the_composed_defaults_bits():
    from lucid_core import kernels
    from lucid_core._registry import resolve_device

    dev = resolve_device("numpy")

    rng = np.random.default_rng(9)
    x = rng.standard_normal((128, 300), dtype=np.float32)
    w = rng.standard_normal((70, 300), dtype=np.float32)
    b = rng.standard_normal(70, dtype=np.float32)
    plain = types.SimpleNamespace(backend=types.SimpleNamespace(kernels={}, inplace=dev.backend.inplace), xp=dev.xp)
    for bias in (b, None):
        got = kernels.call(dev, "linear", x, w, bias)
        want = kernels.call(plain, "linear", x, w, bias)
        assert got.dtype == np.float32 and got.tobytes() == want.tobytes()
    calls = []
    real = _parallel.gemm
    try:
        _parallel.gemm = lambda *args: calls.append(len(args)) or real(*args)
        kernels.call(dev, "linear", x, w, b)
    finally:
        _parallel.gemm = real
    assert calls == [4]  # the bias went into the product
    x64 = x.astype(np.float64)  # other dtypes: the product, then the bias
    got = kernels.call(dev, "linear", x64, w.astype(np.float64), b.astype(np.float64))
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, x64 @ w.astype(np.float64).T + b.astype(np.float64))


@needs_gemm
@pytest.mark.parametrize("m, n, k", [(130, 300, 600), (40, 1000, 64), (7, 40, 30)])
def test_both_loop_orders_give_the_same_bits(three_threads, m, n, k):
    # panels outer (C small enough to stay in L2) or row tiles outer: the same sums for every element
    rng = np.random.default_rng(3)
    a, b = _matrix(rng, m, k, False), _matrix(rng, k, n, True)
    bias = rng.standard_normal(n, dtype=np.float32)
    before = LIB.lucid_gemm_set_panel_outer(0)
    try:
        rows = [_gemm(a, b, parts, bias) for parts in (1, 3)]
        LIB.lucid_gemm_set_panel_outer(1 << 40)
        panels = [_gemm(a, b, parts, bias) for parts in (1, 3)]
    finally:
        LIB.lucid_gemm_set_panel_outer(before)
    assert before == 1 << 18
    assert rows[0].tobytes() == rows[1].tobytes() == panels[0].tobytes() == panels[1].tobytes()
    _check_close(rows[0] - bias, a, b)


@needs_gemm
@pytest.mark.parametrize("m, n, k", [(300, 70, 300), (40, 1000, 64), (100, 100, 513)])
def test_bits_do_not_depend_on_the_split(three_threads, m, n, k):
    rng = np.random.default_rng(1)
    a, b = _matrix(rng, m, k, False), _matrix(rng, k, n, True)
    one = _gemm(a, b, 1)
    for parts in (2, 3):
        assert _gemm(a, b, parts).tobytes() == one.tobytes()


@needs_gemm
@pytest.mark.parametrize("shared", ["a", "b", None])
def test_a_stack_is_each_product_with_its_bits(three_threads, shared):
    rng = np.random.default_rng(2)
    nb, m, n, k = 5, 50, 70, 300
    a = rng.standard_normal((m, k) if shared == "a" else (nb, m, k), dtype=np.float32)
    b = np.swapaxes(rng.standard_normal((n, k) if shared == "b" else (nb, n, k), dtype=np.float32), -1, -2)
    out = np.full((nb, m, n), np.nan, dtype=np.float32)
    sa = 0 if shared == "a" else m * k
    sb = 0 if shared == "b" else n * k
    rsb, csb = b.strides[-2] // 4, b.strides[-1] // 4
    for parts in (1, 3):
        assert LIB.lucid_gemm_batch_f32(
            nb, m, n, k, a.ctypes.data, sa, k, 1, b.ctypes.data, sb, rsb, csb, out.ctypes.data, m * n, n, parts
        ) == 0  # fmt: skip
        for i in range(nb):
            ai = a if shared == "a" else a[i]
            bi = b if shared == "b" else b[i]
            assert out[i].tobytes() == _gemm(ai, bi).tobytes()


@needs_gemm
@pytest.mark.parametrize("terms, m, n, k", [(1, 30, 20, 5), (9, 144, 32, 196), (4, 50, 70, 300), (3, 13, 33, 257)])
def test_a_sum_of_products_is_the_sum_and_independent_of_the_split(three_threads, terms, m, n, k):
    rng = np.random.default_rng(terms * m)
    a = rng.standard_normal((terms, m, k), dtype=np.float32)
    b = np.swapaxes(rng.standard_normal((terms, n, k), dtype=np.float32), -1, -2)  # each term's B transposed
    outs = []
    for parts in (1, 2, 3):
        c = np.full((m, n), np.nan, dtype=np.float32)
        assert LIB.lucid_gemm_sum_f32(
            terms, m, n, k, a.ctypes.data, m * k, k, 1, b.ctypes.data, n * k, 1, k, c.ctypes.data, n, parts
        ) == 0  # fmt: skip
        outs.append(c)
    assert outs[0].tobytes() == outs[1].tobytes() == outs[2].tobytes()
    whole_a = np.concatenate(list(a), axis=1)  # the sum is one product over the terms' depths laid end to end
    whole_b = np.concatenate(list(b), axis=0)
    _check_close(outs[0], whole_a, whole_b)


@needs_gemm
def test_stacks_are_read_in_place_or_refused_never_copied():
    # gemm_into passes the stack's own memory to C: a stack whose leading axes do not fold into one stride is
    # refused (a copy made inside would be freed before the kernel ran), and one that folds gives each product
    rng = np.random.default_rng(5)
    a = rng.standard_normal((4, 6, 64, 96), dtype=np.float32)
    b = rng.standard_normal((96, 384), dtype=np.float32)
    out = np.empty((4, 3, 64, 384), dtype=np.float32)
    assert _parallel.gemm_into(np, a[:, ::2], b, out)  # strides fold: 2 * 64 * 96 * 3 == 6 * 64 * 96
    for i in range(4):
        for j in range(3):
            assert out[i, j].tobytes() == _gemm(a[i, 2 * j], b).tobytes()
    assert not _parallel.gemm_into(np, a[:, :3], b, np.empty((4, 3, 64, 384), dtype=np.float32))
    # matrices neither C-contiguous nor transposed (every other column): refused too, BLAS's case
    assert not _parallel.gemm_into(np, a[:, ::2, :, ::2], b[:48], np.empty((4, 3, 64, 384), dtype=np.float32))


def _rss() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) * 1024


@needs_gemm
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_threads_that_multiply_and_exit_leave_no_buffer_behind():
    # each thread keeps a 512 KiB buffer for packed panels; a pthread key's destructor frees it at thread exit
    import threading

    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((128, 512), dtype=np.float32), rng.standard_normal((512, 512), dtype=np.float32)

    def once() -> None:
        assert _parallel.gemm(np, a, b) is not None

    for _ in range(4):  # warm: the allocator's arenas for new threads
        t = threading.Thread(target=once)
        t.start()
        t.join()
    before = _rss()
    for _ in range(64):
        t = threading.Thread(target=once)
        t.start()
        t.join()
    assert _rss() - before < 8 * 2**20  # 64 leaked buffers would be 32 MiB


@needs_gemm
def test_backend_products_take_it_above_the_threshold_and_blas_below():
    rng = np.random.default_rng(3)
    big_a, big_w = rng.standard_normal((128, 784), dtype=np.float32), rng.standard_normal((512, 784), dtype=np.float32)
    y = lc.matmul(lc.asarray(big_a), lc.matrix_transpose(lc.asarray(big_w)))
    assert np.asarray(y).tobytes() == _gemm(big_a, big_w.T).tobytes()
    small_a, small_b = rng.standard_normal((8, 16), dtype=np.float32), rng.standard_normal((16, 8), dtype=np.float32)
    assert np.asarray(lc.matmul(lc.asarray(small_a), lc.asarray(small_b))).tobytes() == (small_a @ small_b).tobytes()
    # float64, and operands that are neither a matrix nor its transpose, stay with NumPy
    assert _parallel.gemm(np, big_a.astype(np.float64), big_w.T.astype(np.float64)) is None
    assert _parallel.gemm(np, big_a[:, ::2], big_w[:, ::2].T) is None
    assert _parallel.gemm(np, big_a, big_w.T) is not None


@needs_gemm
def test_convolution_gradients_use_it_with_the_same_values():
    import lucid_nn.functional as F

    rng = np.random.default_rng(4)
    x = lc.asarray(rng.standard_normal((6, 32, 14, 14), dtype=np.float32), requires_grad=True)
    w = lc.asarray(rng.standard_normal((64, 32, 3, 3), dtype=np.float32) * 0.1, requires_grad=True)
    g = rng.standard_normal((6, 64, 12, 12), dtype=np.float32)
    grads = []
    for gemm in (_parallel._compiled["gemm"], None):
        _parallel._compiled["gemm"] = gemm
        try:
            y = F.conv2d(x, w)
            y.backward(lc.asarray(g))
            grads.append((np.asarray(y), np.asarray(x.grad), np.asarray(w.grad)))
            x.grad = w.grad = None
        finally:
            _parallel._compiled["gemm"] = LIB
    for ours, blas in zip(*grads):
        np.testing.assert_allclose(ours, blas, rtol=2e-5, atol=2e-5)


def test_available_exactly_where_the_cpu_has_avx512_or_avx2_and_fma():
    if LIB is None:
        pytest.skip("lucid_backend_numpy's compiled kernels are not built here")
    if not sys.platform.startswith("linux") or platform.machine() != "x86_64":
        pytest.skip("reads the CPU's flags from Linux's /proc/cpuinfo")
    with open("/proc/cpuinfo") as f:
        flags = next((line for line in f if line.startswith("flags")), "").split()
    assert LIB.lucid_gemm_available() == (2 if "avx512f" in flags else 1 if {"avx2", "fma"} <= set(flags) else 0)
    lc.get_backend("numpy").ensure_loaded()
    assert (_parallel._compiled["gemm"] is not None) == (HAVE and os.environ.get("LUCID_NUMPY_GEMM", "1") == "1")


@pytest.mark.parametrize("value, used", [("0", False), ("2", None)])
def test_the_environment_variable_turns_it_off_or_is_refused(value, used):
    code = (
        "import lucid_core as lc; lc.get_backend('numpy').ensure_loaded(); "
        "from lucid_backend_numpy import _parallel; print(_parallel._compiled['gemm'] is not None)"
    )
    env = {**os.environ, "LUCID_NUMPY_GEMM": value}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    if used is None:
        assert r.returncode != 0 and "LUCID_NUMPY_GEMM='2': expected '1'" in r.stderr
    else:
        assert r.returncode == 0 and r.stdout.strip() == str(used), r.stderr
