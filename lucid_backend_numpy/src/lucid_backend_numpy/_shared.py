"""Shared memory for NumPy arrays (``Tensor.share_memory_``): anonymous memory files, passed by descriptor.

Each shared storage is a ``memfd_create`` file (Linux) mapped ``MAP_SHARED``: it has no name in
``/dev/shm``, so nothing can leak there, and the kernel frees it when the last process closes its
descriptor and mapping. Forked processes inherit the mapping; other processes (``spawn``, a Queue)
receive a duplicate of the descriptor through :mod:`multiprocessing.reduction` (PyTorch's
``file_descriptor`` strategy). Where ``memfd_create`` is missing, an anonymous shared mapping serves forked
processes only.
"""

from __future__ import annotations

import mmap
import os
import weakref
from typing import Any

#: descriptor of each live mapping, by ``id(mmap)``; closed when the mapping is garbage-collected
_DESCRIPTORS: dict[int, int] = {}


def _release(key: int) -> None:
    fd = _DESCRIPTORS.pop(key, None)
    if fd is not None:
        os.close(fd)


def _map(fd: int | None, nbytes: int) -> mmap.mmap:
    mm = mmap.mmap(-1, nbytes) if fd is None else mmap.mmap(fd, nbytes)
    if fd is not None:
        _DESCRIPTORS[id(mm)] = fd
        weakref.finalize(mm, _release, id(mm))
    return mm


def share(np: Any, array: Any) -> Any:
    """A C-contiguous copy of ``array`` in shared memory (an ndarray whose base is the mapping)."""
    nbytes = max(int(array.nbytes), 1)  # mmap refuses 0 bytes
    fd = None
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("lucid-shared", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, nbytes)
        except BaseException:
            os.close(fd)
            raise
    out = np.ndarray(array.shape, dtype=array.dtype, buffer=_map(fd, nbytes))
    out[...] = array
    return out


def _mapping(array: Any) -> Any:
    """The mapping under ``array`` (through NumPy views), or None."""
    base = array
    while base is not None and not isinstance(base, mmap.mmap):
        base = getattr(base, "base", None)
    return base


def is_shared(array: Any) -> bool:
    """Whether ``array`` lives in memory :func:`share` made."""
    return _mapping(array) is not None


def handle(np: Any, array: Any) -> tuple[Any, ...]:
    """A picklable description of ``array``: its mapping's descriptor (duplicated for the receiver) and layout."""
    from multiprocessing.reduction import DupFd

    mm = _mapping(array)
    fd = None if mm is None else _DESCRIPTORS.get(id(mm))
    if fd is None:
        raise RuntimeError(
            "share_memory_: this tensor's shared memory is an anonymous mapping (no memfd_create on this system), "
            "which only forked processes see; start processes with the 'fork' method"
        )
    start = _address(array) - _address(np.frombuffer(mm, dtype=np.uint8))
    return (DupFd(fd), len(mm), array.dtype.str, tuple(array.shape), tuple(array.strides), start)


def _address(array: Any) -> int:
    return int(array.__array_interface__["data"][0])


def open_handle(np: Any, h: tuple[Any, ...]) -> Any:
    """The array :func:`handle` described, mapped in this process (the same memory as the sender's)."""
    dupfd, nbytes, dtype, shape, strides, start = h
    mm = _map(dupfd.detach(), nbytes)
    return np.ndarray(shape, dtype=np.dtype(dtype), buffer=mm, offset=start, strides=strides)
