"""default_collate: tensors, numbers, sequences, mappings, nesting, strings; device and backend kept."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import lucid_core as lc
from lucid_data import default_collate

Pair = namedtuple("Pair", ["x", "y"])


def test_tensors_are_stacked_on_their_device(device):
    # regression (seed): np.stack broke the device; lucid_core.stack keeps it
    batch = [lc.randn(3, 2, device=device) for _ in range(4)]
    out = default_collate(batch)
    assert out.shape == (4, 3, 2)
    assert out.device == device
    np.testing.assert_array_equal(out.numpy()[2], batch[2].numpy())


def test_tuples_are_transposed_then_stacked(device):
    # regression (seed): transposing tuples took the wrong axis order
    batch = [(lc.full((3,), float(i), device=device), lc.asarray(i, device=device)) for i in range(5)]
    x, y = default_collate(batch)
    assert isinstance(default_collate(batch), tuple)
    assert x.shape == (5, 3) and y.shape == (5,)
    assert y.tolist() == [0, 1, 2, 3, 4]
    assert x.numpy()[:, 0].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_lists_stay_lists_and_namedtuples_stay_namedtuples(device):
    out = default_collate([[lc.zeros(2, device=device), 1], [lc.ones(2, device=device), 2]])
    assert isinstance(out, list) and out[0].shape == (2, 2) and out[1].tolist() == [1, 2]
    nt = default_collate([Pair(1.0, "a"), Pair(2.0, "b")])
    assert isinstance(nt, Pair) and nt.y == ["a", "b"] and nt.x.tolist() == [1.0, 2.0]


def test_numbers_become_tensors_with_default_dtypes():
    ints = default_collate([1, 2, 3])
    floats = default_collate([1.5, 2.0])
    mixed = default_collate([1, 2.5])
    bools = default_collate([True, False])
    assert ints.dtype == lc.int64 and ints.tolist() == [1, 2, 3]
    assert floats.dtype == lc.float32 and floats.tolist() == [1.5, 2.0]
    assert mixed.dtype == lc.float32
    assert bools.dtype == lc.bool and bools.tolist() == [True, False]
    assert default_collate([np.int64(3), np.int64(4)]).dtype == lc.int64


def test_strings_and_other_objects_are_left_alone():
    assert default_collate(["a", "bc"]) == ["a", "bc"]
    assert default_collate([b"x", b"y"]) == [b"x", b"y"]
    marker = object()
    assert default_collate([marker, None]) == [marker, None]


def test_dicts_and_nesting(device):
    batch = [
        {"image": lc.randn(2, 2, device=device), "meta": {"id": i, "name": f"s{i}"}, "pair": (i, float(i))}
        for i in range(3)
    ]
    out = default_collate(batch)
    assert set(out) == {"image", "meta", "pair"}
    assert out["image"].shape == (3, 2, 2) and out["image"].device == device
    assert out["meta"]["id"].tolist() == [0, 1, 2]
    assert out["meta"]["name"] == ["s0", "s1", "s2"]
    assert out["pair"][0].dtype == lc.int64 and out["pair"][1].dtype == lc.float32


def test_native_arrays_are_promoted():
    out = default_collate([np.ones((2,), dtype=np.float64), np.zeros((2,), dtype=np.float64)])
    assert isinstance(out, lc.Tensor) and out.shape == (2, 2) and out.dtype == lc.float64


def test_0d_tensors_stack_to_1d(device):
    out = default_collate([lc.asarray(1.0, device=device), lc.asarray(2.0, device=device)])
    assert out.shape == (2,)


@pytest.mark.parametrize(
    ("batch", "exc", "match"),
    [
        ([], ValueError, "the batch is empty"),
        ([lc.zeros(3), lc.zeros(4)], ValueError, r"different shapes: sample 0 has \(3,\), sample 1 has \(4,\)"),
        ([lc.zeros(3), 1.0], TypeError, "sample 0 is a Tensor but sample 1 is a float"),
        ([1, "a"], TypeError, "sample 0 is a number but sample 1 is a str"),
        ([(1, 2), (1,)], ValueError, "sample 0 has length 2, sample 1 has length 1"),
        ([{"a": 1}, {"b": 1}], ValueError, r"keys \['a'\], sample 1 has \['b'\]"),
    ],
)
def test_collate_errors(batch, exc, match):
    with pytest.raises(exc, match=match):
        default_collate(batch)


def test_mixed_devices_are_rejected_with_a_clear_message():
    devices = [d for b in lc.backends() if b.status == "ok" for d in lc.get_backend(b.name).devices.values()]
    if len(devices) < 2:
        pytest.skip("needs two devices (e.g. numpy and mlx)")
    with pytest.raises(ValueError, match="samples are on different devices"):
        default_collate([lc.zeros(2, device=devices[0]), lc.zeros(2, device=devices[1])])
