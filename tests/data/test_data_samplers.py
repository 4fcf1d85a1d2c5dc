"""Samplers: sequential, random, subset, weighted, batch and distributed (shard)."""

from __future__ import annotations

import collections
import json
import pathlib
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

import lucid_core as lc
from lucid_data import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

REF = json.loads((pathlib.Path(__file__).parent / "fixtures" / "torch_reference.json").read_text())


def test_sampler_is_abstract():
    with pytest.raises(TypeError, match="abstract"):
        Sampler()  # type: ignore[abstract]


def test_sequential():
    s = SequentialSampler(range(4))
    assert list(s) == [0, 1, 2, 3] and len(s) == 4


# -- RandomSampler ----------------------------------------------------------------------------------------
def test_random_sampler_is_a_permutation_and_differs_per_epoch():
    s = RandomSampler(range(30), seed=1)
    e0, e1 = list(s), list(s)
    assert sorted(e0) == sorted(e1) == list(range(30))
    assert e0 != e1
    again = RandomSampler(range(30), seed=1)
    assert [list(again), list(again)] == [e0, e1]


def test_random_sampler_set_epoch_replays_an_epoch():
    s = RandomSampler(range(20), seed=3)
    e0, e1 = list(s), list(s)
    s.set_epoch(1)
    assert list(s) == e1
    s.set_epoch(0)
    assert list(s) == e0


def test_random_sampler_without_seed_follows_manual_seed():
    lc.manual_seed(5)
    a = list(RandomSampler(range(25)))
    lc.manual_seed(5)
    b = list(RandomSampler(range(25)))
    assert a == b
    assert list(RandomSampler(range(25))) != b


def test_random_sampler_leaves_python_random_alone():
    random.seed(0)
    state = random.getstate()
    list(RandomSampler(range(10)))
    list(RandomSampler(range(10), seed=4))
    assert random.getstate() == state


def test_random_sampler_replacement_and_num_samples():
    s = RandomSampler(range(3), replacement=True, num_samples=200, seed=0)
    drawn = list(s)
    assert len(drawn) == len(s) == 200
    assert set(drawn) == {0, 1, 2}  # repeats happen


def test_random_sampler_num_samples_beyond_len_without_replacement():
    drawn = list(RandomSampler(range(4), num_samples=10, seed=0))
    assert len(drawn) == 10
    assert sorted(drawn[:4]) == [0, 1, 2, 3] and sorted(drawn[4:8]) == [0, 1, 2, 3]


def test_random_sampler_generator():
    g = random.Random(0)
    s = RandomSampler(range(10), generator=g)
    assert list(s) != list(s)
    assert list(RandomSampler(range(10), generator=random.Random(0))) == list(
        RandomSampler(range(10), generator=random.Random(0))
    )


def test_random_sampler_errors():
    with pytest.raises(ValueError, match="the dataset is empty"):
        RandomSampler([])
    with pytest.raises(ValueError, match="num_samples must be a positive integer, got 0"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match="replacement must be a bool"):
        RandomSampler(range(3), replacement=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="either seed or generator"):
        RandomSampler(range(3), seed=1, generator=random.Random())
    with pytest.raises(TypeError, match="seed must be an int"):
        RandomSampler(range(3), seed=1.5)  # type: ignore[arg-type]


# -- SubsetRandomSampler / WeightedRandomSampler ----------------------------------------------------------
def test_subset_random_sampler():
    indices = list(range(10, 40, 2))
    s = SubsetRandomSampler(indices, seed=2)
    e0, e1 = list(s), list(s)
    assert sorted(e0) == sorted(e1) == indices and len(s) == len(indices)
    assert e0 != e1


def test_weighted_sampler_follows_weights():
    s = WeightedRandomSampler([0.0, 1.0, 3.0], num_samples=4000, seed=0)
    counts = collections.Counter(s)
    assert counts[0] == 0
    assert 2.6 < counts[2] / counts[1] < 3.4


def test_weighted_sampler_accepts_tensor_weights(device):
    s = WeightedRandomSampler(lc.asarray([1.0, 0.0, 1.0], device=device), 50, seed=0)
    assert set(s) <= {0, 2} and len(list(s)) == 50


def test_weighted_sampler_without_replacement():
    s = WeightedRandomSampler([1.0, 5.0, 0.0, 2.0, 1.0], num_samples=4, replacement=False, seed=1)
    drawn = list(s)
    assert len(drawn) == len(set(drawn)) == 4 and 2 not in drawn
    # heavy weights come first more often
    firsts = collections.Counter(next(iter(s)) for _ in range(600))
    assert firsts[1] > firsts[3] > firsts[0]


@pytest.mark.parametrize(
    ("weights", "k", "kw", "match"),
    [
        ([], 1, {}, "weights is empty"),
        ([1.0, -1.0], 1, {}, "finite and non-negative, got -1.0"),
        ([1.0, float("nan")], 1, {}, "finite and non-negative"),
        ([0.0, 0.0], 1, {}, "sum to 0"),
        ([1.0], 0, {}, "num_samples must be a positive integer"),
        ([1.0, 0.0, 1.0], 3, {"replacement": False}, "cannot draw 3 samples without replacement from 2"),
    ],
)
def test_weighted_sampler_errors(weights, k, kw, match):
    with pytest.raises(ValueError, match=match):
        WeightedRandomSampler(weights, k, **kw)


def test_weighted_sampler_rejects_2d_tensor():
    with pytest.raises(ValueError, match="weights must be 1-D"):
        WeightedRandomSampler(lc.ones(2, 2), 1)


# -- BatchSampler -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", REF["batch_sampler"], ids=lambda c: f"{c['n']}-{c['batch_size']}-{c['drop_last']}")
def test_batch_sampler_matches_pytorch(case):
    s = BatchSampler(SequentialSampler(range(case["n"])), case["batch_size"], case["drop_last"])
    assert list(s) == case["batches"]
    assert len(s) == case["len"]


def test_batch_sampler_takes_any_iterable():
    assert list(BatchSampler([5, 1, 3], 2)) == [[5, 1], [3]]


@pytest.mark.parametrize(("bs", "match"), [(0, "got 0"), (-2, "got -2"), (1.5, "got 1.5"), (True, "got True")])
def test_batch_sampler_bad_batch_size(bs, match):
    with pytest.raises(ValueError, match=f"batch_size must be a positive integer, {match}"):
        BatchSampler(range(3), bs)


def test_batch_sampler_bad_drop_last():
    with pytest.raises(TypeError, match="drop_last must be a bool"):
        BatchSampler(range(3), 2, drop_last="yes")  # type: ignore[arg-type]


@given(n=st.integers(0, 80), bs=st.integers(1, 20), drop=st.booleans(), seed=st.integers(0, 100))
def test_batch_sampler_covers_all_indices(n, bs, drop, seed):
    batches = list(BatchSampler(RandomSampler(range(n), seed=seed), bs, drop)) if n else []
    flat = [i for b in batches for i in b]
    assert len(flat) == len(set(flat))
    assert all(len(b) == bs for b in batches[:-1])
    if drop:
        assert len(flat) == n - n % bs and all(len(b) == bs for b in batches)
    else:
        assert sorted(flat) == list(range(n))
    if n:
        assert len(batches) == len(BatchSampler(RandomSampler(range(n)), bs, drop))


# -- DistributedSampler -----------------------------------------------------------------------------------
@pytest.mark.parametrize("case", REF["distributed"], ids=lambda c: f"{c['n']}-{c['num_replicas']}-{c['drop_last']}")
def test_distributed_sampler_matches_pytorch_without_shuffle(case):
    r = case["num_replicas"]
    shards = [
        list(DistributedSampler(range(case["n"]), r, k, shuffle=False, drop_last=case["drop_last"])) for k in range(r)
    ]
    assert shards == case["shards"]
    assert [
        len(DistributedSampler(range(case["n"]), r, k, shuffle=False, drop_last=case["drop_last"])) for k in range(r)
    ] == [len(s) for s in case["shards"]]


@given(n=st.integers(1, 60), r=st.integers(1, 6), seed=st.integers(0, 50), epoch=st.integers(0, 5))
def test_distributed_shards_are_disjoint_and_cover(n, r, seed, epoch):
    def shards(drop_last):
        out = []
        for k in range(r):
            s = DistributedSampler(range(n), r, k, shuffle=True, seed=seed, drop_last=drop_last)
            s.set_epoch(epoch)
            out.append(list(s))
        return out

    padded = shards(False)
    assert len({len(s) for s in padded}) == 1  # equal counts on every replica
    flat = [i for s in padded for i in s]
    assert set(flat) == set(range(n))  # padding repeats, but every index is seen
    assert len(flat) - n == (-n) % r  # exactly the padding needed
    dropped = shards(True)
    flat = [i for s in dropped for i in s]
    assert len(flat) == len(set(flat)) == n - n % r  # disjoint
    assert len({len(s) for s in dropped}) == 1


def test_distributed_shuffle_depends_on_seed_and_epoch_only():
    def order(seed, epoch):
        s = DistributedSampler(range(40), 2, 0, seed=seed)
        s.set_epoch(epoch)
        return list(s)

    assert order(0, 0) == order(0, 0)
    assert order(0, 0) != order(0, 1)
    assert order(0, 0) != order(1, 0)
    s = DistributedSampler(range(40), 2, 0)
    assert list(s) == list(s)  # without set_epoch the order repeats, as in PyTorch


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"num_replicas": 0}, "num_replicas must be a positive integer"),
        ({"num_replicas": 2, "rank": 2}, r"rank must be an int in \[0, 1\], got 2"),
        ({"num_replicas": 2, "rank": -1}, "got -1"),
    ],
)
def test_distributed_sampler_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        DistributedSampler(range(4), **kw)
