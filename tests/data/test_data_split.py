"""random_split: lengths, fractions, remainders, and its local RNG."""

from __future__ import annotations

import json
import pathlib
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

import lucid_core as lc
from lucid_data import Subset, TensorDataset, random_split

REF = json.loads((pathlib.Path(__file__).parent / "fixtures" / "torch_reference.json").read_text())


def _indices(parts: list[Subset]) -> list[list[int]]:
    return [p.indices for p in parts]


def test_integer_lengths(device):
    ds = TensorDataset(lc.arange(10, device=device))
    a, b = random_split(ds, [7, 3], seed=0)
    assert (len(a), len(b)) == (7, 3)
    assert sorted(a.indices + b.indices) == list(range(10))
    assert a[0][0].device == device


def test_seed_example_fractions(device):
    ds = TensorDataset(lc.randn(1000, 4, device=device), lc.randint(0, 10, (1000,), device=device))
    train, val = random_split(ds, [0.8, 0.2], seed=42)
    assert (len(train), len(val)) == (800, 200)
    assert set(train.indices).isdisjoint(val.indices)


@pytest.mark.filterwarnings("ignore:random_split.*is empty")
@pytest.mark.parametrize("case", REF["random_split"], ids=lambda c: f"{c['n']}-{len(c['fractions'])}")
def test_fraction_lengths_match_pytorch(case):
    # remainders are handed out one each from the front, as PyTorch does
    parts = random_split(range(case["n"]), case["fractions"], seed=0)
    assert [len(p) for p in parts] == case["lengths"]


def test_fractions_that_sum_to_almost_one_are_accepted():
    # regression (seed): the float sum 0.9999999999999999 was rejected
    assert sum([0.1] * 10) != 1.0
    parts = random_split(range(20), [0.1] * 10, seed=1)
    assert [len(p) for p in parts] == [2] * 10


def test_empty_split_warns():
    with pytest.warns(UserWarning, match=r"split \d \(fraction 0.05\) is empty") as record:
        parts = random_split(range(2), [0.9, 0.05, 0.05], seed=0)
    assert [len(p) for p in parts] == [2, 0, 0]
    assert len(record) == 2


@pytest.mark.parametrize(
    ("lengths", "exc", "match"),
    [
        ([0.5, 0.4], ValueError, r"sum to 0.9, expected 1"),
        ([0.7, 0.7], ValueError, r"sum to 1.4, expected 1"),
        ([1.5, -0.5], ValueError, r"fractions must lie in \[0, 1\]"),
        ([6, 3], ValueError, r"lengths \[6, 3\] sum to 9, but the dataset has 10 samples"),
        ([11, -1], ValueError, "non-negative"),
        ([], ValueError, "lengths is empty"),
        (["a", 1], TypeError, "ints or floats"),
        ([True, 9], TypeError, "ints or floats"),
    ],
)
def test_bad_lengths(lengths, exc, match):
    with pytest.raises(exc, match=match):
        random_split(range(10), lengths, seed=0)


def test_seed_and_generator_exclusive():
    with pytest.raises(ValueError, match="either seed or generator"):
        random_split(range(4), [2, 2], seed=1, generator=random.Random(1))
    with pytest.raises(TypeError, match="generator must be a random.Random"):
        random_split(range(4), [2, 2], generator=3)  # type: ignore[arg-type]


def test_same_seed_same_split_different_seed_different_split():
    a = _indices(random_split(range(50), [25, 25], seed=7))
    assert a == _indices(random_split(range(50), [25, 25], seed=7))
    assert a != _indices(random_split(range(50), [25, 25], seed=8))
    expected = list(range(50))
    random.Random(7).shuffle(expected)  # the documented local RNG: random.Random(seed)
    assert a[0] + a[1] == expected


def test_seeded_split_leaves_global_rngs_alone():
    # regression (seed): the split must not touch the global random state
    random.seed(123)
    py_state = random.getstate()
    host_state = lc.host_rng().getstate()
    random_split(range(100), [0.5, 0.5], seed=3)
    assert random.getstate() == py_state
    assert lc.host_rng().getstate() == host_state


def test_generator_is_used_and_advanced():
    g = random.Random(5)
    first = _indices(random_split(range(30), [10, 20], generator=g))
    second = _indices(random_split(range(30), [10, 20], generator=g))
    assert first != second
    assert first == _indices(random_split(range(30), [10, 20], generator=random.Random(5)))


def test_unseeded_split_follows_manual_seed_but_not_python_random():
    lc.manual_seed(11)
    a = _indices(random_split(range(40), [20, 20]))
    random.seed(999)  # the global `random` module plays no part
    lc.manual_seed(11)
    b = _indices(random_split(range(40), [20, 20]))
    c = _indices(random_split(range(40), [20, 20]))
    assert a == b
    assert c != b


@pytest.mark.filterwarnings("ignore:random_split.*is empty")
@given(
    n=st.integers(0, 60),
    weights=st.lists(st.integers(1, 10), min_size=1, max_size=6),
    seed=st.integers(0, 2**32),
)
def test_fraction_split_partitions_indices_exactly(n, weights, seed):
    fractions = [w / sum(weights) for w in weights]
    parts = random_split(range(n), fractions, seed=seed)
    flat = [i for p in parts for i in p.indices]
    assert sorted(flat) == list(range(n))
    assert sum(len(p) for p in parts) == n
    exact = [n * f for f in fractions]
    assert all(abs(len(p) - e) < 1 + 1e-9 for p, e in zip(parts, exact, strict=True))


@given(lengths=st.lists(st.integers(0, 15), min_size=1, max_size=5), seed=st.integers(0, 1000))
def test_count_split_partitions_indices_exactly(lengths, seed):
    n = sum(lengths)
    parts = random_split(range(n), lengths, seed=seed)
    assert [len(p) for p in parts] == lengths
    assert sorted(i for p in parts for i in p.indices) == list(range(n))
