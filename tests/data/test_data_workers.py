"""DataLoader with num_workers > 0, as processes and as threads: same batches, PyTorch's worker semantics,
faults reported, nothing left running. Datasets come from ``worker_datasets`` (cheap for a worker to import)."""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
import traceback
from pathlib import Path

import psutil
import pytest
from worker_datasets import (
    STUCK_RELEASE,
    Big,
    HoldsSegment,
    Jittery,
    LocalFailure,
    Numbers,
    NumpySamples,
    Pids,
    RandomDraws,
    ShardedStream,
    Stream,
    Stuck,
    Threads,
    WhoLoads,
    broken_collate,
    failing_init,
    init_worker,
    odd_error,
)

import lucid_core as lc
from lucid_data import DataLoader, TensorDataset, _shm, _workers, get_worker_info
from lucid_data._shm import INLINE_BYTES

HERE = Path(__file__).parent


def worker_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("lucid_data_worker") and t.is_alive()]


def worker_processes() -> list[psutil.Process]:
    """Descendants of this process other than multiprocessing's helpers (forkserver, resource tracker)."""
    found = []
    for p in psutil.Process().children(recursive=True):
        try:
            cmd = " ".join(p.cmdline())
            helper = p.ppid() == os.getpid() and ("forkserver import main" in cmd or "resource_tracker" in cmd)
            if not helper and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
        except psutil.NoSuchProcess:
            continue
    return found


def gone(pids: set[int], within: float = 5.0) -> bool:
    """Whether every pid has exited (zombies count as exited) within ``within`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = []
        for pid in pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
            except psutil.NoSuchProcess:
                pass
        if not alive:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(autouse=True)
def _nothing_left_running():
    yield
    gc.collect()
    assert worker_threads() == [], "DataLoader worker threads outlived their iterator"
    deadline = time.monotonic() + 5.0
    while worker_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert worker_processes() == [], "DataLoader worker processes outlived their iterator"


@pytest.fixture(params=["process", "thread"])
def worker_type(request) -> str:
    return request.param


def _labels(loader) -> list[list[int]]:
    return [y.tolist() for _, y in loader]


SHM = Path("/dev/shm")
needs_dev_shm = pytest.mark.skipif(not SHM.is_dir(), reason="lists shared memory through /dev/shm (Linux)")


def own_segments(creator: int | None = None) -> set[str]:
    """The shared-memory segments of this process's loaders (made by ``creator``, if given) that still exist."""
    prefix = f"lucid_{os.getpid()}_" + ("" if creator is None else f"{creator}_")
    return {p.name for p in SHM.glob(prefix + "*")} if SHM.is_dir() else set()


def wait_until(condition, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# -- same batches as num_workers=0 ----------------------------------------------------------------------
def test_same_batches_and_order_as_no_workers(worker_type):
    ref = DataLoader(Jittery(37), batch_size=5, shuffle=True, seed=9)
    par = DataLoader(Jittery(37), batch_size=5, shuffle=True, seed=9, num_workers=2, worker_type=worker_type)
    assert [_labels(par), _labels(par)] == [_labels(ref), _labels(ref)]  # two epochs, reshuffled alike
    x, _ = next(iter(par))
    assert x.shape == (5, 2)


@pytest.mark.parametrize("make_rng", ["manual_seed", "generator"])
def test_unseeded_and_generator_shuffles_match_no_workers(worker_type, make_rng):
    def run(num_workers: int) -> list[list[int]]:
        lc.manual_seed(3)
        gen = random.Random(4) if make_rng == "generator" else None
        loader = DataLoader(
            Numbers(20), batch_size=4, shuffle=True, generator=gen, num_workers=num_workers, worker_type=worker_type
        )
        return [_labels(loader), _labels(loader)]

    assert run(2) == run(0)


def test_tensor_dataset_on_each_device(device, worker_type):
    ds = TensorDataset(lc.randn(50, 3, device=device) * 2.0, lc.arange(50, device=device))  # lazy on MLX
    ref = [(x.tolist(), y.tolist()) for x, y in DataLoader(ds, batch_size=8, shuffle=True, seed=1)]
    loader = DataLoader(ds, batch_size=8, shuffle=True, seed=1, num_workers=2, worker_type=worker_type)
    got = [(x.tolist(), y.tolist()) for x, y in loader]
    assert got == ref
    x, y = next(iter(loader))
    assert x.device == device and y.device == device
    assert (x.dtype, y.dtype) == (ds.tensors[0].dtype, ds.tensors[1].dtype)


def test_numbers_are_collated_onto_the_loaders_default_device(device, worker_type):
    before = lc.get_default_device()
    lc.set_default_device(device)
    try:
        x, y = next(iter(DataLoader(Numbers(8), batch_size=4, num_workers=2, worker_type=worker_type)))
    finally:
        lc.set_default_device(before)
    assert x.device == device and y.device == device
    assert (x.dtype, y.dtype) == (lc.float32, lc.int64)
    assert (x.tolist(), y.tolist()) == ([0.0, 0.5, 1.0, 1.5], [0, 1, 2, 3])


def test_numpy_samples_collate_as_without_workers(worker_type):
    ref = [(x.tolist(), x.dtype, x.device, y.tolist()) for x, y in DataLoader(NumpySamples(6), batch_size=4)]
    loader = DataLoader(NumpySamples(6), batch_size=4, num_workers=2, worker_type=worker_type)
    assert [(x.tolist(), x.dtype, x.device, y.tolist()) for x, y in loader] == ref


def test_unbatched_with_workers(worker_type):
    got = [s[1] for s in DataLoader(Jittery(9), batch_size=None, num_workers=3, worker_type=worker_type)]
    assert got == list(range(9))


def test_pin_memory_is_accepted_and_changes_nothing(worker_type):
    ref = _labels(DataLoader(Numbers(10), batch_size=3))
    loader = DataLoader(Numbers(10), batch_size=3, num_workers=2, worker_type=worker_type, pin_memory=True)
    assert _labels(loader) == ref


# -- shared memory ------------------------------------------------------------------------------------
def test_large_tensors_cross_processes_through_shared_memory(device):
    from multiprocessing.reduction import ForkingPickler

    big = lc.arange(100_000, device=device).astype(lc.float32)  # 400 kB
    payload = ForkingPickler.dumps(big)
    assert len(payload) < 1_000  # a segment's name, not the bytes
    if SHM.is_dir():  # named lucid_<this loader's pid>_<its creator's pid>_...
        (name,) = own_segments(creator=os.getpid())
        assert name.encode() in bytes(payload)
    back = __import__("pickle").loads(payload)  # the receiver copies and unlinks
    assert own_segments() == set()
    assert back.device == device and back.tolist() == big.tolist()
    small = lc.arange(10, device=device)
    assert len(ForkingPickler.dumps(small)) > small.size * 8  # small ones go inline
    assert INLINE_BYTES < 400_000


def test_process_batches_leave_no_shared_memory_behind():
    before = own_segments()
    loader = DataLoader(Big(12, 5_000), batch_size=4, num_workers=2)  # 80 kB per batch: shared memory
    got = [(x.shape, y.tolist()) for x, y in loader]
    assert got == [((4, 5_000), [0, 1, 2, 3]), ((4, 5_000), [4, 5, 6, 7]), ((4, 5_000), [8, 9, 10, 11])]
    it = iter(loader)
    next(it)
    del it  # batches still in flight are read and their segments unlinked
    gc.collect()
    assert own_segments() - before == set()


# -- PyTorch's worker semantics -------------------------------------------------------------------------
def test_get_worker_info_and_worker_init_fn(worker_type):
    assert get_worker_info() is None  # not in a worker
    loader = DataLoader(
        WhoLoads(8), batch_size=2, num_workers=2, worker_type=worker_type, worker_init_fn=init_worker, seed=11
    )
    rows = [tuple(t.tolist() for t in batch) for batch in loader]
    ids = [r[1] for r in rows]
    assert ids == [[0, 0], [1, 1], [0, 0], [1, 1]]  # batch k goes to worker k % num_workers
    seeds = {r[1][0]: r[2][0] for r in rows}
    assert seeds[1] == seeds[0] + 1  # base seed + worker id
    assert [r[4] for r in rows] == [[100, 100], [101, 101], [100, 100], [101, 101]]  # set by worker_init_fn
    pids = {r[1][0]: r[3][0] for r in rows}
    if worker_type == "process":
        assert len(set(pids.values())) == 2 and os.getpid() not in pids.values()
    else:
        assert set(pids.values()) == {os.getpid()}


def test_process_workers_run_one_thread_each_as_pytorchs_do():
    before = lc.get_num_threads()
    lc.set_num_threads(2)
    try:
        loader = DataLoader(Threads(), batch_size=2, num_workers=2, worker_type="process")
        assert [b.tolist() for b in loader] == [[1, 1], [1, 1]]
        assert lc.get_num_threads() == 2  # the training process keeps its setting
    finally:
        lc.set_num_threads(before)


def test_process_workers_are_seeded_from_the_loader():
    def run(seed: int) -> list[list[list[float]]]:
        loader = DataLoader(RandomDraws(8), batch_size=2, num_workers=2, seed=seed)
        return [[t.tolist() for t in batch] for batch in loader]

    a, b = run(5), run(5)
    assert a == b  # a seeded run repeats exactly
    for source in range(3):  # Python's random, Lucid's RNG, NumPy's global RNG
        assert a[0][source] != a[1][source]  # workers 0 and 1 draw different numbers
    assert run(6) != a


def test_iterable_dataset_sharded_through_worker_info(worker_type):
    loader = DataLoader(ShardedStream(10), batch_size=2, num_workers=2, worker_type=worker_type)
    got = [b.tolist() for b in loader]
    # worker 0 streams 0,2,4,6,8 and worker 1 streams 1,3,5,7,9; batches alternate between them
    assert got == [[0, 2], [1, 3], [4, 6], [5, 7], [8], [9]]
    assert [b.tolist() for b in loader] == got  # reusable


def test_unsharded_iterable_dataset_is_read_whole_by_every_worker(worker_type):
    got = [y.tolist() for _, y in DataLoader(Stream(5), batch_size=2, num_workers=2, worker_type=worker_type)]
    assert got == [[0, 1], [0, 1], [2, 3], [2, 3], [4], [4]]  # as in PyTorch: shard with get_worker_info


def test_persistent_workers_are_kept_between_epochs(worker_type):
    loader = DataLoader(Pids(8), batch_size=2, num_workers=2, worker_type=worker_type, persistent_workers=True)
    first = {p for b in loader for p in b.tolist()}
    it = iter(loader)
    next(it)  # leave an epoch early: its late batches must not leak into the next one
    second = [b.tolist() for b in loader]
    assert len(second) == 4
    assert {p for b in second for p in b} == first
    if worker_type == "process":
        assert len(first) == 2
    del loader, it
    gc.collect()


def test_persistent_iterable_dataset_restarts_each_epoch(worker_type):
    loader = DataLoader(ShardedStream(6), batch_size=2, num_workers=2, worker_type=worker_type, persistent_workers=True)
    assert [b.tolist() for b in loader] == [[0, 2], [1, 3], [4], [5]]
    assert [b.tolist() for b in loader] == [[0, 2], [1, 3], [4], [5]]


def test_prefetch_factor_bounds_the_work_in_flight():
    seen: list[int] = []
    lock = threading.Lock()

    class Recording(Numbers):
        def __getitem__(self, i):
            with lock:
                seen.append(i)
            return super().__getitem__(i)

    it = iter(DataLoader(Recording(100), batch_size=1, num_workers=2, worker_type="thread", prefetch_factor=3))
    next(it)
    time.sleep(0.1)
    with lock:
        assert max(seen) == 6  # batch 0 taken, then 2 * 3 in flight
    it.close()


def test_prefetch_overlaps_the_callers_work():
    it = iter(DataLoader(Pids(6, sleep=0.2), batch_size=1, num_workers=2))
    next(it)
    time.sleep(2.0)  # the caller computes; the workers load batches 1-4 meanwhile (0.4 s, slack for a loaded machine)
    t0 = time.perf_counter()
    next(it), next(it)
    assert time.perf_counter() - t0 < 0.15  # loading them now would take 0.2 s at least
    it.close()


def test_timeout_raises_instead_of_waiting(worker_type):
    loader = DataLoader(Pids(4, sleep=1.5), batch_size=1, num_workers=1, worker_type=worker_type, timeout=0.2)
    it = iter(loader)
    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match=r"timed out: no batch from worker 0 in 0.2 s"):
        next(it)
    assert time.perf_counter() - t0 < 1.2
    deadline = time.monotonic() + 10  # a thread cannot be stopped mid-sample: it ends after it
    while worker_threads() and time.monotonic() < deadline:
        time.sleep(0.05)


# -- faults ------------------------------------------------------------------------------------------
def test_worker_exception_is_reraised_with_its_index_and_traceback(worker_type):
    loader = DataLoader(Jittery(20, fail_at=13), batch_size=4, num_workers=2, worker_type=worker_type)
    with pytest.raises(ValueError) as info:
        list(loader)
    assert type(info.value) is ValueError
    head, rest = str(info.value).split("\n", 1)
    assert re.fullmatch(
        rf"Caught ValueError in DataLoader worker {worker_type} 1( \(pid \d+\))? while loading dataset index 13\.", head
    )
    assert rest.startswith("Original Traceback (most recent call last):\n")
    assert 'in __getitem__\n    raise self.exc(f"bad sample {i}")' in rest
    assert rest.endswith("\nValueError: bad sample 13")
    # one block, as PyTorch prints it: the worker's traceback inside the message, not a second chained one
    assert info.value.__cause__ is None and info.value.__suppress_context__
    printed = "".join(traceback.format_exception(info.value))
    assert printed.count("in __getitem__") == 1
    assert printed.count("Traceback (most recent call last)") == 2  # the loop's, then the worker's


def test_worker_exception_with_unusual_constructor_becomes_worker_error(worker_type):
    import lucid_data

    with pytest.raises(RuntimeError) as info:
        list(DataLoader(Jittery(6, fail_at=2, exc=odd_error), batch_size=2, num_workers=2, worker_type=worker_type))
    assert isinstance(info.value, lucid_data.WorkerError)
    assert info.value.type_name == "worker_datasets.OddError"
    msg = str(info.value)
    assert re.match(r"Caught OddError in DataLoader worker .* while loading dataset index 2\.\nOriginal Traceback", msg)
    assert msg.endswith("OddError: (7, 'bad sample 2')")


def test_exception_of_a_local_class_keeps_its_type_in_threads_only(worker_type):
    import lucid_data

    with pytest.raises(Exception) as info:
        list(DataLoader(LocalFailure(4), batch_size=2, num_workers=1, worker_type=worker_type))
    if worker_type == "thread":
        assert type(info.value).__qualname__ == "LocalFailure.__getitem__.<locals>.UnpicklableError"
    else:  # a class local to a function cannot be found in the main process
        assert isinstance(info.value, lucid_data.WorkerError)
        assert info.value.type_name.endswith("<locals>.UnpicklableError")
    assert str(info.value).startswith("Caught UnpicklableError in DataLoader worker")
    assert "UnpicklableError: made in a function" in str(info.value)


def test_key_error_message_stays_readable(worker_type):
    # KeyError shows repr(message): without care, the traceback would print on one line with \\n escapes
    loader = DataLoader(Jittery(6, fail_at=3, exc=KeyError), batch_size=2, num_workers=2, worker_type=worker_type)
    with pytest.raises(KeyError) as info:
        list(loader)
    msg = str(info.value)
    assert msg.startswith(f"Caught KeyError in DataLoader worker {worker_type} 1")
    assert "\nOriginal Traceback (most recent call last):\n" in msg and "\\n" not in msg
    assert msg.endswith("KeyError: 'bad sample 3'")


def test_collate_error_names_the_batch(worker_type):
    with pytest.raises(KeyError) as info:
        list(DataLoader(Jittery(4), batch_size=2, num_workers=1, worker_type=worker_type, collate_fn=broken_collate))
    msg = str(info.value)
    assert re.match(
        rf"Caught KeyError in DataLoader worker {worker_type} 0.* in collate_fn for dataset indices \[0, 1\]\.\n", msg
    )
    assert 'in broken_collate\n    raise KeyError("nope")' in msg and msg.endswith("KeyError: 'nope'")


def test_index_error_in_fast_path_names_the_batch(device, worker_type):
    ds = TensorDataset(lc.arange(5, device=device))
    with pytest.raises(IndexError, match=r"while loading the batch of dataset indices \[0, 9\]\.\n") as info:
        list(DataLoader(ds, batch_size=2, sampler=[0, 9], num_workers=2, worker_type=worker_type))
    assert str(info.value).endswith("IndexError: TensorDataset: index 9 is out of range for a dataset of size 5")


def test_worker_init_fn_error_is_reraised(worker_type):
    loader = DataLoader(Numbers(4), batch_size=2, num_workers=2, worker_type=worker_type, worker_init_fn=failing_init)
    with pytest.raises(OSError, match=r"^Caught OSError in DataLoader worker .*0.* in worker_init_fn\(0\)") as info:
        list(loader)
    msg = str(info.value)
    assert "in failing_init\n" in msg and msg.endswith("OSError: cannot open the shard of worker 0")


def test_iterable_dataset_error_names_the_batch(worker_type):
    with pytest.raises(RuntimeError, match=r"while loading batch 2 of the iterable dataset\.\n") as info:
        list(DataLoader(Stream(20, fail_at=7), batch_size=3, num_workers=1, worker_type=worker_type))
    assert str(info.value).endswith("RuntimeError: stream broke at 7")


def test_unpicklable_dataset_is_a_clear_error():
    loader = DataLoader(Numbers(4), batch_size=2, num_workers=1, collate_fn=lambda b: b)
    with pytest.raises(TypeError, match=r"process workers .* need a picklable dataset, collate_fn"):
        next(iter(loader))
    assert _labels(DataLoader(Numbers(4), batch_size=2, num_workers=1, worker_type="thread")) == [[0, 1], [2, 3]]


def test_worker_killed_by_a_signal_raises_instead_of_hanging():
    loader = DataLoader(Pids(12, kill_at=5), batch_size=2, num_workers=2)
    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match=r"DataLoader worker process 0 \(pid \d+\) was killed by SIGKILL"):
        list(loader)
    assert time.perf_counter() - t0 < 10


def _files_released(pid: int) -> bool:
    """Whether a killed process has closed its files (its end of the pipe): it is a zombie with no thread left.

    The group leader shows as a zombie while its other threads (a thread pool's) may still be exiting and
    holding the shared file table; a send then still lands in the socket.
    """
    try:
        if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
            return False
    except psutil.NoSuchProcess:
        return True
    try:
        return os.listdir(f"/proc/{pid}/task") == [str(pid)]
    except FileNotFoundError:  # reaped meanwhile, or no /proc (macOS: its zombies hold no threads)
        return True


def test_a_worker_dead_before_taking_its_next_task_is_reported_and_the_others_stop():
    # the pipe to a killed worker breaks as it exits, maybe before its exit code can be read: the loader
    # must still name the signal (not a BrokenPipeError) and stop the other worker
    it = iter(DataLoader(Numbers(40), batch_size=2, num_workers=2))
    next(it)
    victim = it._workers.processes[1]
    os.kill(victim.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and not _files_released(victim.pid):
        time.sleep(0.01)
    with pytest.raises(RuntimeError, match=r"DataLoader worker process 1 \(pid \d+\) was killed by SIGKILL"):
        for _ in range(40):
            it._workers.send(1, (10_000, it._epoch, [0]))
    it.close()


def _read_flag_for_ever(flag) -> None:
    while True:
        flag.is_set()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_worker_killed_while_reading_the_stop_flag_cannot_block_closing(method):
    # workers read the stop flag after every task; one SIGKILLed in the middle of a read must not leave
    # anything locked (a multiprocessing Event would keep its lock, and every close() would wait for ever)
    ctx = multiprocessing.get_context(method)
    flag = _workers._StopFlag(ctx)
    readers = [ctx.Process(target=_read_flag_for_ever, args=(flag,), daemon=True) for _ in range(4)]
    for p in readers:
        p.start()
    time.sleep(0.3 if method == "fork" else 2.0)  # reading in a loop by now
    for p in readers:
        os.kill(p.pid, signal.SIGKILL)
        p.join(5)
    setter = threading.Thread(target=flag.set, daemon=True)
    setter.start()
    setter.join(2.0)
    assert not setter.is_alive(), "setting the stop flag blocked on a lock held by a killed worker"
    assert flag.is_set()


# -- nothing left behind --------------------------------------------------------------------------------
def test_break_ends_the_workers(worker_type):
    pids: set[int] = set()
    for i, batch in enumerate(DataLoader(Pids(200), batch_size=2, num_workers=3, worker_type=worker_type)):
        pids.update(batch.tolist())
        if worker_type == "thread":
            assert worker_threads()  # they run while iterating
        if i == 4:
            break
    gc.collect()
    assert worker_threads() == []
    if worker_type == "process":
        assert len(pids) == 3 and gone(pids)


def test_garbage_collected_iterator_ends_the_workers(worker_type):
    it = iter(DataLoader(Pids(100), batch_size=2, num_workers=2, worker_type=worker_type))
    pids = set(next(it).tolist()) | set(next(it).tolist())
    del it
    gc.collect()
    assert worker_threads() == []
    if worker_type == "process":
        assert gone(pids)


def test_explicit_close_and_exhaustion_end_the_workers(worker_type):
    it = iter(DataLoader(Pids(10), batch_size=2, num_workers=2, worker_type=worker_type))
    next(it)
    it.close()
    with pytest.raises(StopIteration):
        next(it)
    assert len(list(DataLoader(Pids(4), batch_size=2, num_workers=2, worker_type=worker_type))) == 2


# -- a worker stuck in a sample ------------------------------------------------------------------------
@pytest.fixture
def stuck(tmp_path):
    """The marker file a stuck sample touches; at teardown stuck thread workers are let go (bounded wait)."""
    STUCK_RELEASE.clear()
    list(DataLoader(Numbers(2), num_workers=1))  # a worker has started once: a start-up is not what is timed
    yield tmp_path / "stuck"
    STUCK_RELEASE.set()
    wait_until(lambda: not worker_threads(), within=10.0)


def _leave_while_stuck(loader, how: str, marker: Path) -> float:
    """Leave the epoch (``break``, an exception in the loop, or dropping the iterator) while a worker is in
    a stuck sample; the seconds it took to get out."""
    if how == "del":
        it = iter(loader)
        next(it)
        assert wait_until(marker.exists)
        t0 = time.perf_counter()
        del it
        return time.perf_counter() - t0
    t0 = 0.0
    try:
        for _ in loader:
            assert wait_until(marker.exists)  # the worker is inside the stuck sample
            t0 = time.perf_counter()
            if how == "break":
                break
            raise ZeroDivisionError("the loop body failed")
    except ZeroDivisionError:
        pass
    return time.perf_counter() - t0


@pytest.mark.parametrize("how", ["break", "exception", "del"])
def test_leaving_while_a_worker_is_stuck_returns_within_the_timeout(worker_type, how, stuck):
    # a timeout long enough for the first batch on a loaded machine (the suite runs tests in parallel), short
    # against the stuck sample's 8 s
    loader = DataLoader(Stuck(20, stuck_at=1, marker=str(stuck)), num_workers=1, worker_type=worker_type, timeout=2.0)
    assert _leave_while_stuck(loader, how, stuck) < 3.5  # the sample would take 8 s
    if worker_type == "thread":  # abandoned: a daemon, named so, that exits after its sample
        assert [t.daemon and t.name.endswith("_abandoned") for t in worker_threads()] == [True]


def test_leaving_while_a_worker_is_stuck_takes_seconds_by_default(worker_type, stuck):
    # no timeout, and a process worker that ignores SIGTERM: it is killed after a short grace
    dataset = Stuck(20, stuck_at=1, marker=str(stuck), ignore_sigterm=True)
    loader = DataLoader(dataset, num_workers=2, worker_type=worker_type)
    assert _leave_while_stuck(loader, "break", stuck) < 3.0


# -- no shared memory left behind -----------------------------------------------------------------------
@needs_dev_shm
@pytest.mark.parametrize("how", ["break", "exception", "gc"])
def test_segments_are_unlinked_when_leaving_while_a_worker_holds_one(how, stuck):
    # sample 1's tensor waits in a segment while its worker is stuck sending it: terminated, it would leave it
    dataset = HoldsSegment(10, size=40_000, stuck_at=1, marker=str(stuck))
    loader = DataLoader(dataset, batch_size=None, num_workers=1, persistent_workers=how == "gc")
    held: set[str] = set()
    if how == "gc":  # the loader and its (persistent) iterator are garbage collected
        it = iter(loader)
        assert next(it)[1] == 0
        assert wait_until(stuck.exists)
        held = own_segments(it._workers.processes[0].pid)
        del it, loader
        gc.collect()
    else:
        with pytest.raises(ZeroDivisionError) if how == "exception" else contextlib.nullcontext():
            for x, label in loader:
                assert (x.shape, label) == ((40_000,), 0)
                assert wait_until(stuck.exists)
                held = own_segments()
                if how == "break":
                    break
                raise ZeroDivisionError
    assert len(held) == 1  # named after this process: lucid_<pid>_<worker pid>_...
    assert own_segments() == set()


@needs_dev_shm
def test_segments_of_a_worker_killed_while_holding_them_are_unlinked(stuck):
    it = iter(DataLoader(HoldsSegment(10, size=40_000, stuck_at=0, marker=str(stuck)), batch_size=None, num_workers=2))
    assert wait_until(stuck.exists)
    victim = it._workers.processes[0]
    assert wait_until(lambda: own_segments(victim.pid))
    os.kill(victim.pid, signal.SIGKILL)  # as the out-of-memory killer would
    with pytest.raises(RuntimeError, match=r"worker process 0 \(pid \d+\) was killed by SIGKILL"):
        next(it)
    assert own_segments() == set()  # its segment, and the batches worker 1 had sent


def test_segments_made_for_workers_that_never_start_are_unlinked():
    # the dataset's tensor goes into a segment as the worker's arguments are pickled; the lambda then fails
    loader = DataLoader(
        TensorDataset(lc.zeros(40_000)), num_workers=1, collate_fn=lambda b: b, multiprocessing_context="spawn"
    )
    with _shm.recording() as made, pytest.raises(TypeError, match="need a picklable dataset"):
        iter(loader)
    assert len(made) == 1
    assert not any(Path(SHM, name).exists() for name in made)


_SCRIPT = """
import os, sys, time
sys.path.insert(0, {here!r})
from lucid_data import DataLoader
from worker_datasets import Pids

if __name__ == "__main__":
    loader = DataLoader(Pids(1000, sleep=0.05), batch_size=1, num_workers=2)
    pids = set()
    for batch in loader:
        pids.update(batch.tolist())
        if len(pids) == 2:
            print("workers", *sorted(pids), flush=True)
            {then}
"""


def _run_until_workers_report(then: str) -> tuple[subprocess.Popen, set[int]]:
    script = textwrap.dedent(_SCRIPT).format(here=str(HERE), then=then)
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    line = proc.stdout.readline()
    assert line.startswith("workers"), (line, proc.stderr.read() if proc.poll() is not None else "")
    return proc, {int(p) for p in line.split()[1:]}


def test_ctrl_c_in_the_main_loop_ends_every_worker():
    proc, pids = _run_until_workers_report("time.sleep(0.2)")
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: the whole foreground group gets SIGINT
    _, err = proc.communicate(timeout=30)
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    assert gone(pids)


def test_workers_exit_when_the_main_process_is_killed():
    proc, pids = _run_until_workers_report("pass")
    proc.kill()  # no chance to clean up: the workers must notice on their own
    proc.communicate(timeout=30)
    assert gone(pids, within=10.0)


# -- arguments ----------------------------------------------------------------------------------------
def test_bad_worker_arguments_are_rejected():
    with pytest.raises(ValueError, match="worker_type must be one of"):
        DataLoader(Numbers(4), num_workers=2, worker_type="greenlet")
    with pytest.raises(ValueError, match="persistent_workers=True needs num_workers > 0"):
        DataLoader(Numbers(4), persistent_workers=True)
    with pytest.raises(ValueError, match="timeout must be a non-negative number"):
        DataLoader(Numbers(4), num_workers=1, timeout=-1)
    with pytest.raises(ValueError, match="multiprocessing_context 'teleport' is not available"):
        DataLoader(Numbers(4), num_workers=1, multiprocessing_context="teleport")
    with pytest.raises(TypeError, match="pin_memory must be a bool"):
        DataLoader(Numbers(4), pin_memory="yes")
    with pytest.raises(TypeError, match="worker_init_fn must be callable"):
        DataLoader(Numbers(4), num_workers=1, worker_init_fn=3)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_other_start_methods(method):
    # fork inherits the loader's objects (a lambda is fine); spawn (macOS's default) pickles like forkserver
    collate = (lambda batch: [i for _, i in batch]) if method == "fork" else None
    loader = DataLoader(Numbers(6), batch_size=2, num_workers=1, multiprocessing_context=method, collate_fn=collate)
    got = [b if method == "fork" else b[1].tolist() for b in loader]
    assert got == [[0, 1], [2, 3], [4, 5]]
