"""The compiled bfloat16 product (``lucid_backend_numpy/_gemm_bf16.c``, AVX512_BF16) and the bfloat16 conversions.

The product's bits equal a reference that does what ``vdpbf16ps`` is specified to do, in the kernel's order: per
depth block of 128 pairs, each output's float32 sum from zero, adding a pair's odd product and then its even one
(each product exact in float32, each addition rounded to nearest even), the block's sum added to the earlier
blocks' sum, then the bias, then one rounding to bfloat16. Every shape edge (rows past a 12-row tile, columns past
a 32-column panel, an odd depth, several depth blocks), layout (C-contiguous, transposed, strided) and thread split
is checked against it. Where the CPU lacks AVX512_BF16 those tests skip with the reason, and the tests of the
fallback (float32 products rounded once) and of the conversions run anyway.
"""

from __future__ import annotations

import ctypes

import ml_dtypes
import numpy as np
import pytest

import lucid
import lucid_core as lc
from lucid_backend_numpy import _native, _parallel

LIB = _native.load()
BF16 = np.dtype(ml_dtypes.bfloat16)
KP = 128  # _gemm_bf16.c's pairs of depth in a block


def _available() -> bool:
    return LIB is not None and LIB.lucid_gemm_bf16_available() == 1


needs_bf16 = pytest.mark.skipif(not _available(), reason="this CPU has no AVX512_BF16 (or the kernels are not built)")


def _reference(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None = None, out_dtype: object = BF16) -> np.ndarray:
    """The kernel's arithmetic, spelled out in float32 NumPy (each ``+`` rounded to nearest even)."""
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    m, k = a.shape
    n = b.shape[1]
    if k % 2:  # the odd depth's partner is a zero
        a32 = np.concatenate([a32, np.zeros((m, 1), np.float32)], axis=1)
        b32 = np.concatenate([b32, np.zeros((1, n), np.float32)], axis=0)
    total = np.zeros((m, n), np.float32)
    pairs = a32.shape[1] // 2
    for q0 in range(0, pairs, KP):
        block = np.zeros((m, n), np.float32)
        for p in range(q0, min(q0 + KP, pairs)):
            block = block + np.outer(a32[:, 2 * p + 1], b32[2 * p + 1])  # exact products, rounded sums
            block = block + np.outer(a32[:, 2 * p], b32[2 * p])
        total = block if q0 == 0 else total + block
    if bias is not None:
        total = total + bias.astype(np.float32)
    return total.astype(out_dtype)


def _addr(x: np.ndarray) -> int:
    return x.__array_interface__["data"][0]


def _run(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None = None, parts: int = 1, f32: bool = False) -> np.ndarray:
    """The kernel called directly on ``a`` and ``b`` wherever they lie (any element strides)."""
    m, k = a.shape
    n = b.shape[1]
    c = np.full((m, n + 3), np.nan, dtype=np.float32 if f32 else BF16)  # wider rows: only C's columns are written
    sa, sb = (s // 2 for s in a.strides), (s // 2 for s in b.strides)
    bias_p = None if bias is None else ctypes.c_void_p(_addr(bias))
    assert LIB.lucid_gemm_bf16(m, n, k, _addr(a), *sa, _addr(b), *sb, _addr(c), n + 3, bias_p, int(f32), parts) == 0
    assert np.isnan(c[:, n:].astype(np.float32)).all(), "the kernel wrote past C's columns"
    return c[:, :n]


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(np.uint16)


def _operands(m: int, n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k)).astype(BF16), rng.standard_normal((k, n)).astype(BF16)


SHAPES = [(1, 1, 1), (12, 32, 2), (13, 33, 3), (11, 31, 1), (25, 70, 257), (40, 64, 300), (7, 100, 513)]


@needs_bf16
@pytest.mark.parametrize(("m", "n", "k"), SHAPES)
def test_product_bits_equal_the_reference_on_every_edge(m: int, n: int, k: int) -> None:
    a, b = _operands(m, n, k)
    assert (_bits(_run(a, b)) == _bits(_reference(a, b))).all()


@needs_bf16
@pytest.mark.parametrize("layout", ["transposed_a", "transposed_b", "strided_a", "strided_b"])
def test_product_reads_any_layout(layout: str) -> None:
    a, b = _operands(30, 45, 261, seed=1)
    a2, b2 = a, b
    if layout == "transposed_a":
        a2 = np.ascontiguousarray(a.T).T
    elif layout == "transposed_b":
        b2 = np.ascontiguousarray(b.T).T
    elif layout == "strided_a":
        wide = np.zeros((30, 3 * 261), BF16)
        wide[:, ::3] = a
        a2 = wide[:, ::3]
    else:
        wide = np.zeros((2 * 261, 2 * 45), BF16)
        wide[::2, ::2] = b
        b2 = wide[::2, ::2]
    assert not (a2.flags.c_contiguous and b2.flags.c_contiguous)
    assert (_bits(_run(a2, b2)) == _bits(_reference(a, b))).all()


@needs_bf16
def test_bias_is_added_in_float32_before_the_one_rounding() -> None:
    a, b = _operands(20, 50, 300, seed=2)
    bias = np.random.default_rng(3).standard_normal(50).astype(np.float32)
    assert (_bits(_run(a, b, bias)) == _bits(_reference(a, b, bias))).all()


@needs_bf16
def test_zero_depth_gives_zeros_or_the_rounded_bias() -> None:
    a, b = np.zeros((3, 0), BF16), np.zeros((0, 5), BF16)
    assert (_run(a, b).astype(np.float32) == 0).all()
    bias = np.array([1.0, -2.5, 1 + 2**-9, 3e38, np.inf], np.float32)
    assert (_bits(_run(a, b, bias)) == _bits(np.broadcast_to(bias.astype(BF16), (3, 5)))).all()


@needs_bf16
def test_bits_do_not_depend_on_the_thread_split() -> None:
    before = lc.get_num_threads()
    lc.get_backend("numpy").ensure_loaded()
    lc.set_num_threads(3)
    try:
        for m, n in [(200, 40), (30, 300)]:  # split by row tiles, then by column panels
            a, b = _operands(m, n, 290, seed=4)
            one = _run(a, b, parts=1)
            assert (_bits(_run(a, b, parts=3)) == _bits(one)).all()
    finally:
        lc.set_num_threads(before)


@needs_bf16
def test_matmul_and_linear_use_the_kernel_and_agree_with_float32_rounded_once() -> None:
    a, b = _operands(96, 80, 120, seed=5)
    out = (lucid.tensor(a) @ lucid.tensor(b)).numpy()
    assert out.dtype == BF16
    assert (_bits(out) == _bits(_reference(a, b))).all(), "lucid's matmul did not run the bfloat16 kernel"
    widened = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float32)
    assert np.abs(out.astype(np.float32) - widened).max() <= 2**-7 * np.abs(widened).max()
    w, bias = np.ascontiguousarray(b.T), np.random.default_rng(6).standard_normal(80).astype(BF16)
    y = lucid.nn.functional.linear(lucid.tensor(a), lucid.tensor(w), lucid.tensor(bias)).numpy()
    assert (_bits(y) == _bits(_reference(a, b, bias))).all()


@needs_bf16
def test_batched_products_equal_each_products_reference() -> None:
    lc.get_backend("numpy").ensure_loaded()
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 64, 100)).astype(BF16)
    b = rng.standard_normal((3, 100, 96)).astype(BF16)
    out = _parallel.gemm_bf16(np, a, b)
    assert out is not None and out.shape == (3, 64, 96)
    for i in range(3):
        assert (_bits(out[i]) == _bits(_reference(a[i], b[i]))).all()
    shared = _parallel.gemm_bf16(np, a, b[0])  # a 2-D operand shared by the stack
    assert shared is not None and (_bits(shared[2]) == _bits(_reference(a[2], b[0]))).all()


def test_without_the_kernel_products_are_float32_rounded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    lc.get_backend("numpy").ensure_loaded()
    monkeypatch.setitem(_parallel._compiled, "gemm_bf16", None)
    a, b = _operands(96, 80, 120, seed=8)
    out = (lucid.tensor(a) @ lucid.tensor(b)).numpy()
    widened = (a.astype(np.float32) @ b.astype(np.float32)).astype(BF16)
    assert (_bits(out) == _bits(widened)).all()


# -- conversions and the bit-pattern element-wise kernels (every CPU) --------------------------------------------

ALL_BF16 = np.arange(65536, dtype=np.uint16).view(BF16)


def _f32_patterns() -> np.ndarray:
    u = np.arange(0, 2**32, 4093, dtype=np.uint64).astype(np.uint32)
    edges = [0x7F800001, 0xFFC00001, 0x7FBFFFFF, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F8000, 0x7F7F7FFF, 1, 0x8000,
             0x18000, 0x80008000, 0x3F808000, 0x3F818000, 0x7F800000, 0xFF800000]  # fmt: skip
    return np.concatenate([u, np.array(edges, np.uint32)]).view(np.float32)


@pytest.mark.skipif(LIB is None, reason="lucid_backend_numpy's compiled kernels are not built here")
def test_conversions_give_ml_dtypes_bits_both_ways() -> None:
    lc.get_backend("numpy").ensure_loaded()
    x = _f32_patterns()
    with np.errstate(invalid="ignore"):
        expected = x.astype(BF16)
    out = _parallel.convert_bf16(np, x, BF16)
    assert out is not None and (_bits(out) == _bits(expected)).all()
    back = _parallel.convert_bf16(np, ALL_BF16, np.dtype(np.float32))
    assert back is not None and (back.view(np.uint32) == ALL_BF16.astype(np.float32).view(np.uint32)).all()
    t = lucid.tensor(x[:5000]).to(lucid.bfloat16)  # the namespace's astype takes the compiled pass
    assert (_bits(t.numpy()) == _bits(expected[:5000])).all()


def test_relu_and_its_gradient_on_every_bfloat16_pattern() -> None:
    x = lucid.tensor(ALL_BF16.copy(), requires_grad=True)
    y = lucid.relu(x)
    with np.errstate(invalid="ignore"):
        as_f32 = ALL_BF16.astype(np.float32)
    keep = (as_f32 > 0) | np.isnan(as_f32) | (ALL_BF16.view(np.uint16) == 0x8000)  # PyTorch keeps NaN and -0
    expected = np.where(keep, ALL_BF16, np.zeros_like(ALL_BF16))
    assert (_bits(y.detach().numpy()) == _bits(expected)).all()
    g = np.random.default_rng(9).standard_normal(65536).astype(BF16)
    y.backward(lucid.tensor(g))
    expected_grad = np.where(as_f32 > 0, g, np.zeros_like(g))  # NaN > 0 is False: no gradient through NaN
    assert (_bits(x.grad.numpy()) == _bits(expected_grad)).all()


@needs_bf16
def test_float32_output_keeps_the_sums_unrounded() -> None:
    a, b = _operands(25, 40, 300, seed=10)
    out = _run(a, b, f32=True)
    assert out.dtype == np.float32
    expected = _reference(a, b, out_dtype=np.float32)
    assert (out.view(np.uint32) == expected.view(np.uint32)).all()


def _ulps_apart(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """How many bfloat16 steps apart two bfloat16 arrays of finite values are."""
    ix, iy = (np.ascontiguousarray(v).view(np.int16).astype(np.int32) for v in (x, y))
    ix, iy = (np.where(i < 0, -32768 - i, i) for i in (ix, iy))  # a monotone integer line
    return np.abs(ix - iy)


CONV_CASES = [(6, 16, 14, 32, 3, 1, 1, 1, "all"), (4, 8, 28, 32, 5, 2, 0, 1, "all"), (2, 1, 5, 4, 3, 1, 0, 1, "none"),
              (4, 8, 10, 8, 3, 1, 1, 2, "none")]  # fmt: skip


@needs_bf16
@pytest.mark.parametrize(
    ("n", "c", "size", "o", "k", "stride", "pad", "groups", "kernel"),
    CONV_CASES,
)
def test_convolutions_and_their_gradients_in_bfloat16(
    n: int, c: int, size: int, o: int, k: int, stride: int, pad: int, groups: int, kernel: str, monkeypatch
) -> None:
    """Forward, input and weight gradients of a bfloat16 convolution: float32 sums of the bfloat16 products,
    rounded once (within a bfloat16 step of the float32 convolution on the same values, rounded), on the
    bfloat16 product where it applies (``kernel``: all three products, or none: too small, or groups > 1)."""
    from lucid_backend_numpy import _cnn

    used = []

    def spy(*args, **kwargs):
        out = _parallel.gemm_bf16(*args, **kwargs)
        used.append(out is not None)
        return out

    monkeypatch.setattr(_cnn, "gemm_bf16", spy)
    lc.get_backend("numpy").ensure_loaded()
    rng = np.random.default_rng(11)
    x = rng.standard_normal((n, c, size, size)).astype(BF16)
    w = rng.standard_normal((o, c // groups, k, k)).astype(BF16)
    b = rng.standard_normal(o).astype(BF16)
    results = {}
    for name, dt in (("bf16", None), ("f32", np.float32)):
        xs, ws, bs = (lucid.tensor(v if dt is None else v.astype(dt), requires_grad=True) for v in (x, w, b))
        y = lucid.nn.functional.conv2d(xs, ws, bs, stride=stride, padding=pad, groups=groups)
        gy = np.random.default_rng(12).standard_normal(tuple(y.shape)).astype(BF16)
        y.backward(lucid.tensor(gy if dt is None else gy.astype(dt)))
        results[name] = [t.numpy() for t in (y.detach(), xs.grad, ws.grad)]
    for got, wide in zip(results["bf16"], results["f32"]):
        assert got.dtype == BF16
        apart = _ulps_apart(got, wide.astype(BF16))
        assert apart.max() <= 1 and (apart > 0).mean() < 0.01
    expected = {"all": len(used) >= 3 and all(used), "none": not any(used)}
    assert expected[kernel], used
