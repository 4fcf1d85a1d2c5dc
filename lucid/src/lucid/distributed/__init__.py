"""``lucid.distributed``: PyTorch's ``torch.distributed`` over ``lucid_distributed`` (installed separately).

A PyTorch script's ``dist.init_process_group("nccl"/"gloo", init_method="env://", world_size=1, rank=0)``
runs as written: PyTorch's backend names mean "the transport the launcher set up" (MPI under ``mpiexec`` or
``lucid-run``, ``mx.distributed`` under ``mlx.launch``) and, in a process started alone, the group of one
process, without ``mpiexec`` (so does ``"mpi"`` there). ``dist.is_available()`` says whether
``lucid_distributed`` is installed; without it the other names raise an ImportError that says how to
install it. Groups other than the default one (``new_group``) are not supported.
"""

from __future__ import annotations

import datetime
import importlib.util
import os
from types import SimpleNamespace
from typing import Any

from .._optional import distributed_module

#: the names lucid_distributed provides as they are (through __getattr__)
_PASSED_THROUGH = (
    "is_initialized", "get_rank", "get_world_size", "all_reduce", "broadcast", "all_gather",
    "all_gather_into_tensor", "reduce_scatter_tensor", "barrier", "ReduceOp", "send", "recv", "isend", "irecv",
    "all_gather_object", "broadcast_object_list", "Work",
)  # fmt: skip
__all__ = [
    "is_available", "init_process_group", "destroy_process_group", "get_backend", "reduce_scatter", "reduce",
    "gather", "scatter", "group", "GroupMember", "is_mpi_available", "is_gloo_available", "is_nccl_available",
    "is_torchelastic_launched", "get_local_rank", *_PASSED_THROUGH,
]  # fmt: skip

#: PyTorch's backend names that mean "whatever transport this job has" here
_PYTORCH_BACKENDS = ("gloo", "nccl", "ucc", "xccl", "cuda", "cpu")

#: ``group=dist.group.WORLD`` is the default group, which lucid_distributed spells None
group = GroupMember = SimpleNamespace(WORLD=None, NON_GROUP_MEMBER=None)


def is_available() -> bool:
    """Whether ``lucid_distributed`` is installed."""
    return importlib.util.find_spec("lucid_distributed") is not None


def _dist() -> Any:
    return distributed_module()


def _launched_by() -> str:
    """``"mpi"``, ``"mlx"`` or ``"local"``: which launcher (if any) started this process."""
    from lucid_distributed._group import _detect_backend

    return _detect_backend()


def _int_or_none(value: Any) -> int | None:
    return None if value is None or int(value) < 0 else int(value)


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: datetime.timedelta | float | None = None,
    world_size: int = -1,
    rank: int = -1,
    store: Any = None,
    group_name: str = "",
    pg_options: Any = None,
    device_id: Any = None,
    **kwargs: Any,
) -> None:
    """Join the job's process group, as ``torch.distributed.init_process_group``.

    ``backend`` ``"gloo"``, ``"nccl"`` (or None) takes the launcher's transport; ``"mpi"`` and ``"mlx"`` name
    one; a process started alone gets a group of one (``world_size`` 1). ``init_method``, ``store``,
    ``group_name``, ``pg_options`` and ``device_id`` are accepted: the launcher does the rendezvous.
    A ``world_size`` (or ``$WORLD_SIZE``) above 1 in a process no launcher started is an error that says how
    to start the job.
    """
    launched = _launched_by()
    name = None if backend is None else str(backend).lower()
    if name is not None and (name in _PYTORCH_BACKENDS or ":" in name or "," in name):
        name = None
    if name == "mpi" and launched != "mpi":
        name = None  # PyTorch's MPI backend also runs a lone process as a world of one
    world = _int_or_none(world_size)
    env_world = _int_or_none(os.environ.get("WORLD_SIZE"))
    if launched == "local" and name in (None, "local"):
        wanted = world if world is not None else env_world
        if wanted is not None and wanted > 1:
            raise RuntimeError(
                f"init_process_group: world_size={wanted} was asked for, but this process was started alone; "
                f"start the {wanted} processes with `lucid-run --nproc-per-node {wanted} script.py` or "
                f"`mpiexec -n {wanted} python script.py` (torchrun's rendezvous is not supported)"
            )
        world = None if world == 1 else world
        rk = _int_or_none(rank)
        rank = -1 if rk in (None, 0) else rk
    _dist().init_process_group(name, timeout=timeout, world_size=world, rank=_int_or_none(rank), **kwargs)
    _requested.backend = str(backend).lower() if backend is not None else None


_requested = SimpleNamespace(backend=None)


def get_backend(group: Any = None) -> str:
    """The backend name the group was started with (the transport's name when none was given)."""
    actual = _dist().get_backend(group)
    return _requested.backend or actual


def destroy_process_group(group: Any = None) -> None:
    """Leave the default group (``init_process_group`` may be called again)."""
    _dist().destroy_process_group(group)
    _requested.backend = None


def reduce_scatter(
    output: Any, input_list: list[Any], op: Any = None, group: Any = None, async_op: bool = False
) -> Any:
    """Reduce the list ``input_list[r]`` over ranks and leave entry ``rank`` of the result in ``output``."""
    import lucid_core as lc

    d = _dist()
    return d.reduce_scatter_tensor(output, lc.stack(list(input_list)), d.ReduceOp.SUM if op is None else op,
                                   group, async_op)  # fmt: skip


def reduce(tensor: Any, dst: int = 0, op: Any = None, group: Any = None, async_op: bool = False) -> Any:
    """Reduce ``tensor`` over ranks into rank ``dst`` (every rank gets the result here, which PyTorch allows)."""
    d = _dist()
    return d.all_reduce(tensor, d.ReduceOp.SUM if op is None else op, group, async_op)


def gather(tensor: Any, gather_list: list[Any] | None = None, dst: int = 0, group: Any = None,
           async_op: bool = False) -> None:  # fmt: skip
    """Collect every rank's ``tensor`` into ``gather_list`` on rank ``dst`` (None elsewhere)."""
    import lucid_core as lc

    d = _dist()
    if async_op:
        raise NotImplementedError("gather: async_op=True is not supported; gather waits")
    parts = [lc.zeros_like(tensor) for _ in range(d.get_world_size(group))]
    d.all_gather(parts, tensor, group)
    if d.get_rank(group) == dst:
        if gather_list is None or len(gather_list) != len(parts):
            raise ValueError(f"gather: rank {dst} needs a gather_list of {len(parts)} tensors")
        for out, part in zip(gather_list, parts):
            out.copy_(part)


def scatter(tensor: Any, scatter_list: list[Any] | None = None, src: int = 0, group: Any = None,
            async_op: bool = False) -> None:  # fmt: skip
    """Give each rank ``r`` the tensor ``scatter_list[r]`` of rank ``src``, written into ``tensor``."""
    import lucid_core as lc

    d = _dist()
    if async_op:
        raise NotImplementedError("scatter: async_op=True is not supported; scatter waits")
    n, me = d.get_world_size(group), d.get_rank(group)
    if me == src:
        if scatter_list is None or len(scatter_list) != n:
            raise ValueError(f"scatter: rank {src} needs a scatter_list of {n} tensors")
        stacked = lc.stack(list(scatter_list))
    else:
        stacked = lc.zeros((n, *tensor.shape), dtype=tensor.dtype, device=tensor.device)
    d.broadcast(stacked, src, group)
    tensor.copy_(stacked[me])


def is_mpi_available() -> bool:
    """Whether the MPI communicator (mpi4py) is installed."""
    return is_available() and importlib.util.find_spec("mpi4py") is not None


def is_gloo_available() -> bool:
    """True where ``lucid_distributed`` is installed: ``"gloo"`` runs on its host-memory transport."""
    return is_available()


def is_nccl_available() -> bool:
    """True where ``lucid_distributed`` is installed: ``"nccl"`` runs on the launcher's transport."""
    return is_available()


def is_torchelastic_launched() -> bool:
    """False: Lucid jobs are started by ``lucid-run``, ``mpiexec`` or ``mlx.launch``, not torchelastic."""
    return False


def get_local_rank() -> int:
    """This process's rank on its machine (``$LOCAL_RANK`` or the MPI launcher's; the rank on one machine)."""
    for var in ("LOCAL_RANK", "MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_LOCAL_RANK"):
        if var in os.environ:
            return int(os.environ[var])
    return _dist().get_rank() if _dist().is_initialized() else 0


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_dist(), name)
