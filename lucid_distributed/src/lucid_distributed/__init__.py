"""Data-parallel training for Lucid: PyTorch's ``torch.distributed`` API and ``DistributedDataParallel``.

The transports are existing engines registered as communicator plugins: MPI through mpi4py (any
backend whose arrays reach host memory) and MLX's ``mx.distributed``; a script started alone gets a
group of one process. Launch with ``mpiexec -n 2 python train.py``, ``mlx.launch`` or ``lucid-run``.
This package imports only lucid_core; the plugins import their transport when a group opens.
"""

from __future__ import annotations

from . import checkpoint, fsdp, optim  # sharded checkpoints, FSDP, ZeroRedundancyOptimizer (PyTorch's submodule names)
from ._communicator import (
    CollectiveMismatchError,
    Communicator,
    CommunicatorTimeoutError,
    FlatGradients,
    ReduceOp,
    Work,
    write_into,
)
from ._ddp import DistributedDataParallel
from ._group import (
    all_gather,
    all_gather_into_tensor,
    all_gather_object,
    all_reduce,
    barrier,
    broadcast,
    broadcast_object_list,
    default_timeout,
    destroy_process_group,
    get_backend,
    get_rank,
    get_world_size,
    init_process_group,
    irecv,
    is_available,
    is_initialized,
    isend,
    recv,
    reduce_scatter_tensor,
    send,
)

__version__ = "0.1.0"

__all__ = [
    "init_process_group", "is_available", "is_initialized", "get_rank", "get_world_size", "get_backend",
    "destroy_process_group", "barrier", "default_timeout",
    "ReduceOp", "Work", "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor",
    "send", "recv", "isend", "irecv", "all_gather_object", "broadcast_object_list",
    "DistributedDataParallel", "Communicator", "CommunicatorTimeoutError", "write_into",
    "FlatGradients", "CollectiveMismatchError", "checkpoint", "fsdp", "optim",
]  # fmt: skip
