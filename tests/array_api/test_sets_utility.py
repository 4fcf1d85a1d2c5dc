"""The standard's set functions, diff, nextafter, real/imag: values against NumPy and gradients."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lucid_core as lc
from lucid_core.ops.complex import imag, real
from lucid_core.ops.sets import isin, unique_all, unique_counts, unique_inverse, unique_values
from lucid_core.ops.utility import diff, nextafter


@given(values=st.lists(st.integers(-3, 3), min_size=1, max_size=8))
def test_unique_functions_match_numpy(device, values):
    x = lc.asarray(values, device=device)
    ref = np.unique(np.asarray(values), return_index=True, return_inverse=True, return_counts=True)
    r = unique_all(x)
    assert r.values.tolist() == ref[0].tolist()
    assert r.indices.tolist() == ref[1].tolist()
    assert r.inverse_indices.tolist() == ref[2].tolist()
    assert r.counts.tolist() == ref[3].tolist()
    assert unique_values(x).tolist() == ref[0].tolist()
    assert unique_counts(x).counts.tolist() == ref[3].tolist()
    assert (unique_inverse(x).values[unique_inverse(x).inverse_indices]).tolist() == values


def test_isin(device):
    x = lc.asarray([[1, 5], [3, 2]], device=device)
    assert isin(x, lc.asarray([2, 3], device=device)).tolist() == [[False, False], [True, True]]
    assert isin(x, 5, invert=True).tolist() == [[True, False], [True, True]]


@given(n=st.integers(0, 3), axis=st.sampled_from([0, 1, -1]))
def test_diff_matches_numpy_and_is_differentiable(device, n, axis):
    a = np.arange(12.0).reshape(3, 4) ** 2
    x = lc.asarray(a, device=device)
    np.testing.assert_allclose(diff(x, n=n, axis=axis).numpy(), np.diff(a, n=n, axis=axis))
    pre = lc.asarray(np.zeros((3, 4))[:1] if axis == 0 else np.zeros((3, 1)), device=device)
    np.testing.assert_allclose(diff(x, axis=axis, prepend=pre).numpy(), np.diff(a, axis=axis, prepend=pre.numpy()))
    if lc.float64 in device.backend.dtypes:
        leaf = lc.asarray(a, dtype=lc.float64, device=device).requires_grad_()
        assert lc.gradcheck(lambda v: diff(v, n=2, axis=axis), [leaf])


def test_diff_of_bools_is_not_equal(device):
    assert diff(lc.asarray([True, True, False], device=device)).tolist() == [False, True]


def test_nextafter(device):
    x = lc.asarray([1.0, 0.0], device=device)
    if getattr(device.xp, "nextafter", None) is None:
        with pytest.raises(NotImplementedError, match=device.backend.name):
            nextafter(x, 2.0)
        return
    np.testing.assert_array_equal(nextafter(x, 2.0).numpy(), np.nextafter(np.float32([1.0, 0.0]), np.float32(2.0)))
    with pytest.raises(TypeError, match="same dtype"):
        nextafter(x, lc.asarray([1.0, 2.0], dtype=lc.float64, device=device))


def test_real_imag_values_and_gradients(device):
    z = lc.asarray([1 + 2j, -3 - 0.5j], device=device)
    assert real(z).tolist() == [1.0, -3.0] and real(z).dtype is lc.float32
    assert imag(z).tolist() == [2.0, -0.5]
    x = lc.asarray([1.0], device=device)
    assert real(x) is x and imag(x).tolist() == [0.0]
    z.requires_grad_()
    (g,) = lc.grad(lc.sum(real(z) * 2 + imag(z) * 3), [z])
    np.testing.assert_allclose(g.numpy(), [2 + 3j, 2 + 3j])  # dL/dRe + i dL/dIm, as in PyTorch
