"""DataLoader with num_workers > 0: background threads, same order, errors re-raised, clean shutdown."""

from __future__ import annotations

import gc
import threading
import time

import pytest

import lucid_core as lc
from lucid_data import ConcatDataset, DataLoader, Dataset, IterableDataset, TensorDataset


def worker_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("lucid_data_worker") and t.is_alive()]


@pytest.fixture(autouse=True)
def _no_leaked_threads():
    assert worker_threads() == []
    yield
    gc.collect()
    assert worker_threads() == [], "DataLoader worker threads outlived their iterator"


class Jittery(Dataset):
    """Samples take uneven time, so workers finish out of order; ``fail_at`` raises there."""

    def __init__(self, n: int, fail_at: int | None = None, exc: type[Exception] = ValueError) -> None:
        self.n, self.fail_at, self.exc = n, fail_at, exc
        self.fetched: list[int] = []
        self.lock = threading.Lock()
        self.event_index: int | None = None
        self.event = threading.Event()

    def __getitem__(self, i: int):
        with self.lock:
            self.fetched.append(i)
        if i == self.event_index:
            self.event.set()
        if i == self.fail_at:
            raise self.exc(f"bad sample {i}")
        time.sleep(0.002 * ((i * 7) % 3))
        return lc.full((2,), float(i)), i

    def __len__(self) -> int:
        return self.n


class OddError(Exception):
    def __init__(self, code: int, detail: str) -> None:
        super().__init__(code, detail)


def _labels(loader):
    return [y.tolist() for _, y in loader]


@pytest.mark.parametrize("num_workers", [1, 2, 4])
def test_same_batches_as_single_threaded(device, num_workers):
    ref = DataLoader(Jittery(37), batch_size=5, shuffle=True, seed=9)
    par = DataLoader(Jittery(37), batch_size=5, shuffle=True, seed=9, num_workers=num_workers)
    assert [_labels(par), _labels(par)] == [_labels(ref), _labels(ref)]
    x, _ = next(iter(par))
    assert x.shape == (5, 2)


def test_tensor_fast_path_with_workers(device):
    ds = TensorDataset(lc.randn(50, 3, device=device), lc.arange(50, device=device))
    ref = [y.tolist() for _, y in DataLoader(ds, batch_size=8, shuffle=True, seed=1)]
    got = [y.tolist() for _, y in DataLoader(ds, batch_size=8, shuffle=True, seed=1, num_workers=3)]
    assert got == ref
    x, _ = next(iter(DataLoader(ds, batch_size=8, num_workers=2)))
    assert x.device == device


def test_wrapped_tensor_datasets_with_workers(device):
    # per-sample path through ConcatDataset; on a lazy backend (MLX) the source tensors are still unevaluated
    a = TensorDataset(lc.randn(7, 2, device=device) * 2.0, lc.arange(7, device=device))
    b = TensorDataset(lc.randn(5, 2, device=device) + 1.0, lc.arange(7, 12, device=device))
    ds = ConcatDataset([a, b])
    loader = DataLoader(ds, batch_size=4, shuffle=True, seed=2, num_workers=2)
    got = [(x.numpy().tolist(), y.tolist()) for x, y in loader]  # first, while the sources are lazy
    ref = [(x.numpy().tolist(), y.tolist()) for x, y in DataLoader(ds, batch_size=4, shuffle=True, seed=2)]
    assert got == ref
    assert sorted(i for _, y in got for i in y) == list(range(12))


def test_unbatched_with_workers():
    got = [s[1] for s in DataLoader(Jittery(9), batch_size=None, num_workers=3)]
    assert got == list(range(9))


def test_worker_exception_is_reraised_with_the_failing_index():
    loader = DataLoader(Jittery(20, fail_at=13), batch_size=4, num_workers=2)
    with pytest.raises(ValueError, match=r"bad sample 13 .*worker thread.*dataset index 13") as info:
        list(loader)
    assert isinstance(info.value.__cause__, ValueError)


def test_worker_exception_with_unusual_constructor_becomes_runtime_error():
    with pytest.raises(RuntimeError, match=r"OddError: .*dataset index 2"):
        list(DataLoader(Jittery(6, fail_at=2, exc=lambda msg: OddError(7, msg)), batch_size=2, num_workers=2))


def test_index_error_in_fast_path_names_the_batch(device):
    ds = TensorDataset(lc.arange(5, device=device))
    with pytest.raises(IndexError, match=r"index 9 is out of range.*dataset indices \[0, 9\]"):
        list(DataLoader(ds, batch_size=2, sampler=[0, 9], num_workers=2))


def test_collate_error_names_the_batch():
    def broken(batch):
        raise KeyError("nope")

    with pytest.raises(KeyError, match=r"collate_fn for dataset indices \[0, 1\]"):
        list(DataLoader(Jittery(4), batch_size=2, num_workers=1, collate_fn=broken))


def test_early_break_joins_the_threads():
    loader = DataLoader(Jittery(200), batch_size=2, num_workers=4)
    for i, _ in enumerate(loader):
        assert worker_threads()  # they run while iterating
        if i == 2:
            break
    assert worker_threads() == []


def test_deleted_iterator_joins_the_threads():
    it = iter(DataLoader(Jittery(100), batch_size=2, num_workers=3))
    next(it)
    assert worker_threads()
    del it
    gc.collect()
    assert worker_threads() == []


def test_explicit_close_and_exhaustion_join_the_threads():
    it = iter(DataLoader(Jittery(10), batch_size=2, num_workers=2))
    next(it)
    it.close()
    assert worker_threads() == []
    with pytest.raises(StopIteration):
        next(it)
    it = iter(DataLoader(Jittery(4), batch_size=2, num_workers=2))
    assert len(list(it)) == 2
    assert worker_threads() == []


def test_prefetch_overlaps_the_callers_work():
    ds = Jittery(40)
    ds.event_index = 5  # first sample of batch 1
    it = iter(DataLoader(ds, batch_size=5, num_workers=2))
    next(it)  # batch 0 handed over; batch 1 must now load while we "compute"
    assert ds.event.wait(timeout=5.0), "the next batch was not loaded in the background"
    it.close()


def test_prefetch_depth_is_bounded():
    ds = Jittery(100)
    it = iter(DataLoader(ds, batch_size=1, num_workers=2, prefetch_factor=2))
    next(it)
    time.sleep(0.1)
    with ds.lock:
        assert max(ds.fetched) <= 4  # batch 0 taken, then at most 2 * 2 in flight
    it.close()


class Stream(IterableDataset):
    def __init__(self, n: int, fail_at: int | None = None) -> None:
        self.n, self.fail_at = n, fail_at

    def __iter__(self):
        for i in range(self.n):
            if i == self.fail_at:
                raise RuntimeError(f"stream broke at {i}")
            yield lc.asarray([float(i)]), i


def test_iterable_dataset_with_workers():
    ref = [y.tolist() for _, y in DataLoader(Stream(11), batch_size=3)]
    loader = DataLoader(Stream(11), batch_size=3, num_workers=2)
    assert [y.tolist() for _, y in loader] == ref
    assert [y.tolist() for _, y in loader] == ref  # reusable


def test_iterable_dataset_worker_error_and_early_stop():
    with pytest.raises(RuntimeError, match=r"stream broke at 7 .*batch 2 of the iterable dataset"):
        list(DataLoader(Stream(20, fail_at=7), batch_size=3, num_workers=1))
    for i, _ in enumerate(DataLoader(Stream(1000), batch_size=1, num_workers=1)):
        if i == 3:
            break
    gc.collect()
    assert worker_threads() == []
