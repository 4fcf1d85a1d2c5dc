"""Searching and sorting: argmax/argmin, sort/argsort, topk (values with gradients), nonzero, searchsorted."""

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


@fixture_ok
@given(data=st.data())
def test_argmax_argmin(device, data):
    shape = data.draw(shapes(min_dims=1))
    nd = len(shape)
    x_np = data.draw(arrays(shape)).round(1).astype(np.float32)  # rounding makes ties: the first one wins
    axis = data.draw(st.one_of(st.none(), st.integers(-nd, nd - 1)))
    keepdims = data.draw(st.booleans())
    x = lc.asarray(x_np, device=device)
    for op, ref in ((lc.argmax, np.argmax), (lc.argmin, np.argmin)):
        y = op(x, axis=axis, keepdims=keepdims)
        assert y.dtype is lc.int64
        np.testing.assert_array_equal(to_numpy(y), ref(x_np, axis=axis, keepdims=keepdims))
    assert x.argmax(axis=axis).shape == np.argmax(x_np, axis=axis).shape


def test_argmax_errors(device):
    with pytest.raises(ValueError, match=r"argmax: cannot be taken over an empty tensor \(shape \(0,\)\)"):
        lc.argmax(lc.zeros(0, device=device))
    with pytest.raises(ValueError, match="argmin: axis 2 is out of range for a tensor with 2 dimensions"):
        lc.argmin(lc.ones(2, 2, device=device), axis=2)


@fixture_ok
@given(data=st.data())
def test_sort_and_argsort(device, data):
    _f64(device)
    shape = data.draw(shapes(min_dims=1))
    nd = len(shape)
    axis = data.draw(st.integers(-nd, nd - 1))
    descending = data.draw(st.booleans())
    x_np = data.draw(arrays(shape, distinct=True))
    x = leaf(x_np, device)
    order = lc.argsort(x, axis=axis, descending=descending)
    expected = np.argsort(-x_np if descending else x_np, axis=axis, kind="stable")
    assert order.dtype is lc.int64
    np.testing.assert_array_equal(to_numpy(order), expected)
    s = lc.sort(x, axis=axis, descending=descending)
    np.testing.assert_array_equal(to_numpy(s), np.take_along_axis(x_np, expected, axis=axis))
    assert lc.gradcheck(lambda x: lc.sort(x, axis=axis, descending=descending), [x])
    assert lc.gradgradcheck(lambda x: lc.sort(x**3, axis=axis), [x])  # x**3 keeps values distinct


def test_argsort_is_stable(device):
    x = lc.asarray([2, 1, 2, 1, 0], device=device)
    assert lc.argsort(x).tolist() == [4, 1, 3, 0, 2]
    assert lc.argsort(x, descending=True).tolist() == [0, 2, 1, 3, 4]


@fixture_ok
@given(data=st.data())
def test_topk(device, data):
    _f64(device)
    shape = data.draw(shapes(min_dims=1))
    nd = len(shape)
    axis = data.draw(st.integers(-nd, nd - 1))
    k = data.draw(st.integers(0, shape[axis]))
    largest = data.draw(st.booleans())
    x_np = data.draw(arrays(shape, distinct=True))
    x = leaf(x_np, device)
    values, indices = lc.topk(x, k, axis=axis, largest=largest)
    order = np.argsort(-x_np if largest else x_np, axis=axis)
    expected_idx = np.take(order, np.arange(k), axis=axis)
    np.testing.assert_array_equal(to_numpy(indices), expected_idx)
    np.testing.assert_array_equal(to_numpy(values), np.take_along_axis(x_np, expected_idx, axis=axis))
    assert indices.dtype is lc.int64
    assert not indices.requires_grad
    if k:
        assert lc.gradcheck(lambda x: lc.topk(x, k, axis=axis, largest=largest)[0], [x])


def test_topk_errors(device):
    x = lc.ones(2, 3, device=device)
    with pytest.raises(ValueError, match="topk: k=4 is out of range for axis -1 of size 3"):
        lc.topk(x, 4)
    with pytest.raises(ValueError, match="topk: k=-1 is out of range"):
        lc.topk(x, -1)
    with pytest.raises(TypeError, match="topk: expected a Tensor, got list"):
        lc.topk([1.0], 1)


def test_sort_errors(device):
    with pytest.raises(ValueError, match="sort: needs at least 1 dimension"):
        lc.sort(lc.asarray(1.0, device=device))
    with pytest.raises(ValueError, match="argsort: axis 1 is out of range for a tensor with 1 dimensions"):
        lc.argsort(lc.ones(3, device=device), axis=1)


@fixture_ok
@given(data=st.data())
def test_nonzero_and_count_nonzero(device, data):
    if not device.backend.capabilities.get("data_dependent_shapes", True):
        pytest.skip(f"{device} cannot produce data-dependent shapes")
    shape = data.draw(shapes(min_dims=1))
    x_np = data.draw(arrays(shape)).round()
    x = lc.asarray(x_np, device=device)
    out = lc.nonzero(x)
    assert len(out) == len(shape)
    for got, ref in zip(out, np.nonzero(x_np)):
        assert got.dtype is lc.int64
        np.testing.assert_array_equal(to_numpy(got), ref)
    assert lc.count_nonzero(x).item() == np.count_nonzero(x_np)
    np.testing.assert_array_equal(to_numpy(lc.count_nonzero(x, axis=0)), np.count_nonzero(x_np, axis=0))


def test_nonzero_of_0d_raises(device):
    with pytest.raises(ValueError, match="nonzero: a 0-d tensor has no indices; reshape it to 1-D first"):
        lc.nonzero(lc.asarray(1.0, device=device))


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(device, side):
    sorted_np = np.array([1.0, 2.0, 2.0, 4.0], dtype=np.float32)
    queries = np.array([[0.0, 2.0], [3.0, 5.0]], dtype=np.float32)
    y = lc.searchsorted(lc.asarray(sorted_np, device=device), lc.asarray(queries, device=device), side=side)
    assert y.dtype is lc.int64
    np.testing.assert_array_equal(to_numpy(y), np.searchsorted(sorted_np, queries, side=side))
    perm = np.array([3, 0, 2, 1])
    shuffled = sorted_np[np.argsort(perm)]
    sorter = np.argsort(shuffled, kind="stable")
    z = lc.searchsorted(
        lc.asarray(shuffled, device=device),
        lc.asarray(queries, device=device),
        side=side,
        sorter=lc.asarray(sorter, device=device),
    )
    np.testing.assert_array_equal(to_numpy(z), np.searchsorted(shuffled, queries, side=side, sorter=sorter))


def test_searchsorted_errors(device):
    x = lc.ones(2, 2, device=device)
    with pytest.raises(ValueError, match=r"searchsorted: x1 must be 1-D, got shape \(2, 2\)"):
        lc.searchsorted(x, x)
    with pytest.raises(ValueError, match="searchsorted: side must be 'left' or 'right', got 'middle'"):
        lc.searchsorted(lc.ones(2, device=device), x, side="middle")
