"""asarray raises TypeError at once for data with no Lucid dtype (issue 13), on every backend."""

from __future__ import annotations

import fractions

import numpy as np
import pytest

import lucid_core as lc


@pytest.mark.parametrize(
    ("data", "found"),
    [
        (object(), "object"),
        (None, "NoneType"),
        ([None], "NoneType inside a list"),
        ([1.0, None], "NoneType inside a list"),
        ("abc", "str"),
        (["a", "b"], "str inside a list"),
        ([[1, 2], [3, "x"]], "str inside a list"),
        ((1, b"x"), "bytes inside a tuple"),
        (b"xy", "bytes"),
        ({"a": 1}, "dict"),
        ({1, 2}, "set"),
        (frozenset({1}), "frozenset"),
        ([object()], "object inside a list"),
    ],
)
def test_asarray_rejects_python_data_without_a_dtype(device, data, found):
    with pytest.raises(TypeError, match=f"asarray: got {found}, which holds no number.*expected a Tensor"):
        lc.asarray(data, device=device)


def test_asarray_rejects_even_with_a_dtype(device):
    with pytest.raises(TypeError, match="asarray: got NoneType inside a list"):
        lc.asarray([None, 1.0], dtype=lc.float32, device=device)


@pytest.mark.parametrize(
    ("data", "native"),
    [
        (np.array(["a", "b"]), "<U1"),
        (np.array([None, 1]), "O"),
        (np.datetime64("2020-01-01"), "<M8"),
        (fractions.Fraction(1, 2), "O"),
    ],
)
def test_asarray_rejects_arrays_of_dtypes_lucid_lacks(data, native):
    # NumPy arrays are native to the numpy backend: the check is on the array's dtype
    with pytest.raises(TypeError, match=f"asarray: got {type(data).__name__} whose data has dtype dtype\\('{native}"):
        lc.asarray(data, device="numpy")


def test_tensor_rejects_like_asarray(device):
    with pytest.raises(TypeError, match="asarray: got str"):
        lc.tensor("1.0", device=device)


def test_asarray_still_takes_numbers_and_number_like_objects(device):
    assert lc.asarray([[True, False]], device=device).dtype is lc.bool
    assert lc.asarray([1, 2.5j], device=device).dtype is lc.complex64
    assert lc.asarray([], device=device).dtype is lc.float32


def test_asarray_takes_numpy_scalars_in_lists():
    assert lc.asarray([np.float32(1.5), 2], device="numpy").tolist() == [1.5, 2.0]
    assert lc.asarray(range(3), device="numpy").tolist() == [0, 1, 2]
