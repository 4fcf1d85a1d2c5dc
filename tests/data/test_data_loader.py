"""DataLoader (single-threaded): batching, shuffling per epoch, reuse, samplers, iterable datasets, errors."""

from __future__ import annotations

import json
import pathlib
import random

import numpy as np
import pytest

import lucid_core as lc
from lucid_data import (
    BatchSampler,
    DataLoader,
    Dataset,
    IterableDataset,
    SequentialSampler,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)

REF = json.loads((pathlib.Path(__file__).parent / "fixtures" / "torch_reference.json").read_text())


def _dataset(device, n=10):
    return TensorDataset(lc.arange(n, dtype=lc.float32, device=device).reshape(n, 1), lc.arange(n, device=device))


def _labels(loader):
    return [y.tolist() for _, y in loader]


def _flat(batches):
    return [i for b in batches for i in b]


class Records(Dataset):
    """Dict samples from a plain Python dataset (exercises the per-sample path)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __getitem__(self, i: int) -> dict:
        if not 0 <= i < self.n:
            raise IndexError(f"Records index {i} out of range")
        return {"x": lc.full((2,), float(i)), "label": i, "name": f"r{i}"}

    def __len__(self) -> int:
        return self.n


class Stream(IterableDataset):
    def __init__(self, n: int, with_len: bool = True) -> None:
        self.n, self.with_len = n, with_len

    def __iter__(self):
        for i in range(self.n):
            yield lc.asarray([float(i)]), i

    def __len__(self) -> int:
        if not self.with_len:
            return super().__len__()
        return self.n


def test_batches_and_last_partial_batch(device):
    # regression (seed): the last, short batch must be sliced safely
    loader = DataLoader(_dataset(device), batch_size=4)
    shapes = [(x.shape, y.shape) for x, y in loader]
    assert shapes == [((4, 1), (4,)), ((4, 1), (4,)), ((2, 1), (2,))]
    assert _labels(loader) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert len(loader) == 3


def test_drop_last(device):
    loader = DataLoader(_dataset(device), batch_size=4, drop_last=True)
    assert _labels(loader) == [[0, 1, 2, 3], [4, 5, 6, 7]] and len(loader) == 2


@pytest.mark.parametrize("case", REF["batch_sampler"], ids=lambda c: f"{c['n']}-{c['batch_size']}-{c['drop_last']}")
def test_len_matches_pytorch(case):
    loader = DataLoader(range(case["n"]), batch_size=case["batch_size"], drop_last=case["drop_last"])
    assert len(loader) == case["len"] == len(list(loader))


def test_batches_keep_device_and_dtype(device):
    x, y = next(iter(DataLoader(_dataset(device), batch_size=3)))
    assert x.device == device and y.device == device
    assert x.dtype == lc.float32 and y.dtype == lc.int64


def test_shuffle_reshuffles_every_epoch_and_covers_everything(device):
    loader = DataLoader(_dataset(device, 40), batch_size=8, shuffle=True, seed=0)
    e0, e1 = _labels(loader), _labels(loader)
    assert sorted(_flat(e0)) == sorted(_flat(e1)) == list(range(40))
    assert e0 != e1


def test_same_seed_repeats_epochs(device):
    a = DataLoader(_dataset(device, 30), batch_size=7, shuffle=True, seed=3)
    b = DataLoader(_dataset(device, 30), batch_size=7, shuffle=True, seed=3)
    assert [_labels(a), _labels(a)] == [_labels(b), _labels(b)]
    assert _labels(DataLoader(_dataset(device, 30), batch_size=7, shuffle=True, seed=4)) != _labels(
        DataLoader(_dataset(device, 30), batch_size=7, shuffle=True, seed=3)
    )


def test_unseeded_shuffle_follows_manual_seed(device):
    lc.manual_seed(21)
    a = _labels(DataLoader(_dataset(device, 30), batch_size=5, shuffle=True))
    lc.manual_seed(21)
    b = _labels(DataLoader(_dataset(device, 30), batch_size=5, shuffle=True))
    assert a == b
    random.seed(0)
    state = random.getstate()
    _labels(DataLoader(_dataset(device, 30), batch_size=5, shuffle=True))
    assert random.getstate() == state  # the global `random` module is never used


def test_generator_argument(device):
    a = DataLoader(_dataset(device, 20), batch_size=5, shuffle=True, generator=random.Random(1))
    b = DataLoader(_dataset(device, 20), batch_size=5, shuffle=True, generator=random.Random(1))
    assert _labels(a) == _labels(b)


def test_exhausted_iterator_raises_stop_iteration_and_loader_is_reusable(device):
    # regression (seed): the loader had to reset its state at the end of an epoch
    loader = DataLoader(_dataset(device, 5), batch_size=2)
    it = iter(loader)
    assert len(list(it)) == 3
    with pytest.raises(StopIteration):
        next(it)
    assert _labels(loader) == [[0, 1], [2, 3], [4]]
    assert _labels(loader) == [[0, 1], [2, 3], [4]]


def test_two_iterators_are_independent(device):
    loader = DataLoader(_dataset(device, 4), batch_size=2)
    a, b = iter(loader), iter(loader)
    assert next(a)[1].tolist() == [0, 1]
    assert next(b)[1].tolist() == [0, 1]
    assert next(a)[1].tolist() == [2, 3]


def test_fast_tensor_path_equals_per_sample_collation(device):
    ds = _dataset(device, 12)
    sub = Subset(ds, [11, -1, 3, 0, 5])
    for data in (ds, sub):
        fast = list(DataLoader(data, batch_size=4))
        slow = list(DataLoader(data, batch_size=4, collate_fn=lambda b: default_collate(b)))
        assert len(fast) == len(slow)
        for (fx, fy), (sx, sy) in zip(fast, slow, strict=True):
            assert fx.dtype == sx.dtype and fy.dtype == sy.dtype and fx.device == sx.device
            np.testing.assert_array_equal(fx.numpy(), sx.numpy())
            np.testing.assert_array_equal(fy.numpy(), sy.numpy())


def test_tensor_dataset_subclass_getitem_is_respected(device):
    class Doubled(TensorDataset):
        def __getitem__(self, i):
            (x,) = super().__getitem__(i)
            return (x * 2,)

    (batch,) = next(iter(DataLoader(Doubled(lc.arange(4, device=device)), batch_size=4)))
    assert batch.tolist() == [0, 2, 4, 6]


def test_custom_collate_fn_from_the_seed(device):
    def my_collate(batch):
        xs, ys = zip(*batch, strict=True)
        return lc.stack(xs, axis=0), lc.stack(ys, axis=0)

    loader = DataLoader(_dataset(device), batch_size=6, collate_fn=my_collate)
    x, y = next(iter(loader))
    assert x.shape == (6, 1) and y.tolist() == [0, 1, 2, 3, 4, 5]


def test_per_sample_path_with_dict_samples():
    batches = list(DataLoader(Records(5), batch_size=2))
    assert batches[0]["x"].shape == (2, 2)
    assert batches[2]["label"].tolist() == [4]
    assert batches[1]["name"] == ["r2", "r3"]


def test_random_split_then_two_loaders(device):
    train, val = random_split(_dataset(device, 50), [0.8, 0.2], seed=123)
    seen = _flat(_labels(DataLoader(train, batch_size=8, shuffle=True, seed=0)))
    seen += _flat(_labels(DataLoader(val, batch_size=16)))
    assert sorted(seen) == list(range(50))


def test_sampler_argument(device):
    loader = DataLoader(_dataset(device), batch_size=2, sampler=[9, 0, 4])
    assert _labels(loader) == [[9, 0], [4]] and len(loader) == 2


def test_batch_sampler_argument(device):
    loader = DataLoader(_dataset(device), batch_sampler=[[3, 1], [7]])
    assert _labels(loader) == [[3, 1], [7]] and len(loader) == 2
    loader = DataLoader(_dataset(device), batch_sampler=BatchSampler(SequentialSampler(range(3)), 2))
    assert _labels(loader) == [[0, 1], [2]]


def test_batch_size_none_yields_samples(device):
    samples = list(DataLoader(_dataset(device, 3), batch_size=None))
    assert len(samples) == 3 and samples[2][1].item() == 2 and samples[0][0].shape == (1,)
    assert len(DataLoader(_dataset(device, 3), batch_size=None)) == 3
    doubled = list(DataLoader(range(3), batch_size=None, collate_fn=lambda s: s * 2))
    assert doubled == [0, 2, 4]


def test_out_of_range_index_from_a_sampler_is_index_error(device):
    with pytest.raises(IndexError, match="index 10 is out of range for a dataset of size 10"):
        list(DataLoader(_dataset(device), batch_size=2, sampler=[0, 10]))
    with pytest.raises(IndexError, match="index 10 is out of range"):
        list(DataLoader(_dataset(device), batch_size=None, sampler=[10]))


# -- iterable datasets ------------------------------------------------------------------------------------
def test_iterable_dataset_batches():
    loader = DataLoader(Stream(7), batch_size=3)
    batches = list(loader)
    assert [b[1].tolist() for b in batches] == [[0, 1, 2], [3, 4, 5], [6]]
    assert batches[0][0].shape == (3, 1)
    assert len(loader) == 3
    assert len(DataLoader(Stream(7), batch_size=3, drop_last=True)) == 2
    assert [b[1].tolist() for b in DataLoader(Stream(7), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]
    assert len(list(loader)) == 3  # reusable


def test_iterable_dataset_without_len():
    loader = DataLoader(Stream(4, with_len=False), batch_size=2)
    assert len(list(loader)) == 2
    with pytest.raises(TypeError, match="length is unknown"):
        len(loader)


def test_plain_iterable_and_generator_function_dataset():
    assert [b.tolist() for b in DataLoader(iter(range(5)), batch_size=2)] == [[0, 1], [2, 3], [4]]


@pytest.mark.parametrize("kw", [{"shuffle": True}, {"sampler": [0]}, {"batch_sampler": [[0]]}])
def test_iterable_dataset_rejects_index_options(kw):
    with pytest.raises(ValueError, match="not supported for an IterableDataset"):
        DataLoader(Stream(3), **kw)


# -- errors -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kw", "exc", "match"),
    [
        ({"batch_size": 0}, ValueError, "batch_size must be a positive integer, got 0"),
        ({"batch_size": -1}, ValueError, "batch_size must be a positive integer, got -1"),
        ({"batch_size": 2.0}, ValueError, "batch_size must be a positive integer, got 2.0"),
        ({"shuffle": True, "sampler": [0, 1]}, ValueError, "sampler is mutually exclusive with shuffle"),
        ({"batch_sampler": [[0]], "batch_size": 2}, ValueError, "batch_sampler is mutually exclusive"),
        ({"batch_sampler": [[0]], "shuffle": True}, ValueError, "batch_sampler is mutually exclusive"),
        ({"batch_sampler": [[0]], "sampler": [0]}, ValueError, "batch_sampler is mutually exclusive"),
        ({"batch_sampler": [[0]], "drop_last": True}, ValueError, "batch_sampler is mutually exclusive"),
        ({"batch_size": None, "drop_last": True}, ValueError, "drop_last needs a batch_size"),
        ({"num_workers": -1}, ValueError, "num_workers must be a non-negative integer"),
        ({"prefetch_factor": 0}, ValueError, "prefetch_factor must be a positive integer"),
        ({"shuffle": 1}, TypeError, "shuffle must be a bool"),
        ({"drop_last": None}, TypeError, "drop_last must be a bool"),
        ({"seed": 1, "generator": random.Random()}, ValueError, "either seed or generator"),
        ({"seed": "1"}, TypeError, "seed must be an int"),
    ],
)
def test_bad_arguments(device, kw, exc, match):
    with pytest.raises(exc, match=match):
        DataLoader(_dataset(device), **kw)


def test_empty_dataset_is_rejected(device):
    with pytest.raises(ValueError, match=r"the dataset \(TensorDataset\) is empty"):
        DataLoader(TensorDataset(lc.zeros(0, 3, device=device)), batch_size=2)
    with pytest.raises(ValueError, match="is empty"):
        DataLoader(Subset(_dataset(device), []), shuffle=True)


def test_not_a_dataset():
    with pytest.raises(TypeError, match="indexable or iterable"):
        DataLoader(42)


def test_repr(device):
    r = repr(DataLoader(_dataset(device), batch_size=4, shuffle=True))
    assert "TensorDataset" in r and "batch_size=4" in r and "shuffle=True" in r
