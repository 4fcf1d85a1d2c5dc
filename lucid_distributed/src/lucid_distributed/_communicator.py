"""What a communicator plugin implements, the reduction ops, and the work handle of a collective.

A communicator moves the data of Lucid tensors between the processes of one job. It is found by
name in lucid_core's plugin registry (``lucid_register_communicators``), like a backend. Every
operation starts non-blocking and returns a :class:`Work`; the process-group functions wait on it
unless the caller asked for ``async_op=True``.
"""

from __future__ import annotations

__all__ = [
    "Communicator", "ReduceOp", "Work", "write_into", "CommunicatorTimeoutError", "CollectiveMismatchError",
    "FlatGradients",
]  # fmt: skip

import enum
import os
import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import lucid_core
from lucid_core import Tensor

_yield = getattr(os, "sched_yield", lambda: time.sleep(0))


class ReduceOp(enum.Enum):
    """How ``all_reduce`` and ``reduce_scatter_tensor`` combine the ranks' values (PyTorch's names)."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MAX = "max"
    MIN = "min"


class CommunicatorTimeoutError(RuntimeError):
    """A collective did not complete within the process group's timeout (a rank stopped or diverged)."""


class CollectiveMismatchError(RuntimeError):
    """The ranks called a collective with different tensors (shape, dtype), ops or sources, or called
    different collectives; every rank raises it, and no data moved."""


class Work:
    """The handle of a started operation: ``wait()`` blocks until it is done and its result landed.

    ``test()`` says whether the transport finished (and drives its progress); ``finish()`` runs once
    afterwards to put the result into the user's tensors (an average's division, a host copy's write-back).
    """

    __slots__ = ("_done", "_finish", "_test", "describe", "keep", "timeout")

    def __init__(
        self,
        test: Callable[[], bool] | None = None,
        finish: Callable[[], None] | None = None,
        *,
        describe: str = "collective",
        timeout: float | None = None,
        keep: Any = None,
    ) -> None:
        self._test = test
        self._finish = finish
        self._done = False
        self.describe = describe
        self.timeout = timeout
        self.keep = keep  # buffers the transport still reads or writes: alive until done

    def is_completed(self) -> bool:
        """Whether the operation has finished (polling it also lets the transport make progress)."""
        if self._done:
            return True
        if self._test is not None and self._test():  # without a test, only wait() can tell
            self._complete()
            return True
        return False

    def _complete(self) -> None:
        self._done = True
        finish, self._finish, self._test, self.keep = self._finish, None, None, None
        if finish is not None:
            finish()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until done and the result is in the output tensors; raise after ``timeout`` seconds.

        The default timeout is the process group's (``init_process_group(timeout=...)``): a peer that
        stopped answering makes this rank fail with :class:`CommunicatorTimeoutError`, never hang.
        """
        if self._done:
            return True
        limit = self.timeout if timeout is None else timeout
        deadline = None if limit is None else time.monotonic() + limit
        test = self._test
        while test is not None and not test():
            _yield()  # a peer sharing this core gets to run (without it, polling is 3x slower when oversubscribed)
            if deadline is not None and time.monotonic() > deadline:
                raise CommunicatorTimeoutError(
                    f"lucid_distributed: {self.describe} did not complete within {limit:g} s; another rank "
                    "probably stopped, crashed or called a different collective"
                )
        self._complete()
        return True

    def then(self, finish: Callable[[], None]) -> Work:
        """A work that waits for this one, then runs ``finish`` (to post-process a result)."""

        def done() -> None:
            self._complete()
            finish()

        test = self.is_completed if self._test is not None else None
        return Work(test, done, describe=self.describe, timeout=self.timeout)

    @classmethod
    def completed(cls) -> Work:
        """An already finished work (synchronous transports, one-process groups)."""
        w = cls()
        w._done = True
        return w


def write_into(t: Tensor, value: Any) -> None:
    """Store ``value`` (a Tensor or host array of ``t``'s shape) into ``t`` in place, on any backend.

    The one place a collective writes a result into a user's tensor: through the public in-place API,
    so immutable backends (MLX) rebind the tensor's data and mutable ones write its memory.
    """
    if not isinstance(value, Tensor):
        value = lucid_core.asarray(value, device=t.device)
    with lucid_core.no_grad():
        t.copy_(value)


class FlatGradients:
    """One DDP bucket's gradients as one flat tensor, so the bucket travels in a single all-reduce.

    DDP stores each parameter's gradient with :meth:`put` as it is ready, all-reduces :meth:`flat`
    in place, and takes the reduced gradients back from :meth:`unpack`. This generic version
    concatenates the gradients into a fresh tensor at :meth:`flat` (one copy per step; immutable
    backends such as MLX need it) and hands back slices of it, so gradients of different steps never
    share memory. A communicator whose backend can alias memory (MPI with NumPy) returns a subclass
    that keeps one persistent flat buffer and writes each gradient straight into its piece of it
    (PyTorch's ``gradient_as_bucket_view``).
    """

    def __init__(self, params: Sequence[Tensor]) -> None:
        self.params = list(params)
        self.grads: list[Tensor | None] = [None] * len(self.params)

    def put(self, i: int, grad: Tensor | None) -> None:
        """Store parameter ``i``'s gradient (None: it has none this step, reduce zeros in its place)."""
        self.grads[i] = grad

    def flat(self) -> Tensor:
        """The bucket's gradients end to end in one 1-D tensor, ready to be all-reduced in place."""
        with lucid_core.no_grad():
            parts = [
                (lucid_core.zeros_like(p) if g is None else g).reshape(-1) for p, g in zip(self.params, self.grads)
            ]
            self._flat = lucid_core.concat(parts)  # a copy: the bucket is ours to overwrite
        self.grads = [None] * len(self.params)
        return self._flat

    def unpack(self) -> list[Tensor]:
        """The reduced gradients, one per parameter and of its shape (pieces of :meth:`flat`'s tensor)."""
        flat, off, out = self._flat, 0, []
        with lucid_core.no_grad():
            for p in self.params:
                out.append(flat[off : off + p.size].reshape(p.shape))
                off += p.size
        del self._flat
        return out


class Communicator:
    """Base class of a communicator plugin: one process's endpoint in a job of ``world_size`` ranks.

    Subclasses set ``name``, open the transport in ``__init__`` (importing its library there, so
    registering stays cheap) and implement the operations below, each returning a :class:`Work`.
    Tensors passed in are the user's; results go into them with :func:`write_into` or by writing the
    tensor's own host memory where the backend keeps it there.
    """

    name: ClassVar[str] = ""
    #: where the process-group functions put helper tensors (pickled objects, sizes); None: the default device
    device: ClassVar[str | None] = None
    rank: int = 0
    world_size: int = 1

    def __init__(self, timeout: float | None = None, **options: Any) -> None:
        if options:
            raise TypeError(f"communicator {self.name!r} takes no options {sorted(options)}")
        self.timeout = timeout

    def flat_gradients(self, params: Sequence[Tensor], as_view: bool = False) -> FlatGradients:
        """The flat buffer of one DDP bucket holding ``params``' gradients (see :class:`FlatGradients`).

        ``as_view=True`` asks for gradients written straight into one persistent buffer and handed
        back as views of it (no concatenation, no copy back) where the backend can alias memory; the
        base class always concatenates.
        """
        return FlatGradients(params)

    def gather_signatures(self, signature: Sequence[int], describe: str) -> list[tuple[int, ...]]:
        """Every rank's ``signature`` (a fixed number of integers), in rank order, within the group's timeout.

        The process group calls this before a collective to check that the ranks agree on it. This
        generic version all-gathers an int64 tensor; a communicator may override it with something
        cheaper (the MPI one all-gathers a NumPy buffer). ``describe`` names the collective in a timeout.
        """
        n = len(signature)
        mine = lucid_core.asarray(list(signature), dtype=lucid_core.int64, device=self.device)
        out = lucid_core.zeros((self.world_size * n,), dtype=lucid_core.int64, device=self.device)
        work = self.all_gather_into_tensor(out, mine)
        work.describe, work.timeout = describe, self.timeout
        work.wait()
        flat = [int(v) for v in out.tolist()]
        return [tuple(flat[r * n : (r + 1) * n]) for r in range(self.world_size)]

    def all_reduce(self, t: Tensor, op: ReduceOp) -> Work:
        """Combine ``t`` across ranks with ``op``; every rank ends with the result in ``t``."""
        raise NotImplementedError

    def broadcast(self, t: Tensor, src: int) -> Work:
        """Copy rank ``src``'s ``t`` into every rank's ``t``."""
        raise NotImplementedError

    def all_gather_into_tensor(self, out: Tensor, t: Tensor) -> Work:
        """Concatenate every rank's ``t`` (in rank order) into ``out`` (``world_size`` times ``t``'s size)."""
        raise NotImplementedError

    def reduce_scatter_tensor(self, out: Tensor, t: Tensor, op: ReduceOp) -> Work:
        """Reduce ``t`` across ranks with ``op``; rank ``r`` keeps the ``r``-th of ``world_size`` equal chunks."""
        raise NotImplementedError

    def send(self, t: Tensor, dst: int, tag: int) -> Work:
        """Send ``t`` to rank ``dst``."""
        raise NotImplementedError

    def recv(self, t: Tensor, src: int, tag: int) -> Work:
        """Receive into ``t`` from rank ``src``."""
        raise NotImplementedError

    def barrier(self) -> Work:
        """Complete when every rank has reached the barrier."""
        raise NotImplementedError

    def abort(self, code: int = 1) -> None:
        """End every rank of the job now (an uncaught error on one rank must not leave the others waiting)."""
        raise SystemExit(code)

    def close(self) -> None:
        """Release the transport (``destroy_process_group``)."""
