"""Shape and layout ops: values against NumPy, gradients in float64, and their error messages."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import arrays, broadcast_pairs, fixture_ok, leaf, shapes, to_numpy

import lucid_core as lc


def _f64(device):
    if not device.backend.capabilities.get("float64", True):
        pytest.skip(f"{device} has no float64 for finite-difference checks")


def _check(device, fn, ref, x_np, *, grad=True):
    """fn(x) matches ref(x_np) and its gradient matches finite differences."""
    x = leaf(x_np, device)
    y = fn(x)
    expected = ref(x_np)
    assert y.shape == expected.shape
    np.testing.assert_array_equal(to_numpy(y), expected)
    if grad:
        assert lc.gradcheck(fn, [x])
        assert lc.gradgradcheck(lambda x: fn(x * x), [x])


@fixture_ok
@given(data=st.data())
def test_reshape_and_flatten(device, data):
    _f64(device)
    shape = data.draw(shapes())
    x_np = data.draw(arrays(shape))
    n = x_np.size
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    d = data.draw(st.sampled_from(divisors))
    target = data.draw(st.sampled_from([(d, n // d), (-1, d), (n // d, 1, -1), (n,)]))
    _check(device, lambda x: lc.reshape(x, target), lambda a: a.reshape(target), x_np)
    _check(device, lambda x: x.reshape(*target), lambda a: a.reshape(target), x_np, grad=False)
    _check(device, lambda x: lc.flatten(x), lambda a: a.reshape(-1), x_np, grad=False)
    if x_np.ndim >= 2:
        _check(device, lambda x: x.flatten(1), lambda a: a.reshape(a.shape[0], -1), x_np)


def test_reshape_errors(device):
    x = lc.ones(2, 3, device=device)
    with pytest.raises(
        ValueError, match=r"reshape: cannot reshape a tensor of shape \(2, 3\) \(6 elements\) into shape \(4, 2\)"
    ):
        lc.reshape(x, (4, 2))
    with pytest.raises(ValueError, match=r"reshape: cannot reshape .* into shape \(-1, 4\)"):
        x.reshape(-1, 4)
    with pytest.raises(ValueError, match=r"reshape: only one dimension can be -1, got shape \(-1, -1\)"):
        x.reshape(-1, -1)
    with pytest.raises(ValueError, match=r"reshape: invalid dimension -2 in shape \(-2, -3\)"):
        x.reshape(-2, -3)
    with pytest.raises(TypeError, match="reshape: expected a Tensor, got list"):
        lc.reshape([1, 2], (2,))
    with pytest.raises(ValueError, match="flatten: start_axis 1 comes after end_axis 0"):
        x.flatten(1, 0)


@fixture_ok
@given(data=st.data())
def test_permute_swap_move_transpose(device, data):
    _f64(device)
    shape = data.draw(shapes(min_dims=2))
    nd = len(shape)
    x_np = data.draw(arrays(shape))
    perm = tuple(data.draw(st.permutations(range(nd))))
    _check(device, lambda x: lc.permute_dims(x, perm), lambda a: np.transpose(a, perm), x_np)
    a, b = data.draw(st.integers(-nd, nd - 1)), data.draw(st.integers(-nd, nd - 1))
    _check(device, lambda x: lc.swapaxes(x, a, b), lambda v: np.swapaxes(v, a, b), x_np, grad=False)
    _check(device, lambda x: lc.moveaxis(x, a, b), lambda v: np.moveaxis(v, a, b), x_np, grad=False)
    _check(device, lc.matrix_transpose, lambda v: np.swapaxes(v, -1, -2), x_np, grad=False)
    _check(device, lambda x: x.mT, lambda v: np.swapaxes(v, -1, -2), x_np, grad=False)
    _check(device, lambda x: x.permute(*perm), lambda v: np.transpose(v, perm), x_np, grad=False)


def test_moveaxis_several(device):
    x_np = np.arange(24.0).reshape(2, 3, 4)
    x = lc.asarray(x_np, device=device)
    np.testing.assert_array_equal(to_numpy(lc.moveaxis(x, (0, 1), (2, 0))), np.moveaxis(x_np, (0, 1), (2, 0)))
    with pytest.raises(ValueError, match="moveaxis: 2 source axes but 1 destinations"):
        lc.moveaxis(x, (0, 1), (0,))


def test_transpose_errors(device):
    x = lc.ones(2, 3, 4, device=device)
    with pytest.raises(ValueError, match=r"permute_dims: axes \(0, 1, 1\) are not a permutation of the 3 axes"):
        lc.permute_dims(x, (0, 1, 1))
    with pytest.raises(ValueError, match="permute_dims: axis 3 is out of range for a tensor with 3 dimensions"):
        lc.permute_dims(x, (0, 1, 3))
    with pytest.raises(ValueError, match="Tensor.T needs a 2-D tensor, got 3-D"):
        x.T
    with pytest.raises(ValueError, match="matrix_transpose: needs at least 2 dimensions, got 1"):
        lc.matrix_transpose(lc.ones(3, device=device))
    assert lc.ones(2, 3, device=device).T.shape == (3, 2)


@fixture_ok
@given(data=st.data())
def test_expand_dims_and_squeeze(device, data):
    _f64(device)
    shape = data.draw(shapes(max_side=2))
    nd = len(shape)
    x_np = data.draw(arrays(shape))
    ax = data.draw(st.integers(-nd - 1, nd))
    _check(device, lambda x: lc.expand_dims(x, axis=ax), lambda v: np.expand_dims(v, ax), x_np)
    _check(device, lambda x: x.unsqueeze(ax), lambda v: np.expand_dims(v, ax), x_np, grad=False)
    _check(device, lambda x: lc.squeeze(x), np.squeeze, x_np)
    ones = tuple(i for i, s in enumerate(shape) if s == 1)
    if ones:
        _check(device, lambda x: lc.squeeze(x, axis=ones), lambda v: np.squeeze(v, axis=ones), x_np, grad=False)


def test_squeeze_non_unit_axis_raises(device):
    x = lc.ones(1, 3, device=device)
    with pytest.raises(ValueError, match=r"squeeze: axis 1 has size 3, not 1 \(shape \(1, 3\)\)"):
        lc.squeeze(x, axis=1)
    assert lc.squeeze(x, axis=0).shape == (3,)
    with pytest.raises(ValueError, match="expand_dims: axis 3 is out of range for a tensor with 3 dimensions"):
        lc.expand_dims(x, axis=3)


@fixture_ok
@given(data=st.data())
def test_broadcast_to_and_arrays(device, data):
    _f64(device)
    sa, sb = data.draw(broadcast_pairs())
    target = np.broadcast_shapes(sa, sb)
    x_np = data.draw(arrays(sa))
    _check(device, lambda x: lc.broadcast_to(x, target), lambda v: np.broadcast_to(v, target), x_np)
    assert lc.broadcast_shapes(sa, sb) == target
    a, b = leaf(x_np, device), leaf(data.draw(arrays(sb)), device)
    out = lc.broadcast_arrays(a, b)
    assert [o.shape for o in out] == [target, target]
    assert lc.gradcheck(lambda a, b: lc.broadcast_arrays(a, b)[0] * lc.broadcast_arrays(a, b)[1], [a, b])


def test_broadcast_errors(device):
    with pytest.raises(ValueError, match=r"shapes \[\(2, 3\), \(4,\)\] do not broadcast \(axis -1: 3 vs 4\)"):
        lc.broadcast_shapes((2, 3), (4,))
    with pytest.raises(ValueError, match=r"broadcast_to: cannot broadcast shape \(2, 3\) to \(3, 3\)|do not broadcast"):
        lc.broadcast_to(lc.ones(2, 3, device=device), (3, 3))
    with pytest.raises(ValueError, match=r"broadcast_to: cannot broadcast shape \(2, 3\) to \(3,\)|do not broadcast"):
        lc.broadcast_to(lc.ones(2, 3, device=device), (3,))
    assert lc.ones(3, 1, device=device).expand(3, 4).shape == (3, 4)
    assert lc.ones(3, 1, device=device).expand(-1, 4).shape == (3, 4)


@fixture_ok
@given(data=st.data())
def test_concat_stack_split_unstack(device, data):
    _f64(device)
    shape = data.draw(shapes(min_dims=1))
    nd = len(shape)
    ax = data.draw(st.integers(-nd, nd - 1))
    k = data.draw(st.integers(1, 3))
    parts_np = []
    for _ in range(k):
        s = list(shape)
        s[ax] = data.draw(st.integers(1, 3))
        parts_np.append(data.draw(arrays(tuple(s))))
    parts = [leaf(p, device) for p in parts_np]
    y = lc.concat(parts, axis=ax)
    np.testing.assert_array_equal(to_numpy(y), np.concatenate(parts_np, axis=ax))
    assert lc.gradcheck(lambda *ps: lc.concat(list(ps), axis=ax), parts)
    flat = lc.concat(parts, axis=None)
    np.testing.assert_array_equal(to_numpy(flat), np.concatenate([p.reshape(-1) for p in parts_np]))
    # stack of same-shape tensors along a new axis
    same = [leaf(data.draw(arrays(shape)), device) for _ in range(k)]
    sax = data.draw(st.integers(-nd - 1, nd))
    np.testing.assert_array_equal(to_numpy(lc.stack(same, axis=sax)), np.stack([to_numpy(s) for s in same], axis=sax))
    assert lc.gradcheck(lambda *ss: lc.stack(list(ss), axis=sax), same)
    # split back into the pieces, and unstack
    sizes = [p.shape[ax] for p in parts_np]
    pieces = lc.split(y, sizes, axis=ax)
    for piece, p in zip(pieces, parts_np):
        np.testing.assert_array_equal(to_numpy(piece), p)
    assert lc.gradcheck(lambda y: lc.split(y, sizes, axis=ax), [y.detach().requires_grad_()])
    un = lc.unstack(parts[0], axis=ax)
    assert len(un) == parts_np[0].shape[ax]
    for i, u in enumerate(un):
        np.testing.assert_array_equal(to_numpy(u), np.take(parts_np[0], i, axis=ax))
    assert lc.gradcheck(lambda x: lc.unstack(x, axis=ax), [parts[0]])


def test_split_into_sections(device):
    x = lc.arange(6, device=device)
    assert [p.tolist() for p in lc.split(x, 3)] == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(ValueError, match="split: axis 0 of size 6 does not divide into 4 equal sections"):
        lc.split(x, 4)
    with pytest.raises(ValueError, match=r"split: sizes \[2, 3\] sum to 5, but axis 0 has size 6"):
        lc.split(x, [2, 3])


def test_split_is_one_node_whose_gradient_joins_the_pieces_gradients(device):
    """Pieces without a gradient count as zeros; first and second order agree with finite differences;
    the pieces share one graph node (the gradient is one concatenation, not one x-sized array per piece)."""
    _f64(device)
    x = leaf(np.random.default_rng(0).standard_normal((3, 7)), device)
    pieces = x.split([2, 0, 4, 1], dim=1)
    assert [p.shape for p in pieces] == [(3, 2), (3, 0), (3, 4), (3, 1)]
    assert len({id(p._node) for p in pieces}) == 1
    (pieces[2] * pieces[2]).sum().backward()  # pieces 0, 1 and 3 get no gradient
    want = np.zeros((3, 7))
    want[:, 2:6] = 2 * to_numpy(x)[:, 2:6]
    np.testing.assert_allclose(to_numpy(x.grad), want)
    assert lc.gradcheck(lambda t: (t.split(3, dim=1)[1] ** 3).sum(), [x])
    assert lc.gradgradcheck(lambda t: (t.split([1, 6], dim=1)[1] ** 3).sum(), [x])
    (whole,) = x.split(7, dim=1)
    (g,) = lc.grad((whole * 3).sum(), [x])
    np.testing.assert_allclose(to_numpy(g), np.full((3, 7), 3.0))
    with pytest.raises(ValueError, match="split: sizes must not be negative"):
        x.split([8, -1], dim=1)
    with pytest.raises(ValueError, match="split: sizes must not be negative"):
        lc.split(x, [8, -1], axis=1)


def test_concat_and_stack_errors(device):
    a = lc.ones(2, 3, device=device)
    b = lc.ones(2, 4, device=device)
    with pytest.raises(
        ValueError, match=r"concat: tensor 1 has shape \(2, 4\), incompatible with \(2, 3\) along axis 0"
    ):
        lc.concat([a, b], axis=0)
    assert lc.concat([a, b], axis=1).shape == (2, 7)
    with pytest.raises(ValueError, match=r"concat: tensor 1 has shape \(3,\), incompatible with \(2, 3\)"):
        lc.concat([a, lc.ones(3, device=device)])
    with pytest.raises(ValueError, match="concat: cannot concatenate 0-d tensors; use stack"):
        lc.concat([lc.asarray(1.0, device=device), lc.asarray(2.0, device=device)])
    with pytest.raises(ValueError, match="concat: needs at least one tensor"):
        lc.concat([])
    with pytest.raises(TypeError, match="concat: element 1 is a list, expected a Tensor"):
        lc.concat([a, [1.0]])
    with pytest.raises(ValueError, match="concat: axis 2 is out of range for a tensor with 2 dimensions"):
        lc.concat([a, a], axis=2)
    with pytest.raises(
        ValueError, match=r"stack: all tensors must have the same shape; tensor 0 is \(2, 3\), tensor 1 is \(2, 4\)"
    ):
        lc.stack([a, b])
    assert lc.stack([lc.asarray(1.0, device=device), lc.asarray(2.0, device=device)]).tolist() == [1.0, 2.0]


def test_concat_promotes_dtypes(device):
    a = lc.asarray([1, 2], device=device)
    b = lc.asarray([0.5], device=device)
    y = lc.concat([a, b])
    assert y.dtype is lc.float32
    assert y.tolist() == [1.0, 2.0, 0.5]


@fixture_ok
@given(data=st.data())
def test_flip_and_roll(device, data):
    _f64(device)
    shape = data.draw(shapes(min_dims=1))
    nd = len(shape)
    x_np = data.draw(arrays(shape))
    axis = data.draw(
        st.one_of(
            st.none(), st.integers(-nd, nd - 1), st.lists(st.integers(0, nd - 1), unique=True, min_size=1).map(tuple)
        )
    )
    _check(device, lambda x: lc.flip(x, axis=axis), lambda v: np.flip(v, axis=axis), x_np)
    shift = data.draw(st.integers(-5, 5))
    ax = data.draw(st.one_of(st.none(), st.integers(-nd, nd - 1)))
    _check(device, lambda x: lc.roll(x, shift, axis=ax), lambda v: np.roll(v, shift, axis=ax), x_np)
    if nd >= 2:
        shifts, axes = (shift, 1 - shift), (0, 1)
        _check(device, lambda x: lc.roll(x, shifts, axis=axes), lambda v: np.roll(v, shifts, axis=axes), x_np)


@fixture_ok
@given(data=st.data())
def test_repeat_and_tile(device, data):
    _f64(device)
    shape = data.draw(shapes(max_side=3))
    nd = len(shape)
    x_np = data.draw(arrays(shape))
    r = data.draw(st.integers(0, 3))
    ax = data.draw(st.one_of(st.none(), st.integers(-nd, nd - 1))) if nd else None
    _check(device, lambda x: lc.repeat(x, r, axis=ax), lambda v: np.repeat(v, r, axis=ax), x_np)
    if ax is not None:
        counts = data.draw(st.lists(st.integers(0, 3), min_size=shape[ax], max_size=shape[ax]))
        _check(device, lambda x: lc.repeat(x, counts, axis=ax), lambda v: np.repeat(v, counts, axis=ax), x_np)
    reps = tuple(data.draw(st.lists(st.integers(1, 3), max_size=3)))
    _check(device, lambda x: lc.tile(x, reps), lambda v: np.tile(v, reps), x_np)


def test_repeat_count_mismatch_raises(device):
    with pytest.raises(ValueError, match="repeat: 3 repeat counts for an axis of size 2"):
        lc.repeat(lc.ones(2, device=device), [1, 2, 3], axis=0)
    assert lc.repeat(lc.asarray([1, 2], device=device), lc.asarray([2, 1], device=device)).tolist() == [1, 1, 2]


PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "edge", "circular": "wrap"}


@pytest.mark.parametrize("mode", sorted(PAD_MODES))
@fixture_ok
@given(data=st.data())
def test_pad(device, mode, data):
    _f64(device)
    shape = data.draw(shapes(min_dims=1, min_side=2))
    x_np = data.draw(arrays(shape))
    limit = 1 if mode == "reflect" else 2
    pw = [tuple(data.draw(st.integers(0, min(limit, s - (mode == "reflect")))) for _ in range(2)) for s in shape]
    kwargs = {"constant_values": 1.5} if mode == "constant" else {}
    expected = np.pad(x_np, pw, mode=PAD_MODES[mode], **kwargs)
    value = 1.5 if mode == "constant" else 0.0
    _check(device, lambda x: lc.pad(x, pw, mode=mode, value=value), lambda v: expected, x_np)


def test_pad_errors(device):
    x = lc.ones(2, 3, device=device)
    with pytest.raises(ValueError, match="pad: 1 \\(before, after\\) pairs for a 2-D tensor"):
        lc.pad(x, [(1, 1)])
    with pytest.raises(ValueError, match="pad: unknown mode 'mirror'; expected constant, reflect, edge or circular"):
        lc.pad(x, [(1, 1), (1, 1)], mode="mirror")
    with pytest.raises(ValueError, match=r"pad: negative padding \(-1, 0\) on axis 0"):
        lc.pad(x, [(-1, 0), (0, 0)])
    with pytest.raises(ValueError, match=r"pad: reflect padding \(2, 0\) must be smaller than axis 0 size 2"):
        lc.pad(x, [(2, 0), (0, 0)], mode="reflect")
    assert lc.pad(x, (1, 2)).shape == (5, 6)


def test_clone_copies_and_keeps_gradient(device):
    x = lc.asarray([1.0, 2.0], device=device, requires_grad=True)
    y = lc.clone(x)
    assert y.native is not x.native
    (y * 3.0).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_to_device_same_device_is_identity(device):
    x = lc.ones(2, device=device)
    assert lc.to_device(x, device) is x
    assert x.to(str(device)) is x
    with pytest.raises((ValueError, RuntimeError), match="no-such-device"):
        lc.to_device(x, "no-such-device")
