"""``default_convert``: native arrays become tensors inside any structure, nothing is batched."""

from __future__ import annotations

from collections import namedtuple

import numpy as np

import lucid_core as lc
from lucid_data import default_convert

Pair = namedtuple("Pair", "x y")


def test_arrays_become_tensors_and_the_structure_stays() -> None:
    sample = {"img": np.ones((2, 2), np.float32), "meta": ("a", 3, [np.arange(3)]), "pair": Pair(np.zeros(1), 1.5)}
    out = default_convert(sample)
    assert isinstance(out["img"], lc.Tensor) and out["img"].shape == (2, 2) and out["img"].dtype is lc.float32
    assert out["meta"][0] == "a" and out["meta"][1] == 3 and isinstance(out["meta"], tuple)
    assert isinstance(out["meta"][2], list) and out["meta"][2][0].tolist() == [0, 1, 2]
    assert isinstance(out["pair"], Pair) and isinstance(out["pair"].x, lc.Tensor) and out["pair"].y == 1.5


def test_tensors_numbers_and_strings_pass_through() -> None:
    t = lc.ones(2)
    assert default_convert(t) is t and default_convert(4) == 4 and default_convert("s") == "s"
