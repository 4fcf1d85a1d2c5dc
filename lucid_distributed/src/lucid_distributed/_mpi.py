"""The ``mpi`` communicator: MPI through mpi4py, for every backend whose arrays reach host memory.

NumPy-backed tensors go to MPI as they are (their own memory, no copy); other backends (MLX) are
copied to a host buffer once and the result is written back into the tensor. This module is the
only one of lucid_distributed that imports NumPy (mpi4py's buffers), and only when a group opens.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from typing import Any

import lucid_core
from lucid_core import Tensor

from ._communicator import Communicator, FlatGradients, ReduceOp, Work, write_into

#: seconds after MPI_Abort before the aborting rank exits by itself (``$LUCID_DIST_ABORT_BACKSTOP``, default 5)
_ABORT_BACKSTOP_S = float(os.environ.get("LUCID_DIST_ABORT_BACKSTOP", "5"))

INSTALL_HINT = "pip install mpi4py mpich (or: pip install 'lucid-distributed[mpi]')"


class MPICommunicator(Communicator):
    """A rank of ``MPI.COMM_WORLD`` (started by ``mpiexec -n N`` or ``lucid-run``; alone, a group of one)."""

    name = "mpi"

    def __init__(self, timeout: float | None = None, **options: Any) -> None:
        super().__init__(timeout, **options)
        try:
            from mpi4py import MPI
        except ImportError as exc:
            raise RuntimeError(f"the 'mpi' communicator needs mpi4py and an MPI library: {INSTALL_HINT}") from exc
        except Exception as exc:
            raise RuntimeError(
                f"the 'mpi' communicator could not start MPI ({type(exc).__name__}: {exc}); {INSTALL_HINT}"
            ) from exc
        import numpy

        self.MPI = MPI
        self.np = numpy
        self.comm = MPI.COMM_WORLD.Dup()  # our own context: user MPI traffic cannot match ours
        self.rank = self.comm.Get_rank()
        self.world_size = self.comm.Get_size()
        self._ops = {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
                     ReduceOp.MAX: MPI.MAX, ReduceOp.MIN: MPI.MIN}  # fmt: skip
        self._bool_ops = {ReduceOp.SUM: MPI.LOR, ReduceOp.MAX: MPI.LOR, ReduceOp.PRODUCT: MPI.LAND,
                          ReduceOp.MIN: MPI.LAND}  # fmt: skip

    # -- host buffers ---------------------------------------------------------------------------
    def _host(self, t: Tensor) -> tuple[Any, bool]:
        """A C-contiguous, writable host array with ``t``'s values, and whether it is ``t``'s own memory."""
        a = t._data
        np = self.np
        if type(a) is np.ndarray and a.flags.c_contiguous and a.flags.writeable:
            return a, True
        return np.array(t._device.backend.to_numpy(a), order="C", copy=True), False

    def _send_buffer(self, t: Tensor) -> Any:
        a = t._data
        if type(a) is self.np.ndarray and a.flags.c_contiguous:
            return a
        return self.np.ascontiguousarray(t._device.backend.to_numpy(a))

    def _op(self, op: ReduceOp, buf: Any) -> Any:
        """MPI's op (the process-group functions have checked that it fits the dtype)."""
        return self._bool_ops[op] if buf.dtype.kind == "b" else self._ops[op]

    def _work(self, req: Any, finish: Any, describe: str, keep: Any) -> Work:
        return Work(req.Test, finish, describe=describe, timeout=self.timeout, keep=keep)

    # -- float16: MPI has no 16-bit float type, so reduce in float32 and round once at the end --------
    def _widen(self, buf: Any) -> tuple[Any, bool]:
        if buf.dtype == self.np.float16:
            return buf.astype(self.np.float32), True
        return buf, False

    # -- DDP buckets ----------------------------------------------------------------------------
    def flat_gradients(self, params: Sequence[Tensor], as_view: bool = False) -> FlatGradients:
        # NumPy gradients always go through one persistent buffer: concatenating fresh arrays each step
        # (the base class) cost ~12 ms/step on the MLP benchmark; without views each gradient is copied out
        if params and all(type(p._data) is self.np.ndarray for p in params):
            return _HostBucket(params, self.np, as_view)
        return FlatGradients(params)

    # -- the process group's agreement check -------------------------------------------------------
    def gather_signatures(self, signature: Sequence[int], describe: str) -> list[tuple[int, ...]]:
        np = self.np
        mine = np.asarray(signature, dtype=np.int64)
        everyone = np.empty((self.world_size, mine.size), dtype=np.int64)
        req = self.comm.Iallgather(mine, everyone)  # non-blocking, so a missing peer times out instead of hanging
        self._work(req, None, describe, (mine, everyone)).wait()
        return [tuple(row) for row in everyone.tolist()]

    # -- operations -----------------------------------------------------------------------------
    def all_reduce(self, t: Tensor, op: ReduceOp) -> Work:
        buf, own = self._host(t)
        wide, widened = self._widen(buf)
        mop = self._op(op, wide)
        req = self.comm.Iallreduce(self.MPI.IN_PLACE, wide, mop)
        n = self.world_size

        def finish() -> None:
            if op is ReduceOp.AVG:
                self.np.divide(wide, n, out=wide, casting="unsafe")
            if widened:
                buf[...] = wide
            if not own:
                write_into(t, buf)

        return self._work(req, finish, "all_reduce", (buf, wide))

    def broadcast(self, t: Tensor, src: int) -> Work:
        buf, own = self._host(t)
        req = self.comm.Ibcast(buf, root=src)
        receives = self.rank != src

        def finish() -> None:
            if receives and not own:
                write_into(t, buf)

        return self._work(req, finish, f"broadcast from rank {src}", buf)

    def all_gather_into_tensor(self, out: Tensor, t: Tensor) -> Work:
        send = self._send_buffer(t)
        recv, own = self._host(out)
        req = self.comm.Iallgather(send, recv)

        def finish() -> None:
            if not own:
                write_into(out, recv)

        return self._work(req, finish, "all_gather_into_tensor", (send, recv))

    def reduce_scatter_tensor(self, out: Tensor, t: Tensor, op: ReduceOp) -> Work:
        send, _ = self._widen(self._send_buffer(t))
        recv, own = self._host(out)
        wide, widened = self._widen(recv)
        mop = self._op(op, send)
        req = self.comm.Ireduce_scatter_block(send, wide, mop)
        n = self.world_size

        def finish() -> None:
            if op is ReduceOp.AVG:
                self.np.divide(wide, n, out=wide, casting="unsafe")
            if widened:
                recv[...] = wide
            if not own:
                write_into(out, recv)

        return self._work(req, finish, "reduce_scatter_tensor", (send, recv, wide))

    def send(self, t: Tensor, dst: int, tag: int) -> Work:
        buf = self._send_buffer(t)
        return self._work(self.comm.Isend(buf, dest=dst, tag=tag), None, f"send to rank {dst}", buf)

    def recv(self, t: Tensor, src: int, tag: int) -> Work:
        buf, own = self._host(t)

        def finish() -> None:
            if not own:
                write_into(t, buf)

        return self._work(self.comm.Irecv(buf, source=src, tag=tag), finish, f"recv from rank {src}", buf)

    def barrier(self) -> Work:
        return self._work(self.comm.Ibarrier(), None, "barrier", None)

    def abort(self, code: int = 1) -> None:
        time.sleep(0.1)  # let the traceback reach the launcher's output first
        # MPI_Abort asks the launcher to kill every rank; should that request stall (seen once in CI, on a
        # loaded machine), this rank still exits: the launcher then ends the job on a rank's early exit
        backstop = threading.Timer(_ABORT_BACKSTOP_S, os._exit, (code,))
        backstop.daemon = True
        backstop.start()
        self.comm.Abort(code)

    def close(self) -> None:
        self.comm.Free()


class _HostBucket(FlatGradients):
    """A bucket of NumPy gradients in one persistent host buffer (with ``as_view``, PyTorch's
    ``gradient_as_bucket_view``; without, the reduced gradients are copied out of it).

    Each gradient is copied once into its piece of the buffer as it is ready (the only copy: the
    buffer's pages stay mapped from step to step, unlike a fresh concatenation), MPI reduces the
    buffer in place, and the parameters' ``.grad`` become views of it. Those views are overwritten by
    the next synchronized backward, as in PyTorch: keep a ``.clone()`` to hold on to a gradient.
    """

    def __init__(self, params: Sequence[Tensor], np: Any, as_view: bool = True) -> None:
        super().__init__(params)
        self.np = np
        self.as_view = as_view
        dtype = params[0]._data.dtype
        self.buffer = np.zeros(sum(p.size for p in params), dtype=dtype)
        self.views: list[Any] = []
        off = 0
        for p in params:
            self.views.append(self.buffer[off : off + p.size].reshape(p.shape))
            off += p.size
        self.device = params[0].device

    def put(self, i: int, grad: Tensor | None) -> None:
        view = self.views[i]
        if grad is None:
            view.fill(0)
            return
        a = grad._data
        if a is view:  # already this bucket's view (a gradient kept from the last step)
            return
        if type(a) is not self.np.ndarray:
            a = grad._device.backend.to_numpy(a)
        self.np.copyto(view, a)

    def flat(self) -> Tensor:
        return lucid_core.asarray(self.buffer, device=self.device)  # no copy: MPI reduces the buffer in place

    def unpack(self) -> list[Tensor]:
        # fresh tensors over the views each step: an in-place write that rebound an earlier one's data
        # (NumPy views decline in-place fast paths) must not detach the next step's gradient from the buffer
        if not self.as_view:  # PyTorch's default: each .grad its own memory, the buffer reused next step
            return [lucid_core.asarray(v.copy(), device=self.device) for v in self.views]
        return [lucid_core.asarray(v, device=self.device) for v in self.views]
