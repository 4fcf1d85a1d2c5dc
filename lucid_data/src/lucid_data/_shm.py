"""Tensors across a process boundary: their bytes go through shared memory, a tensor is made on the other side.

``multiprocessing`` pickles what it sends with ``ForkingPickler``; registering :func:`reduce_tensor` there
makes every Lucid tensor in a batch (or in a dataset sent to a worker) travel as raw bytes: small ones
inline in the pickle, large ones in a ``multiprocessing.shared_memory`` segment that the receiving side
copies from and unlinks. Only host bytes cross: a lazy (MLX) array is evaluated by ``tobytes`` on the
sending side, and the receiver builds a fresh tensor on the same device (``lucid_core.frombuffer``).
Plain ``pickle`` still refuses tensors (use ``lucid_nn.save``); this applies to multiprocessing only.

Segments are named ``lucid_<owner pid>_<creator pid>_<random>``: the owner is the process that runs the
DataLoader (a worker names its segments after its loader's process), the creator the one that made the
segment. A segment is unlinked by the one reader that copies it; when a worker dies or is stopped holding
segments nobody will read, the loader removes them by that name (:func:`remove_segments`; it lists
``/dev/shm``, so on systems without it, macOS, multiprocessing's resource tracker removes them at exit).
"""

from __future__ import annotations

import os
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing import resource_tracker, shared_memory
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
from typing import Any

import lucid_core as lc

#: tensors of at most this many bytes are pickled inline: a shared-memory segment costs about a
#: millisecond (creating, mapping, unlinking, the resource tracker's bookkeeping), while 64 KiB go
#: through a pipe in a tenth of that (measured for a 32 KiB batch: 1.0 ms against 0.15 ms)
INLINE_BYTES = 64 * 1024

#: what every Lucid segment's name starts with
SEGMENT_PREFIX = "lucid_"
_SHM_DIR = Path("/dev/shm")

_owner_pid = os.getpid()  # a worker sets its loader's process (see set_owner)
_recording = threading.local()  # .lists: the name lists of this thread's active `recording()`s


def set_owner(pid: int) -> None:
    """Name the segments this process makes after ``pid``: a worker's are its loader's process's."""
    global _owner_pid
    _owner_pid = pid


def segment_prefix(owner: int, creator: int | None = None) -> str:
    """The start of the names of the segments ``owner``'s loaders use (made by ``creator``, if given)."""
    return f"{SEGMENT_PREFIX}{owner}_" if creator is None else f"{SEGMENT_PREFIX}{owner}_{creator}_"


def _new_segment(nbytes: int) -> shared_memory.SharedMemory:
    # a short name: macOS allows 31 characters ("/lucid_" + two pids + 6 hex digits fit)
    prefix = segment_prefix(_owner_pid, os.getpid())
    while True:
        try:
            return shared_memory.SharedMemory(name=prefix + secrets.token_hex(3), create=True, size=nbytes)
        except FileExistsError:
            continue


@contextmanager
def recording() -> Iterator[list[str]]:
    """Collect the names of the segments made here meanwhile (what a starting worker will have to unlink)."""
    names: list[str] = []
    active = _recording.__dict__.setdefault("lists", [])
    active.append(names)
    try:
        yield names
    finally:
        active.remove(names)


def unlink_segments(names: list[str]) -> None:
    """Unlink these segments where they still exist (their reader never came)."""
    for name in names:
        try:
            segment = shared_memory.SharedMemory(name=name)
        except (FileNotFoundError, OSError):
            continue
        segment.close()
        segment.unlink()


def remove_segments(owner: int, creator: int) -> list[str]:
    """Unlink every segment ``creator`` made for ``owner``'s loaders, once ``creator`` is dead or stopped.

    Returns the names removed. Only where segments are files under ``/dev/shm`` (Linux); elsewhere
    multiprocessing's resource tracker removes them when the program ends.
    """
    prefix = segment_prefix(owner, creator)
    try:
        names = [n for n in os.listdir(_SHM_DIR) if n.startswith(prefix)]
    except OSError:
        return []
    removed = []
    for name in names:
        try:
            os.unlink(_SHM_DIR / name)
        except OSError:
            continue
        removed.append(name)
        try:  # the creator registered it with the shared resource tracker: forget it there
            resource_tracker.unregister("/" + name, "shared_memory")
        except Exception:  # noqa: BLE001 - no tracker running (never started in this process)
            pass
    return removed


def rebuild_tensor(
    data: bytes | None, name: str | None, nbytes: int, dtype: str, shape: tuple[int, ...], device: str, grad: bool
) -> lc.Tensor:
    """The receiving half: a tensor on ``device`` from inline ``data`` or from the segment ``name`` (unlinked)."""
    if data is not None:
        out = lc.frombuffer(data, dtype=dtype, shape=shape, device=device)
    else:
        segment = shared_memory.SharedMemory(name=name)
        view = segment.buf[:nbytes]
        try:
            out = lc.frombuffer(view, dtype=dtype, shape=shape, device=device)  # copies
        finally:
            view.release()
            segment.close()
            segment.unlink()  # one reader per segment: the bytes are in ``out`` now
    return out.requires_grad_() if grad else out


def reduce_tensor(t: lc.Tensor) -> tuple[Any, tuple[Any, ...]]:
    """The sending half: ``t``'s bytes inline or in a new shared-memory segment, and how to rebuild it."""
    data = t.tobytes()
    nbytes = len(data)
    meta = (t.dtype.name, tuple(t.shape), str(t.device), bool(t.requires_grad and t.is_leaf))
    if nbytes <= INLINE_BYTES:
        return rebuild_tensor, (data, None, nbytes, *meta)
    segment = _new_segment(nbytes)
    for names in getattr(_recording, "lists", ()):
        names.append(segment.name)
    try:
        segment.buf[:nbytes] = data
    except BaseException:
        segment.close()
        segment.unlink()
        raise
    segment.close()  # the segment lives on (it is not unlinked) until the receiver has copied it
    return rebuild_tensor, (None, segment.name, nbytes, *meta)


def _register() -> None:
    # the dispatch table is keyed by exact type: register Tensor and its subclasses (Parameter)
    todo = [lc.Tensor]
    while todo:
        cls = todo.pop()
        ForkingPickler.register(cls, reduce_tensor)
        todo.extend(cls.__subclasses__())


_register()
