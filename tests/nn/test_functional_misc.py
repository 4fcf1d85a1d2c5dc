"""Functional helpers: pad, normalize, cosine_similarity, one_hot, pairwise_distance."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import lucid_core as lc
from lucid_nn import functional as F

FIX = json.loads((Path(__file__).parent / "fixtures" / "nn_a.json").read_text())
M = FIX["misc"]


def f64(device: lc.Device) -> lc.DType:
    if lc.float64 not in device.backend.dtypes:
        pytest.skip(f"{device} has no float64")
    return lc.float64


CASES = {
    "pad_constant": lambda x: F.pad(x, (1, 2, 0, 1), value=1.5),
    "pad_negative": lambda x: F.pad(x, (-1, 1)),
    "pad_reflect": lambda x: F.pad(x, (2, 1), mode="reflect"),
    "pad_replicate": lambda x: F.pad(x, (1, 2, 2, 0), mode="replicate"),
    "pad_circular": lambda x: F.pad(x, (1, 3), mode="circular"),
    "normalize": lambda x: F.normalize(x, dim=1),
    "normalize_p1": lambda x: F.normalize(x, p=1, dim=-1),
    "cosine_similarity": lambda x: F.cosine_similarity(x, lc.flip(x, axis=0), dim=-1),
    "pairwise_distance": lambda x: F.pairwise_distance(x[0], x[1]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(device, name):
    x = lc.asarray(M["x"], dtype=f64(device), device=device)
    np.testing.assert_allclose(CASES[name](x).numpy(), M[name], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients(device, name):
    x = lc.asarray(M["x"], dtype=f64(device), device=device)[:, :2, :3].requires_grad_()
    fn = CASES[name]
    if name == "pad_reflect":
        fn = lambda v: F.pad(v, (2, 0), mode="reflect")  # noqa: E731 - the input is narrower here
    if name == "pad_circular":
        fn = lambda v: F.pad(v, (1, 2), mode="circular")  # noqa: E731
    assert lc.gradcheck(fn, [x])


def test_one_hot_matches_torch(device):
    got = F.one_hot(lc.asarray([[0, 3], [2, 1]], device=device), 5)
    assert got.dtype == lc.int64 and got.tolist() == M["one_hot"]
    assert F.one_hot(lc.asarray([1, 0], device=device)).tolist() == [[0, 1], [1, 0]]
    with pytest.raises(ValueError, match="class values must be in \\[0, 2\\)"):
        F.one_hot(lc.asarray([3], device=device), 2)
    with pytest.raises(TypeError, match="only integer tensors"):
        F.one_hot(lc.asarray([1.0], device=device))


def test_pad_errors(device):
    x = lc.ones((2, 3), device=device)
    with pytest.raises(ValueError, match="padding length 3 must be even"):
        F.pad(x, (1, 2, 3))
    with pytest.raises(ValueError, match="unknown mode 'wrap'"):
        F.pad(x, (1, 1), mode="wrap")
    assert F.pad(x, (0, 0)) is x
