"""The compiled float32 product (``lucid_backend_numpy/_gemm.c``) on each instruction set the CPU has: AVX-512 and
AVX2 + FMA give every element of C the same operations in the same order, so their bits equal a reference that
does exactly that (per K block of 256 a chain of correctly rounded fused multiply-adds from zero, added to C, then
the bias) on every shape, edge, layout and entry point, for any thread split.

Each test runs once per instruction set this CPU has (``/proc/cpuinfo``): on an AVX2-only machine the AVX2 path,
on an AVX-512 one both (``lucid_gemm_set_isa`` forces the narrower one); the sets the CPU lacks are skipped, with
the reason."""

from __future__ import annotations

import platform
import sys
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lucid_core as lc
from lucid_backend_numpy import _native, _parallel
from lucid_backend_numpy._torch_random import _fma32

LIB = _native.load()
KC = 256  # _gemm.c's depth of a K block: each block's sum is added to C on its own
LEVELS = {2: "AVX-512", 1: "AVX2+FMA"}


def _cpu_flags() -> set[str]:
    if not sys.platform.startswith("linux") or platform.machine() != "x86_64":
        return set()
    with open("/proc/cpuinfo") as f:
        return set(next((line for line in f if line.startswith("flags")), "").split())


FLAGS = _cpu_flags()
EXPECTED = 2 if "avx512f" in FLAGS else 1 if {"avx2", "fma"} <= FLAGS else 0


@pytest.fixture(params=[2, 1], ids=["avx512", "avx2"])
def isa(request):
    """The product forced onto one instruction set (restored after), or the test skipped where the CPU lacks it."""
    level = request.param
    if LIB is None:
        pytest.skip("lucid_backend_numpy's compiled kernels are not built here")
    if level > EXPECTED:
        pytest.skip(
            f"this CPU has no {LEVELS[level]} (x86-64 Linux flags: {sorted(FLAGS & {'avx512f', 'avx2', 'fma'})})"
        )
    lc.get_backend("numpy").ensure_loaded()
    before = lc.get_num_threads()
    lc.set_num_threads(3)  # the pool has threads for splits of up to three parts
    assert LIB.lucid_gemm_set_isa(level) == level
    yield level
    LIB.lucid_gemm_set_isa(EXPECTED)
    lc.set_num_threads(before)


def _blocks(k: int) -> list[tuple[int, int]]:
    return [(p, min(p + KC, k)) for p in range(0, k, KC)]


def _reference_terms(terms: list[tuple[np.ndarray, np.ndarray]], bias: np.ndarray | None = None) -> np.ndarray:
    """sum_t A_t @ B_t in _gemm.c's order: each term's K blocks in turn, each block one fused multiply-add chain
    over its depth from +0 (float32, correctly rounded), added to C's earlier sum (C + block), then C + bias."""
    m, n = terms[0][0].shape[0], terms[0][1].shape[1]
    c = None
    for a, b in terms:
        for lo, hi in _blocks(a.shape[1]):
            s = np.zeros((m, n), dtype=np.float32)
            for kk in range(lo, hi):
                s = _fma32(a[:, kk : kk + 1], b[kk : kk + 1, :], s)
            c = s if c is None else c + s
    if c is None:
        c = np.zeros((m, n), dtype=np.float32)
    return c if bias is None else c + bias


def _reference(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    return _reference_terms([(a, b)], bias)


def _round32(x: Fraction) -> np.float32:
    """The float32 nearest to x (ties to even), without float64's double rounding."""
    guess = np.float32(float(x))
    near = [np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf))]
    return min(near, key=lambda v: (abs(Fraction(float(v)) - x), int(np.array(v).view(np.int32)) & 1))


def _exact_fraction_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """_reference's order with every fused multiply-add done in exact rationals, element by element."""
    m, k = a.shape
    c = np.zeros((m, b.shape[1]), dtype=np.float32)
    for i in range(m):
        for j in range(b.shape[1]):
            total = None
            for lo, hi in _blocks(k):
                s = np.float32(0)
                for kk in range(lo, hi):
                    s = _round32(Fraction(float(a[i, kk])) * Fraction(float(b[kk, j])) + Fraction(float(s)))
                total = s if total is None else np.float32(total + s)
            c[i, j] = total
    return c


def _matrix(rng: np.random.Generator, rows: int, cols: int, transposed: bool) -> np.ndarray:
    """A float32 matrix (a transposed view of a row-major array when `transposed`), some entries -0.0 and 0.0."""
    x = rng.standard_normal((cols, rows) if transposed else (rows, cols), dtype=np.float32)
    x[rng.random(x.shape) < 0.05] = -0.0
    x[rng.random(x.shape) < 0.05] = 0.0
    return x.T if transposed else x


def _operand(x: np.ndarray) -> tuple[int, int, int]:
    return x.ctypes.data, x.strides[0] // 4, x.strides[1] // 4


def _gemm(a: np.ndarray, b: np.ndarray, parts: int = 1, bias: np.ndarray | None = None) -> np.ndarray:
    m, k = a.shape
    n = b.shape[1]
    c = np.full((m, n), np.nan, dtype=np.float32)  # every element must be written
    address = None if bias is None else bias.ctypes.data
    assert LIB.lucid_gemm_f32(m, n, k, *_operand(a), *_operand(b), c.ctypes.data, n, address, parts) == 0
    return c


def test_the_product_runs_on_the_widest_instruction_set_the_cpu_has():
    if LIB is None:
        pytest.skip("lucid_backend_numpy's compiled kernels are not built here")
    assert LIB.lucid_gemm_available() == EXPECTED
    assert LIB.lucid_gemm_set_isa(5) == EXPECTED  # capped at what the CPU has
    assert LIB.lucid_gemm_set_isa(0) == 0
    try:
        c = np.zeros((2, 2), dtype=np.float32)
        one = np.ones((2, 2), dtype=np.float32)
        assert LIB.lucid_gemm_f32(2, 2, 2, *_operand(one), *_operand(one), c.ctypes.data, 2, None, 1) == -1
    finally:
        assert LIB.lucid_gemm_set_isa(EXPECTED) == EXPECTED
    lc.get_backend("numpy").ensure_loaded()
    if _parallel.gemm_on():
        assert _parallel.gemm_isa() == LEVELS[EXPECTED]


def test_a_small_product_is_the_exact_fused_multiply_add_chain(isa):
    # the NumPy reference the other tests use, checked here against exact rationals: 3 x 35 x 260 crosses a K
    # block, a full panel plus an edge column and the transposed packing of B
    rng = np.random.default_rng(7)
    a, b = _matrix(rng, 3, 260, False), _matrix(rng, 260, 35, True)
    exact = _exact_fraction_reference(a, b)
    assert _reference(a, b).tobytes() == exact.tobytes()
    assert _gemm(a, b).tobytes() == exact.tobytes()


@pytest.mark.parametrize("ta", [False, True], ids=["a", "aT"])
@pytest.mark.parametrize("tb", [False, True], ids=["b", "bT"])
@pytest.mark.parametrize(
    "m, n, k",
    [(12, 32, 256), (13, 33, 257), (6, 16, 8), (7, 17, 9), (24, 64, 513), (40, 40, 300), (1, 1, 1), (11, 31, 7)],
)
def test_full_and_edge_tiles_equal_the_reference_bit_for_bit(isa, m, n, k, ta, tb):
    # 12 x 32 tiles (on AVX2 four 6 x 16 blocks), 256-deep blocks: at, just past and around each size
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    a, b = _matrix(rng, m, k, ta), _matrix(rng, k, n, tb)
    bias = rng.standard_normal(n, dtype=np.float32) * 10
    bias[0] = -0.0
    want, want_bias = _reference(a, b), _reference(a, b, bias)
    for parts in (1, 2, 3):
        assert _gemm(a, b, parts).tobytes() == want.tobytes()
        assert _gemm(a, b, parts, bias).tobytes() == want_bias.tobytes()


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(1, 40), n=st.integers(1, 40), k=st.sampled_from([0, 1, 5, 8, 31, 255, 256, 257, 300]),
    ta=st.booleans(), tb=st.booleans(), with_bias=st.booleans(), seed=st.integers(0, 2**16),
)  # fmt: skip
def test_every_shape_and_layout_equals_the_reference_bit_for_bit(isa, m, n, k, ta, tb, with_bias, seed):
    rng = np.random.default_rng(seed)
    a, b = _matrix(rng, m, k, ta), _matrix(rng, k, n, tb)
    bias = rng.standard_normal(n, dtype=np.float32) if with_bias else None
    want = _reference(a, b, bias)
    assert _gemm(a, b, 1, bias).tobytes() == want.tobytes()
    assert _gemm(a, b, 2, bias).tobytes() == want.tobytes()


@pytest.mark.parametrize("order", [0, 1 << 40], ids=["rows-outer", "panels-outer"])
def test_both_loop_orders_equal_the_reference(isa, order):
    rng = np.random.default_rng(11)
    a, b = _matrix(rng, 30, 300, False), _matrix(rng, 300, 70, True)
    bias = rng.standard_normal(70, dtype=np.float32)
    before = LIB.lucid_gemm_set_panel_outer(order)
    try:
        got = [_gemm(a, b, parts, bias) for parts in (1, 3)]
    finally:
        LIB.lucid_gemm_set_panel_outer(before)
    want = _reference(a, b, bias)
    assert got[0].tobytes() == want.tobytes() and got[1].tobytes() == want.tobytes()


@pytest.mark.parametrize("shared", ["a", "b", None])
def test_a_stack_equals_the_reference_per_matrix(isa, shared):
    rng = np.random.default_rng(2)
    nb, m, n, k = 3, 14, 35, 260
    a = rng.standard_normal((m, k) if shared == "a" else (nb, m, k), dtype=np.float32)
    b = np.swapaxes(rng.standard_normal((n, k) if shared == "b" else (nb, n, k), dtype=np.float32), -1, -2)
    sa = 0 if shared == "a" else m * k
    sb = 0 if shared == "b" else n * k
    rsb, csb = b.strides[-2] // 4, b.strides[-1] // 4
    want = [_reference(a if shared == "a" else a[i], b if shared == "b" else b[i]) for i in range(nb)]
    for parts in (1, 3):
        out = np.full((nb, m, n), np.nan, dtype=np.float32)
        assert LIB.lucid_gemm_batch_f32(
            nb, m, n, k, a.ctypes.data, sa, k, 1, b.ctypes.data, sb, rsb, csb, out.ctypes.data, m * n, n, parts
        ) == 0  # fmt: skip
        for i in range(nb):
            assert out[i].tobytes() == want[i].tobytes()


@pytest.mark.parametrize("terms, m, n, k", [(1, 13, 20, 5), (3, 13, 33, 257), (4, 25, 40, 100)])
def test_a_sum_of_products_equals_the_reference_term_by_term(isa, terms, m, n, k):
    # the depth runs through each term's K blocks in turn: C = ((A0 B0 block 0) + block 1) + A1 B1 block 0 ...
    rng = np.random.default_rng(terms * m + k)
    a = rng.standard_normal((terms, m, k), dtype=np.float32)
    b = np.swapaxes(rng.standard_normal((terms, n, k), dtype=np.float32), -1, -2)
    want = _reference_terms([(a[t], b[t]) for t in range(terms)])
    for parts in (1, 2, 3):
        c = np.full((m, n), np.nan, dtype=np.float32)
        assert LIB.lucid_gemm_sum_f32(
            terms, m, n, k, a.ctypes.data, m * k, k, 1, b.ctypes.data, n * k, 1, k, c.ctypes.data, n, parts
        ) == 0  # fmt: skip
        assert c.tobytes() == want.tobytes()


def test_backend_products_keep_their_bits_at_one_and_two_threads(isa):
    # what a training step sees: the backend's linear and matmul at 1 and 2 threads, the same bits as the reference
    import lucid_nn.functional as F

    rng = np.random.default_rng(4)
    x = rng.standard_normal((128, 300), dtype=np.float32)
    w = rng.standard_normal((70, 300), dtype=np.float32)
    bias = rng.standard_normal(70, dtype=np.float32)
    want = _reference(x, w.T, bias)
    for threads in (1, 2):
        lc.set_num_threads(threads)
        y = F.linear(lc.asarray(x), lc.asarray(w), lc.asarray(bias))
        assert np.asarray(y).tobytes() == want.tobytes()
        z = lc.matmul(lc.asarray(x), lc.matrix_transpose(lc.asarray(w)))
        assert np.asarray(z).tobytes() == _reference(x, w.T).tobytes()
