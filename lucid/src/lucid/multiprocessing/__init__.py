"""``lucid.multiprocessing``: PyTorch's ``torch.multiprocessing``, the standard library's API plus shared tensors.

Everything of :mod:`multiprocessing` is here (``Process``, ``Queue``, ``set_start_method``, ``get_context``...);
importing this module registers the tensor reducers of :mod:`lucid.multiprocessing.reductions`, so a tensor
in shared memory (``Tensor.share_memory_()``, ``Module.share_memory()``) given to a process (its arguments, a
Queue) is the same memory there: Hogwild training works with ``fork`` and ``spawn``. ``spawn(fn, args,
nprocs)`` starts ``fn(i, *args)`` in ``nprocs`` processes as PyTorch's does.

Only PyTorch's ``file_descriptor`` sharing strategy exists: shared storages are anonymous memory files
handed over by descriptor, never named files in ``/dev/shm``, so nothing is left behind when processes end.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing import *  # noqa: F403 - PyTorch re-exports the whole standard API
from multiprocessing import __all__ as _stdlib_all

from . import reductions
from ._spawn import ProcessContext, ProcessExitedException, ProcessRaisedException, spawn, start_processes

__all__ = [
    "set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", "spawn", "start_processes",
    "ProcessContext", "ProcessRaisedException", "ProcessExitedException", *_stdlib_all,
]  # fmt: skip

_STRATEGIES = frozenset({"file_descriptor"})
_strategy = "file_descriptor"


def get_all_sharing_strategies() -> set[str]:
    """The sharing strategies this system supports: ``{"file_descriptor"}``."""
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    """The current sharing strategy (always ``"file_descriptor"``)."""
    return _strategy


def set_sharing_strategy(new_strategy: str) -> None:
    """Choose how shared tensors travel; only ``"file_descriptor"`` exists in Lucid."""
    if new_strategy not in _STRATEGIES:
        raise ValueError(
            f"set_sharing_strategy: {new_strategy!r} is not supported; Lucid shares tensors only by "
            f"'file_descriptor' (anonymous memory files, nothing left in /dev/shm)"
        )


reductions.init_reductions()
del multiprocessing
