"""The ``local`` communicator: a group of one process, so a distributed script also runs alone."""

from __future__ import annotations

from lucid_core import Tensor

from ._communicator import Communicator, ReduceOp, Work, write_into


class LocalCommunicator(Communicator):
    """World size 1: every collective is the identity (what it computes over one rank)."""

    name = "local"

    def all_reduce(self, t: Tensor, op: ReduceOp) -> Work:
        return Work.completed()

    def broadcast(self, t: Tensor, src: int) -> Work:
        return Work.completed()

    def all_gather_into_tensor(self, out: Tensor, t: Tensor) -> Work:
        write_into(out, t.reshape(out.shape))
        return Work.completed()

    def reduce_scatter_tensor(self, out: Tensor, t: Tensor, op: ReduceOp) -> Work:
        self.all_reduce(t, op)
        write_into(out, t.reshape(out.shape))
        return Work.completed()

    def send(self, t: Tensor, dst: int, tag: int) -> Work:
        raise RuntimeError("send: a one-process group has no other rank to send to")

    def recv(self, t: Tensor, src: int, tag: int) -> Work:
        raise RuntimeError("recv: a one-process group has no other rank to receive from")

    def barrier(self) -> Work:
        return Work.completed()
