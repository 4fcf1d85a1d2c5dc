"""How Lucid tensors cross process boundaries in ``multiprocessing`` (``ForkingPickler``), as PyTorch's do.

A tensor in shared memory (``share_memory_()``, ``Module.share_memory()``) travels by handle: the receiver
maps the same memory (the NumPy backend hands over a duplicate of its memory file's descriptor), so writes
on either side are seen by both, which Hogwild training relies on. Any other tensor travels by value,
through ``lucid_data``'s reducer (inline bytes or a one-reader shared-memory segment); PyTorch moves such a
tensor into shared memory first, Lucid copies it and leaves the sender's tensor where it is. A
``Parameter`` arrives as a ``Parameter``. Registered when :mod:`lucid.multiprocessing` is imported.
"""

from __future__ import annotations

__all__ = ["init_reductions", "rebuild_shared", "rebuild_copy", "reduce_tensor"]

from collections.abc import Callable
from multiprocessing.reduction import ForkingPickler
from typing import Any

import lucid_core as lc
from lucid_core._tensor import shared_tensor
from lucid_data import _shm


def rebuild_shared(handle: Any, device: str, requires_grad: bool, cls: type[lc.Tensor]) -> lc.Tensor:
    """The receiving half for a shared tensor: the sender's memory, mapped here."""
    dev = lc.resolve_device(device)
    return shared_tensor(dev.backend.from_shared_handle(handle), dev, cls, requires_grad)


def rebuild_copy(
    rebuild: Callable[..., lc.Tensor], args: tuple[Any, ...], cls: type[lc.Tensor], requires_grad: bool
) -> lc.Tensor:
    """The receiving half for a copied tensor, keeping its type (a ``Parameter`` stays one)."""
    out = rebuild(*args)
    if issubclass(cls, lc.Parameter):
        return cls(out, requires_grad=requires_grad)
    return out


def reduce_tensor(t: lc.Tensor) -> tuple[Any, tuple[Any, ...]]:
    """The sending half: a shared tensor by handle, any other by value."""
    if t.requires_grad and not t.is_leaf:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not support "
            "crossing process boundaries.  If you just want to transfer the data, call detach() on the tensor "
            "before serializing (e.g., putting it on the queue)."
        )
    grad = bool(t.requires_grad)
    if t.is_shared():
        return rebuild_shared, (t._device.backend.shared_handle(t._data), str(t.device), grad, type(t))
    rebuild, args = _shm.reduce_tensor(t)
    return rebuild_copy, (rebuild, args, type(t), grad)


def init_reductions() -> None:
    """Register :func:`reduce_tensor` with ``ForkingPickler`` for ``Tensor`` and every subclass."""
    todo: list[type] = [lc.Tensor]
    while todo:
        cls = todo.pop()
        ForkingPickler.register(cls, reduce_tensor)
        todo.extend(cls.__subclasses__())
