"""``lucid.distributed.checkpoint``: PyTorch's ``torch.distributed.checkpoint`` (DCP) over Lucid's sharded checkpoints.

``dcp.save(state_dict, checkpoint_id=folder)`` on every rank and ``dcp.load(state_dict, checkpoint_id=folder)``
on every rank of a job of any size, as in PyTorch; the files are Lucid's (one safetensors file per rank and a
``metadata.json``, see ``lucid_distributed.checkpoint``), not PyTorch's ``.distcp``. ``storage_writer`` /
``storage_reader`` take a :class:`FileSystemWriter` / :class:`FileSystemReader` in place of ``checkpoint_id``.
``lucid.distributed.checkpoint.state_dict`` holds PyTorch's ``get_state_dict`` / ``set_state_dict`` family
(the model's and optimizer's state of a sharded model, keyed by parameter names).
"""

from __future__ import annotations

import os
from typing import Any

from ..._optional import distributed_module

distributed_module()  # an ImportError saying how to install lucid_distributed, when it is missing

from lucid_distributed.checkpoint import CheckpointError, Shard, load_full, read_metadata  # noqa: E402
from lucid_distributed.checkpoint import load as _load  # noqa: E402
from lucid_distributed.checkpoint import save as _save  # noqa: E402

__all__ = ["save", "load", "FileSystemWriter", "FileSystemReader", "Shard", "CheckpointError", "load_full",
           "read_metadata"]  # fmt: skip


class FileSystemWriter:
    """Where :func:`save` writes: a folder on a file system every rank shares (PyTorch's class)."""

    def __init__(self, path: str | os.PathLike[str], **options: Any) -> None:
        self.path = os.fspath(path)


class FileSystemReader:
    """Where :func:`load` reads: the folder a :func:`save` wrote (PyTorch's class)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)


def _folder(checkpoint_id: Any, storage: Any, what: str) -> str:
    if checkpoint_id is None and storage is None:
        raise ValueError(f"{what}: pass checkpoint_id=FOLDER (or storage_{'writer' if what == 'save' else 'reader'}=)")
    return os.fspath(checkpoint_id) if checkpoint_id is not None else storage.path


def _refuse(planner: Any, process_group: Any, what: str) -> None:
    if planner is not None:
        raise NotImplementedError(f"{what}: custom planners are not supported (Lucid's plan is fixed: see the docs)")
    if process_group is not None:
        raise NotImplementedError(f"{what}: only the default process group (None) is supported")


def save(
    state_dict: dict[str, Any],
    *,
    checkpoint_id: str | os.PathLike[str] | None = None,
    storage_writer: FileSystemWriter | None = None,
    planner: Any = None,
    process_group: Any = None,
    no_dist: bool = False,
) -> None:
    """Write this rank's part of ``state_dict`` (``Shard`` pieces, tensors, values) into the folder, on every rank."""
    _refuse(planner, process_group, "save")
    _save(state_dict, checkpoint_id=_folder(checkpoint_id, storage_writer, "save"))


def load(
    state_dict: dict[str, Any],
    *,
    checkpoint_id: str | os.PathLike[str] | None = None,
    storage_reader: FileSystemReader | None = None,
    planner: Any = None,
    process_group: Any = None,
    no_dist: bool = False,
) -> None:
    """Fill ``state_dict`` in place from the checkpoint (any number of ranks may read what any number saved)."""
    _refuse(planner, process_group, "load")
    _load(state_dict, checkpoint_id=_folder(checkpoint_id, storage_reader, "load"))
