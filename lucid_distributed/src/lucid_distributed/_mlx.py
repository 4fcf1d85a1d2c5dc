"""The ``mlx`` communicator: MLX's own ``mx.distributed`` (ring over TCP, MPI, ...) for MLX tensors.

Start the job with ``mlx.launch`` (or ``lucid-run --backend mlx``). MLX arrays are immutable, so
results are written back by rebinding the tensor's data (:func:`write_into`). mx.distributed has
all_sum / all_max / all_min / all_gather / sum_scatter / send / recv; the other operations are
built from them (broadcast = a sum where only the source contributes, product = gather then prod).
"""

from __future__ import annotations

import os
from typing import Any

from lucid_core import Tensor

from ._communicator import Communicator, ReduceOp, Work, write_into


class MLXCommunicator(Communicator):
    """A rank of ``mx.distributed.init(backend=...)``; ``backend`` is MLX's (``"ring"``, ``"mpi"``, ``"any"``)."""

    name = "mlx"
    device = "mlx"

    def __init__(self, timeout: float | None = None, backend: str = "any", **options: Any) -> None:
        super().__init__(timeout, **options)
        try:
            import mlx.core as mx
        except ImportError as exc:
            raise RuntimeError("the 'mlx' communicator needs MLX: pip install lucid-backend-mlx") from exc
        self.mx = mx
        self.group = mx.distributed.init(strict=False, backend=backend)
        self.rank = self.group.rank()
        self.world_size = self.group.size()
        if self.world_size == 1 and "MLX_RANK" in os.environ:
            raise RuntimeError(
                f"the 'mlx' communicator found MLX_RANK={os.environ['MLX_RANK']} but mx.distributed (backend "
                f"{backend!r}) opened a group of one; check the hostfile mlx.launch wrote"
            )

    def _native(self, t: Tensor, what: str) -> Any:
        a = t._data
        if type(a) is not self.mx.array:
            raise TypeError(
                f"{what}: the 'mlx' communicator moves MLX tensors, this one is on {t.device}; move it with "
                ".to('mlx') or use init_process_group(backend='mpi')"
            )
        return a

    def _deliver(self, t: Tensor, result: Any, describe: str) -> Work:
        """Start computing ``result`` now and write it into ``t`` when waited for."""
        self.mx.async_eval(result)

        def finish() -> None:
            self.mx.eval(result)
            write_into(t, _wrap(t, result))

        return Work(None, finish, describe=describe, timeout=self.timeout)

    def _reduce(self, x: Any, op: ReduceOp) -> Any:
        mx, g = self.mx, self.group
        is_bool = x.dtype == mx.bool_
        if is_bool:
            x = x.astype(mx.uint8)
            op = ReduceOp.MAX if op in (ReduceOp.SUM, ReduceOp.MAX) else ReduceOp.MIN
        if op in (ReduceOp.SUM, ReduceOp.AVG):
            out = mx.distributed.all_sum(x, group=g)
            if op is ReduceOp.AVG:
                out = (out / self.world_size).astype(x.dtype)
        elif op is ReduceOp.MAX:
            out = mx.distributed.all_max(x, group=g)
        elif op is ReduceOp.MIN:
            out = mx.distributed.all_min(x, group=g)
        else:
            out = mx.prod(mx.distributed.all_gather(x[None], group=g), axis=0).astype(x.dtype)
        return out.astype(mx.bool_) if is_bool else out

    def all_reduce(self, t: Tensor, op: ReduceOp) -> Work:
        return self._deliver(t, self._reduce(self._native(t, "all_reduce"), op), "all_reduce")

    def broadcast(self, t: Tensor, src: int) -> Work:
        mx = self.mx
        x = self._native(t, "broadcast")
        mine = x if self.rank == src else mx.zeros_like(x)
        if x.dtype == mx.bool_:
            out = mx.distributed.all_max(mine.astype(mx.uint8), group=self.group).astype(mx.bool_)
        else:
            out = mx.distributed.all_sum(mine, group=self.group)
        return self._deliver(t, out, f"broadcast from rank {src}")

    def all_gather_into_tensor(self, out: Tensor, t: Tensor) -> Work:
        x = self._native(t, "all_gather_into_tensor")
        gathered = self.mx.distributed.all_gather(x.reshape(1, -1), group=self.group)
        return self._deliver(out, gathered.reshape(out.shape), "all_gather_into_tensor")

    def reduce_scatter_tensor(self, out: Tensor, t: Tensor, op: ReduceOp) -> Work:
        x = self._native(t, "reduce_scatter_tensor").reshape(self.world_size, -1)
        # reduce everything, keep our chunk: mx.distributed's sum_scatter is missing on the ring backend
        mine = self._reduce(x, op)[self.rank]
        return self._deliver(out, mine.reshape(out.shape), "reduce_scatter_tensor")

    def send(self, t: Tensor, dst: int, tag: int) -> Work:
        sent = self.mx.distributed.send(self._native(t, "send"), dst, group=self.group)
        self.mx.async_eval(sent)
        return Work(None, lambda: self.mx.eval(sent), describe=f"send to rank {dst}", timeout=self.timeout)

    def recv(self, t: Tensor, src: int, tag: int) -> Work:
        got = self.mx.distributed.recv_like(self._native(t, "recv"), src, group=self.group)
        return self._deliver(t, got, f"recv from rank {src}")

    def barrier(self) -> Work:
        self.mx.eval(self.mx.distributed.all_sum(self.mx.array(0), group=self.group))
        return Work.completed()

    def abort(self, code: int = 1) -> None:
        os._exit(code)  # the launcher sees the exit and stops the other ranks


def _wrap(like: Tensor, native: Any) -> Tensor:
    """A graph-free tensor on ``like``'s device holding ``native`` (no copy)."""
    out = like.detach()
    out._data = native
    return out
