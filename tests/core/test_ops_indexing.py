"""Indexing: ``x[key]`` (ints, slices with negative steps, ..., None, bool masks, integer arrays),
gradients that scatter back (repeated indices accumulate), take/take_along_axis, and setitem."""

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


def _masks_ok(device):
    if not device.backend.capabilities.get("data_dependent_shapes", True):
        pytest.skip(f"{device} cannot index with boolean masks")


@st.composite
def basic_keys(draw, shape):
    """A basic index for ``shape``: ints, slices (negative steps too), None and at most one Ellipsis."""
    key = []
    dims = list(shape)
    used_ellipsis = False
    while dims:
        # after an Ellipsis the rest of the key must cover exactly the remaining trailing axes: no early stop
        choice = draw(st.sampled_from(["int", "slice", "none"] + ([] if used_ellipsis else ["ellipsis", "stop"])))
        if choice == "stop":
            break
        if choice == "none":
            key.append(None)
            continue
        if choice == "ellipsis":
            if used_ellipsis:
                continue
            used_ellipsis = True
            key.append(Ellipsis)
            # the ellipsis swallows some axes; the rest of the key applies to the last ones
            dims = dims[len(dims) - draw(st.integers(0, len(dims))) :]
            continue
        n = dims.pop(0)
        if choice == "int":
            key.append(draw(st.integers(-n, n - 1)))
        else:
            start = draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
            stop = draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
            step = draw(st.sampled_from([None, 1, 2, -1, -2, 3]))
            key.append(slice(start, stop, step))
    return tuple(key)


@fixture_ok
@given(data=st.data())
def test_basic_indexing_matches_numpy_and_scatters_gradient(device, data):
    _f64(device)
    shape = data.draw(shapes(min_dims=1))
    x_np = data.draw(arrays(shape))
    key = data.draw(basic_keys(shape))
    x = leaf(x_np, device)
    y = x[key]
    expected = x_np[key]
    assert y.shape == expected.shape
    np.testing.assert_array_equal(to_numpy(y), expected)
    assert lc.gradcheck(lambda x: x[key], [x])
    assert lc.gradgradcheck(lambda x: (x * x)[key], [x])


@fixture_ok
@given(data=st.data())
def test_integer_array_indexing_accumulates_repeats(device, data):
    _f64(device)
    shape = data.draw(shapes(min_dims=1))
    x_np = data.draw(arrays(shape))
    n = shape[0]
    idx = data.draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=6))
    as_tensor = data.draw(st.booleans())
    key = lc.asarray(idx, device=device) if as_tensor else idx
    x = leaf(x_np, device)
    y = x[key]
    np.testing.assert_array_equal(to_numpy(y), x_np[np.array(idx)])
    y.sum().backward()
    counts = np.zeros(n)
    np.add.at(counts, np.array(idx), 1.0)
    np.testing.assert_array_equal(
        to_numpy(x.grad), np.broadcast_to(counts.reshape((n,) + (1,) * (len(shape) - 1)), shape)
    )
    assert lc.gradcheck(lambda x: x[key], [leaf(x_np, device)])


def test_repeated_indices_accumulate(device):
    x = lc.asarray([1.0, 2.0, 3.0], device=device, requires_grad=True)
    y = x[[0, 0, 2, 0]]
    assert y.tolist() == [1.0, 1.0, 3.0, 1.0]
    (y * lc.asarray([1.0, 2.0, 3.0, 4.0], device=device)).sum().backward()
    assert x.grad.tolist() == [7.0, 0.0, 3.0]


def test_multi_axis_integer_arrays(device):
    _f64(device)
    x_np = np.arange(12.0).reshape(3, 4)
    x = leaf(x_np, device)
    rows, cols = [0, 2, 2], [1, 3, 3]
    y = x[lc.asarray(rows, device=device), lc.asarray(cols, device=device)]
    np.testing.assert_array_equal(to_numpy(y), x_np[rows, cols])
    y.sum().backward()
    expected = np.zeros((3, 4))
    np.add.at(expected, (rows, cols), 1.0)
    np.testing.assert_array_equal(to_numpy(x.grad), expected)
    # an int array mixed with a slice and a 2-D index array
    idx2 = lc.asarray([[0, 1], [1, 0]], device=device)
    np.testing.assert_array_equal(to_numpy(x[1:, idx2]), x_np[1:, np.array([[0, 1], [1, 0]])])
    assert lc.gradcheck(lambda x: x[1:, idx2], [leaf(x_np, device)])


@fixture_ok
@given(data=st.data())
def test_boolean_mask_indexing(device, data):
    _f64(device)
    _masks_ok(device)
    shape = data.draw(shapes(min_dims=1))
    x_np = data.draw(arrays(shape))
    full = data.draw(st.booleans())
    mask_np = data.draw(arrays(shape if full else shape[:1])) > 0
    mask = lc.asarray(mask_np, device=device)
    x = leaf(x_np, device)
    y = x[mask]
    np.testing.assert_array_equal(to_numpy(y), x_np[mask_np])
    y.sum().backward()
    np.testing.assert_array_equal(
        to_numpy(x.grad),
        np.broadcast_to(mask_np.reshape(mask_np.shape + (1,) * (len(shape) - mask_np.ndim)), shape).astype(float),
    )
    assert lc.gradcheck(lambda x: x[mask], [leaf(x_np, device)])


def test_boolean_mask_from_comparison_and_list(device):
    _masks_ok(device)
    x = lc.asarray([3.0, -1.0, 2.0, -5.0], device=device)
    assert x[x > 0].tolist() == [3.0, 2.0]
    assert x[[True, False, False, True]].tolist() == [3.0, -5.0]


def test_scalar_tensor_index(device):
    x = lc.asarray([10, 20, 30], device=device)
    assert x[lc.asarray(1, device=device)].item() == 20
    assert x[np.int64(2)].item() == 30


def test_index_out_of_range_raises_index_error(device):
    x = lc.ones(2, 3, device=device)
    with pytest.raises(IndexError, match="index 2 is out of bounds for axis 0 with size 2"):
        x[2]
    with pytest.raises(IndexError, match="index -4 is out of bounds for axis 1 with size 3"):
        x[0, -4]
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 1 with size 3"):
        x[..., 3]
    with pytest.raises(IndexError, match=r"too many indices \(3\) for a tensor of dimension 2"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 2"):
        x[[0, 5]]
    with pytest.raises(IndexError, match="index -4 is out of bounds for axis 1 with size 3"):
        x[:, [0, -4]]
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 1 with size 3"):
        x[[0, 1], [[1], [3]]]
    with pytest.raises(IndexError, match="a Python bool is not a valid index; use a bool tensor"):
        x[True]
    with pytest.raises(IndexError, match="tensors used as indices must be integer or bool, got float32"):
        x[lc.asarray([0.0], device=device)]
    with pytest.raises(IndexError, match="unsupported index of type str"):
        x["a"]


def test_tensor_index_out_of_range_raises_on_every_backend(device):
    # tensor indices are checked by the backend (MLX at the cost of one sync: it would read past the array)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 2"):
        lc.ones(2, device=device)[lc.asarray([0, 5], device=device)]


def test_iteration_and_len(device):
    x = lc.asarray([[1, 2], [3, 4]], device=device)
    assert len(x) == 2
    assert [r.tolist() for r in x] == [[1, 2], [3, 4]]


@fixture_ok
@given(data=st.data())
def test_take(device, data):
    _f64(device)
    shape = data.draw(shapes(min_dims=1))
    x_np = data.draw(arrays(shape))
    nd = len(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-nd, nd - 1)))
    n = x_np.size if axis is None else shape[axis]
    idx = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=5))
    x = leaf(x_np, device)
    y = lc.take(x, lc.asarray(idx, device=device), axis=axis)
    np.testing.assert_array_equal(to_numpy(y), np.take(x_np, idx, axis=axis))
    assert lc.gradcheck(lambda x: lc.take(x, idx, axis=axis), [x])


@fixture_ok
@given(data=st.data())
def test_take_along_axis(device, data):
    _f64(device)
    shape = data.draw(shapes(min_dims=1))
    x_np = data.draw(arrays(shape))
    nd = len(shape)
    axis = data.draw(st.integers(-nd, nd - 1))
    k = data.draw(st.integers(1, 4))
    ishape = list(shape)
    ishape[axis] = k
    idx_np = np.asarray(data.draw(arrays(tuple(ishape), 0, shape[axis] - 1))).round().astype(np.int64)
    x = leaf(x_np, device)
    idx = lc.asarray(idx_np, device=device)
    y = lc.take_along_axis(x, idx, axis=axis)
    np.testing.assert_array_equal(to_numpy(y), np.take_along_axis(x_np, idx_np, axis=axis))
    assert lc.gradcheck(lambda x: lc.take_along_axis(x, idx, axis=axis), [x])


def test_take_along_axis_rank_mismatch(device):
    with pytest.raises(ValueError, match="take_along_axis: indices have 1 dimensions but x has 2"):
        lc.take_along_axis(lc.ones(2, 3, device=device), lc.asarray([0], device=device), axis=1)


# -- setitem --------------------------------------------------------------------------------------


def test_setitem_outside_the_graph(device):
    x_np = np.zeros((3, 4), dtype=np.float32)
    x = lc.asarray(x_np.copy(), device=device)
    x[0] = 1.0
    x_np[0] = 1.0
    x[1, ::-2] = lc.asarray([5.0, 6.0], device=device)
    x_np[1, ::-2] = [5.0, 6.0]
    x[..., 0] = lc.asarray([7, 8, 9], device=device)  # cast to the tensor's dtype
    x_np[..., 0] = [7, 8, 9]
    x[lc.asarray([2, 2], device=device), lc.asarray([1, 2], device=device)] = -1.0
    x_np[[2, 2], [1, 2]] = -1.0
    np.testing.assert_array_equal(to_numpy(x), x_np)
    assert x.dtype is lc.float32


def test_setitem_with_mask(device):
    _masks_ok(device)
    x = lc.asarray([1.0, -2.0, 3.0], device=device)
    x[x < 0] = 0.0
    assert x.tolist() == [1.0, 0.0, 3.0]


def test_setitem_on_a_leaf_that_requires_grad_raises(device):
    x = lc.ones(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="setitem: a leaf tensor that requires grad cannot be modified in place"):
        x[0] = 2.0
    with lc.no_grad():
        x[0] = 5.0
    assert x.tolist() == [5.0, 1.0, 1.0]


def test_setitem_out_of_range(device):
    x = lc.zeros(3, device=device)
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        x[3] = 1.0


def test_setitem_value_on_another_device_raises(device):
    others = [b.name for b in lc.backends() if b.status == "ok" and b.name != device.backend.name]
    if not others:
        pytest.skip("needs a second backend")
    x = lc.zeros(2, device=device)
    v = lc.ones(2, device=lc.get_backend(others[0]).default_device)
    with pytest.raises(RuntimeError, match=f"setitem: value is on {v.device} but the tensor is on {x.device}"):
        x[:] = v
