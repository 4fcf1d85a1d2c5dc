"""PyTorch's process-group API over the registered communicators: init, rank, collectives.

One default group per process (``group=`` accepts only None). Every collective writes its result
into the tensors it is given, as ``torch.distributed`` does; ``async_op=True`` returns the
:class:`~lucid_distributed.Work` instead of waiting for it.
"""

from __future__ import annotations

__all__ = [
    "init_process_group", "is_available", "is_initialized", "get_rank", "get_world_size", "get_backend",
    "destroy_process_group", "barrier", "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor",
    "reduce_scatter_tensor", "send", "recv", "isend", "irecv", "all_gather_object", "broadcast_object_list",
    "default_timeout",
]  # fmt: skip

import datetime
import os
import pickle
import sys
from typing import Any

import lucid_core
from lucid_core import Tensor

from ._communicator import Communicator, ReduceOp, Work, write_into

#: environment variables a launcher sets, by communicator that understands them
_LAUNCHER_ENV = {
    "mpi": ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"),
    "mlx": ("MLX_RANK", "MLX_HOSTFILE"),
}


class _State:
    comm: Communicator | None = None
    excepthook: Any = None


_state = _State()


def default_timeout() -> float:
    """Seconds a collective may wait for its peers: ``$LUCID_DIST_TIMEOUT``, else 1800 (PyTorch's 30 min)."""
    return float(os.environ.get("LUCID_DIST_TIMEOUT", "1800"))


def is_available() -> bool:
    """True: the process-group API is always importable (a missing transport is reported at init)."""
    return True


def _detect_backend() -> str:
    for name in ("mlx", "mpi"):
        if any(v in os.environ for v in _LAUNCHER_ENV[name]):
            return name
    return "local"


def init_process_group(
    backend: str | None = None,
    *,
    timeout: float | datetime.timedelta | None = None,
    world_size: int | None = None,
    rank: int | None = None,
    **options: Any,
) -> None:
    """Join this process to the job's group through communicator ``backend`` (``"mpi"``, ``"mlx"``, a plugin).

    Without ``backend`` the launcher decides: ``mpiexec``/``lucid-run`` mean ``"mpi"``, ``mlx.launch``
    means ``"mlx"``, and a script started alone gets the ``"local"`` group of one process. Ranks and
    the world size come from the launcher; ``world_size``/``rank`` are checked against them if given.
    An uncaught exception on any rank then aborts the whole job (so no rank waits forever).
    """
    if _state.comm is not None:
        raise RuntimeError("init_process_group: the default process group is already initialized")
    name = _detect_backend() if backend is None else str(backend).lower()
    if name in ("nccl", "gloo"):
        raise ValueError(
            f"init_process_group: Lucid has no {name!r} communicator; use backend='mpi' (host memory, any "
            "backend) or 'mlx' (mx.distributed)"
        )
    available = lucid_core.communicators()
    cls = available.get(name)
    if cls is None:
        broken = "".join(f"\n  {e}" for e in lucid_core.communicator_errors())
        raise ValueError(
            f"init_process_group: no communicator named {name!r}; installed: {sorted(available) or 'none'}"
            + (f"; plugins that failed:{broken}" if broken else "")
        )
    if isinstance(timeout, datetime.timedelta):
        timeout = timeout.total_seconds()
    comm: Communicator = cls(timeout=default_timeout() if timeout is None else float(timeout), **options)
    for given, actual, what in ((world_size, comm.world_size, "world_size"), (rank, comm.rank, "rank")):
        if given is not None and given != actual:
            comm.close()
            raise ValueError(
                f"init_process_group: {what}={given} was given, but the launcher started this "
                f"process with {what}={actual}"
            )
    _state.comm = comm
    if comm.world_size > 1:
        _install_abort_on_error()


def _install_abort_on_error() -> None:
    """An uncaught exception on one rank ends every rank (as ``python -m mpi4py`` does), never a hang."""
    previous = sys.excepthook

    def hook(exc_type: Any, exc: BaseException, tb: Any) -> None:
        comm = _state.comm
        previous(exc_type, exc, tb)
        if comm is not None and not issubclass(exc_type, KeyboardInterrupt):
            sys.stderr.write(
                f"lucid_distributed: rank {comm.rank} of {comm.world_size} failed with {exc_type.__name__}; "
                "aborting the job so the other ranks do not wait for it\n"
            )
            sys.stderr.flush()
            comm.abort(1)

    _state.excepthook = previous
    sys.excepthook = hook


def _group(group: Any = None) -> Communicator:
    if group is not None:
        raise NotImplementedError("lucid_distributed has one process group per job: pass group=None")
    if _state.comm is None:
        raise RuntimeError(
            "Default process group has not been initialized, please make sure to call init_process_group."
        )
    return _state.comm


def is_initialized() -> bool:
    """Whether ``init_process_group`` has run (and ``destroy_process_group`` has not)."""
    return _state.comm is not None


def get_rank(group: Any = None) -> int:
    """This process's rank, 0 ... world_size - 1."""
    return _group(group).rank


def get_world_size(group: Any = None) -> int:
    """How many processes the job has."""
    return _group(group).world_size


def get_backend(group: Any = None) -> str:
    """The communicator's name (``"mpi"``, ``"mlx"``, ``"local"``, ...)."""
    return _group(group).name


def destroy_process_group(group: Any = None) -> None:
    """Leave the group and release the transport; ``init_process_group`` may be called again."""
    comm = _group(group)
    _state.comm = None
    if _state.excepthook is not None:
        sys.excepthook, _state.excepthook = _state.excepthook, None
    comm.close()


def _finish(work: Work, async_op: bool) -> Work | None:
    if async_op:
        return work
    work.wait()
    return None


def _check_tensor(t: Any, what: str, name: str = "tensor") -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{what}: {name} must be a lucid Tensor, got {type(t).__name__}")
    return t


def _check_rank(r: Any, comm: Communicator, what: str, name: str) -> int:
    if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r < comm.world_size:
        raise ValueError(f"{what}: {name} must be a rank in [0, {comm.world_size - 1}], got {r!r}")
    return r


def _check_op(op: Any, t: Tensor, what: str) -> ReduceOp:
    """The reduction must exist for the dtype (checked here once, for every communicator)."""
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{what}: op must be a ReduceOp (SUM, AVG, PRODUCT, MAX, MIN), got {op!r}")
    kind = t.dtype.kind
    if op is ReduceOp.AVG and kind not in "fc":
        raise TypeError(f"{what}: ReduceOp.AVG needs a floating or complex tensor, got {t.dtype.name}")
    if kind == "c" and op in (ReduceOp.MAX, ReduceOp.MIN):
        raise TypeError(f"{what}: ReduceOp.{op.name} is undefined for complex tensors ({t.dtype.name})")
    return op


def barrier(group: Any = None, async_op: bool = False) -> Work | None:
    """Wait until every rank has reached this call."""
    return _finish(_group(group).barrier(), async_op)


def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: Any = None, async_op: bool = False) -> Work | None:
    """Reduce ``tensor`` over all ranks with ``op``; every rank's ``tensor`` holds the result."""
    comm = _group(group)
    _check_op(op, _check_tensor(tensor, "all_reduce"), "all_reduce")
    return _finish(comm.all_reduce(tensor, op), async_op)


def broadcast(tensor: Tensor, src: int, group: Any = None, async_op: bool = False) -> Work | None:
    """Copy rank ``src``'s ``tensor`` into ``tensor`` on every rank."""
    comm = _group(group)
    _check_rank(src, comm, "broadcast", "src")
    return _finish(comm.broadcast(_check_tensor(tensor, "broadcast"), src), async_op)


def all_gather_into_tensor(
    output_tensor: Tensor, input_tensor: Tensor, group: Any = None, async_op: bool = False
) -> Work | None:
    """Gather every rank's ``input_tensor`` into ``output_tensor``, concatenated (or stacked) in rank order."""
    comm = _group(group)
    _check_tensor(output_tensor, "all_gather_into_tensor", "output_tensor")
    _check_tensor(input_tensor, "all_gather_into_tensor", "input_tensor")
    n = comm.world_size
    stacked = (n, *input_tensor.shape)
    concat = (n * input_tensor.shape[0], *input_tensor.shape[1:]) if input_tensor.ndim else (n,)
    if output_tensor.shape not in (stacked, concat) or output_tensor.dtype is not input_tensor.dtype:
        raise ValueError(
            f"all_gather_into_tensor: output_tensor must have shape {concat} or {stacked} and dtype "
            f"{input_tensor.dtype.name} for {n} ranks, got {output_tensor.shape} {output_tensor.dtype.name}"
        )
    return _finish(comm.all_gather_into_tensor(output_tensor, input_tensor), async_op)


def reduce_scatter_tensor(
    output: Tensor,
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    op: ReduceOp = ReduceOp.SUM,
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """Reduce ``input`` over ranks with ``op`` and keep chunk ``rank`` of it (split along dim 0) in ``output``."""
    comm = _group(group)
    _check_tensor(output, "reduce_scatter_tensor", "output")
    _check_tensor(input, "reduce_scatter_tensor", "input")
    n = comm.world_size
    stacked = (n, *output.shape)
    concat = (n * output.shape[0], *output.shape[1:]) if output.ndim else (n,)
    if input.shape not in (stacked, concat) or output.dtype is not input.dtype:
        raise ValueError(
            f"reduce_scatter_tensor: input must have shape {concat} or {stacked} and dtype {output.dtype.name} "
            f"for {n} ranks, got {input.shape} {input.dtype.name}"
        )
    _check_op(op, input, "reduce_scatter_tensor")
    return _finish(comm.reduce_scatter_tensor(output, input, op), async_op)


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group: Any = None, async_op: bool = False) -> Work | None:
    """Fill ``tensor_list[r]`` with rank ``r``'s ``tensor`` on every rank."""
    comm = _group(group)
    _check_tensor(tensor, "all_gather")
    if not isinstance(tensor_list, list) or len(tensor_list) != comm.world_size:
        raise ValueError(f"all_gather: tensor_list must be a list of {comm.world_size} tensors (one per rank)")
    for i, t in enumerate(tensor_list):
        _check_tensor(t, "all_gather", f"tensor_list[{i}]")
        if t.shape != tensor.shape or t.dtype is not tensor.dtype:
            raise ValueError(
                f"all_gather: tensor_list[{i}] has shape {t.shape} {t.dtype.name}, expected {tensor.shape} "
                f"{tensor.dtype.name} like tensor"
            )
    flat = lucid_core.empty((comm.world_size, *tensor.shape), dtype=tensor.dtype, device=tensor.device)

    def scatter() -> None:
        for i, t in enumerate(tensor_list):
            write_into(t, flat[i])

    return _finish(comm.all_gather_into_tensor(flat, tensor).then(scatter), async_op)


def isend(tensor: Tensor, dst: int, group: Any = None, tag: int = 0) -> Work:
    """Start sending ``tensor`` to rank ``dst``; returns the work to wait on."""
    comm = _group(group)
    _check_rank(dst, comm, "isend", "dst")
    return comm.send(_check_tensor(tensor, "isend"), dst, tag)


def irecv(tensor: Tensor, src: int, group: Any = None, tag: int = 0) -> Work:
    """Start receiving into ``tensor`` from rank ``src``; returns the work to wait on."""
    comm = _group(group)
    _check_rank(src, comm, "irecv", "src")
    return comm.recv(_check_tensor(tensor, "irecv"), src, tag)


def send(tensor: Tensor, dst: int, group: Any = None, tag: int = 0) -> None:
    """Send ``tensor`` to rank ``dst`` and wait until it is sent."""
    isend(tensor, dst, group, tag).wait()


def recv(tensor: Tensor, src: int, group: Any = None, tag: int = 0) -> int:
    """Receive into ``tensor`` from rank ``src``; returns ``src`` (PyTorch returns the sender's rank)."""
    irecv(tensor, src, group, tag).wait()
    return src


# -- Python objects: pickled into uint8 tensors, so every communicator carries them ------------------


def _bytes_tensor(data: bytes, device: Any) -> Tensor:
    return (
        lucid_core.frombuffer(data, dtype=lucid_core.uint8).to(device)
        if data
        else lucid_core.zeros((0,), dtype=lucid_core.uint8, device=device)
    )


def all_gather_object(object_list: list[Any], obj: Any, group: Any = None) -> None:
    """Fill ``object_list[r]`` with rank ``r``'s picklable ``obj`` (for small metadata: model signatures)."""
    comm = _group(group)
    n = comm.world_size
    if not isinstance(object_list, list) or len(object_list) != n:
        raise ValueError(f"all_gather_object: object_list must be a list of {n} entries (one per rank)")
    data = pickle.dumps(obj)
    dev = comm.device
    size = lucid_core.asarray([len(data)], dtype=lucid_core.int32, device=dev)
    sizes = lucid_core.zeros((n,), dtype=lucid_core.int32, device=dev)
    all_gather_into_tensor(sizes, size, group)
    longest = int(lucid_core.max(sizes).item())
    padded = _bytes_tensor(data + b"\0" * (longest - len(data)), size.device)
    out = lucid_core.zeros((n * longest,), dtype=lucid_core.uint8, device=dev)
    all_gather_into_tensor(out, padded, group)
    raw = out.tobytes()
    for r, s in enumerate(sizes.tolist()):
        object_list[r] = pickle.loads(raw[r * longest : r * longest + s])


def broadcast_object_list(object_list: list[Any], src: int = 0, group: Any = None) -> None:
    """Replace ``object_list``'s entries with rank ``src``'s (picklable objects)."""
    comm = _group(group)
    _check_rank(src, comm, "broadcast_object_list", "src")
    data = pickle.dumps(list(object_list)) if comm.rank == src else b""
    size = lucid_core.asarray([len(data)], dtype=lucid_core.int32, device=comm.device)
    broadcast(size, src, group)
    buf = (
        _bytes_tensor(data, size.device)
        if comm.rank == src
        else lucid_core.zeros((int(size.item()),), dtype=lucid_core.uint8, device=size.device)
    )
    broadcast(buf, src, group)
    object_list[:] = pickle.loads(buf.tobytes())
