"""``DataLoader``: batches from a dataset, in order or shuffled, optionally prefetched by worker threads."""

from __future__ import annotations

import itertools
import queue
import random
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import lucid_core as lc

from ._collate import default_collate
from ._rng import check_seed
from .dataset import ConcatDataset, IterableDataset, StackDataset, Subset, TensorDataset, normalize_index
from .sampler import BatchSampler, RandomSampler, SequentialSampler, check_positive_int

__all__ = ["DataLoader"]

WORKER_THREAD_PREFIX = "lucid_data_worker"


class _WorkerError(Exception):
    """Carries an exception raised while loading, and what was being loaded, from a worker to the main thread."""

    def __init__(self, exc: BaseException, where: str) -> None:
        super().__init__(where)
        self.exc, self.where = exc, where


def _reraise(failure: _WorkerError) -> None:
    """Raise the worker's exception in the calling thread, same type where possible, naming what failed."""
    exc = failure.exc
    msg = f"{exc} [raised in a DataLoader worker thread while loading {failure.where}]"
    try:
        new = type(exc)(msg)
    except TypeError:  # an exception type whose constructor takes other arguments
        new = RuntimeError(f"{type(exc).__name__}: {msg}")
    raise new from exc


def _tensors_in(obj: Any, found: list[lc.Tensor]) -> list[lc.Tensor]:
    """Every tensor in a (nested) batch or in the tensor datasets a dataset wraps."""
    if isinstance(obj, lc.Tensor):
        found.append(obj)
    elif isinstance(obj, TensorDataset):
        found.extend(obj.tensors)
    elif isinstance(obj, Subset):
        _tensors_in(obj.dataset, found)
    elif isinstance(obj, (ConcatDataset, StackDataset)):
        _tensors_in(obj.datasets, found)
    elif isinstance(obj, dict):
        for v in obj.values():
            _tensors_in(v, found)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _tensors_in(v, found)
    return found


_TENSOR_HOLDERS = (lc.Tensor, TensorDataset, Subset, ConcatDataset, StackDataset)


def _evaluated(batch: Any) -> Any:
    """``batch`` with its lazy tensors computed: a worker must finish its own work (MLX arrays can only be
    evaluated in the thread that built them), and prefetching is only useful if the work is done."""
    tensors = _tensors_in(batch, [])
    if tensors:
        lc.eval(*tensors)
    return batch


def _tensor_gather(dataset: Any) -> Callable[[list[int]], Any] | None:
    """A function loading a whole batch with one indexing op per tensor, when that equals per-sample collation.

    Only for exact ``TensorDataset`` (and ``Subset`` of one): subclasses may override ``__getitem__``.
    """
    if type(dataset) is TensorDataset:
        n = len(dataset)

        def gather(indices: list[int]) -> tuple[Any, ...]:
            idx = [normalize_index(i, n, "TensorDataset") for i in indices]
            return tuple(t[idx] for t in dataset.tensors)

        return gather
    if type(dataset) is Subset:
        inner = _tensor_gather(dataset.dataset)
        if inner is None:
            return None
        sub = dataset

        def gather_subset(indices: list[int]) -> Any:
            m = len(sub.indices)
            return inner([sub.indices[normalize_index(i, m, "Subset")] for i in indices])

        return gather_subset
    return None


class DataLoader:
    """Iterate over ``dataset`` in batches; every ``iter(loader)`` is a new epoch (reshuffled when ``shuffle``).

    Args:
        dataset: a map-style ``Dataset`` (``__getitem__`` + ``__len__``) or an ``IterableDataset``.
        batch_size: samples per batch; ``None`` yields single samples (passed through ``collate_fn`` if given).
        shuffle: a new random order every epoch (map-style only).
        sampler: the indices to visit (an iterable of ints); excludes ``shuffle``.
        batch_sampler: yields lists of indices; excludes ``batch_size``, ``shuffle``, ``sampler``, ``drop_last``.
        collate_fn: turns a list of samples into a batch (default ``default_collate``).
        drop_last: drop the last batch when it is shorter than ``batch_size``.
        seed: seeds the shuffle (mixed with the epoch number: each epoch differs, a new loader with the same
            seed repeats them); without it each epoch draws a seed from ``lucid_core.host_rng()``, so
            ``lucid_core.manual_seed`` makes runs reproducible. ``generator``: a ``random.Random`` instead.
        num_workers: with ``> 0``, that many background threads load the next batches while the caller
            computes. The order of batches is the same as with ``0``; a worker's exception is raised again
            here, naming the dataset index. Workers evaluate what they build (MLX arrays can only be evaluated
            in the thread that made them); a custom dataset holding lazy tensors should ``lucid_core.eval``
            them before iterating.
        prefetch_factor: batches loaded ahead per worker (at most ``num_workers * prefetch_factor`` in flight).
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int | None = 1,
        shuffle: bool = False,
        sampler: Iterable[int] | None = None,
        batch_sampler: Iterable[list[int]] | None = None,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        drop_last: bool = False,
        seed: int | None = None,
        num_workers: int = 0,
        prefetch_factor: int = 2,
        generator: random.Random | None = None,
    ) -> None:
        if not isinstance(shuffle, bool):
            raise TypeError(f"DataLoader: shuffle must be a bool, got {shuffle!r}")
        if not isinstance(drop_last, bool):
            raise TypeError(f"DataLoader: drop_last must be a bool, got {drop_last!r}")
        if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers must be a non-negative integer, got {num_workers!r}")
        check_positive_int(prefetch_factor, "prefetch_factor", "DataLoader")
        check_seed(seed, generator, "DataLoader")
        if batch_size is not None:
            check_positive_int(batch_size, "batch_size", "DataLoader")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.collate_fn = default_collate if collate_fn is None else collate_fn
        self._auto_collate = collate_fn is None or collate_fn is default_collate
        self._iterable = isinstance(dataset, IterableDataset) or not hasattr(dataset, "__getitem__")

        if self._iterable:
            if not hasattr(dataset, "__iter__"):
                raise TypeError(f"DataLoader: dataset must be indexable or iterable, got {type(dataset).__name__}")
            for name, value in (("shuffle", shuffle), ("sampler", sampler), ("batch_sampler", batch_sampler)):
                if value not in (None, False):
                    raise ValueError(
                        f"DataLoader: {name} is not supported for an IterableDataset (it has no indices); "
                        "shuffle inside the dataset's __iter__ instead"
                    )
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "DataLoader: batch_sampler is mutually exclusive with batch_size, shuffle, sampler and drop_last"
                )
            batch_size = None
        elif batch_size is None and drop_last:
            raise ValueError("DataLoader: drop_last needs a batch_size; it is meaningless with batch_size=None")
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler is mutually exclusive with shuffle; shuffle inside the sampler")
        if not self._iterable and len(dataset) == 0:
            raise ValueError(f"DataLoader: the dataset ({type(dataset).__name__}) is empty; there is nothing to load")

        if not self._iterable and sampler is None:
            sampler = RandomSampler(dataset, seed=seed, generator=generator) if shuffle else SequentialSampler(dataset)
        if not self._iterable and batch_sampler is None and batch_size is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)  # type: ignore[arg-type]
        self.sampler: Iterable[int] | None = sampler
        self.batch_sampler: Iterable[list[int]] | None = batch_sampler
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.shuffle = shuffle
        self._gather = _tensor_gather(dataset) if self._auto_collate else None

    # -- loading ------------------------------------------------------------------------------------------
    def _fetch(self, indices: list[int]) -> Any:
        if self._gather is not None:
            return self._gather(indices)
        return self.collate_fn([self.dataset[i] for i in indices])

    def _fetch_in_worker(self, indices: list[int]) -> Any:
        if self._gather is not None:
            try:
                return _evaluated(self._gather(indices))
            except Exception as e:
                raise _WorkerError(e, f"the batch of dataset indices {indices}") from e
        samples = []
        for i in indices:
            try:
                samples.append(self.dataset[i])
            except Exception as e:
                raise _WorkerError(e, f"dataset index {i}") from e
        try:
            return _evaluated(self.collate_fn(samples))
        except Exception as e:
            raise _WorkerError(e, f"collate_fn for dataset indices {indices}") from e

    def _fetch_one(self, index: int) -> Any:
        sample = self.dataset[index]
        return sample if self.collate_fn is default_collate else self.collate_fn(sample)

    def _fetch_one_in_worker(self, index: int) -> Any:
        try:
            return _evaluated(self._fetch_one(index))
        except Exception as e:
            raise _WorkerError(e, f"dataset index {index}") from e

    def _iterable_batches(self) -> Iterator[Any]:
        it = iter(self.dataset)
        if self.batch_size is None:
            for sample in it:
                yield sample if self.collate_fn is default_collate else self.collate_fn(sample)
            return
        while True:
            chunk = list(itertools.islice(it, self.batch_size))
            if not chunk or (self.drop_last and len(chunk) < self.batch_size):
                return
            yield self.collate_fn(chunk)

    def __iter__(self) -> Iterator[Any]:
        depth = self.num_workers * self.prefetch_factor
        if self.num_workers > 0 and isinstance(self.dataset, _TENSOR_HOLDERS):
            # lazy tensors built in this thread cannot be evaluated by a worker: compute them here, once
            _evaluated(self.dataset)
        if self._iterable:
            if self.num_workers == 0:
                return self._iterable_batches()
            return _ThreadedStream(self._iterable_batches(), depth)
        if self.batch_sampler is not None:
            keys: Iterator[Any] = iter(self.batch_sampler)
            fetch, fetch_in_worker = self._fetch, self._fetch_in_worker
        else:
            keys = iter(self.sampler)  # type: ignore[arg-type]
            fetch, fetch_in_worker = self._fetch_one, self._fetch_one_in_worker
        if self.num_workers == 0:
            return map(fetch, keys)
        return _ThreadedMap(keys, fetch_in_worker, self.num_workers, depth)

    def __len__(self) -> int:
        """The number of batches per epoch (for an iterable dataset, only if it defines ``__len__``)."""
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)  # type: ignore[arg-type]
        return len(self.sampler)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return (
            f"DataLoader(dataset={type(self.dataset).__name__}, batch_size={self.batch_size}, "
            f"shuffle={self.shuffle}, drop_last={self.drop_last}, num_workers={self.num_workers})"
        )


class _ThreadedMap:
    """Runs ``fetch(key)`` for the keys ahead in a thread pool; yields results in key order.

    ``close()`` (also called at exhaustion, on error and when the iterator is garbage collected) cancels
    what is queued and joins the threads.
    """

    def __init__(self, keys: Iterator[Any], fetch: Callable[[Any], Any], num_workers: int, depth: int) -> None:
        self._keys = keys
        self._fetch = fetch
        self._depth = depth
        self._pending: deque[Future[Any]] = deque()
        self._pool: ThreadPoolExecutor | None = ThreadPoolExecutor(num_workers, WORKER_THREAD_PREFIX)
        self._fill()

    def _fill(self) -> None:
        while self._pool is not None and len(self._pending) < self._depth:
            key = next(self._keys, _DONE)
            if key is _DONE:
                return
            self._pending.append(self._pool.submit(self._fetch, key))

    def __iter__(self) -> _ThreadedMap:
        return self

    def __next__(self) -> Any:
        if not self._pending:
            self.close()
            raise StopIteration
        future = self._pending.popleft()
        try:
            batch = future.result()
        except _WorkerError as failure:
            self.close()
            _reraise(failure)
        except BaseException:
            self.close()
            raise
        self._fill()  # top up before handing the batch over, so loading overlaps the caller's work
        return batch

    def close(self) -> None:
        """Stop loading: cancel queued batches and join the worker threads."""
        pool, self._pool = getattr(self, "_pool", None), None
        for f in getattr(self, "_pending", ()):
            f.cancel()
        self._pending = deque()
        if pool is not None:
            # a worker thread cannot join itself (possible if garbage collection runs there)
            in_worker = threading.current_thread().name.startswith(WORKER_THREAD_PREFIX)
            pool.shutdown(wait=not in_worker, cancel_futures=True)

    def __del__(self) -> None:
        self.close()


_DONE = object()


def _put(q: queue.Queue[tuple[str, Any]], stop: threading.Event, item: tuple[str, Any]) -> bool:
    while not stop.is_set():
        try:
            q.put(item, timeout=0.05)
            return True
        except queue.Full:
            continue
    return False


def _produce(source: Iterator[Any], q: queue.Queue[tuple[str, Any]], stop: threading.Event) -> None:
    # a plain function, not a method: the thread must not keep its iterator alive, or dropping the
    # iterator (a `break` out of the loop) would never close it
    count = 0
    try:
        for batch in source:
            if not _put(q, stop, ("batch", _evaluated(batch))):
                return
            count += 1
    except BaseException as e:  # noqa: BLE001 - forwarded to the consuming thread, which re-raises it
        _put(q, stop, ("error", _WorkerError(e, f"batch {count} of the iterable dataset")))
        return
    _put(q, stop, ("done", None))


class _ThreadedStream:
    """Runs an iterator in one background thread, up to ``depth`` items ahead (iterators are not thread-safe)."""

    def __init__(self, source: Iterator[Any], depth: int) -> None:
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._finished = False
        self._thread: threading.Thread | None = threading.Thread(
            target=_produce,
            args=(source, self._queue, self._stop),
            name=f"{WORKER_THREAD_PREFIX}_stream",
            daemon=True,
        )
        self._thread.start()

    def __iter__(self) -> _ThreadedStream:
        return self

    def __next__(self) -> Any:
        if self._finished:
            raise StopIteration
        kind, value = self._queue.get()
        if kind == "batch":
            return value
        self.close()
        if kind == "error":
            _reraise(value)
        raise StopIteration

    def close(self) -> None:
        """Stop the producer thread and join it."""
        self._finished = True
        stop = getattr(self, "_stop", None)
        if stop is not None:
            stop.set()
        thread, self._thread = getattr(self, "_thread", None), None
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def __del__(self) -> None:
        self.close()
