"""Products: matmul (1-D and batched broadcasting), tensordot, vecdot, einsum, outer."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import arrays, fixture_ok, leaf, to_numpy

import lucid_core as lc


def _f64(device):
    if not device.backend.capabilities.get("float64", True):
        pytest.skip(f"{device} has no float64 for finite-difference checks")


@st.composite
def matmul_shapes(draw):
    """Shapes of two operands that matmul accepts: 1-D vectors, matrices, broadcast batches."""
    n, k, m = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    kind = draw(st.sampled_from(["vv", "vm", "mv", "mm", "batched"]))
    if kind == "vv":
        return (k,), (k,)
    if kind == "vm":
        return (k,), draw(st.sampled_from([(k, m), (2, k, m)]))
    if kind == "mv":
        return draw(st.sampled_from([(n, k), (2, n, k)])), (k,)
    if kind == "mm":
        return (n, k), (k, m)
    b1 = draw(st.sampled_from([(), (1,), (2,), (3, 1)]))
    b2 = draw(st.sampled_from([(), (1,), (2,), (1, 2)]))
    if b1 and b2 and b1[-1] != b2[-1] and 1 not in (b1[-1], b2[-1]):
        b2 = (*b2[:-1], 1)
    return (*b1, n, k), (*b2, k, m)


@fixture_ok
@given(data=st.data())
def test_matmul_matches_numpy_and_finite_differences(device, data):
    _f64(device)
    sa, sb = data.draw(matmul_shapes())
    a_np, b_np = data.draw(arrays(sa)), data.draw(arrays(sb))
    a, b = leaf(a_np, device), leaf(b_np, device)
    y = a @ b
    expected = np.matmul(a_np, b_np)
    assert y.shape == expected.shape
    np.testing.assert_allclose(to_numpy(y), expected, rtol=1e-12, atol=1e-12)
    assert lc.gradcheck(lc.matmul, [a, b])
    assert lc.gradgradcheck(lc.matmul, [a, b])


def test_matmul_float32(device):
    a_np = np.arange(6, dtype=np.float32).reshape(2, 3)
    b_np = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = lc.matmul(lc.asarray(a_np, device=device), lc.asarray(b_np, device=device))
    assert y.dtype is lc.float32
    np.testing.assert_allclose(to_numpy(y), a_np @ b_np)
    assert (lc.asarray(a_np, device=device) @ b_np).shape == (2, 4)  # a native array on the right
    assert (a_np @ lc.asarray(b_np, device=device)).shape == (2, 4)  # ... and on the left


@fixture_ok
@given(a_np=arrays((2, 3)), b_np=arrays((3, 4)), w_np=arrays((2, 3)))
def test_matmul_second_derivative_matches_closed_form(device, a_np, b_np, w_np):
    _f64(device)
    a, b = leaf(a_np, device), leaf(b_np, device)
    # gA = ones @ B^T; d/dB sum(gA * W) = W^T @ ones: every column j gets sum_i W[i, k]
    (ga,) = lc.grad(lc.sum(a @ b), a, create_graph=True)
    np.testing.assert_allclose(to_numpy(ga), np.ones((2, 4)) @ b_np.T, rtol=1e-12)
    (gb,) = lc.grad(lc.sum(ga * leaf(w_np, device, requires_grad=False)), b)
    np.testing.assert_allclose(to_numpy(gb), np.broadcast_to(w_np.sum(0)[:, None], (3, 4)), rtol=1e-12, atol=1e-12)


def test_matmul_shape_errors(device):
    a = lc.ones(3, 4, device=device)
    b = lc.ones(5, 2, device=device)
    with pytest.raises(ValueError, match=r"^matmul: shapes \(3, 4\) and \(5, 2\) do not align \(4 != 5\)$"):
        lc.matmul(a, b)
    with pytest.raises(ValueError, match=r"matmul: shapes \(3, 4\) and \(5, 2\) do not align \(4 != 5\)"):
        a @ b
    with pytest.raises(ValueError, match=r"matmul: shapes \(3,\) and \(5, 2\) do not align \(3 != 5\)"):
        lc.ones(3, device=device) @ b
    with pytest.raises(
        ValueError, match=r"matmul: operands must have at least 1 dimension, got shapes \(\) and \(3,\)"
    ):
        lc.matmul(lc.asarray(1.0, device=device), lc.ones(3, device=device))
    with pytest.raises(TypeError, match="matmul: operands must be tensors, not Python scalars"):
        lc.matmul(a, 2.0)
    with pytest.raises(ValueError):
        lc.ones(2, 3, 4, device=device) @ lc.ones(3, 4, 5, device=device)  # batch 2 vs 3


def test_matmul_promotes_int_and_float(device):
    a = lc.asarray([[1, 2]], device=device)
    b = lc.asarray([[0.5], [0.25]], device=device)
    y = a @ b
    assert y.dtype is lc.float32
    assert y.tolist() == [[1.0]]


@fixture_ok
@given(data=st.data())
def test_tensordot(device, data):
    _f64(device)
    sa = tuple(data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
    n = data.draw(st.integers(0, len(sa)))
    sb = sa[len(sa) - n :] + tuple(data.draw(st.lists(st.integers(1, 3), max_size=2)))
    a_np, b_np = data.draw(arrays(sa)), data.draw(arrays(sb))
    a, b = leaf(a_np, device), leaf(b_np, device)
    y = lc.tensordot(a, b, axes=n)
    np.testing.assert_allclose(to_numpy(y), np.tensordot(a_np, b_np, axes=n), rtol=1e-12, atol=1e-12)
    assert lc.gradcheck(lambda a, b: lc.tensordot(a, b, axes=n), [a, b])


def test_tensordot_explicit_axes(device):
    a_np = np.arange(24.0).reshape(2, 3, 4)
    b_np = np.arange(12.0).reshape(4, 3)
    y = lc.tensordot(lc.asarray(a_np, device=device), lc.asarray(b_np, device=device), axes=([1, 2], [1, 0]))
    np.testing.assert_allclose(to_numpy(y), np.tensordot(a_np, b_np, axes=([1, 2], [1, 0])))
    with pytest.raises(ValueError, match="tensordot: axis 2 of x1 has size 4 but axis 0 of x2 has 3"):
        lc.tensordot(lc.asarray(a_np, device=device), lc.asarray(b_np.T, device=device), axes=([2], [0]))
    with pytest.raises(ValueError, match="tensordot: axes=4 is out of range for 3-D and 2-D operands"):
        lc.tensordot(lc.asarray(a_np, device=device), lc.asarray(b_np, device=device), axes=4)
    with pytest.raises(ValueError, match="tensordot: 2 axes for x1 but 1 for x2"):
        lc.tensordot(lc.asarray(a_np, device=device), lc.asarray(b_np, device=device), axes=([1, 2], [0]))


@fixture_ok
@given(data=st.data())
def test_vecdot_and_outer(device, data):
    _f64(device)
    k = data.draw(st.integers(1, 4))
    batch = data.draw(st.sampled_from([(), (2,), (3, 1)]))
    a_np, b_np = data.draw(arrays((*batch, k))), data.draw(arrays((k,)))
    a, b = leaf(a_np, device), leaf(b_np, device)
    np.testing.assert_allclose(to_numpy(lc.vecdot(a, b)), np.sum(a_np * b_np, axis=-1), rtol=1e-12)
    assert lc.gradcheck(lc.vecdot, [a, b])
    c = leaf(data.draw(arrays((data.draw(st.integers(1, 4)),))), device)
    np.testing.assert_allclose(to_numpy(lc.outer(b, c)), np.outer(b_np, to_numpy(c)), rtol=1e-12)
    assert lc.gradcheck(lc.outer, [b, c])


def test_vecdot_size_mismatch(device):
    with pytest.raises(ValueError, match="vecdot: axis -1 has size 3 in x1 but 4 in x2"):
        lc.vecdot(lc.ones(3, device=device), lc.ones(4, device=device))


EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 2)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("i,i->", [(3,), (3,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("ij->ji", [(2, 3)]),
    ("ij->j", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (3, 2)]),
    ("bi,bi->b", [(3, 2), (3, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
    ("ijk->ki", [(2, 3, 2)]),
]


@pytest.mark.parametrize(("spec", "shapes_"), EINSUMS, ids=[e[0] for e in EINSUMS])
def test_einsum(device, spec, shapes_):
    _f64(device)
    rng = np.random.default_rng(0)
    ops_np = [rng.standard_normal(s) for s in shapes_]
    ops = [leaf(o, device) for o in ops_np]
    y = lc.einsum(spec, *ops)
    np.testing.assert_allclose(to_numpy(y), np.einsum(spec, *ops_np), rtol=1e-12, atol=1e-12)
    assert lc.gradcheck(lambda *xs: lc.einsum(spec, *xs), ops)
    assert lc.gradgradcheck(lambda *xs: lc.einsum(spec, *xs), ops)


def test_einsum_errors(device):
    a = lc.ones(2, 3, device=device)
    with pytest.raises(ValueError, match="einsum: 2 operand subscripts but 1 operands"):
        lc.einsum("ij,jk->ik", a)
    with pytest.raises(ValueError, match=r"einsum: subscripts 'ijk' name 3 axes but the operand has shape \(2, 3\)"):
        lc.einsum("ijk->i", a)
    with pytest.raises(TypeError, match="einsum: operand 0 is a list, expected a Tensor"):
        lc.einsum("i->i", [1.0])
    with pytest.raises(ValueError, match="einsum: needs at least one operand"):
        lc.einsum("i->i")
