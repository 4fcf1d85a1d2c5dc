"""PyTorch's process-group API over the registered communicators: init, rank, collectives.

One default group per process (``group=`` accepts only None). Every collective writes its result
into the tensors it is given, as ``torch.distributed`` does; ``async_op=True`` returns the
:class:`~lucid_distributed.Work` instead of waiting for it.

Before a collective moves any data the ranks agree on it: each contributes a fixed-size signature
(which collective, the op or source, the tensor's dtype and shape) to one small all-gather, and if
the signatures differ every rank raises :class:`~lucid_distributed.CollectiveMismatchError` naming
the ranks and what they passed, instead of reducing garbage or hanging (MPI does not check).
``init_process_group(check_collectives=False)`` or ``LUCID_DIST_CHECK=0`` turns it off.
"""

from __future__ import annotations

__all__ = [
    "init_process_group", "is_available", "is_initialized", "get_rank", "get_world_size", "get_backend",
    "destroy_process_group", "barrier", "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor",
    "reduce_scatter_tensor", "send", "recv", "isend", "irecv", "all_gather_object", "broadcast_object_list",
    "default_timeout",
]  # fmt: skip

import atexit
import datetime
import os
import pickle
import sys
import zlib
from collections.abc import Callable
from typing import Any

import lucid_core
from lucid_core import Tensor

from . import _status
from ._communicator import CollectiveMismatchError, Communicator, ReduceOp, Work, write_into

#: environment variables a launcher sets, by communicator that understands them
_LAUNCHER_ENV = {
    "mpi": ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"),
    "mlx": ("MLX_RANK", "MLX_HOSTFILE"),
}


class _State:
    comm: Communicator | None = None
    excepthook: Any = None
    check: bool = True  # agree on every collective's signature before it starts
    status: _status.RankStatus | None = None  # this rank's record for lucid-run, when launched by it
    exit_hook: bool = False


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
    check_collectives: bool | None = None,
    **options: Any,
) -> None:
    """Join this process to the job's group through communicator ``backend`` (``"mpi"``, ``"mlx"``, a plugin).

    Without ``backend`` the launcher decides: ``mpiexec``/``lucid-run`` mean ``"mpi"``, ``mlx.launch``
    means ``"mlx"``, and a script started alone gets the ``"local"`` group of one process. Ranks and
    the world size come from the launcher; ``world_size``/``rank`` are checked against them if given.
    An uncaught exception on any rank then aborts the whole job (so no rank waits forever).
    ``check_collectives`` (default: on unless ``$LUCID_DIST_CHECK`` is ``0``) makes every collective
    first check that all ranks passed the same shapes, dtypes and ops; it must be the same on every rank.
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
    if check_collectives is None:
        check_collectives = os.environ.get("LUCID_DIST_CHECK", "1").strip().lower() not in ("0", "false", "off", "no")
    _state.check = bool(check_collectives)
    folder = os.environ.get(_status.RUN_DIR_ENV)
    _state.status = _status.RankStatus(folder, comm.rank) if folder and os.path.isdir(folder) else None
    if _state.status is not None and not _state.exit_hook:
        atexit.register(_record_exit)  # after the transport's own atexit (MPI_Finalize), so it runs first
        _state.exit_hook = True
    if comm.world_size > 1:
        _install_abort_on_error()


def _record_exit() -> None:
    """Tell lucid-run that this rank's interpreter shut down (not killed): how many collectives it ran."""
    status = _state.status
    if status is not None:
        status.finish(_status.EXITED)


def _install_abort_on_error() -> None:
    """An uncaught exception on one rank ends every rank (as ``python -m mpi4py`` does), never a hang."""
    previous = sys.excepthook

    def hook(exc_type: Any, exc: BaseException, tb: Any) -> None:
        comm = _state.comm
        previous(exc_type, exc, tb)
        if comm is not None and not issubclass(exc_type, KeyboardInterrupt):
            if _state.status is not None:
                _state.status.finish(_status.FAILED, f"{exc_type.__name__}: {exc}")
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


# -- the ranks' agreement on each collective ------------------------------------------------------

KINDS = _status.KINDS
_KIND_CODE = {k: i for i, k in enumerate(KINDS)}
_OPS = tuple(ReduceOp)
_OP_CODE = {op: i for i, op in enumerate(_OPS)}
_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
           "bfloat16", "float32", "float64", "complex64", "complex128")  # fmt: skip
_DTYPE_CODE = {d: i for i, d in enumerate(_DTYPES)}
_DIMS = 9  # dims carried in full; deeper shapes add a checksum of the whole shape
_UNKNOWN_DTYPE = 1 << 32


def _dtype_code(name: str) -> int:
    code = _DTYPE_CODE.get(name)
    return _UNKNOWN_DTYPE + zlib.crc32(name.encode()) if code is None else code


def _signature(kind: str, t: Tensor | None, op: ReduceOp | None, src: int | None) -> tuple[int, ...]:
    """16 integers: collective, op, source, dtype, ndim, size, the first dims, a checksum of deeper shapes."""
    head = (_KIND_CODE[kind], -1 if op is None else _OP_CODE[op], -1 if src is None else src)
    if t is None:
        return (*head, -1, -1, -1, *(0,) * (_DIMS + 1))
    shape = tuple(t.shape)
    dims = shape[:_DIMS] + (0,) * (_DIMS - len(shape))
    deep = zlib.crc32(repr(shape).encode()) if len(shape) > _DIMS else 0
    return (*head, _dtype_code(t.dtype.name), len(shape), t.size, *dims, deep)


def _describe_tensor(sig: tuple[int, ...]) -> str:
    code, ndim, size = sig[3], sig[4], sig[5]
    if ndim < 0:
        return "no tensor"
    dtype = _DTYPES[code] if 0 <= code < len(_DTYPES) else f"dtype #{code}"
    if ndim > _DIMS:
        return f"{dtype} of {ndim} dims ({size} elements)"
    return f"{dtype} {tuple(sig[6 : 6 + ndim])}"


def _describe_call(sig: tuple[int, ...]) -> str:
    kind = KINDS[sig[0]] if 0 <= sig[0] < len(KINDS) else f"collective #{sig[0]}"
    if sig[1] >= 0:
        kind += f"({_OPS[sig[1]].name})"
    elif sig[2] >= 0:
        kind += f"(src={sig[2]})"
    return kind if sig[4] < 0 else f"{kind} with {_describe_tensor(sig)}"


def _mismatch_message(kind: str, sigs: list[tuple[int, ...]]) -> str:
    """Which ranks passed what, the ranks that differ from rank 0 first (every rank builds the same text)."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for r, s in enumerate(sigs):
        groups.setdefault(s, []).append(r)
    order = sorted(groups.items(), key=lambda item: (item[1][0] == 0, item[1][0]))
    calls_differ = len({s[0] for s in sigs}) > 1
    ops_differ, srcs_differ = len({s[1] for s in sigs}) > 1, len({s[2] for s in sigs}) > 1
    parts = []
    for s, ranks in order:
        who = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"
        if calls_differ:
            what = f"called {_describe_call(s)}"
        else:
            what = f"passed {_describe_tensor(s)}"
            if ops_differ:
                what += f" with op {_OPS[s[1]].name}"
            if srcs_differ:
                what += f" with src={s[2]}"
        parts.append(f"{who} {what}")
    head = f"{kind}: the ranks called different collectives: " if calls_differ else f"{kind}: "
    return (
        head + ", ".join(parts) + "; every rank must make the same collective call with tensors of the same shape "
        "and dtype (no data was moved; init_process_group(check_collectives=False) or LUCID_DIST_CHECK=0 skip "
        "this check)"
    )


def _collective(
    comm: Communicator,
    kind: str,
    start: Callable[[], Work],
    async_op: bool,
    t: Tensor | None = None,
    op: ReduceOp | None = None,
    src: int | None = None,
    *,
    check: bool = True,
) -> Work | None:
    """Check that every rank makes this call alike (one small all-gather), count it, then start it.

    ``check=False`` is for callers whose shapes agree by construction (DDP's buckets, the second half
    of an object collective); the check then costs nothing.
    """
    if _state.status is not None:  # counted before the check, which already waits for the other ranks
        _state.status.started(_KIND_CODE[kind])
    if check and _state.check and comm.world_size > 1:
        mine = _signature(kind, t, op, src)
        everyone = comm.gather_signatures(mine, kind)
        if any(s != mine for s in everyone):
            raise CollectiveMismatchError(_mismatch_message(kind, everyone))
    return _finish(start(), async_op)


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
    comm = _group(group)
    return _collective(comm, "barrier", comm.barrier, async_op)


def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: Any = None, async_op: bool = False) -> Work | None:
    """Reduce ``tensor`` over all ranks with ``op``; every rank's ``tensor`` holds the result."""
    return _all_reduce(tensor, op, group, async_op)


def _all_reduce(tensor: Tensor, op: ReduceOp, group: Any, async_op: bool, check: bool = True) -> Work | None:
    comm = _group(group)
    _check_op(op, _check_tensor(tensor, "all_reduce"), "all_reduce")
    return _collective(comm, "all_reduce", lambda: comm.all_reduce(tensor, op), async_op, tensor, op, check=check)


def broadcast(tensor: Tensor, src: int, group: Any = None, async_op: bool = False) -> Work | None:
    """Copy rank ``src``'s ``tensor`` into ``tensor`` on every rank."""
    return _broadcast(tensor, src, group, async_op)


def _broadcast(tensor: Tensor, src: int, group: Any, async_op: bool, check: bool = True) -> Work | None:
    comm = _group(group)
    _check_rank(src, comm, "broadcast", "src")
    _check_tensor(tensor, "broadcast")
    return _collective(comm, "broadcast", lambda: comm.broadcast(tensor, src), async_op, tensor, src=src, check=check)


def all_gather_into_tensor(
    output_tensor: Tensor, input_tensor: Tensor, group: Any = None, async_op: bool = False
) -> Work | None:
    """Gather every rank's ``input_tensor`` into ``output_tensor``, concatenated (or stacked) in rank order."""
    return _all_gather_into_tensor(output_tensor, input_tensor, group, async_op)


def _all_gather_into_tensor(
    output_tensor: Tensor, input_tensor: Tensor, group: Any, async_op: bool, check: bool = True
) -> Work | None:
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

    def start() -> Work:
        return comm.all_gather_into_tensor(output_tensor, input_tensor)

    return _collective(comm, "all_gather_into_tensor", start, async_op, input_tensor, check=check)


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

    def start() -> Work:
        return comm.reduce_scatter_tensor(output, input, op)

    return _collective(comm, "reduce_scatter_tensor", start, async_op, input, op)


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

    def start() -> Work:
        return comm.all_gather_into_tensor(flat, tensor).then(scatter)

    return _collective(comm, "all_gather", start, async_op, tensor)


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
    # the sizes' gather checks that every rank is here; the payload's shape is then agreed by construction
    _collective(comm, "all_gather_object", lambda: comm.all_gather_into_tensor(sizes, size), False)
    longest = int(lucid_core.max(sizes).item())
    padded = _bytes_tensor(data + b"\0" * (longest - len(data)), size.device)
    out = lucid_core.zeros((n * longest,), dtype=lucid_core.uint8, device=dev)
    _all_gather_into_tensor(out, padded, group, False, check=False)
    raw = out.tobytes()
    for r, s in enumerate(sizes.tolist()):
        object_list[r] = pickle.loads(raw[r * longest : r * longest + s])


def broadcast_object_list(object_list: list[Any], src: int = 0, group: Any = None) -> None:
    """Replace ``object_list``'s entries with rank ``src``'s (picklable objects)."""
    comm = _group(group)
    _check_rank(src, comm, "broadcast_object_list", "src")
    data = pickle.dumps(list(object_list)) if comm.rank == src else b""
    size = lucid_core.asarray([len(data)], dtype=lucid_core.int32, device=comm.device)
    _collective(comm, "broadcast_object_list", lambda: comm.broadcast(size, src), False, src=src)
    buf = (
        _bytes_tensor(data, size.device)
        if comm.rank == src
        else lucid_core.zeros((int(size.item()),), dtype=lucid_core.uint8, device=size.device)
    )
    _broadcast(buf, src, group, False, check=False)
    object_list[:] = pickle.loads(buf.tobytes())
