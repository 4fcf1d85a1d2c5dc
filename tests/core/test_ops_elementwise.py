"""Element-wise ops: forward values against NumPy, gradients against finite differences (float64),
second derivatives, scalar operands, and the in-place / device error paths."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import arrays, broadcast_pairs, fixture_ok, leaf, shapes, to_numpy

import lucid_core as lc


def _f64(device):
    if not device.backend.capabilities.get("float64", True):
        pytest.skip(f"{device} has no float64 for finite-difference checks")


def _off_integers(x):
    """Move values at least 0.2 away from integers and half-integers (where rounding ops jump)."""
    return np.floor(x) + 0.3


_ERF = np.vectorize(math.erf)

# name: (lucid op, numpy reference, value strategy kwargs, smooth: has a second derivative worth checking)
UNARY = {
    "exp": (lc.exp, np.exp, {}, True),
    "expm1": (lc.expm1, np.expm1, {}, True),
    "log": (lc.log, np.log, {"lo": 0.1, "hi": 3.0}, True),
    "log1p": (lc.log1p, np.log1p, {"lo": -0.5, "hi": 2.0}, True),
    "log2": (lc.log2, np.log2, {"lo": 0.1, "hi": 3.0}, True),
    "log10": (lc.log10, np.log10, {"lo": 0.1, "hi": 3.0}, True),
    "sqrt": (lc.sqrt, np.sqrt, {"lo": 0.1, "hi": 3.0}, True),
    "rsqrt": (lc.rsqrt, lambda x: 1 / np.sqrt(x), {"lo": 0.1, "hi": 3.0}, True),
    "square": (lc.square, np.square, {}, True),
    "abs": (lc.abs, np.abs, {"away_from_zero": 0.1}, False),
    "sign": (lc.sign, np.sign, {"away_from_zero": 0.1}, False),
    "negative": (lc.negative, np.negative, {}, False),
    "positive": (lc.positive, np.positive, {}, False),
    "reciprocal": (lc.reciprocal, np.reciprocal, {"away_from_zero": 0.2}, True),
    "sin": (lc.sin, np.sin, {}, True),
    "cos": (lc.cos, np.cos, {}, True),
    "tan": (lc.tan, np.tan, {"lo": -1.2, "hi": 1.2}, True),
    "asin": (lc.asin, np.arcsin, {"lo": -0.9, "hi": 0.9}, True),
    "acos": (lc.acos, np.arccos, {"lo": -0.9, "hi": 0.9}, True),
    "atan": (lc.atan, np.arctan, {}, True),
    "sinh": (lc.sinh, np.sinh, {}, True),
    "cosh": (lc.cosh, np.cosh, {}, True),
    "tanh": (lc.tanh, np.tanh, {}, True),
    "asinh": (lc.asinh, np.arcsinh, {}, True),
    "acosh": (lc.acosh, np.arccosh, {"lo": 1.1, "hi": 3.0}, True),
    "atanh": (lc.atanh, np.arctanh, {"lo": -0.9, "hi": 0.9}, True),
    "sigmoid": (lc.sigmoid, lambda x: 1 / (1 + np.exp(-x)), {"lo": -4.0, "hi": 4.0}, True),
    "erf": (lc.erf, _ERF, {}, True),
    "relu": (lc.relu, lambda x: np.maximum(x, 0), {"away_from_zero": 0.1}, False),
    "conj": (lc.conj, np.conj, {}, False),
    "floor": (lc.floor, np.floor, {"rounding": True}, False),
    "ceil": (lc.ceil, np.ceil, {"rounding": True}, False),
    "round": (lc.round, np.round, {"rounding": True}, False),
    "trunc": (lc.trunc, np.trunc, {"rounding": True}, False),
}


def _unary_values(kwargs, shape=None):
    shape = shapes() if shape is None else shape
    kw = dict(kwargs)
    if kw.pop("rounding", False):
        return arrays(shape, -3.0, 3.0).map(_off_integers)
    return arrays(shape, **kw)


# -- unary ops -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_forward_matches_numpy(device, name):
    op, ref, kw, _ = UNARY[name]
    lo, hi = kw.get("lo", -2.0), kw.get("hi", 2.0)
    x = np.linspace(lo, hi, 12).reshape(3, 4)
    if kw.get("away_from_zero"):
        x = np.where(np.abs(x) < 0.2, 0.5, x)
    if kw.get("rounding"):
        x = np.array([[-2.5, -1.5, -0.5, 0.5], [1.5, 2.5, -1.7, 1.2], [0.49, -0.51, 3.0, -3.0]])
    for dtype, np_dtype, tol in ((lc.float32, np.float32, 1e-6), (lc.float64, np.float64, 1e-12)):
        if dtype is lc.float64 and not device.backend.capabilities.get("float64", True):
            continue
        t = lc.asarray(x.astype(np_dtype), device=device)
        y = op(t)
        assert y.dtype is dtype, f"{name} changed the dtype to {y.dtype}"
        assert y.shape == x.shape
        rtol = 2e-7 if name == "erf" and dtype is lc.float64 else tol  # A&S erf is only a fallback
        np.testing.assert_allclose(
            to_numpy(y), ref(x.astype(np_dtype)), rtol=max(rtol, 1e-5 if name == "erf" else 0), atol=tol
        )


@pytest.mark.parametrize("name", sorted(UNARY))
@fixture_ok
@given(data=st.data())
def test_unary_gradient_matches_finite_differences(device, name, data):
    _f64(device)
    op, _, kw, _ = UNARY[name]
    x = leaf(data.draw(_unary_values(kw)), device)
    assert lc.gradcheck(op, [x])


SMOOTH = sorted(n for n, spec in UNARY.items() if spec[3])


@pytest.mark.parametrize("name", SMOOTH)
@fixture_ok
@given(data=st.data())
def test_unary_second_derivative_matches_finite_differences(device, name, data):
    _f64(device)
    op, _, kw, _ = UNARY[name]
    x = leaf(data.draw(_unary_values(kw, shapes(max_dims=2, max_side=3))), device)
    assert lc.gradgradcheck(op, [x])


@pytest.mark.parametrize(
    ("fn", "second"),
    [
        (lc.tanh, lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2)),
        (lambda x: x**3, lambda x: 6 * x),
        (lc.exp, np.exp),
        (lc.sin, lambda x: -np.sin(x)),
    ],
    ids=["tanh", "cube", "exp", "sin"],
)
@fixture_ok
@given(values=arrays(shapes(min_dims=1, max_dims=2)))
def test_second_derivative_matches_closed_form(device, fn, second, values):
    _f64(device)
    x = leaf(values, device)
    (g,) = lc.grad(fn(x).sum(), x, create_graph=True)
    assert g.requires_grad
    (gg,) = lc.grad(g.sum(), x)
    np.testing.assert_allclose(to_numpy(gg), second(values), rtol=1e-10, atol=1e-10)


def test_third_derivative_of_cube_is_six(device):
    _f64(device)
    x = leaf([0.5, -1.0, 2.0], device)
    (g1,) = lc.grad((x**3).sum(), x, create_graph=True)
    (g2,) = lc.grad(g1.sum(), x, create_graph=True)
    (g3,) = lc.grad(g2.sum(), x)
    np.testing.assert_allclose(to_numpy(g3), [6.0, 6.0, 6.0])


def test_dezero_square_exp_square_chain(device):
    _f64(device)
    x = leaf(0.5, device)
    y = lc.square(lc.exp(lc.square(x)))
    y.backward()
    assert y.item() == pytest.approx(1.648721270700128)
    assert x.grad.item() == pytest.approx(3.297442541400256)


def test_abs_and_relu_have_zero_gradient_at_zero(device):
    x = lc.asarray([0.0, 0.0], device=device, requires_grad=True)
    (lc.abs(x) + lc.relu(x)).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]


def test_sigmoid_is_stable_for_large_inputs(device):
    y = lc.sigmoid(lc.asarray([-1000.0, 0.0, 1000.0], device=device))
    assert y.tolist() == [0.0, 0.5, 1.0]


def test_unary_op_rejects_non_tensor():
    with pytest.raises(TypeError, match="exp: expected a Tensor, got list"):
        lc.exp([1.0, 2.0])


# -- binary ops ------------------------------------------------------------------------------------


def _grid(v, offset):
    """Values on a grid shifted by ``offset`` (two grids with different offsets never tie)."""
    return np.round(v) + offset


# name: (op, numpy reference, strategy for a, strategy for b) -- both share a broadcasting pair of shapes
BINARY = {
    "add": (lc.add, np.add, {}, {}),
    "subtract": (lc.subtract, np.subtract, {}, {}),
    "multiply": (lc.multiply, np.multiply, {}, {}),
    "divide": (lc.divide, np.divide, {}, {"away_from_zero": 0.5}),
    "pow": (lc.pow, np.power, {"lo": 0.5, "hi": 2.0}, {}),
    "atan2": (lc.atan2, np.arctan2, {"away_from_zero": 0.2}, {"away_from_zero": 0.2}),
    "hypot": (lc.hypot, np.hypot, {"away_from_zero": 0.2}, {"away_from_zero": 0.2}),
    "logaddexp": (lc.logaddexp, np.logaddexp, {}, {}),
    "copysign": (lc.copysign, np.copysign, {"away_from_zero": 0.2}, {"away_from_zero": 0.2}),
    "remainder": (lc.remainder, np.remainder, {"lo": -2.9, "hi": 2.9, "away_from_zero": 0.1}, {"lo": 3.0, "hi": 4.0}),
    "maximum": (lc.maximum, np.maximum, {"grid": 0.1}, {"grid": 0.35}),
    "minimum": (lc.minimum, np.minimum, {"grid": 0.1}, {"grid": 0.35}),
}


def _binary_values(kw, shape):
    kw = dict(kw)
    offset = kw.pop("grid", None)
    if offset is not None:
        return arrays(shape, -2.0, 2.0).map(lambda v: _grid(v, offset))
    return arrays(shape, **kw)


@pytest.mark.parametrize("name", sorted(BINARY))
@fixture_ok
@given(data=st.data())
def test_binary_forward_matches_numpy(device, name, data):
    op, ref, ka, kb = BINARY[name]
    sa, sb = data.draw(broadcast_pairs())
    a = data.draw(_binary_values(ka, sa)).astype(np.float32)
    b = data.draw(_binary_values(kb, sb)).astype(np.float32)
    y = op(lc.asarray(a, device=device), lc.asarray(b, device=device))
    assert y.dtype is lc.float32
    expected = ref(a, b)
    assert y.shape == expected.shape
    np.testing.assert_allclose(to_numpy(y), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(BINARY))
@fixture_ok
@given(data=st.data())
def test_binary_gradient_matches_finite_differences(device, name, data):
    _f64(device)
    op, _, ka, kb = BINARY[name]
    sa, sb = data.draw(broadcast_pairs())
    a = leaf(data.draw(_binary_values(ka, sa)), device)
    b = leaf(data.draw(_binary_values(kb, sb)), device)
    assert lc.gradcheck(op, [a, b])


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "pow", "atan2", "hypot", "logaddexp"])
@fixture_ok
@given(data=st.data())
def test_binary_second_derivative_matches_finite_differences(device, name, data):
    _f64(device)
    op, _, ka, kb = BINARY[name]
    sa, sb = data.draw(broadcast_pairs(max_dims=2, max_side=3))
    a = leaf(data.draw(_binary_values(ka, sa)), device)
    b = leaf(data.draw(_binary_values(kb, sb)), device)
    assert lc.gradgradcheck(op, [a, b])


@pytest.mark.parametrize(
    ("fn", "ref"),
    [
        (lambda x: x + 2.0, lambda x: x + 2.0),
        (lambda x: 2.0 + x, lambda x: 2.0 + x),
        (lambda x: x - 1.5, lambda x: x - 1.5),
        (lambda x: 1.5 - x, lambda x: 1.5 - x),
        (lambda x: x * 3, lambda x: x * 3),
        (lambda x: 3 * x, lambda x: 3 * x),
        (lambda x: x / 4.0, lambda x: x / 4.0),
        (lambda x: 4.0 / x, lambda x: 4.0 / x),
        (lambda x: x**3, lambda x: x**3),
        (lambda x: x**2, lambda x: x**2),
        (lambda x: x**0.5, lambda x: x**0.5),
        (lambda x: 2.0**x, lambda x: 2.0**x),
        (lambda x: -x, lambda x: -x),
        (lambda x: +x, lambda x: +x),
        (lambda x: x % 3.5, lambda x: x % 3.5),
        (lambda x: lc.maximum(x, 1.0), lambda x: np.maximum(x, 1.0)),
        (lambda x: lc.minimum(0.9, x), lambda x: np.minimum(0.9, x)),
        (lambda x: lc.atan2(x, 2.0), lambda x: np.arctan2(x, 2.0)),
        (lambda x: lc.hypot(1.5, x), lambda x: np.hypot(1.5, x)),
        (lambda x: lc.logaddexp(x, 0.5), lambda x: np.logaddexp(x, 0.5)),
        (lambda x: lc.copysign(1.5, x), lambda x: np.copysign(1.5, x)),
        (lambda x: lc.copysign(x, -1.0), lambda x: np.copysign(x, -1.0)),
        (lambda x: lc.remainder(x, 3.5), lambda x: np.remainder(x, 3.5)),
        (lambda x: lc.clip(x, 0.5, 1.5), lambda x: np.clip(x, 0.5, 1.5)),
    ],
    ids=lambda f: "",
)
@fixture_ok
@given(values=arrays(shapes(), 0.2, 2.2).map(lambda v: np.round(v, 1) + 0.05))
def test_python_scalar_operands(device, fn, ref, values):
    _f64(device)
    x = leaf(values, device)
    y = fn(x)
    assert y.dtype is lc.float64, "a Python scalar must not change a float64 tensor's dtype"
    np.testing.assert_allclose(to_numpy(y), ref(values), rtol=1e-12)
    assert lc.gradcheck(fn, [x])
    assert lc.gradgradcheck(fn, [x])


def test_pow_gradient_for_zero_base(device):
    _f64(device)
    a = leaf([0.0, 0.0, 2.0], device)
    b = leaf([2.0, 0.0, 3.0], device)
    (a**b).sum().backward()
    np.testing.assert_allclose(to_numpy(b.grad), [0.0, 0.0, 8.0 * math.log(2.0)])
    np.testing.assert_allclose(to_numpy(a.grad), [0.0, 0.0, 12.0])


def test_maximum_ties_split_the_gradient(device):
    a = lc.asarray([1.0, 2.0, 3.0], device=device, requires_grad=True)
    b = lc.asarray([1.0, 0.0, 5.0], device=device, requires_grad=True)
    lc.maximum(a, b).sum().backward()
    assert a.grad.tolist() == [0.5, 1.0, 0.0]
    assert b.grad.tolist() == [0.5, 0.0, 1.0]


def test_binary_ops_with_lists_and_numpy_arrays(device):
    x = lc.asarray([1.0, 2.0], device=device)
    assert (x + [1.0, 1.0]).tolist() == [2.0, 3.0]  # noqa: RUF005 - a Tensor plus a list
    assert ([3.0, 3.0] - x).tolist() == [2.0, 1.0]
    assert (x * np.array([2.0, 2.0], dtype=np.float32)).tolist() == [2.0, 4.0]


def test_binary_op_rejects_none(device):
    x = lc.asarray([1.0], device=device)
    with pytest.raises(TypeError, match="add: unsupported operand None"):
        lc.add(x, None)


def test_binary_op_needs_a_tensor():
    with pytest.raises(TypeError, match="expected at least one Tensor operand, got float and int"):
        lc.add(1.0, 2)


def test_broadcast_mismatch_raises(device):
    a = lc.ones(2, 3, device=device)
    b = lc.ones(4, device=device)
    with pytest.raises(ValueError):
        a + b


# -- where and clip -----------------------------------------------------------------------------------


@fixture_ok
@given(data=st.data())
def test_where_forward_and_gradient(device, data):
    _f64(device)
    sa, sb = data.draw(broadcast_pairs())
    sc = data.draw(st.sampled_from([sa, sb, ()]))
    cond_np = data.draw(arrays(sc)) > 0
    a = leaf(data.draw(arrays(sa)), device)
    b = leaf(data.draw(arrays(sb)), device)
    cond = lc.asarray(cond_np, device=device)
    y = lc.where(cond, a, b)
    np.testing.assert_array_equal(to_numpy(y), np.where(cond_np, to_numpy(a), to_numpy(b)))
    assert lc.gradcheck(lambda a, b: lc.where(cond, a, b), [a, b])
    assert lc.gradgradcheck(lambda a, b: lc.where(cond, a * a, b * a), [a, b])


def test_where_with_scalars(device):
    cond = lc.asarray([True, False], device=device)
    x = lc.asarray([1.0, 2.0], device=device, requires_grad=True)
    y = lc.where(cond, x, 0.0)
    assert y.tolist() == [1.0, 0.0]
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 0.0]
    assert lc.where(cond, 1.0, 2.0).tolist() == [1.0, 2.0]
    assert lc.where(cond, 1.0, 2.0).dtype is lc.float32


def test_where_needs_a_bool_condition(device):
    x = lc.ones(2, device=device)
    with pytest.raises(TypeError, match="where: condition must be a bool tensor, got float32"):
        lc.where(x, x, x)
    with pytest.raises(TypeError, match="where: condition must be a bool Tensor, got list"):
        lc.where([True, False], x, x)


@fixture_ok
@given(data=st.data())
def test_clip_forward_and_gradient(device, data):
    _f64(device)
    sx, sl = data.draw(broadcast_pairs())
    x_np = data.draw(arrays(sx, -3.0, 3.0)).round() + 0.5
    lo_np = np.round(data.draw(arrays(sl, -2.0, 0.0)))
    hi_np = np.round(data.draw(arrays(sl, 1.0, 2.0)))
    x, lo, hi = leaf(x_np, device), leaf(lo_np, device), leaf(hi_np, device)
    np.testing.assert_array_equal(to_numpy(lc.clip(x, lo, hi)), np.clip(x_np, lo_np, hi_np))
    assert lc.gradcheck(lambda x, lo, hi: lc.clip(x, lo, hi), [x, lo, hi])
    assert lc.gradcheck(lambda x: lc.clip(x, -1.0, 1.0), [x])
    assert lc.gradcheck(lambda x: lc.clip(x, max=0.0), [x])


def test_clip_int_tensor_with_float_bound_gives_float32(device):
    x = lc.asarray([-3, 0, 3], device=device)
    y = lc.clip(x, -1.5, 1.5)
    assert y.dtype is lc.float32
    assert y.tolist() == [-1.5, 0.0, 1.5]
    assert lc.clip(x, -1, 1).dtype is lc.int64


def test_clip_rejects_bad_bounds(device):
    x = lc.ones(2, device=device)
    with pytest.raises(TypeError, match="clip: min must be a number or a Tensor, got str"):
        lc.clip(x, "a")
    with pytest.raises(TypeError, match="clip: max must be a number or a Tensor, got list"):
        lc.clip(x, 0, [1])


# -- comparisons, logic, bit ops ---------------------------------------------------------------------

COMPARE = {
    "equal": (lc.equal, np.equal),
    "not_equal": (lc.not_equal, np.not_equal),
    "less": (lc.less, np.less),
    "less_equal": (lc.less_equal, np.less_equal),
    "greater": (lc.greater, np.greater),
    "greater_equal": (lc.greater_equal, np.greater_equal),
}


@pytest.mark.parametrize("name", sorted(COMPARE))
@fixture_ok
@given(data=st.data())
def test_comparisons_match_numpy(device, name, data):
    op, ref = COMPARE[name]
    sa, sb = data.draw(broadcast_pairs())
    a = np.round(data.draw(arrays(sa)))
    b = np.round(data.draw(arrays(sb)))
    ta = lc.asarray(a, device=device, requires_grad=True)
    y = op(ta, lc.asarray(b, device=device))
    assert y.dtype is lc.bool
    assert not y.requires_grad
    np.testing.assert_array_equal(to_numpy(y), ref(a, b))


def test_comparison_operators(device):
    x = lc.asarray([1, 2, 3], device=device)
    assert (x == 2).tolist() == [False, True, False]
    assert (x != 2).tolist() == [True, False, True]
    assert (x < 2).tolist() == [True, False, False]
    assert (x <= 2).tolist() == [True, True, False]
    assert (x > 2).tolist() == [False, False, True]
    assert (x >= 2).tolist() == [False, True, True]
    assert (2 < x).tolist() == [False, False, True]
    assert (x == lc.asarray([1, 0, 3], device=device)).sum().item() == 2


def test_logical_ops(device):
    a_np = np.array([True, True, False, False])
    b_np = np.array([True, False, True, False])
    a, b = lc.asarray(a_np, device=device), lc.asarray(b_np, device=device)
    np.testing.assert_array_equal(to_numpy(lc.logical_and(a, b)), a_np & b_np)
    np.testing.assert_array_equal(to_numpy(lc.logical_or(a, b)), a_np | b_np)
    np.testing.assert_array_equal(to_numpy(lc.logical_xor(a, b)), a_np ^ b_np)
    np.testing.assert_array_equal(to_numpy(lc.logical_not(a)), ~a_np)
    np.testing.assert_array_equal(to_numpy(a & b), a_np & b_np)
    np.testing.assert_array_equal(to_numpy(a | b), a_np | b_np)
    np.testing.assert_array_equal(to_numpy(a ^ b), a_np ^ b_np)
    np.testing.assert_array_equal(to_numpy(~a), ~a_np)
    assert lc.logical_and(a, True).dtype is lc.bool


def test_bitwise_ops_on_integers(device):
    a_np, b_np = np.array([12, 5, 7]), np.array([10, 3, 1])
    a, b = lc.asarray(a_np, device=device), lc.asarray(b_np, device=device)
    np.testing.assert_array_equal(to_numpy(a & b), a_np & b_np)
    np.testing.assert_array_equal(to_numpy(a | b), a_np | b_np)
    np.testing.assert_array_equal(to_numpy(a ^ b), a_np ^ b_np)
    np.testing.assert_array_equal(to_numpy(~a), ~a_np)
    np.testing.assert_array_equal(to_numpy(a << 2), a_np << 2)
    np.testing.assert_array_equal(to_numpy(a >> 1), a_np >> 1)


def test_isnan_isinf_isfinite_signbit(device):
    x_np = np.array([1.0, np.nan, np.inf, -np.inf, -0.0], dtype=np.float32)
    x = lc.asarray(x_np, device=device)
    for op, ref in ((lc.isnan, np.isnan), (lc.isinf, np.isinf), (lc.isfinite, np.isfinite), (lc.signbit, np.signbit)):
        y = op(x)
        assert y.dtype is lc.bool
        np.testing.assert_array_equal(to_numpy(y), ref(x_np))


def test_floor_divide_and_remainder_follow_python(device):
    a_np, b_np = np.array([7, -7, 7, -7]), np.array([2, 2, -2, -2])
    a, b = lc.asarray(a_np, device=device), lc.asarray(b_np, device=device)
    assert (a // b).tolist() == [7 // 2, -7 // 2, 7 // -2, -7 // -2]
    assert (a % b).tolist() == [7 % 2, -7 % 2, 7 % -2, -7 % -2]
    assert (a // b).dtype is lc.int64
    assert lc.floor_divide(lc.asarray([7.5], device=device), 2.0).tolist() == [3.0]


def test_floor_divide_has_no_gradient(device):
    x = lc.asarray([3.0], device=device, requires_grad=True)
    assert not (x // 2.0).requires_grad


# -- in-place operators --------------------------------------------------------------------------------


def test_inplace_operators_outside_the_graph(device):
    x = lc.asarray([1.0, 2.0], device=device)
    native = x.native
    x += 1.0
    x *= 2.0
    x -= lc.asarray([1.0, 1.0], device=device)
    x /= 2.0
    assert x.tolist() == [1.5, 2.5]
    x **= 2
    assert x.tolist() == [2.25, 6.25]
    assert native is not None


def test_inplace_on_leaf_requiring_grad_raises(device):
    x = lc.asarray([1.0, 2.0], device=device, requires_grad=True)
    for fn, name in (
        (lambda: x.__iadd__(1.0), r"\+="),
        (lambda: x.__imul__(2.0), r"\*="),
        (lambda: x.add_(1.0), "add_"),
        (lambda: x.mul_(2.0), "mul_"),
        (lambda: x.zero_(), "zero_"),
        (lambda: x.clamp_(0.0, 1.0), "clamp_"),
    ):
        with pytest.raises(RuntimeError, match=f"{name}: a leaf tensor that requires grad cannot be modified in place"):
            fn()
    with lc.no_grad():
        x += 1.0
        x.mul_(2.0)
    assert x.tolist() == [4.0, 6.0]
    assert x.requires_grad and x.is_leaf


def test_inplace_inside_the_graph_keeps_gradients_right(device):
    x = lc.asarray([1.0, 2.0], device=device, requires_grad=True)
    y = x * 2.0
    y += x
    y *= x
    y.sum().backward()
    # y = 3 x^2 -> dy/dx = 6 x
    assert x.grad.tolist() == [6.0, 12.0]


def test_inplace_dtype_change_raises(device):
    x = lc.asarray([1, 2], device=device)
    with pytest.raises(TypeError, match="cannot be stored in place into a int64 tensor"):
        x /= 2


def test_inplace_add_with_alpha(device):
    x = lc.asarray([1.0, 2.0], device=device)
    x.add_(lc.asarray([1.0, 1.0], device=device), alpha=0.5)
    x.sub_(lc.asarray([1.0, 1.0], device=device), alpha=2)
    assert x.tolist() == [-0.5, 0.5]


# -- devices -------------------------------------------------------------------------------------------


@pytest.fixture
def second_device(device):
    """A device of another backend: an installed one, or array-api-strict registered for this test."""
    others = [b.name for b in lc.backends() if b.status == "ok" and b.name != device.backend.name]
    if others:
        yield lc.get_backend(others[0]).default_device
        return
    array_api_strict = pytest.importorskip("array_api_strict")
    lc.register_backend(lc.ArrayAPIBackend(array_api_strict, name="strict"))
    try:
        yield lc.get_backend("strict").default_device
    finally:
        lc.unregister_backend("strict")


def test_mixed_devices_raise_naming_both(device, second_device):
    a = lc.asarray([1.0, 2.0], device=device)
    b = lc.asarray([1.0, 2.0], device=second_device)
    for fn in (
        lambda: a + b,
        lambda: a * b,
        lambda: lc.maximum(a, b),
        lambda: lc.where(a > 0, a, b),
        lambda: lc.concat([a, b]),
        lambda: lc.stack([a, b]),
        lambda: a @ b,
        lambda: lc.clip(a, b, None),
    ):
        with pytest.raises(
            RuntimeError,
            match=f"different devices \\({device} and {second_device}\\)|"
            f"different devices \\({second_device} and {device}\\)",
        ):
            fn()
    assert (b + 1.0).device == second_device  # Python scalars are fine


def test_mixed_devices_move_explicitly(device, second_device):
    a = lc.asarray([1.0, 2.0], device=device, requires_grad=True)
    b = lc.asarray([3.0, 4.0], device=second_device)
    y = a.to(second_device) * b
    assert y.device == second_device
    y.sum().backward()
    assert a.grad.device == device
    assert a.grad.tolist() == [3.0, 4.0]
