"""Regressions for what the public Array API suite (data-apis/array-api-tests, 2025.12) found (issue 13)."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import lucid_core as lc

inf, nan = math.inf, math.nan


def _same(got: list, want: list) -> None:
    """Element-wise equal, NaN equal to NaN, and zeros equal only with the same sign."""
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        for a, b in ((g.real, w.real), (g.imag, w.imag)) if isinstance(w, complex) else ((g, w),):
            assert (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b)), (g, w)


@pytest.mark.parametrize(("cplx", "real"), [(lc.complex64, lc.float32), (lc.complex128, lc.float64)])
def test_finfo_of_complex_describes_its_real_dtype(cplx, real):
    fi = lc.finfo(cplx)
    assert fi.dtype is real
    assert fi.bits == lc.finfo(real).bits and fi.eps == lc.finfo(real).eps


def test_info_lists_only_the_standards_dtypes(device):
    info = lc.__array_namespace_info__()
    names = info.dtypes(device=device)
    assert "float16" not in names  # an extension, not a dtype of the standard
    assert "float16" not in info.dtypes(device=device, kind="real floating")
    assert {"bool", "int8", "float32", "complex64"} <= set(names)
    assert lc.zeros(1, dtype=lc.float16, device=device).dtype is lc.float16  # still usable


def test_info_devices_is_a_tuple_holding_the_default():
    info = lc.__array_namespace_info__()
    assert isinstance(info.devices(), tuple)
    assert info.default_device() in info.devices()


@pytest.mark.parametrize("dtype", [lc.bool, lc.int8, lc.uint8, lc.int16, lc.float32])
def test_diagonal_keeps_the_dtype(device, dtype):
    x = lc.asarray([[1, 0, 1], [0, 1, 1]], dtype=dtype, device=device)
    for offset, want in ((0, [1, 1]), (1, [0, 1]), (-1, [0]), (5, [])):
        d = lc.linalg.diagonal(x, offset=offset)
        assert d.dtype is dtype
        assert [int(v) for v in d.tolist()] == want


@pytest.mark.parametrize("dtype", [lc.int8, lc.uint8, lc.int16, lc.uint16, lc.int32])
def test_vecdot_keeps_a_small_integer_dtype(device, dtype):
    a = lc.asarray([[1, 2, 3], [4, 5, 6]], dtype=dtype, device=device)
    for out in (lc.vecdot(a, a), lc.linalg.vecdot(a, a)):
        assert out.dtype is dtype
        assert out.tolist() == [14, 77]


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_filled_creation_takes_shape_by_the_standards_name(device, name):
    fn = getattr(lc, name)
    first = next(iter(inspect.signature(fn).parameters.values()))
    assert first.name == "shape" and first.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert fn(shape=(2, 3), device=device).shape == (2, 3)
    assert fn((2, 3), device=device).shape == (2, 3)
    assert fn(2, 3, device=device).shape == (2, 3)  # PyTorch's spelling still works
    assert fn(4, device=device).shape == (4,)
    with pytest.raises(TypeError, match=f"{name}: give the shape as one tuple or as ints"):
        fn((2, 3), 4, device=device)


def test_dlpack_takes_the_standards_keywords(device):
    params = inspect.signature(lc.Tensor.__dlpack__).parameters
    assert [p for p in ("stream", "max_version", "dl_device", "copy") if p not in params] == []
    x = lc.asarray([1.0, 2.0], device=device)
    x.__dlpack__(stream=None)
    np.testing.assert_array_equal(np.from_dlpack(x), [1.0, 2.0])


def test_floor_divide_with_infinities_follows_the_standard(device):
    a = lc.asarray([inf, inf, -inf, -inf, 1.0, -1.0, 1.0, -1.0, 7.0, -7.0, inf, nan], device=device)
    b = lc.asarray([2.0, -2.0, 2.0, -2.0, -inf, inf, inf, -inf, 2.0, 2.0, 0.0, 1.0], device=device)
    want = [inf, -inf, -inf, inf, -0.0, -0.0, 0.0, 0.0, 3.0, -4.0, inf, nan]
    _same(lc.floor_divide(a, b).tolist(), want)
    _same((a // b).tolist(), want)
    c = a * 1
    c //= b
    _same(c.tolist(), want)
    assert (lc.asarray([7, -7], device=device) // 2).tolist() == [3, -4]


def test_complex_expm1_special_cases():
    # MLX has no complex expm1; NumPy's C99 kernel gives NaN for several of these. On the real axis the result
    # is NumPy's real expm1 (its AVX-512 loop is 1 ulp from math.expm1 at 1.0 on some machines)
    z = lc.asarray(
        [0j, complex(-0.0, 0.0), complex(inf, 0), complex(-inf, inf), complex(inf, inf), complex(-inf, nan),
         complex(inf, nan), complex(nan, 0), complex(1, -0.0), complex(0.5, 1)],
        dtype=lc.complex128, device="numpy",
    )  # fmt: skip
    want = [0j, 0j, complex(inf, 0), complex(-1, 0), complex(inf, nan), complex(-1, 0), complex(inf, nan),
            complex(nan, 0), complex(np.expm1(1.0), -0.0), np.expm1(complex(0.5, 1))]  # fmt: skip
    got = lc.expm1(z).tolist()
    _same(got[:-1], want[:-1])
    assert abs(got[-1] - want[-1]) < 1e-12


def test_complex_tanh_at_infinite_real_part(device):
    z = lc.asarray([complex(inf, 1.0), complex(inf, -1.0), complex(-inf, 2.0), complex(inf, 0.0)], device=device)
    _same(lc.tanh(z).tolist(), [complex(1, 0.0), complex(1, -0.0), complex(-1, 0.0), complex(1, 0.0)])


def test_meshgrid_and_broadcast_arrays_return_tuples(device):
    a, b = lc.ones(2, device=device), lc.ones(3, device=device)
    grids = lc.meshgrid(a, b)
    assert isinstance(grids, tuple) and [g.shape for g in grids] == [(3, 2), (3, 2)]
    out = lc.broadcast_arrays(a, lc.ones((4, 1), device=device))
    assert isinstance(out, tuple) and [o.shape for o in out] == [(4, 2), (4, 2)]


def test_expand_dims_out_of_range_is_an_index_error_and_repeated_axes_a_value_error(device):
    x = lc.ones((2, 3), device=device)
    for axis in (3, -4):
        with pytest.raises(IndexError, match="expand_dims: axis .* is out of range"):
            lc.expand_dims(x, axis=axis)
    with pytest.raises(ValueError, match="more than once"):
        lc.expand_dims(x, axis=(0, -4))
    assert lc.expand_dims(x, axis=(0, -1)).shape == (1, 2, 3, 1)


def test_repeat_broadcasts_one_count(device):
    assert lc.repeat(lc.ones(0, device=device), lc.asarray([2], device=device)).shape == (0,)
    assert lc.repeat(lc.asarray([1, 2], device=device), [2]).tolist() == [1, 1, 2, 2]


def test_isin_takes_a_scalar_of_the_tensors_kind(device):
    x = lc.asarray([0, 5], dtype=lc.uint32, device=device)
    assert lc.isin(x, 0).tolist() == [True, False]
    assert lc.isin(5, x).tolist() is True
