"""Creation: asarray (lists, scalars, NumPy arrays, tensors; copy semantics), tensor, filled tensors,
*_like, arange, linspace, eye, tril/triu (with gradients), from_dlpack, meshgrid."""

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


def test_asarray_from_python_data(device):
    x = lc.asarray([[1.0, 2.0], [3.0, 4.0]], device=device)
    assert x.shape == (2, 2) and x.dtype is lc.float32 and x.device == device
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    s = lc.asarray(3.5, device=device)
    assert s.shape == () and s.item() == 3.5
    assert lc.asarray([], device=device).shape == (0,)
    assert lc.asarray([], device=device).dtype is lc.float32
    assert lc.asarray([1, 2], dtype=lc.float32, device=device).dtype is lc.float32
    assert lc.asarray([1, 2], dtype="int32", device=device).dtype is lc.int32
    nested = lc.asarray([lc.asarray([1.0, 2.0], device=device), lc.asarray([3.0, 4.0], device=device)], device=device)
    assert nested.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_asarray_from_numpy_keeps_dtype(device):
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    x = lc.asarray(a, device=device)
    assert x.dtype is lc.int32
    np.testing.assert_array_equal(to_numpy(x), a)
    f = lc.asarray(np.ones(2, dtype=np.float16), device=device)
    assert f.dtype is lc.float16
    assert lc.asarray(a, dtype=lc.float32, device=device).dtype is lc.float32


def test_asarray_numpy_copy_semantics():
    a = np.arange(4.0)
    shared = lc.asarray(a, device="numpy")
    a[0] = 100.0
    assert shared.tolist()[0] == 100.0  # copy=None shares when it can
    copied = lc.asarray(a, device="numpy", copy=True)
    a[1] = 200.0
    assert copied.tolist()[1] == 1.0
    nocopy = lc.asarray(a, device="numpy", copy=False)
    a[2] = 300.0
    assert nocopy.tolist()[2] == 300.0
    with pytest.raises(ValueError, match="copy=False"):
        lc.asarray(a, dtype=lc.float32, device="numpy", copy=False)


def test_asarray_of_tensor(device):
    x = lc.asarray([1.0, 2.0], device=device, requires_grad=True)
    assert lc.asarray(x) is x
    assert lc.asarray(x, copy=False) is x
    c = lc.asarray(x, copy=True)
    assert c is not x and c.native is not x.native
    assert c.requires_grad  # a copy in the graph (like clone)
    cast = lc.asarray(x, dtype=lc.float16)
    assert cast.dtype is lc.float16
    with pytest.raises(ValueError, match="asarray: copy=False, but casting float32 to float16 needs a copy"):
        lc.asarray(x, dtype=lc.float16, copy=False)


def test_asarray_of_tensor_to_other_device(device):
    others = [b.name for b in lc.backends() if b.status == "ok" and b.name != device.backend.name]
    if not others:
        pytest.skip("needs a second backend")
    x = lc.asarray([1.0, 2.0], device=device)
    other = lc.get_backend(others[0]).default_device
    moved = lc.asarray(x, device=other)
    assert moved.device == other and moved.tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match=f"asarray: copy=False, but moving from {device} to {other} needs a copy"):
        lc.asarray(x, device=other, copy=False)


def test_asarray_bad_input(device):
    with pytest.raises((TypeError, ValueError), match="asarray: cannot make a tensor from"):
        lc.asarray([[1.0, 2.0], [3.0]], device=device)
    with pytest.raises((ValueError, RuntimeError), match="nonexistent"):
        lc.asarray([1.0], device="nonexistent")


def test_tensor_copies_and_detaches(device):
    x = lc.asarray([1.0, 2.0], device=device, requires_grad=True)
    t = lc.tensor(x)
    assert t.native is not x.native
    assert not t.requires_grad and t.is_leaf
    r = lc.tensor([1.0, 2.0], device=device, requires_grad=True)
    assert r.requires_grad and r.is_leaf
    assert lc.Tensor([1, 2], device=device).dtype is lc.int64


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_filled(device, name):
    fn = getattr(lc, name)
    a = fn(2, 3, device=device)
    b = fn((2, 3), device=device)
    c = fn(4, device=device, dtype=lc.int32)
    assert a.shape == b.shape == (2, 3)
    assert a.dtype is lc.float32 and c.dtype is lc.int32 and c.shape == (4,)
    if name != "empty":
        assert a.tolist() == [[float(name == "ones")] * 3] * 2
    assert fn((), device=device).shape == ()
    assert fn(2, device=device, requires_grad=True).requires_grad
    with pytest.raises(ValueError, match=rf"{name}: negative dimension in shape \(2, -1\)"):
        fn(2, -1, device=device)
    with pytest.raises(TypeError, match=f"{name}: shape must be an int or a sequence of ints"):
        fn("ab", device=device)


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_filled_takes_the_standard_shape_keyword(device, name):
    fn = getattr(lc, name)
    assert fn(shape=(2, 3), device=device).shape == (2, 3)
    assert fn(shape=4, dtype=lc.int32, device=device).shape == (4,)
    assert fn(shape=(), device=device).shape == ()
    with pytest.raises(TypeError, match="multiple values for argument 'shape'"):
        fn(2, shape=(3,), device=device)  # shape is the standard's first parameter
    with pytest.raises(ValueError, match=f"{name}: negative dimension"):
        fn(shape=(-1,), device=device)


def test_full(device):
    assert lc.full((2,), 0.5, device=device).dtype is lc.float32
    assert lc.full((2,), 3, device=device).dtype is lc.int64
    assert lc.full((2,), True, device=device).dtype is lc.bool
    assert lc.full(3, 7.0, dtype=lc.int32, device=device).tolist() == [7, 7, 7]
    assert lc.full((2,), lc.asarray(2.5, device=device), device=device).tolist() == [2.5, 2.5]


def test_like_functions(device):
    x = lc.asarray([[1, 2, 3]], dtype=lc.int32, device=device)
    for fn, v in ((lc.zeros_like, 0), (lc.ones_like, 1)):
        y = fn(x)
        assert (y.shape, y.dtype, y.device) == (x.shape, lc.int32, x.device)
        assert y.tolist() == [[v] * 3]
    assert lc.empty_like(x).shape == (1, 3)
    assert lc.full_like(x, 9).tolist() == [[9, 9, 9]]
    assert lc.zeros_like(x, dtype=lc.float32).dtype is lc.float32
    assert lc.full_like(x, 2.5, dtype=lc.float32).tolist() == [[2.5] * 3]
    with pytest.raises(TypeError, match="zeros_like: expected a Tensor, got list"):
        lc.zeros_like([1, 2])


@pytest.mark.parametrize(
    "args", [(5,), (2, 7), (1, 10, 3), (5, 0, -1), (0.0, 1.0, 0.25), (1, 2.5, 0.5), (3, 3), (-2.0, 2.0, 0.5)]
)
def test_arange(device, args):
    y = lc.arange(*args, device=device)
    expected = np.arange(*args)
    assert y.dtype is (lc.int64 if all(isinstance(a, int) for a in args) else lc.float32)
    np.testing.assert_allclose(to_numpy(y), expected, rtol=1e-6)


def test_arange_errors_and_dtype(device):
    with pytest.raises(ValueError, match="arange: step must not be zero"):
        lc.arange(0, 5, 0, device=device)
    assert lc.arange(3, dtype=lc.float32, device=device).tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize(
    ("start", "stop", "num", "endpoint"), [(0, 1, 5, True), (-1, 1, 4, False), (2, 2, 1, True), (0, 1, 0, True)]
)
def test_linspace(device, start, stop, num, endpoint):
    y = lc.linspace(start, stop, num, device=device, endpoint=endpoint)
    assert y.dtype is lc.float32
    np.testing.assert_allclose(to_numpy(y), np.linspace(start, stop, num, endpoint=endpoint), rtol=1e-6)


def test_linspace_negative_num(device):
    with pytest.raises(ValueError, match="linspace: num must be non-negative, got -1"):
        lc.linspace(0, 1, -1, device=device)


@pytest.mark.parametrize(("n", "m", "k"), [(3, None, 0), (2, 4, 1), (4, 2, -1), (3, 3, 5)])
def test_eye(device, n, m, k):
    y = lc.eye(n, m, k=k, device=device)
    assert y.dtype is lc.float32
    np.testing.assert_array_equal(to_numpy(y), np.eye(n, m, k=k))


@pytest.mark.parametrize("name", ["tril", "triu"])
@fixture_ok
@given(data=st.data())
def test_tril_triu(device, name, data):
    _f64(device)
    shape = data.draw(shapes(min_dims=2))
    k = data.draw(st.integers(-3, 3))
    x_np = data.draw(arrays(shape))
    x = leaf(x_np, device)
    op, ref = getattr(lc, name), getattr(np, name)
    np.testing.assert_array_equal(to_numpy(op(x, k=k)), ref(x_np, k=k))
    assert lc.gradcheck(lambda x: op(x, k=k), [x])
    assert lc.gradgradcheck(lambda x: op(x * x, k=k), [x])


def test_tril_needs_2d(device):
    with pytest.raises(ValueError, match=r"tril: needs at least 2 dimensions, got shape \(3,\)"):
        lc.tril(lc.ones(3, device=device))
    with pytest.raises(ValueError, match=r"triu: needs at least 2 dimensions, got shape \(\)"):
        lc.triu(lc.asarray(1.0, device=device))


def test_from_dlpack(device):
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    x = lc.from_dlpack(a, device=device)
    assert x.shape == (2, 3) and x.dtype is lc.float32 and x.device == device
    np.testing.assert_array_equal(to_numpy(x), a)
    y = lc.from_dlpack(x)
    assert y.tolist() == x.tolist()
    with pytest.raises(TypeError, match="from_dlpack: list does not implement __dlpack__"):
        lc.from_dlpack([1, 2])


def test_from_dlpack_shares_memory_on_numpy():
    a = np.zeros(3, dtype=np.float32)
    x = lc.from_dlpack(a, device="numpy")
    a[0] = 5.0
    assert x.tolist()[0] == 5.0
    back = np.from_dlpack(x)
    assert back[0] == 5.0


@pytest.mark.parametrize("indexing", ["xy", "ij"])
def test_meshgrid(device, indexing):
    a_np, b_np, c_np = np.arange(3.0), np.arange(2.0), np.arange(4.0)
    grids = lc.meshgrid(*(lc.asarray(v, device=device) for v in (a_np, b_np, c_np)), indexing=indexing)
    for g, ref in zip(grids, np.meshgrid(a_np, b_np, c_np, indexing=indexing)):
        np.testing.assert_array_equal(to_numpy(g), ref)
    with pytest.raises(ValueError, match="meshgrid: indexing must be 'xy' or 'ij', got 'yx'"):
        lc.meshgrid(lc.ones(2, device=device), indexing="yx")
