"""Datasets for the DataLoader worker tests.

They live in their own module, importing nothing heavy (not pytest): a process worker unpickles them by
importing this module, and its start-up time is the cost of every process test.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from pathlib import Path

import lucid_core as lc
from lucid_data import Dataset, IterableDataset, get_worker_info


class Jittery(Dataset):
    """Samples take uneven time, so workers finish out of order; ``fail_at`` raises there."""

    def __init__(self, n: int, fail_at: int | None = None, exc: type[Exception] | None = None) -> None:
        self.n, self.fail_at, self.exc = n, fail_at, exc or ValueError

    def __getitem__(self, i: int):
        if i == self.fail_at:
            raise self.exc(f"bad sample {i}")
        time.sleep(0.002 * ((i * 7) % 3))
        return lc.full((2,), float(i)), i

    def __len__(self) -> int:
        return self.n


class OddError(Exception):
    """An exception whose constructor does not take a single message."""

    def __init__(self, code: int, detail: str) -> None:
        super().__init__(code, detail)


def odd_error(msg: str) -> OddError:
    return OddError(7, msg)


class Numbers(Dataset):
    """Python numbers only: the batch's tensors are made by the collate step."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __getitem__(self, i: int):
        return float(i) / 2, i

    def __len__(self) -> int:
        return self.n


class Big(Dataset):
    """Samples of ``size`` float32 values: batches far above the inline limit, so they use shared memory."""

    def __init__(self, n: int, size: int) -> None:
        self.n, self.size = n, size

    def __getitem__(self, i: int):
        return lc.full((self.size,), float(i)), i

    def __len__(self) -> int:
        return self.n


class WhoLoads(Dataset):
    """Each sample says which worker loaded it: (index, worker id, worker seed, pid, state from init)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __getitem__(self, i: int):
        info = get_worker_info()
        assert info is not None and info.dataset is not None
        return i, info.id, info.seed, os.getpid(), getattr(INIT_STATE, "value", -1)

    def __len__(self) -> int:
        return self.n


class Threads(Dataset):
    """Each sample is the number of threads Lucid's kernels may use where it was loaded."""

    def __getitem__(self, i: int):
        return lc.get_num_threads()

    def __len__(self) -> int:
        return 4


INIT_STATE = threading.local()


def init_worker(worker_id: int) -> None:
    """A worker_init_fn leaving a per-worker mark (thread-local, so it works for threads too)."""
    INIT_STATE.value = 100 + worker_id


def failing_init(worker_id: int) -> None:
    raise OSError(f"cannot open the shard of worker {worker_id}")


class RandomDraws(Dataset):
    """Draws from Python's ``random``, Lucid's RNG and NumPy's global one: the per-worker seeds decide them."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __getitem__(self, i: int):
        import numpy

        return random.random(), lc.rand(1).item(), float(numpy.random.random())

    def __len__(self) -> int:
        return self.n


class NumpySamples(Dataset):
    """Samples as NumPy arrays (host data, as most real pipelines produce) and an int label."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __getitem__(self, i: int):
        import numpy

        return numpy.full((3, 4), i, dtype=numpy.float64), i

    def __len__(self) -> int:
        return self.n


class Pids(Dataset):
    """Returns the loading process's pid; ``sleep`` seconds per sample; ``kill_at`` kills the worker."""

    def __init__(self, n: int, sleep: float = 0.0, kill_at: int | None = None) -> None:
        self.n, self.sleep, self.kill_at = n, sleep, kill_at

    def __getitem__(self, i: int):
        if i == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(self.sleep)
        return os.getpid()

    def __len__(self) -> int:
        return self.n


class Stream(IterableDataset):
    """``0 .. n-1``, whole in every worker (not sharded), failing at ``fail_at``."""

    def __init__(self, n: int, fail_at: int | None = None) -> None:
        self.n, self.fail_at = n, fail_at

    def __iter__(self):
        for i in range(self.n):
            if i == self.fail_at:
                raise RuntimeError(f"stream broke at {i}")
            yield lc.asarray([float(i)]), i


class ShardedStream(IterableDataset):
    """``0 .. n-1`` split between the workers through ``get_worker_info`` (PyTorch's documented pattern)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


def broken_collate(batch):
    raise KeyError("nope")


class LocalFailure(Dataset):
    """Raises an exception whose class is local to ``__getitem__``: a process cannot send its type by name."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __getitem__(self, i: int):
        class UnpicklableError(Exception):
            pass

        raise UnpicklableError(f"made in a function, at sample {i}")

    def __len__(self) -> int:
        return self.n


#: set to let the stuck samples of thread workers return (a process worker's copy is never set: it is ended)
STUCK_RELEASE = threading.Event()


class Stuck(Dataset):
    """Sample ``stuck_at`` touches ``marker`` and then hangs for ``seconds`` (or until ``STUCK_RELEASE``);
    with ``ignore_sigterm`` a process worker ignores SIGTERM meanwhile, as some libraries' handlers make it."""

    def __init__(self, n: int, stuck_at: int, marker: str, seconds: float = 8.0, ignore_sigterm: bool = False) -> None:
        self.n, self.stuck_at, self.marker, self.seconds, self.ignore_sigterm = (
            n,
            stuck_at,
            marker,
            seconds,
            ignore_sigterm,
        )

    def __getitem__(self, i: int):
        if i == self.stuck_at:
            if self.ignore_sigterm and threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
            Path(self.marker).touch()
            STUCK_RELEASE.wait(self.seconds)
        return i

    def __len__(self) -> int:
        return self.n


class StallWhenSent:
    """Sending it from a worker (pickling it) touches ``marker`` and hangs for ``seconds``."""

    def __init__(self, marker: str, seconds: float) -> None:
        self.marker, self.seconds = marker, seconds

    def __reduce__(self):
        Path(self.marker).touch()
        time.sleep(self.seconds)
        return StallWhenSent, (self.marker, self.seconds)


class HoldsSegment(Dataset):
    """Samples of ``size`` float32 values (sent through shared memory); sending sample ``stuck_at`` hangs
    after its tensor went into a segment, so its worker holds a segment that no one has read."""

    def __init__(self, n: int, size: int, stuck_at: int, marker: str, seconds: float = 8.0) -> None:
        self.n, self.size, self.stuck_at, self.marker, self.seconds = n, size, stuck_at, marker, seconds

    def __getitem__(self, i: int):
        x = lc.full((self.size,), float(i))
        return (x, StallWhenSent(self.marker, self.seconds)) if i == self.stuck_at else (x, i)

    def __len__(self) -> int:
        return self.n
