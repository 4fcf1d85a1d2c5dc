"""Reductions: values against NumPy (axis tuples, keepdims, correction) and gradients in float64."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import arrays, fixture_ok, leaf, shapes, to_numpy

import lucid_core as lc


def _f64(device):
    if not device.backend.capabilities.get("float64", True):
        pytest.skip(f"{device} has no float64 for finite-difference checks")


@st.composite
def shape_and_axis(draw, min_dims=0, allow_none=True):
    """A shape and an axis argument for it: None, an int (possibly negative) or a tuple of distinct axes."""
    shape = draw(shapes(min_dims=min_dims))
    nd = len(shape)
    options = [st.none()] if allow_none or nd == 0 else []
    if nd:
        options.append(st.integers(-nd, nd - 1))
        options.append(st.lists(st.integers(0, nd - 1), unique=True, max_size=nd).map(tuple))
    axis = draw(st.one_of(*options))
    return shape, axis, draw(st.booleans())


def _np_lse(x, axis, keepdims):
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis if axis is not None else tuple(range(x.ndim)))


# name: (lucid reduction, numpy reference, value kwargs)
REDUCTIONS = {
    "sum": (lc.sum, np.sum, {}),
    "mean": (lc.mean, np.mean, {}),
    "prod": (lc.prod, np.prod, {"lo": -1.5, "hi": 1.5}),
    "max": (lc.max, np.max, {"distinct": True}),
    "min": (lc.min, np.min, {"distinct": True}),
    "logsumexp": (lc.logsumexp, _np_lse, {}),
}


def _norm_axis(axis):
    return tuple(axis) if isinstance(axis, tuple) else axis


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@fixture_ok
@given(data=st.data())
def test_reduction_forward_matches_numpy(device, name, data):
    op, ref, kw = REDUCTIONS[name]
    shape, axis, keepdims = data.draw(shape_and_axis())
    if name in ("max", "min") and axis == ():
        axis = None
    x = data.draw(arrays(shape, **kw)).astype(np.float32)
    y = op(lc.asarray(x, device=device), axis=axis, keepdims=keepdims)
    expected = ref(x, axis=_norm_axis(axis), keepdims=keepdims)
    assert y.shape == np.shape(expected)
    assert y.dtype is lc.float32
    np.testing.assert_allclose(to_numpy(y), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@fixture_ok
@given(data=st.data())
def test_reduction_gradient_matches_finite_differences(device, name, data):
    _f64(device)
    op, _, kw = REDUCTIONS[name]
    shape, axis, keepdims = data.draw(shape_and_axis())
    x = leaf(data.draw(arrays(shape, **kw)), device)
    assert lc.gradcheck(lambda x: op(x, axis=axis, keepdims=keepdims), [x])


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "logsumexp"])
@fixture_ok
@given(data=st.data())
def test_reduction_second_derivative(device, name, data):
    _f64(device)
    op, _, kw = REDUCTIONS[name]
    shape, axis, keepdims = data.draw(shape_and_axis())
    x = leaf(data.draw(arrays(shape, **kw)), device)
    assert lc.gradgradcheck(lambda x: op(x * x, axis=axis, keepdims=keepdims), [x])


@fixture_ok
@given(values=arrays(shapes(min_dims=1)))
def test_second_derivative_of_sum_matches_closed_form(device, values):
    _f64(device)
    x = leaf(values, device)
    # f = (sum x)^2: grad = 2 sum(x) everywhere; every row of the Hessian is 2
    (g,) = lc.grad(lc.sum(x) ** 2, x, create_graph=True)
    np.testing.assert_allclose(to_numpy(g), np.full(values.shape, 2 * values.sum()), rtol=1e-12, atol=1e-12)
    (h,) = lc.grad(g.reshape(-1)[0], x)
    np.testing.assert_allclose(to_numpy(h), np.full(values.shape, 2.0))


@pytest.mark.parametrize("correction", [0, 1, 0.5])
@pytest.mark.parametrize("name", ["var", "std"])
@fixture_ok
@given(data=st.data())
def test_var_std_forward_and_gradient(device, name, correction, data):
    _f64(device)
    op = getattr(lc, name)
    ref = getattr(np, name)
    shape, axis, keepdims = data.draw(shape_and_axis(min_dims=1))
    ax = _norm_axis(axis)
    n = int(np.prod([shape[a] for a in (range(len(shape)) if ax is None else np.atleast_1d(ax))]))
    if n - correction <= 0 or (name == "std" and n < 2):
        return  # nan results (no degrees of freedom) or std's sqrt at 0: checked separately
    x_np = data.draw(arrays(shape, distinct=True))
    x = leaf(x_np, device)
    y = op(x, axis=axis, correction=correction, keepdims=keepdims)
    np.testing.assert_allclose(
        to_numpy(y), ref(x_np, axis=ax, ddof=correction, keepdims=keepdims), rtol=1e-10, atol=1e-12
    )
    assert lc.gradcheck(lambda x: op(x, axis=axis, correction=correction, keepdims=keepdims), [x])


def test_var_without_degrees_of_freedom_is_nan(device):
    x = lc.asarray([1.0, 2.0], device=device)
    assert np.isnan(lc.var(x, correction=2).item())
    assert lc.var(x, correction=1).item() == pytest.approx(0.5)
    assert x.var(correction=1).item() == pytest.approx(0.5)
    assert x.std().item() == pytest.approx(0.5**0.5)  # the method follows PyTorch: unbiased by default


def test_mean_of_int_tensor_raises(device):
    x = lc.asarray([1, 2], device=device)
    with pytest.raises(TypeError, match="mean: expected a floating-point tensor, got int64"):
        lc.mean(x)


@pytest.mark.parametrize("include_initial", [False, True])
@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@fixture_ok
@given(data=st.data())
def test_cumulative_forward_and_gradient(device, name, include_initial, data):
    _f64(device)
    op = getattr(lc, name)
    ref = np.cumsum if name == "cumulative_sum" else np.cumprod
    shape = data.draw(shapes(min_dims=1))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x_np = data.draw(arrays(shape, -1.5, 1.5))
    x = leaf(x_np, device)
    y = op(x, axis=axis, include_initial=include_initial)
    expected = ref(x_np, axis=axis)
    if include_initial:
        pad_shape = list(shape)
        pad_shape[axis] = 1
        start = np.zeros(pad_shape) if name == "cumulative_sum" else np.ones(pad_shape)
        expected = np.concatenate([start, expected], axis=axis)
    np.testing.assert_allclose(to_numpy(y), expected, rtol=1e-12, atol=1e-12)
    assert lc.gradcheck(lambda x: op(x, axis=axis, include_initial=include_initial), [x])


def test_cumulative_prod_gradient_with_zeros(device):
    _f64(device)
    x = leaf([2.0, 0.0, 3.0, 0.0], device)
    assert lc.gradcheck(lambda x: lc.cumulative_prod(x), [x])
    assert lc.gradgradcheck(lambda x: lc.cumulative_sum(x * x), [x])


def test_prod_gradient_with_zeros(device):
    _f64(device)
    x = leaf([[2.0, 0.0, 3.0], [0.0, 0.0, 1.0]], device)
    assert lc.gradcheck(lambda x: lc.prod(x, axis=1), [x])
    assert lc.gradcheck(lambda x: lc.prod(x), [x])
    y = lc.prod(x, axis=1)
    y.sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0]])


def test_cumulative_needs_axis_for_nd(device):
    x = lc.ones(2, 2, device=device)
    with pytest.raises(ValueError, match="cumulative_sum: axis is required for a 2-D tensor"):
        lc.cumulative_sum(x)
    with pytest.raises(ValueError, match="cumulative_prod: axis is required for a 2-D tensor"):
        lc.cumulative_prod(x)


def test_max_ties_share_the_gradient(device):
    x = lc.asarray([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]], device=device, requires_grad=True)
    lc.max(x, axis=1).sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]], rtol=1e-6)


def test_max_of_empty_axis_raises(device):
    x = lc.zeros((2, 0), device=device)
    with pytest.raises(ValueError, match=r"max: cannot reduce over axis 1 of size 0 \(shape \(2, 0\)\)"):
        lc.max(x, axis=1)
    with pytest.raises(ValueError, match="min: cannot reduce over axis 1 of size 0"):
        lc.min(x)


def test_sum_dtypes(device):
    assert lc.sum(lc.asarray([1, 2], dtype=lc.int8, device=device)).dtype is lc.int64
    assert lc.sum(lc.asarray([1, 2], dtype=lc.uint8, device=device)).dtype is lc.uint64
    assert lc.sum(lc.asarray([1.0], device=device)).dtype is lc.float32
    assert lc.sum(lc.asarray([1, 2], device=device), dtype=lc.float32).dtype is lc.float32
    assert lc.sum(lc.zeros((0,), device=device)).item() == 0.0


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "uint32", "float32"])
def test_prod_with_a_dtype_returns_that_dtype(device, dtype):
    """An explicit dtype is the result's (found by the Array API suite: uint8 came back as uint64)."""
    want = getattr(lc, dtype)
    x = lc.asarray([3, 5], dtype=lc.uint8, device=device)
    got = lc.prod(x, dtype=want)
    assert got.dtype is want and got.item() == 15
    assert lc.prod(lc.asarray(0, dtype=want, device=device), dtype=want).dtype is want  # 0-d
    assert lc.prod(x).dtype is lc.uint64  # without one: the default accumulation type


@pytest.mark.parametrize("include_initial", [False, True])
@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
def test_cumulative_with_a_dtype_returns_that_dtype(device, name, include_initial):
    """As prod: an explicit small integer dtype is kept, its arithmetic wrapping as NumPy's does."""
    fn = getattr(lc, name)
    want = getattr(np, name.replace("ulative_", ""))(np.array([200, 2, 3], np.uint8), dtype=np.uint8).tolist()
    got = fn(lc.asarray([200, 2, 3], dtype=lc.uint8, device=device), dtype=lc.uint8, include_initial=include_initial)
    assert got.dtype is lc.uint8
    assert got.tolist() == ([0 if name == "cumulative_sum" else 1] if include_initial else []) + want
    empty = fn(lc.asarray([], dtype=lc.uint8, device=device), dtype=lc.uint8, include_initial=include_initial)
    assert empty.dtype is lc.uint8
    assert fn(lc.asarray([1, 2], dtype=lc.uint8, device=device)).dtype is lc.uint64  # no dtype: the default


def test_all_and_any(device):
    x_np = np.array([[True, False, True], [True, True, True]])
    x = lc.asarray(x_np, device=device)
    for axis in (None, 0, 1, (0, 1), -1):
        for keepdims in (False, True):
            np.testing.assert_array_equal(
                to_numpy(lc.all(x, axis=axis, keepdims=keepdims)), np.all(x_np, axis=axis, keepdims=keepdims)
            )
            np.testing.assert_array_equal(
                to_numpy(lc.any(x, axis=axis, keepdims=keepdims)), np.any(x_np, axis=axis, keepdims=keepdims)
            )
    assert lc.all(lc.asarray([1.0, 2.0], device=device)).item() is True
    assert lc.any(lc.asarray([0, 0], device=device)).item() is False
    assert x.all().dtype is lc.bool


def test_logsumexp_is_stable(device):
    x = lc.asarray([1000.0, 1000.0], device=device)
    assert lc.logsumexp(x).item() == pytest.approx(1000.0 + np.log(2.0))
    y = lc.asarray([-np.inf, -np.inf], device=device)
    assert lc.logsumexp(y).item() == -np.inf


def test_method_aliases(device):
    x = lc.asarray([[1.0, 2.0], [3.0, 4.0]], device=device)
    assert x.sum().item() == 10.0
    assert x.sum(axis=1).tolist() == [3.0, 7.0]
    assert x.mean(axis=0).tolist() == [2.0, 3.0]
    assert x.max().item() == 4.0
    assert x.min(axis=1, keepdims=True).values.tolist() == [[1.0], [3.0]]  # PyTorch: (values, indices)
    assert x.prod().item() == 24.0


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "logsumexp", "all", "any", "var"])
def test_bad_axis_raises(device, name):
    x = lc.ones(2, 3, device=device)
    op = getattr(lc, name)
    with pytest.raises(ValueError, match=f"{name}: axis 2 is out of range for a tensor with 2 dimensions"):
        op(x, axis=2)
    with pytest.raises(ValueError, match=f"{name}: axis -3 is out of range"):
        op(x, axis=(0, -3))
    with pytest.raises(ValueError, match=rf"{name}: repeated axis in \(0, -2\)"):
        op(x, axis=(0, -2))
    with pytest.raises(TypeError, match=f"{name}: axis must be an int, got float"):
        op(x, axis=1.0)


def test_reduction_rejects_non_tensor():
    with pytest.raises(TypeError, match="sum: expected a Tensor, got list"):
        lc.sum([1.0, 2.0])
