"""``lucid.serialization``: PyTorch's ``torch.serialization`` (``save``, ``load`` and the ``weights_only`` allow-list).

``save`` writes what ``torch.save`` writes, in Lucid's format: a state dict or nested dicts of tensors as
safetensors, any other object (a whole Module, an optimizer, a NumPy array) pickled with its tensors
stored beside the pickle as raw bytes (:mod:`lucid_nn._pickled`). ``load`` follows PyTorch 2.13: it is
weights-only by default and refuses a pickled global outside the allow-list, which :func:`add_safe_globals`
and the :func:`safe_globals` context extend; ``weights_only=False`` loads anything from a trusted file.
PyTorch's own ``.pt`` files are read weights-only (without PyTorch); Lucid does not write PyTorch's zip format.
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_PROTOCOL", "add_safe_globals", "clear_safe_globals", "get_safe_globals",
    "get_unsafe_globals_in_checkpoint", "load", "safe_globals", "save",
]  # fmt: skip

import os
import pickle
from typing import Any, BinaryIO

import lucid_nn
from lucid_nn import _pickled, serialization
from lucid_nn._pickled import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals

DEFAULT_PROTOCOL = 2


def _check_pickle_module(pickle_module: Any, who: str) -> None:
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError(f"{who}: pickle_module must be the standard pickle module (or None), got {pickle_module!r}")


def save(
    obj: Any,
    f: str | os.PathLike[str] | BinaryIO,
    pickle_module: Any = None,
    pickle_protocol: int = DEFAULT_PROTOCOL,
    _use_new_zipfile_serialization: bool = True,
    _disable_byteorder_record: bool = False,
) -> None:
    """``torch.save``: write ``obj`` to ``f`` (a path, atomically, or a binary file object).

    A state dict or nesting of dicts/lists of tensors gives a safetensors file; anything else (a Module
    itself, an optimizer object, NumPy arrays) is pickled with its tensors kept as raw bytes beside it.
    """
    _check_pickle_module(pickle_module, "save")
    lucid_nn.save(obj, f, pickle_objects=True)


def load(
    f: str | os.PathLike[str] | BinaryIO,
    map_location: Any = None,
    pickle_module: Any = None,
    *,
    weights_only: bool | None = None,
    mmap: bool | None = None,
    **kwargs: Any,
) -> Any:
    """``torch.load``: read what :func:`save` wrote, any safetensors file, or a PyTorch ``torch.save`` file.

    ``weights_only`` (None means True, PyTorch 2.13's default) unpickles only allowed globals; a pickle
    naming another raises ``lucid.nn.UnsafeCheckpointError`` (a ``pickle.UnpicklingError``) saying which
    global and how to allow it. ``weights_only=False`` loads any object (only from a trusted file).
    """
    _check_pickle_module(pickle_module, "load")
    if weights_only is None:
        weights_only = True
    return lucid_nn.load(f, map_location, weights_only, **kwargs)


def get_unsafe_globals_in_checkpoint(f: str | os.PathLike[str] | BinaryIO) -> list[str]:
    """The globals of ``f``'s pickle that a ``weights_only=True`` load would refuse now (``[]`` for no pickle)."""
    raw = serialization.read_pickle(f)
    return [] if raw is None else _pickled.unsafe_globals(raw)
