"""dtypes and promotion: the default float is float32, Python scalars are weak, ops follow result_type."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import lucid_core as lc

INTS = [lc.int8, lc.int16, lc.int32, lc.int64, lc.uint8, lc.uint16, lc.uint32]
FLOATS = [lc.float32, lc.float64]
ALL = [lc.bool, *INTS, *FLOATS]


def _supported(device, *dtypes):
    missing = [d.name for d in dtypes if d not in device.backend.dtypes]
    if missing:
        pytest.skip(f"{device} lacks {missing}")


def test_python_floats_give_float32(device):
    assert lc.asarray(1.5, device=device).dtype is lc.float32
    assert lc.asarray([1.0, 2.0], device=device).dtype is lc.float32
    assert lc.asarray([1, 2.5], device=device).dtype is lc.float32
    assert lc.full((2,), 0.5, device=device).dtype is lc.float32
    assert lc.arange(0.0, 1.0, 0.25, device=device).dtype is lc.float32
    assert lc.zeros(2, device=device).dtype is lc.float32
    assert lc.randn(2, device=device).dtype is lc.float32


def test_python_ints_and_bools(device):
    assert lc.asarray(3, device=device).dtype is lc.int64
    assert lc.asarray([1, 2], device=device).dtype is lc.int64
    assert lc.asarray([True, False], device=device).dtype is lc.bool
    assert lc.asarray([[1], [True]], device=device).dtype is lc.int64
    assert lc.asarray(1 + 2j, device=device).dtype is lc.complex64


def test_int_tensor_times_float_scalar_is_float32(device):
    x = lc.asarray([1, 2, 3], device=device)
    y = x * 0.5
    assert y.dtype is lc.float32
    assert y.tolist() == [0.5, 1.0, 1.5]
    assert (0.5 * x).dtype is lc.float32
    assert (x + 1.0).dtype is lc.float32
    assert (x * 2).dtype is lc.int64


def test_int_divided_by_int_is_float32(device):
    a = lc.asarray([1, 3], device=device)
    b = lc.asarray([2, 2], device=device)
    for y in (a / b, a / 2, 3 / b, lc.divide(a, b)):
        assert y.dtype is lc.float32
    assert (a / b).tolist() == [0.5, 1.5]


def test_int_plus_float32_tensor_is_float32(device):
    a = lc.asarray([1, 2], device=device)
    b = lc.asarray([0.5, 0.5], device=device)
    assert (a + b).dtype is lc.float32
    assert (b + a).dtype is lc.float32
    assert (a + b).tolist() == [1.5, 2.5]


def test_float32_plus_float64_is_float64(device):
    _supported(device, lc.float64)
    a = lc.asarray([1.0], dtype=lc.float32, device=device)
    b = lc.asarray([1.0], dtype=lc.float64, device=device)
    assert (a + b).dtype is lc.float64
    assert (b * a).dtype is lc.float64
    assert lc.maximum(a, b).dtype is lc.float64
    assert lc.where(a > 0, a, b).dtype is lc.float64
    assert lc.concat([a, b]).dtype is lc.float64
    assert (a @ b).dtype is lc.float64


def test_float_scalar_keeps_float64(device):
    _supported(device, lc.float64)
    x = lc.asarray([1.0], dtype=lc.float64, device=device)
    assert (x * 0.5).dtype is lc.float64
    assert (x + 1).dtype is lc.float64


def test_bool_promotion(device):
    t = lc.asarray([True, False], device=device)
    assert (t + t).dtype is lc.bool  # logical-or like NumPy
    assert (t + 1).dtype is lc.int64
    assert (t + 1).tolist() == [2, 1]
    assert (t * 1.5).dtype is lc.float32
    assert (t + lc.asarray([1, 1], dtype=lc.int32, device=device)).dtype is lc.int32
    assert (t + lc.asarray([1.0, 1.0], device=device)).dtype is lc.float32
    assert (t & True).dtype is lc.bool
    assert lc.sum(t).dtype is lc.int64
    assert lc.sum(t).item() == 1


@pytest.mark.parametrize(("a", "b"), list(itertools.combinations_with_replacement(ALL, 2)), ids=str)
def test_binary_op_dtype_follows_result_type(device, a, b):
    _supported(device, a, b)
    x = lc.ones(2, dtype=a, device=device)
    y = lc.ones(2, dtype=b, device=device)
    expected = lc.result_type(a, b)
    assert (x + y).dtype is expected
    assert (y * x).dtype is expected
    assert lc.result_type(b, a) is expected


def test_result_type_table():
    assert lc.result_type(lc.int8, lc.uint8) is lc.int16
    assert lc.result_type(lc.int32, lc.uint32) is lc.int64
    assert lc.result_type(lc.int64, lc.float32) is lc.float32
    assert lc.result_type(lc.float32, lc.float64) is lc.float64
    assert lc.result_type(lc.float32, lc.complex64) is lc.complex64
    assert lc.result_type(lc.float64, lc.complex64) is lc.complex128
    assert lc.result_type(lc.bool, lc.uint8) is lc.uint8
    assert lc.result_type(lc.int32, 1.0) is lc.float32
    assert lc.result_type(lc.float16, 1.0) is lc.float16
    assert lc.result_type(lc.uint8, 7) is lc.uint8
    assert lc.result_type(2.0) is lc.float32
    assert lc.result_type(lc.float32, 1j) is lc.complex64


def test_result_type_errors():
    with pytest.raises(TypeError, match="no integer dtype holds both int64 and uint64"):
        lc.result_type(lc.int64, lc.uint64)
    with pytest.raises(ValueError, match="at least one tensor or dtype is required"):
        lc.result_type()
    with pytest.raises(TypeError, match="expected tensors, dtypes or Python scalars, got str"):
        lc.result_type("float32")


def test_can_cast():
    assert lc.can_cast(lc.int8, lc.int32)
    assert lc.can_cast(lc.float32, lc.float64)
    assert lc.can_cast(lc.int32, lc.float32)
    assert not lc.can_cast(lc.float64, lc.float32)
    assert not lc.can_cast(lc.float32, lc.int64)
    assert not lc.can_cast(lc.int64, lc.uint64)


def test_finfo_and_iinfo(device):
    for d, np_d in ((lc.float32, np.float32), (lc.float64, np.float64), (lc.float16, np.float16)):
        fi, ref = lc.finfo(d), np.finfo(np_d)
        assert (fi.bits, fi.eps, fi.max, fi.min) == (ref.bits, float(ref.eps), float(ref.max), float(ref.min))
        assert fi.smallest_normal == float(ref.smallest_normal)
    for d in (lc.int8, lc.int64, lc.uint8, lc.uint32):
        ii, ref = lc.iinfo(d), np.iinfo(d.name)
        assert (ii.bits, ii.max, ii.min) == (ref.bits, int(ref.max), int(ref.min))
    assert lc.finfo(lc.ones(1, device=device)).dtype is lc.float32
    with pytest.raises(TypeError, match="finfo: expected a floating-point dtype"):
        lc.finfo(lc.int32)
    with pytest.raises(TypeError, match="iinfo: expected an integer dtype"):
        lc.iinfo(lc.float32)


def test_isdtype():
    assert lc.isdtype(lc.float32, "real floating")
    assert lc.isdtype(lc.int8, ("bool", "integral"))
    assert lc.isdtype(lc.uint8, "unsigned integer")
    assert not lc.isdtype(lc.uint8, "signed integer")
    assert lc.isdtype(lc.complex64, "numeric")
    assert not lc.isdtype(lc.bool, "numeric")
    assert lc.isdtype(lc.float64, lc.float64)
    with pytest.raises(ValueError, match="isdtype: unknown kind 'floaty'"):
        lc.isdtype(lc.float32, "floaty")


def test_dtype_attributes():
    assert (lc.float32.kind, lc.float32.bits) == ("f", 32)
    assert (lc.uint8.kind, lc.int64.kind, lc.bool.kind, lc.complex64.kind) == ("u", "i", "b", "c")
    assert lc.float64.name == "float64"


@pytest.mark.parametrize("dtype", [lc.int64, lc.int32, lc.bool, lc.uint8])
def test_integer_tensors_cannot_require_grad(device, dtype):
    x = lc.ones(2, dtype=dtype, device=device)
    with pytest.raises(
        RuntimeError, match=f"only floating-point and complex tensors can require grad, this one is {dtype.name}"
    ):
        x.requires_grad_()
    with pytest.raises(RuntimeError, match="only floating-point"):
        lc.asarray([1, 2], dtype=dtype, device=device, requires_grad=True)


def test_integer_parameter_raises(device):
    with pytest.raises(RuntimeError, match="Parameter: only floating-point data can require grad, got int64"):
        lc.Parameter([1, 2], device=device)


def test_astype(device):
    x = lc.asarray([1.7, -2.2], device=device, requires_grad=True)
    i = lc.astype(x, lc.int32)
    assert i.dtype is lc.int32 and i.tolist() == [1, -2]
    assert not i.requires_grad  # casting to an integer leaves the graph
    assert x.astype(lc.float32, copy=False) is x
    assert lc.astype(x, "float16").dtype is lc.float16
    b = lc.astype(lc.asarray([0, 3], device=device), lc.bool)
    assert b.tolist() == [False, True]
    with pytest.raises(TypeError, match="expected a lucid_core dtype"):
        lc.astype(x, np.float32)


def test_astype_gradient_casts_back(device):
    _supported(device, lc.float64)
    x = lc.asarray([1.0, 2.0], dtype=lc.float32, device=device, requires_grad=True)
    y = lc.astype(x, lc.float64) * 3.0
    y.sum().backward()
    assert x.grad.dtype is lc.float32
    assert x.grad.tolist() == [3.0, 3.0]


def test_method_casts(device):
    x = lc.asarray([1.5, 0.0], device=device)
    assert x.long().dtype is lc.int64
    assert x.int().dtype is lc.int32
    assert x.bool().tolist() == [True, False]
    assert x.long().float().dtype is lc.float32
    assert x.to(lc.float16).dtype is lc.float16
