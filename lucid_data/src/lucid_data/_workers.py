"""DataLoader workers, as threads or processes, with PyTorch's protocol.

The main side hands out tasks (a list of indices, one index, or "next batch" for an iterable dataset)
round-robin to the workers, at most ``num_workers * prefetch_factor`` ahead, and yields the results in task
order, so the batches and their order are those of ``num_workers=0``. Both kinds of worker run the same
loop (:func:`_worker_loop`); they differ only in transport: threads pass Python objects through queues,
processes pass pickles through a pipe each, with tensors' bytes in shared memory (see ``_shm``).
"""

from __future__ import annotations

import atexit
import ctypes
import importlib
import itertools
import multiprocessing
import os
import pickle
import queue
import random
import signal
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing import connection
from multiprocessing.reduction import ForkingPickler
from typing import Any

import lucid_core as lc

from . import _shm  # also registers the tensor reducer used by process workers
from ._collate import default_collate
from .dataset import ConcatDataset, StackDataset, Subset, TensorDataset, normalize_index

#: A DataLoader's ``multiprocessing_context``: None (the default start method), a start method's name, or a context.
MPContext = str | multiprocessing.context.BaseContext | None

__all__ = ["WorkerError", "WorkerInfo", "get_worker_info"]

WORKER_NAME_PREFIX = "lucid_data_worker"
WORKER_TYPES = ("process", "thread")


# -- inside a worker --------------------------------------------------------------------------------
@dataclass(frozen=True)
class WorkerInfo:
    """What a worker knows about itself (PyTorch's ``WorkerInfo``); see :func:`get_worker_info`.

    Args:
        id: this worker's number, ``0 <= id < num_workers``.
        num_workers: how many workers the loader runs.
        seed: this worker's seed (``base_seed + id``; the base is drawn from the loader's randomness each
            epoch). Process workers seed Python's ``random``, ``lucid_core.manual_seed`` (and NumPy's global
            generator when NumPy is loaded) with it; thread workers share the process's generators.
        dataset: the dataset as this worker sees it (a process worker's own copy).
    """

    id: int
    num_workers: int
    seed: int
    dataset: Any


_local = threading.local()


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker (thread or process): its :class:`WorkerInfo`; elsewhere ``None``.

    An ``IterableDataset`` uses it in ``__iter__`` to read only its share of the stream (every worker
    otherwise yields the whole stream), and ``worker_init_fn`` to set per-worker state.
    """
    return getattr(_local, "info", None)


# -- what a worker runs ------------------------------------------------------------------------------
_TENSOR_HOLDERS = (lc.Tensor, TensorDataset, Subset, ConcatDataset, StackDataset)


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


def evaluated(batch: Any) -> Any:
    """``batch`` with its lazy tensors computed: a worker thread must finish its own work (MLX arrays can
    only be evaluated in the thread that built them), and prefetching is only useful if the work is done."""
    tensors = _tensors_in(batch, [])
    if tensors:
        lc.eval(*tensors)
    return batch


def evaluate_dataset_tensors(dataset: Any) -> None:
    """Compute the lazy tensors of a tensor dataset here, once, before worker threads index them."""
    if isinstance(dataset, _TENSOR_HOLDERS):
        evaluated(dataset)


class WorkerError(RuntimeError):
    """A DataLoader worker's exception whose type cannot be rebuilt in the main process.

    Raised instead of the original when its class cannot be found here (a class local to a function, sent
    from a process) or does not take a single message (``UnicodeDecodeError``); the message is the same
    block as for any worker exception: ``Caught <type> in DataLoader worker ...`` and the worker's traceback.

    Attributes:
        type_name: the qualified name of the original exception's type.
    """

    def __init__(self, message: str, type_name: str = "") -> None:
        super().__init__(message)
        self.type_name = type_name


class _ReadableMessage(str):
    """A ``KeyError`` shows ``repr`` of its argument, which would print the traceback on one line with
    ``\\n`` escapes; this message's ``repr`` is itself (PyTorch does the same)."""

    def __repr__(self) -> str:
        return str(self)


def _find_type(module: str, qualname: str) -> type[BaseException] | None:
    """The exception class named ``module.qualname`` here, as unpickling would find it, or None."""
    if "<locals>" in qualname:
        return None
    if module == "__mp_main__":  # a spawned worker's name for the main script
        module = "__main__"
    try:
        found: Any = sys.modules.get(module) or importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except Exception:  # noqa: BLE001 - not importable here: reported as WorkerError
        return None
    return found if isinstance(found, type) and issubclass(found, BaseException) else None


class Failure:
    """An exception raised while loading, and what was being loaded, on its way to the main process.

    Only text and the exception's class cross (the exception itself may not pickle and holds the worker's
    frames): the class by name from a process, the traceback formatted where it was raised.

    Args:
        exc: the exception.
        where: what the worker was doing, completing "Caught ValueError in DataLoader worker process 0 ...":
            ``"while loading dataset index 13"``, ``"in collate_fn for dataset indices [0, 1]"``.
    """

    def __init__(self, exc: BaseException, where: str) -> None:
        cls = type(exc)
        self.exc_type: type[BaseException] | None = cls
        self.type_module, self.type_qualname = cls.__module__, cls.__qualname__
        self.type_name = cls.__name__
        self.where = where
        self.origin = "a DataLoader worker"
        self.traceback = "".join(traceback.format_exception(cls, exc, exc.__traceback__)).rstrip()

    def portable(self, origin: str) -> Failure:
        """Ready for pickling to the main process, which finds the class again by its name."""
        self.exc_type, self.origin = None, origin
        return self

    def message(self) -> str:
        """One block, as PyTorch prints it: ``Caught <type> in <worker> <where>.``, then the worker's traceback."""
        return f"Caught {self.type_name} in {self.origin} {self.where}.\nOriginal {self.traceback}"

    def exception(self) -> BaseException:
        """The exception to raise in the caller: the original type where it can be rebuilt, else WorkerError."""
        msg = self.message()
        cls = self.exc_type or _find_type(self.type_module, self.type_qualname)
        new = None
        if cls is not None:
            try:
                new = cls(_ReadableMessage(msg) if issubclass(cls, KeyError) else msg)
            except Exception:  # noqa: BLE001 - a constructor taking other arguments
                new = None
        qualified = f"{self.type_module}.{self.type_qualname}"
        if not isinstance(new, BaseException):
            return WorkerError(msg, qualified)
        try:
            shown = str(new)
        except Exception:  # noqa: BLE001 - a __str__ reading attributes its constructor did not set
            shown = ""
        if msg not in shown:  # a __str__ of its own hides the message: keep it readable in a note
            if not hasattr(new, "add_note"):  # Python 3.10
                return WorkerError(msg, qualified)
            new.add_note(msg)
        return new

    def reraise(self) -> None:
        """Raise :meth:`exception` in the caller (not chained: the worker's traceback is in the message)."""
        raise self.exception() from None


class _TracedError(Exception):
    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.where)
        self.failure = failure


def tensor_gather(dataset: Any) -> Callable[[list[int]], Any] | None:
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
        inner = tensor_gather(dataset.dataset)
        if inner is None:
            return None
        sub = dataset

        def gather_subset(indices: list[int]) -> Any:
            m = len(sub.indices)
            return inner([sub.indices[normalize_index(i, m, "Subset")] for i in indices])

        return gather_subset
    return None


class Fetcher:
    """How one batch is loaded: the dataset and the collation, the same in the main process and in workers.

    Picklable (it is what a process worker receives) when the dataset and ``collate_fn`` are.
    """

    def __init__(
        self,
        dataset: Any,
        collate_fn: Callable[[list[Any]], Any],
        batch_size: int | None,
        drop_last: bool,
        batched: bool,
    ) -> None:
        self.dataset = dataset
        self.batched = batched  # keys are lists of indices (a batch sampler), else single indices
        self.collate_fn = collate_fn
        self.batch_size = batch_size
        self.drop_last = drop_last
        self._gather = tensor_gather(dataset) if collate_fn is default_collate else None

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_gather"}  # a closure; rebuilt on arrival

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._gather = tensor_gather(self.dataset) if self.collate_fn is default_collate else None

    def fetch(self, key: Any) -> Any:
        """A batch for a list of indices, or one sample (``batch_size=None``) for an index."""
        if self.batched:
            if self._gather is not None:
                return self._gather(key)
            return self.collate_fn([self.dataset[i] for i in key])
        sample = self.dataset[key]
        return sample if self.collate_fn is default_collate else self.collate_fn(sample)

    def fetch_traced(self, key: Any) -> Any:
        """:meth:`fetch`, with a failure naming the dataset index (or the collate call) that raised."""
        if not self.batched:
            try:
                return self.fetch(key)
            except Exception as e:
                raise _TracedError(Failure(e, f"while loading dataset index {key}")) from e
        if self._gather is not None:
            try:
                return self._gather(key)
            except Exception as e:
                raise _TracedError(Failure(e, f"while loading the batch of dataset indices {key}")) from e
        samples = []
        for i in key:
            try:
                samples.append(self.dataset[i])
            except Exception as e:
                raise _TracedError(Failure(e, f"while loading dataset index {i}")) from e
        try:
            return self.collate_fn(samples)
        except Exception as e:
            raise _TracedError(Failure(e, f"in collate_fn for dataset indices {key}")) from e

    def iterable_batches(self) -> Iterator[Any]:
        """The batches of an iterable dataset, read from a new iterator of it."""
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


def _worker_loop(
    worker_id: int,
    num_workers: int,
    seed: int,
    fetcher: Fetcher,
    iterable: bool,
    worker_init_fn: Callable[[int], None] | None,
    recv: Callable[[], Any],
    send: Callable[[Any], None],
) -> None:
    """A worker's life: answer ``(task, epoch, key)`` messages with ``(task, epoch, kind, payload)`` until
    ``None``; ``kind`` is ``"ok"``, ``"error"`` (a :class:`Failure`) or ``"stop"`` (iterable exhausted)."""
    _local.info = WorkerInfo(worker_id, num_workers, seed, fetcher.dataset)
    init_failure = None
    if worker_init_fn is not None:
        try:
            worker_init_fn(worker_id)
        except Exception as e:  # noqa: BLE001 - reported for every task this worker gets
            init_failure = Failure(e, f"in worker_init_fn({worker_id}), before loading any sample")
    epoch, batches, count = None, iter(()), 0
    while True:
        msg = recv()
        if msg is None:
            return
        task, task_epoch, key = msg
        if init_failure is not None:
            send((task, task_epoch, "error", init_failure))
            continue
        try:
            if iterable:
                if task_epoch != epoch:  # a new epoch: a new pass over this worker's stream
                    epoch, batches, count = task_epoch, fetcher.iterable_batches(), 0
                try:
                    batch = next(batches)
                except StopIteration:
                    send((task, task_epoch, "stop", None))
                    continue
                except Exception as e:
                    raise _TracedError(Failure(e, f"while loading batch {count} of the iterable dataset")) from e
                count += 1
            else:
                batch = fetcher.fetch_traced(key)
        except _TracedError as traced:
            send((task, task_epoch, "error", traced.failure))
            continue
        send((task, task_epoch, "ok", batch))


# -- thread workers ----------------------------------------------------------------------------------
def _thread_main(
    worker_id: int,
    num_workers: int,
    seed: int,
    fetcher: Fetcher,
    iterable: bool,
    worker_init_fn: Callable[[int], None] | None,
    inbox: queue.SimpleQueue[Any],
    outbox: queue.SimpleQueue[Any],
    stop: threading.Event,
) -> None:
    def recv() -> Any:
        msg = inbox.get()
        while msg is not None and stop.is_set():  # stopping: skip the tasks still queued
            msg = inbox.get()
        return msg

    def send(msg: tuple[Any, ...]) -> None:
        task, epoch, kind, payload = msg
        if kind == "ok":
            try:
                payload = evaluated(payload)
            except Exception as e:  # noqa: BLE001 - a lazy op failing when computed
                kind, payload = "error", Failure(e, "while computing the lazy tensors of its batch")
        if kind == "error":
            payload.origin = f"DataLoader worker thread {worker_id}"
        outbox.put((task, epoch, kind, payload))

    try:
        _worker_loop(worker_id, num_workers, seed, fetcher, iterable, worker_init_fn, recv, send)
    except BaseException as e:  # noqa: BLE001 - e.g. SystemExit in a dataset: the main side must not wait forever
        outbox.put((None, None, "died", f"DataLoader worker thread {worker_id} stopped: {type(e).__name__}: {e}"))


class _ThreadWorkers:
    """``num_workers`` threads, each with its own task queue; results come back through one queue."""

    kind = "thread"

    def __init__(
        self,
        fetcher: Fetcher,
        iterable: bool,
        num_workers: int,
        base_seed: int,
        worker_init_fn: Callable[[int], None] | None,
        **_: Any,
    ) -> None:
        evaluate_dataset_tensors(fetcher.dataset)  # lazy tensors made here cannot be evaluated in a worker
        self._inboxes: list[queue.SimpleQueue[Any]] = [queue.SimpleQueue() for _ in range(num_workers)]
        self._outbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._threads = []
        for i in range(num_workers):
            t = threading.Thread(
                target=_thread_main,
                args=(
                    i,
                    num_workers,
                    base_seed + i,
                    fetcher,
                    iterable,
                    worker_init_fn,
                    self._inboxes[i],
                    self._outbox,
                    self._stop,
                ),
                name=f"{WORKER_NAME_PREFIX}_{i}",
                daemon=True,
            )
            t.start()
            self._threads.append(t)

    def send(self, worker_id: int, msg: Any) -> None:
        self._inboxes[worker_id].put(msg)

    def recv(self, timeout: float | None) -> Any:
        """The next message from any worker, or None after ``timeout`` seconds."""
        try:
            msg = self._outbox.get(timeout=timeout)
        except queue.Empty:
            return None
        if msg[2] == "died":
            raise RuntimeError(msg[3])
        return msg

    def close(self, grace: float) -> None:
        """Stop the threads: each finishes its sample and exits; wait ``grace`` seconds for them in all.

        A thread cannot be killed: one still inside a sample after that is abandoned (it is a daemon, so
        it does not keep the program alive); it exits after its sample and what it loaded is discarded.
        """
        self._stop.set()
        for inbox in self._inboxes:
            inbox.put(None)
        me = threading.current_thread()
        deadline = time.monotonic() + grace
        for t in self._threads:
            if t is not me:  # garbage collection may run in a worker thread; it cannot join itself
                t.join(max(0.0, deadline - time.monotonic()))
        for t in self._threads:
            if t.is_alive() and t is not me:
                t.name += "_abandoned"  # shows in threading.enumerate() until its sample returns
        self._threads = []


# -- process workers ---------------------------------------------------------------------------------
#: seconds a terminated worker process has to exit before it is killed
_TERMINATE_GRACE_S = 0.5


def default_start_method() -> str:
    """``fork`` on Linux (PyTorch's default there), ``spawn`` on macOS and Windows; ``forkserver`` once MLX is loaded.

    ``fork`` is what PyTorch users rely on: a script without ``if __name__ == "__main__":`` and datasets
    built from lambdas or local classes work, and workers start in milliseconds. NumPy's BLAS pool is safe
    to fork (OpenBLAS stops its threads around a fork). MLX's threads are not, and macOS cannot fork a
    process that has used Metal or Accelerate, so there each worker starts from a fresh interpreter (the
    script then needs the ``__main__`` guard and picklable datasets, as with PyTorch on macOS).
    """
    if sys.platform in ("darwin", "win32"):
        return "spawn"
    return "forkserver" if "mlx.core" in sys.modules else "fork"


_preload_set = False


def mp_context(spec: MPContext) -> multiprocessing.context.BaseContext:
    """The multiprocessing context for ``spec`` (None, a start method's name, or a context)."""
    global _preload_set
    if spec is None:
        spec = default_start_method()
    if isinstance(spec, str):
        if spec not in multiprocessing.get_all_start_methods():
            raise ValueError(
                f"DataLoader: multiprocessing_context {spec!r} is not available here; "
                f"expected one of {multiprocessing.get_all_start_methods()}"
            )
        ctx = multiprocessing.get_context(spec)
    elif isinstance(spec, multiprocessing.context.BaseContext):
        ctx = spec
    else:
        raise TypeError(
            f"DataLoader: multiprocessing_context must be a start method's name or a multiprocessing context, "
            f"got {type(spec).__name__}"
        )
    if ctx.get_start_method() == "forkserver" and not _preload_set:
        # the server imports these once and every worker forked from it starts with them loaded; an eager
        # default backend (NumPy: its import and SciPy's take most of a worker's start) is loaded there too
        backend = lc.get_default_device().backend
        if not backend.capabilities.get("lazy"):
            os.environ.setdefault("LUCID_DATA_PRELOAD_BACKENDS", backend.name)
        ctx.set_forkserver_preload(["__main__", "lucid_core", "lucid_data", "lucid_data._preload"])
        _preload_set = True
    return ctx


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(code).name
    except ValueError:
        return f"signal {code}"


def _process_main(
    worker_id: int,
    num_workers: int,
    seed: int,
    fetcher: Fetcher,
    iterable: bool,
    worker_init_fn: Callable[[int], None] | None,
    conn: connection.Connection,
    stop: Any,
    default_device: str,
) -> None:
    # Ctrl-C reaches the whole process group: the main process handles it and stops the workers
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # one thread per worker, as PyTorch's workers: num_workers processes each running a thread pool (the
    # NumPy backend's workers spin) would oversubscribe the cores the training process needs
    lc.set_num_threads(1)
    random.seed(seed)
    lc.manual_seed(seed)
    numpy = sys.modules.get("numpy")  # seeded only if this worker has it loaded (the dataset uses it)
    if numpy is not None:
        numpy.random.seed(seed % 2**32)
    lc.set_default_device(default_device)
    parent = multiprocessing.parent_process()
    if parent is not None:
        _shm.set_owner(parent.pid)  # name this worker's segments after its loader's process
    watch = [conn] if parent is None else [conn, parent.sentinel]
    origin = f"DataLoader worker process {worker_id} (pid {os.getpid()})"

    def recv() -> Any:
        while True:
            if conn not in connection.wait(watch):
                return None  # the main process is gone: stop
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                return None
            if msg is None or not stop.is_set():
                return msg
            # stopping: skip the tasks still queued, the main process no longer wants them

    def send(msg: tuple[Any, ...]) -> None:
        task, epoch, kind, payload = msg
        if kind == "error":
            payload = payload.portable(origin)
        with _shm.recording() as segments:
            try:
                # ForkingPickler: tensors go through shared memory (see _shm)
                data = ForkingPickler.dumps((task, epoch, kind, payload), pickle.HIGHEST_PROTOCOL)
            except Exception as e:  # noqa: BLE001 - an unpicklable batch: say so instead of dying
                _shm.unlink_segments(segments)  # made for the tensors pickled before the failure
                failure = Failure(e, "while sending its batch to the main process (is it picklable?)")
                data = ForkingPickler.dumps((task, epoch, "error", failure.portable(origin)))
        conn.send_bytes(data)

    try:
        _worker_loop(worker_id, num_workers, seed, fetcher, iterable, worker_init_fn, recv, send)
    except (BrokenPipeError, EOFError, ConnectionResetError):
        pass  # the main process closed its end: nothing left to do


class _StopFlag:
    """A flag shared with the worker processes that nobody can leave locked (``is_set``/``set`` as an Event's)."""

    def __init__(self, ctx: Any) -> None:
        self._value = ctx.RawValue(ctypes.c_bool, False)  # one byte in shared memory: reads and writes are atomic

    def is_set(self) -> bool:
        return bool(self._value.value)

    def set(self) -> None:
        self._value.value = True


class _ProcessWorkers:
    """``num_workers`` processes, each with its own pipe; results are pickles, tensors in shared memory."""

    kind = "process"

    def __init__(
        self,
        fetcher: Fetcher,
        iterable: bool,
        num_workers: int,
        base_seed: int,
        worker_init_fn: Callable[[int], None] | None,
        multiprocessing_context: MPContext = None,
    ) -> None:
        ctx = mp_context(multiprocessing_context)
        # with "fork" the dataset is inherited, not sent as bytes: its lazy arrays must not cross unevaluated
        evaluate_dataset_tensors(fetcher.dataset)
        if os.name == "posix":
            # one resource tracker for the main process and every worker: a segment created by a worker
            # and unlinked here is then forgotten, and one left by a killed worker is removed at exit
            from multiprocessing import resource_tracker

            resource_tracker.ensure_running()
        self.processes: list[Any] = []
        self._conns: list[connection.Connection] = []
        self._closed = False
        # the stop flag is one shared byte with no lock: a worker killed while reading an Event would hold
        # its lock for ever, and the next set() here (every close) would wait on it for ever
        self._stop = _StopFlag(ctx)
        # the dataset's tensors go to each worker in segments it unlinks once read; one that dies first
        # leaves them to us
        self._start_segments: list[str] = []
        device = str(lc.get_default_device())
        for i in range(num_workers):
            mine, theirs = ctx.Pipe(duplex=True)
            p = ctx.Process(
                target=_process_main,
                args=(i, num_workers, base_seed + i, fetcher, iterable, worker_init_fn, theirs, self._stop, device),
                name=f"{WORKER_NAME_PREFIX}_{i}",
                daemon=True,
            )
            try:
                with _shm.recording() as segments:
                    try:
                        p.start()
                    finally:
                        self._start_segments += segments
            except Exception as e:
                mine.close()
                theirs.close()
                self.close(0.0)
                if isinstance(e, (pickle.PicklingError, TypeError, AttributeError)):
                    raise TypeError(
                        f"DataLoader: process workers ({ctx.get_start_method()}) need a picklable dataset, "
                        f"collate_fn and worker_init_fn: {e}. Define them at module level, or use "
                        "worker_type='thread' (or multiprocessing_context='fork' where forking is safe)"
                    ) from e
                raise
            theirs.close()
            self.processes.append(p)
            self._conns.append(mine)

    def send(self, worker_id: int, msg: Any) -> None:
        try:
            self._conns[worker_id].send(msg)
        except (BrokenPipeError, ConnectionResetError, EOFError):
            # the pipe breaks as the process dies, before its exit code is there to read: wait for it
            self.processes[worker_id].join(timeout=5.0)
            self._raise_if_dead()
            raise

    def _raise_if_dead(self) -> None:
        for i, p in enumerate(self.processes):
            code = p.exitcode
            if code is not None:
                how = f"was killed by {_signal_name(-code)}" if code < 0 else f"exited with code {code}"
                hint = " (SIGKILL often means the system ran out of memory)" if code == -signal.SIGKILL else ""
                raise RuntimeError(
                    f"DataLoader worker process {i} (pid {p.pid}) {how} while loading{hint}; "
                    "the loader stopped its other workers"
                )

    def recv(self, timeout: float | None) -> Any:
        """The next message from any worker, or None after ``timeout`` seconds; RuntimeError if one died."""
        sentinels = [p.sentinel for p in self.processes]
        ready = connection.wait(self._conns + sentinels, timeout)
        for conn in self._conns:
            if conn in ready:
                try:
                    return pickle.loads(conn.recv_bytes())
                except (EOFError, OSError):
                    break  # its process died mid-message: reported below
        if ready:
            for p in self.processes:
                if p.sentinel in ready:
                    p.join(timeout=0.5)  # it ended: let its exit code settle
            self._raise_if_dead()
        return None

    def close(self, grace: float) -> None:
        """Ask every worker to stop, read what they still send (unlinking its shared memory), end them.

        They get ``grace`` seconds in all to finish their samples and exit; then the survivors are
        terminated, and killed if they are still there half a second later. Segments that no one will
        read (a worker stopped while sending, or killed holding some) are unlinked by name.
        """
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        for conn in self._conns:
            try:
                conn.send(None)
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + grace
        while any(p.is_alive() for p in self.processes) and time.monotonic() < deadline:
            self._drain(min(0.05, max(0.0, deadline - time.monotonic())))
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        deadline = time.monotonic() + _TERMINATE_GRACE_S
        for p in self.processes:
            p.join(max(0.0, deadline - time.monotonic()))
        for p in self.processes:
            if p.is_alive():
                p.kill()
                p.join(_TERMINATE_GRACE_S)  # still there (stuck in the kernel): not waited for any longer
        self._drain(0)  # what they sent before they ended
        for conn in self._conns:
            conn.close()
        self._conns = []
        owner = os.getpid()
        for p in self.processes:
            if p.pid is not None and not p.is_alive():
                _shm.remove_segments(owner, p.pid)
        _shm.unlink_segments(self._start_segments)

    def _drain(self, timeout: float) -> None:
        """Read and drop every message waiting (rebuilding a tensor unlinks its segment); ``timeout``: for the first."""
        conns = list(self._conns)
        ready = connection.wait(conns, timeout)
        while ready:
            for conn in ready:
                try:
                    pickle.loads(conn.recv_bytes())
                except Exception:  # noqa: BLE001 - a dead worker's pipe, or a backend gone at interpreter exit
                    conns.remove(conn)
            ready = connection.wait(conns, 0) if conns else []


# -- the main side ------------------------------------------------------------------------------------
#: seconds that closing a loader's iterator (``break``, an exception, garbage collection) gives its
#: workers to finish the samples they are in, when the loader has no shorter ``timeout``
CLOSE_GRACE_S = 1.0


def close_grace(timeout: float) -> float:
    """How long closing waits for workers still in a sample: the loader's ``timeout`` (if set) or
    :data:`CLOSE_GRACE_S`, whichever is shorter. A stuck process is then terminated; a stuck thread abandoned."""
    return min(timeout, CLOSE_GRACE_S) if timeout > 0 else CLOSE_GRACE_S


_open_iterators: weakref.WeakSet[WorkerIterator] = weakref.WeakSet()


@atexit.register
def _close_at_exit() -> None:
    # registered after multiprocessing's own exit hook, so it runs first: workers are asked to stop and
    # their batches in flight are read (unlinking their shared memory) before multiprocessing kills them
    for it in list(_open_iterators):
        it.close(wait=False)


class WorkerIterator:
    """Iterates one epoch over the workers' results, in task order; with ``persistent`` it is reused.

    ``close()`` (also called at exhaustion unless persistent, on an error and when the iterator is garbage
    collected, so on ``break``) stops the workers without waiting for a stuck one longer than the grace
    (:func:`close_grace`): processes are terminated, then killed, and leave no shared memory behind;
    threads still in a sample are abandoned (daemons that exit after it; what they load is discarded).
    """

    def __init__(
        self,
        worker_type: str,
        fetcher: Fetcher,
        iterable: bool,
        num_workers: int,
        prefetch_factor: int,
        base_seed: int,
        worker_init_fn: Callable[[int], None] | None,
        timeout: float,
        persistent: bool,
        multiprocessing_context: MPContext,
    ) -> None:
        pool_type = _ProcessWorkers if worker_type == "process" else _ThreadWorkers
        self._closed = True
        self._workers = pool_type(
            fetcher, iterable, num_workers, base_seed, worker_init_fn, multiprocessing_context=multiprocessing_context
        )
        self._closed = False
        _open_iterators.add(self)
        self._n = num_workers
        self._depth = num_workers * prefetch_factor
        self._iterable = iterable
        self._timeout = timeout
        self._grace = close_grace(timeout)
        self._persistent = persistent
        self._epoch = -1
        self._keys: Iterator[Any] = iter(())
        self._next_task = self._next_out = 0
        self._owner: dict[int, int] = {}  # task -> worker, for tasks not yet yielded
        self._results: dict[int, tuple[str, Any]] = {}
        self._active: list[bool] = []
        self._turn = itertools.cycle(range(num_workers))

    @property
    def closed(self) -> bool:
        """Whether the workers have been stopped (the iterator cannot be reused)."""
        return self._closed

    def start_epoch(self, keys: Iterator[Any] | None) -> WorkerIterator:
        """Begin a pass: ``keys`` are what to load (``None`` for an iterable dataset); returns self."""
        self._epoch += 1
        self._keys = itertools.repeat(None) if keys is None else keys
        self._owner, self._results = {}, {}
        self._next_out = self._next_task
        self._active = [True] * self._n
        self._turn = itertools.cycle(range(self._n))
        self._fill()
        return self

    def _fill(self) -> None:
        while not self._closed and len(self._owner) < self._depth and any(self._active):
            key = next(self._keys, _DONE)
            if key is _DONE:
                return
            worker = next(self._turn)
            while not self._active[worker]:
                worker = next(self._turn)
            try:
                self._workers.send(worker, (self._next_task, self._epoch, key))
            except BaseException:  # a worker died before taking its task: stop the others too
                self.close()
                raise
            self._owner[self._next_task] = worker
            self._next_task += 1

    def __iter__(self) -> WorkerIterator:
        return self

    def __next__(self) -> Any:
        while True:
            if self._closed or self._next_out not in self._owner:
                if not self._persistent:
                    self.close()
                raise StopIteration
            task = self._next_out
            if task not in self._results:
                self._wait_for(task)
                continue
            kind, payload = self._results.pop(task)
            worker = self._owner.pop(task)
            self._next_out += 1
            if kind == "stop":  # this worker's share of an iterable dataset is done
                self._active[worker] = False
                self._fill()
                continue
            if kind == "error":
                if not self._persistent:
                    self.close()
                payload.reraise()
            self._fill()  # top up before handing the batch over, so loading overlaps the caller's work
            return payload

    def _wait_for(self, task: int) -> None:
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        try:
            while task not in self._results:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise _TimeoutError(
                        f"DataLoader timed out: no batch from worker {self._owner[task]} in {self._timeout} s "
                        "(the timeout argument); is a sample stuck?"
                    )
                msg = self._workers.recv(remaining)
                if msg is not None and msg[1] == self._epoch and msg[0] in self._owner:
                    self._results[msg[0]] = (msg[2], msg[3])
                # else: a late result of an epoch left early; its tensors are already freed
        except BaseException as e:  # a dead worker, the timeout, or Ctrl-C while waiting: stop everything
            # after a timeout a worker thread may be stuck in its sample: do not wait for it
            self.close(wait=not isinstance(e, _TimeoutError))
            raise

    def close(self, wait: bool = True) -> None:
        """Stop the workers, giving them :func:`close_grace` seconds (none unless ``wait``) to finish their
        samples; further ``next`` raises StopIteration."""
        if getattr(self, "_closed", True):
            return
        self._closed = True
        self._owner, self._results = {}, {}
        self._workers.close(self._grace if wait else 0.0)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit modules may already be gone
            pass


_DONE = object()


class _TimeoutError(RuntimeError):
    """No batch within the loader's ``timeout``."""
