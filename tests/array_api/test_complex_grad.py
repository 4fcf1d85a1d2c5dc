"""Complex gradients follow PyTorch's conjugate convention: for a real loss L of complex z the gradient
is dL/dRe(z) + i dL/dIm(z), so a holomorphic f passes back ``gy * conj(f'(z))``.

Each function is checked against finite differences through ``Complex.apply(a, b)`` (two real float64
leaves); values stay off the branch cuts (imaginary parts in [0.2, 0.9]), where finite differences hold.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.array_api import make_strategies_namespace

import lucid_core as lc
from lucid_core.ops.complex import imag, real

from ._complex import Complex, parts

xps = make_strategies_namespace(lc)
FEW = settings(max_examples=5)

UNARY = {
    name: getattr(lc, name)
    for name in [
        "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "square", "sin", "cos", "tan",
        "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "reciprocal", "rsqrt",
        "sigmoid", "negative", "conj", "abs",
    ]
} | {"real": real, "imag": imag}  # fmt: skip

BINARY = {
    "add": lambda z, w: z + w,
    "subtract": lambda z, w: z - w,
    "multiply": lambda z, w: z * w,
    "multiply_broadcast": lambda z, w: z * w[:1],
    "divide": lambda z, w: z / w,
    "pow": lambda z, w: z**w,
    "pow_scalar_exponent": lambda z, w: z**2.5 + w ** (1.5 - 0.5j),
    "scalar_pow": lambda z, w: (0.5 + 1j) ** z + 2.0**w,
    "scalar_multiply": lambda z, w: (2 - 1j) * z + w * 3.0,
    "scalar_divide": lambda z, w: (2 - 1j) / z + w / (1 + 1j),
    "matmul": lambda z, w: z @ w.mT,
    "matmul_vector": lambda z, w: z @ w[0],
    "einsum": lambda z, w: lc.einsum("ij,kj->ik", z, w),
    "tensordot": lambda z, w: lc.tensordot(z, w, axes=([1], [1])),
    "vecdot": lambda z, w: lc.vecdot(z, w),
    "outer": lambda z, w: lc.outer(z[0], w[1]),
    "sum_mean": lambda z, w: lc.sum(z * w, axis=1) + lc.mean(z, axis=0).sum(),
    "prod": lambda z, w: lc.prod(z, axis=1) + lc.prod(w),
    "cumulative": lambda z, w: lc.cumulative_sum(z, axis=1) * lc.cumulative_prod(w, axis=1),
    "where_getitem": lambda z, w: lc.where(lc.asarray([True, False, True], device=z.device), z, w)[:, ::-1],
    "astype_to_real": lambda z, w: lc.abs(z).astype(lc.float64) * w,
}


def _parts_of(device, shape, data, lo=-1.5, hi=1.5):
    re = data.draw(xps.arrays(dtype=lc.float64, shape=shape, elements={"min_value": lo, "max_value": hi}))
    im = data.draw(xps.arrays(dtype=lc.float64, shape=shape, elements={"min_value": 0.2, "max_value": 0.9}))
    leaf = lambda v: lc.asarray(v.numpy(), dtype=lc.float64, device=device).requires_grad_()  # noqa: E731
    return leaf(re), leaf(im)


@pytest.fixture
def c128(device):
    if lc.complex128 not in device.backend.dtypes or lc.float64 not in device.backend.dtypes:
        pytest.skip(f"{device.backend.name}: gradient checks need float64 and complex128")
    return device


@pytest.mark.parametrize("name", sorted(UNARY))
@FEW
@given(data=st.data())
def test_unary_complex_gradient_matches_finite_differences(c128, name, data):
    a, b = _parts_of(c128, (2, 3), data)
    fn = UNARY[name]
    assert lc.gradcheck(lambda p, q: parts(fn(Complex.apply(p, q))), [a, b])


@pytest.mark.parametrize("name", sorted(BINARY))
@FEW
@given(data=st.data())
def test_binary_and_reduction_complex_gradients_match_finite_differences(c128, name, data):
    a, b = _parts_of(c128, (2, 3), data, lo=0.3, hi=1.5)
    c, d = _parts_of(c128, (2, 3), data, lo=0.3, hi=1.5)
    fn = BINARY[name]
    assert lc.gradcheck(
        lambda p, q, r, s: parts(fn(Complex.apply(p, q), Complex.apply(r, s))), [a, b, c, d], atol=1e-5, rtol=1e-4
    )


def _eye3(z):
    return 3 * lc.eye(z.shape[-1], dtype=z.dtype, device=z.device)


LINALG = {
    "inv": lambda z: lc.linalg.inv(z + _eye3(z)),
    "det": lambda z: lc.linalg.det(z + _eye3(z)),
    "solve": lambda z: lc.linalg.solve(z + _eye3(z), z[:, :1] * 1j),
    "matrix_power": lambda z: lc.linalg.matrix_power(z, 3),
    "vector_norm": lambda z: lc.linalg.vector_norm(z, axis=-1),
    "matrix_norm": lambda z: lc.linalg.matrix_norm(z),
    "cross": lambda z: lc.linalg.cross(z, z[::-1] * (1 - 1j)),
    "trace_vecdot": lambda z: lc.linalg.trace(z) + lc.linalg.vecdot(z, z[::-1]),
}


@pytest.mark.parametrize("name", sorted(LINALG))
@FEW
@given(data=st.data())
def test_linalg_complex_gradients_match_finite_differences(c128, name, data):
    if getattr(c128.xp, "linalg", None) is None:
        pytest.skip(f"{c128.backend.name} has no linalg extension")
    a, b = _parts_of(c128, (3, 3), data, lo=-1.0, hi=1.0)
    fn = LINALG[name]
    assert lc.gradcheck(lambda p, q: parts(fn(Complex.apply(p, q))), [a, b], atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", ["tanh", "sigmoid", "exp", "sin"])
def test_complex_second_derivatives_match_finite_differences(c128, name):
    rng = np.random.default_rng(3)
    a, b = (lc.asarray(rng.uniform(0.2, 0.9, 3), device=c128).requires_grad_() for _ in range(2))
    fn = getattr(lc, name)
    assert lc.gradgradcheck(lambda p, q: parts(fn(Complex.apply(p, q) * (1 - 0.5j))), [a, b])


def test_complex_real_input_mix_second_derivative(c128):
    rng = np.random.default_rng(4)
    a, b = (lc.asarray(rng.uniform(0.3, 0.9, (2, 2)), device=c128).requires_grad_() for _ in range(2))
    assert lc.gradgradcheck(lambda p, q: parts(Complex.apply(p, q) @ Complex.apply(q, p) / Complex.apply(p, p)), [a, b])


# -- documented values (PyTorch's numbers, by the convention's definition) -----------------------------------


def test_multiply_gradient_is_the_conjugate_factor(device):
    z = lc.asarray([1 + 2j], device=device).requires_grad_()
    (g,) = lc.grad(real(z * lc.asarray([3 - 1j], device=device)).sum(), [z])
    np.testing.assert_allclose(g.numpy(), [3 + 1j], rtol=1e-6)


def test_exp_and_matmul_gradients_conjugate(device):
    z = lc.asarray([[0.5 + 1j, -1j]], device=device).requires_grad_()
    (g,) = lc.grad(real(lc.exp(z)).sum(), [z])
    np.testing.assert_allclose(g.numpy(), np.conj(np.exp(z.detach().numpy())), rtol=1e-5)
    w = lc.asarray([[2 + 1j], [1 - 3j]], device=device)
    (g,) = lc.grad(real(z @ w).sum(), [z])
    np.testing.assert_allclose(g.numpy(), np.conj(w.numpy()).T, rtol=1e-6)


def test_abs_gradient_is_the_unit_phase(device):
    z = lc.asarray([3 + 4j, -1j], device=device).requires_grad_()
    (g,) = lc.grad(lc.abs(z).sum(), [z])
    np.testing.assert_allclose(g.numpy(), [0.6 + 0.8j, -1j], rtol=1e-6)


def test_real_input_of_a_complex_graph_gets_a_real_gradient_without_warnings(device):
    x = lc.asarray([1.0, -2.0], device=device).requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's ComplexWarning must not fire
        (g,) = lc.grad(lc.abs((x * (1 + 2j)).sum()), [x])
    assert g.dtype is lc.float32
    np.testing.assert_allclose(g.numpy(), [-np.sqrt(5)] * 2, rtol=1e-6)


def test_real_gradients_stay_real(device):
    x = lc.asarray([0.5, 1.5], device=device).requires_grad_()
    (g,) = lc.grad((lc.exp(x) * lc.tanh(x) / (x + 1)).sum(), [x])
    assert g.dtype is lc.float32
