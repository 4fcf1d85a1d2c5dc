"""``DataLoader``: batches from a dataset, in order or shuffled, optionally loaded by worker processes or threads."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ._collate import default_collate
from ._rng import check_seed, worker_base_seed
from ._workers import WORKER_TYPES, Fetcher, MPContext, WorkerIterator, mp_context
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler, check_positive_int

__all__ = ["DataLoader"]


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
        num_workers: with ``> 0``, that many workers load the next batches while the caller computes. The
            batches and their order are those of ``num_workers=0`` (an iterable dataset is the exception: each
            worker iterates its own copy, see ``get_worker_info``). A worker's exception is raised again here
            with its type (``WorkerError``, a ``RuntimeError``, when the type cannot be rebuilt) and PyTorch's
            message: ``Caught ValueError in DataLoader worker process 0 (pid ...) while loading dataset index
            13.`` and the worker's traceback. A process worker runs Lucid's kernels on one thread
            (``lucid_core.set_num_threads(1)``, as PyTorch's workers do).
        prefetch_factor: batches loaded ahead per worker (at most ``num_workers * prefetch_factor`` in flight);
            default 2.
        worker_type: ``"process"`` (the default, as in PyTorch: pure-Python decoding and augmenting run on
            every core) or ``"thread"`` (no start-up cost and nothing to pickle; enough when loading waits on
            files or on array kernels that release the GIL, e.g. a ``TensorDataset``).
        worker_init_fn: called with the worker id in each worker before it loads anything.
        multiprocessing_context: start method (``"spawn"``, ``"forkserver"``, ``"fork"``) or context for process
            workers; default ``spawn`` on macOS and Windows, ``forkserver`` elsewhere (see README: never ``fork``
            by default, it is unsafe once threads run). Except with ``fork``, the dataset, ``collate_fn`` and
            ``worker_init_fn`` are pickled to each worker (tensors through shared memory).
        persistent_workers: keep the workers between epochs instead of starting them at every ``iter``.
        timeout: seconds to wait for a batch before raising (``0``: wait as long as it takes). Leaving an
            epoch early (``break``, an exception, dropping the iterator) waits at most this long (and at most
            one second) for workers still in a sample: a process is then terminated (killed if it ignores
            that), a thread, which cannot be stopped, is abandoned as a daemon and its result discarded.
        pin_memory: accepted for PyTorch code; a no-op (host memory is all there is on CPU and unified-memory
            devices; batches are made on their device directly).
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
        prefetch_factor: int | None = None,
        generator: random.Random | None = None,
        *,
        worker_type: str = "process",
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: MPContext = None,
        persistent_workers: bool = False,
        timeout: float = 0,
        pin_memory: bool = False,
    ) -> None:
        if not isinstance(shuffle, bool):
            raise TypeError(f"DataLoader: shuffle must be a bool, got {shuffle!r}")
        if not isinstance(drop_last, bool):
            raise TypeError(f"DataLoader: drop_last must be a bool, got {drop_last!r}")
        if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 0:
            raise ValueError(f"DataLoader: num_workers must be a non-negative integer, got {num_workers!r}")
        if prefetch_factor is None:
            prefetch_factor = 2
        check_positive_int(prefetch_factor, "prefetch_factor", "DataLoader")
        if worker_type not in WORKER_TYPES:
            raise ValueError(f"DataLoader: worker_type must be one of {WORKER_TYPES}, got {worker_type!r}")
        for name, flag in (("persistent_workers", persistent_workers), ("pin_memory", pin_memory)):
            if not isinstance(flag, bool):
                raise TypeError(f"DataLoader: {name} must be a bool, got {flag!r}")
        if persistent_workers and num_workers == 0:
            raise ValueError("DataLoader: persistent_workers=True needs num_workers > 0 (there is no worker to keep)")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
            raise ValueError(f"DataLoader: timeout must be a non-negative number of seconds, got {timeout!r}")
        if worker_init_fn is not None and not callable(worker_init_fn):
            raise TypeError(f"DataLoader: worker_init_fn must be callable, got {type(worker_init_fn).__name__}")
        if multiprocessing_context is not None and worker_type == "process" and num_workers > 0:
            mp_context(multiprocessing_context)  # a bad name fails here, not at the first epoch
        check_seed(seed, generator, "DataLoader")
        if batch_size is not None:
            check_positive_int(batch_size, "batch_size", "DataLoader")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.worker_type = worker_type
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.persistent_workers = persistent_workers
        self.timeout = float(timeout)
        self.pin_memory = pin_memory
        self.seed, self.generator = seed, generator
        self._epoch = 0
        self._persistent: WorkerIterator | None = None
        self.collate_fn = default_collate if collate_fn is None else collate_fn
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
        self._fetcher = Fetcher(dataset, self.collate_fn, batch_size, drop_last, batched=batch_sampler is not None)

    # -- loading ------------------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Any]:
        # drawn with or without workers, before the sampler draws, so both see the same random stream
        base_seed = worker_base_seed(self.seed, self.generator, self._epoch)
        self._epoch += 1
        if self._iterable:
            keys: Iterator[Any] | None = None
        else:
            # a batch sampler may yield tuples or ranges: a list is what marks a batch for the fetcher
            batches = self.batch_sampler
            keys = iter(self.sampler) if batches is None else map(list, batches)  # type: ignore[arg-type]
        if self.num_workers == 0:
            if keys is None:
                return self._fetcher.iterable_batches()
            return map(self._fetcher.fetch, keys)
        if self._persistent is not None and not self._persistent.closed:
            return self._persistent.start_epoch(keys)
        it = WorkerIterator(
            self.worker_type,
            self._fetcher,
            self._iterable,
            self.num_workers,
            self.prefetch_factor,
            base_seed,
            self.worker_init_fn,
            self.timeout,
            self.persistent_workers,
            self.multiprocessing_context,
        )
        if self.persistent_workers:
            self._persistent = it
        return it.start_epoch(keys)

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
            f"shuffle={self.shuffle}, drop_last={self.drop_last}, num_workers={self.num_workers}, "
            f"worker_type={self.worker_type!r})"
        )
