"""Integer division by zero and out-of-range indices raise, as in PyTorch, on every backend (never wrap silently).

PyTorch 2.13's rules, checked by hand against torch: ``//``, ``%``, ``fmod`` and ``div(rounding_mode=...)`` of
integer tensors by 0 raise ``RuntimeError: ZeroDivisionError`` (floats give inf/NaN); ``gather``, ``scatter``,
``scatter_add``, ``index_select``, ``index_add`` and ``embedding`` refuse negative indices; ``take`` and
``take_along_dim`` count them from the end; everything beyond the dimension raises.
"""

from __future__ import annotations

import math
import re

import pytest

import lucid
import lucid_core as lc
import lucid_nn.functional as F


def _t(values: object, device: lc.Device, dtype: object = None) -> lc.Tensor:
    return lucid.tensor(values, dtype=dtype, device=device)


INT_DIVISIONS = {
    "floordiv": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
    "floor_divide": lambda a, b: lucid.floor_divide(a, b),
    "remainder": lambda a, b: lucid.remainder(a, b),
    "div_floor": lambda a, b: lucid.div(a, b, rounding_mode="floor"),
    "div_trunc": lambda a, b: lucid.div(a, b, rounding_mode="trunc"),
}


@pytest.mark.parametrize("op", INT_DIVISIONS.values(), ids=INT_DIVISIONS.keys())
@pytest.mark.parametrize("divisor", ["tensor", "scalar"])
def test_integer_division_by_zero_raises(op: object, divisor: str, device: lc.Device) -> None:
    a = _t([5, -7, 3], device)
    b = _t([1, 2, 0], device) if divisor == "tensor" else 0
    with pytest.raises(ZeroDivisionError, match="integer division by zero") as info:
        op(a, b)
    assert isinstance(info.value, RuntimeError)  # what PyTorch raises, so `except RuntimeError` still works


def test_integer_division_by_zero_raises_for_unsigned_and_int32(device: lc.Device) -> None:
    for dtype in (lucid.uint8, lucid.int32):
        with pytest.raises(ZeroDivisionError):
            _t([3], device, dtype) // _t([0], device, dtype)


def test_integer_division_without_zero_divisor_is_unchanged(device: lc.Device) -> None:
    a, b = _t([5, -7, 3], device), _t([2, 2, -2], device)
    assert (a // b).tolist() == [2, -4, -2]
    assert (a % b).tolist() == [1, 1, -1]


def test_float_division_by_zero_stays_inf_and_nan(device: lc.Device) -> None:
    x = _t([1.0, -1.0, 0.0], device)
    q = (x // 0).tolist()
    assert q[:2] == [math.inf, -math.inf] and math.isnan(q[2])
    assert all(math.isnan(v) for v in (x % 0).tolist())


NEGATIVE_REFUSED = {
    "gather": lambda x, i: lucid.gather(x, 1, i.reshape(2, 1)),
    "scatter": lambda x, i: lucid.zeros_like(x).scatter(1, i.reshape(2, 1), 1.0),
    "scatter_reduce_add": lambda x, i: lucid.zeros_like(x).scatter(1, i.reshape(2, 1), x[:, :1], reduce="add"),
    "scatter_add": lambda x, i: lucid.zeros_like(x).scatter_add(1, i.reshape(2, 1), x[:, :1]),
    "index_select": lambda x, i: lucid.index_select(x, 1, i),
    "index_add": lambda x, i: lucid.zeros_like(x).index_add(1, i, x[:, :2]),
}


@pytest.mark.parametrize("op", NEGATIVE_REFUSED.values(), ids=NEGATIVE_REFUSED.keys())
def test_negative_index_raises_where_pytorch_refuses_it(op: object, device: lc.Device) -> None:
    x = lucid.arange(6.0, device=device).reshape(2, 3)
    with pytest.raises(IndexError, match=r"index -1 is out of bounds for dimension 1 with size 3; valid .* 0 to 2"):
        op(x, _t([-1, 0], device))


@pytest.mark.parametrize("op", NEGATIVE_REFUSED.values(), ids=NEGATIVE_REFUSED.keys())
def test_index_past_the_end_raises(op: object, device: lc.Device) -> None:
    x = lucid.arange(6.0, device=device).reshape(2, 3)
    with pytest.raises(RuntimeError, match=r"index 3 is out of bounds for dimension 1 with size 3"):
        op(x, _t([0, 3], device))


def test_take_counts_negative_indices_from_the_end_and_raises_beyond(device: lc.Device) -> None:
    x = lucid.arange(6.0, device=device).reshape(2, 3)
    assert lucid.take(x, _t([-1, 0], device)).tolist() == [5.0, 0.0]
    for bad in (6, -7):
        with pytest.raises(IndexError, match=rf"take: index {bad} is out of bounds .* valid indices are -6 to 5"):
            lucid.take(x, _t([0, bad], device))


def test_take_along_dim_counts_negative_indices_and_raises_beyond(device: lc.Device) -> None:
    x = lucid.arange(6.0, device=device).reshape(2, 3)
    assert lucid.take_along_dim(x, _t([[-1], [0]], device), 1).tolist() == [[2.0], [3.0]]
    with pytest.raises(IndexError, match="take_along_axis: index 3 is out of bounds for dimension 1 with size 3"):
        lucid.take_along_dim(x, _t([[3], [0]], device), 1)


def test_in_range_indices_still_work(device: lc.Device) -> None:
    x = lucid.arange(6.0, device=device).reshape(2, 3)
    i = _t([2, 0], device)
    assert lucid.index_select(x, 1, i).tolist() == [[2.0, 0.0], [5.0, 3.0]]
    assert lucid.gather(x, 1, i.reshape(2, 1)).tolist() == [[2.0], [3.0]]
    assert lucid.zeros_like(x).index_add(1, i, x[:, :2]).tolist() == [[1.0, 0.0, 0.0], [4.0, 0.0, 3.0]]


@pytest.mark.parametrize("bad", [-1, 3])
def test_embedding_index_out_of_range_raises(bad: int, device: lc.Device) -> None:
    w = lucid.ones(3, 2, device=device)
    with pytest.raises(IndexError, match=r"embedding: index out of range: .* \(expected 0 <= index < 3\)") as info:
        F.embedding(_t([0, bad], device), w)
    assert isinstance(info.value, RuntimeError)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (lambda d: lc.asarray([0, 5], device=d), "index 5 is out of bounds for axis 0 with size 2"),
        (lambda d: (slice(None), lc.asarray([3], device=d)), "index 3 is out of bounds for axis 1 with size 3"),
        (lambda d: (Ellipsis, lc.asarray([[-4]], device=d)), "index -4 is out of bounds for axis 1 with size 3"),
    ],
)
def test_index_tensor_past_the_end_raises_on_read_and_write(key: object, message: str, device: lc.Device) -> None:
    # MLX read the memory past the array and returned it as values (a silent wrong result) before it checked
    x = lc.reshape(lc.arange(6, device=device), (2, 3))
    with pytest.raises(IndexError, match=re.escape(message)):
        x[key(device)]
    with pytest.raises(IndexError, match=re.escape(message)):
        x[key(device)] = 1
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]]
