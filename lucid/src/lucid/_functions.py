"""The namespace functions that PyTorch spells or means differently from the Array API standard.

Most come from ``lucid_core``'s op table (:mod:`lucid_core._op_table`): an op declared once there is the
tensor method, its in-place ``name_`` and the free function here (``lucid.sum(x, 1)`` is ``x.sum(1)``;
``lucid.exp(x, out=y)`` writes into ``y``). The rest, below, adapt a ``lucid_core`` function's signature
(``dim=`` instead of ``axis=``, positional dims, PyTorch's return values).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import lucid_core as lc
from lucid_core import Tensor, _op_table
from lucid_core.amp import autocast_op

# the functions declared in lucid_core's op table (method, in-place and function made from one entry)
_TABLE_FUNCTIONS = _op_table.face_functions()
globals().update(_TABLE_FUNCTIONS)
_TABLE = frozenset(_TABLE_FUNCTIONS)
del _TABLE_FUNCTIONS


@autocast_op("cat")
def cat(tensors: Sequence[Tensor], dim: int = 0, *, axis: int | None = None) -> Tensor:
    """Join ``tensors`` along ``dim`` (PyTorch's ``cat``; ``lucid_core.concat`` in the standard)."""
    return lc.concat(list(tensors), axis=dim if axis is None else axis)


concat = concatenate = cat


@autocast_op("stack")
def stack(tensors: Sequence[Tensor], dim: int = 0, *, axis: int | None = None) -> Tensor:
    """Join ``tensors`` along a new axis ``dim`` (``axis=``, the seeds' spelling, is accepted too)."""
    return lc.stack(list(tensors), axis=dim if axis is None else axis)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along the first axis of 1-D tensors, the second otherwise."""
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join 1-D tensors as rows, others along the first axis."""
    return cat([t.reshape(1, -1) if t.ndim == 1 else t for t in tensors], 0)


def reshape(input: Tensor, shape: Sequence[int]) -> Tensor:
    """``input`` with a new ``shape`` (-1 infers one axis)."""
    return lc.reshape(input, tuple(shape))


def repeat(input: Tensor, *sizes: int | Sequence[int]) -> Tensor:
    """Tile ``input`` (as ``x.repeat``); PyTorch has only the method, Lucid offers both for symmetry."""
    return input.repeat(*sizes)


def flip(input: Tensor, dims: Sequence[int]) -> Tensor:
    """Reverse the order of elements along ``dims``."""
    return lc.flip(input, axis=tuple(dims) if not isinstance(dims, int) else dims)


def roll(input: Tensor, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
    """Shift elements cyclically along ``dims``."""
    return lc.roll(input, shifts, axis=dims)


def where(condition: Tensor, input: Tensor | complex | None = None, other: Tensor | complex | None = None) -> Any:
    """``input`` where ``condition`` holds, ``other`` elsewhere; with only ``condition``, its nonzero indices."""
    if input is None and other is None:
        return lc.nonzero(condition)
    return lc.where(condition, input, other)


def einsum(equation: str, *operands: Tensor | Sequence[Tensor]) -> Tensor:
    """Einstein summation; operands as separate arguments or one list, as PyTorch accepts both."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return lc.einsum(equation, *operands)


def meshgrid(*tensors: Tensor | Sequence[Tensor], indexing: str = "ij") -> tuple[Tensor, ...]:
    """Coordinate grids; ``indexing="ij"`` by default, as PyTorch (the standard's default is ``"xy"``)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    return tuple(lc.meshgrid(*tensors, indexing=indexing))


def searchsorted(
    sorted_sequence: Tensor, values: Tensor | float | Sequence[float], *, right: bool = False, side: str | None = None
) -> Tensor:
    """Insertion points of ``values`` in the 1-D ``sorted_sequence``."""
    if not isinstance(values, Tensor):
        values = lc.asarray(values, dtype=sorted_sequence.dtype, device=sorted_sequence.device)
    return lc.searchsorted(sorted_sequence, values, side=side or ("right" if right else "left"))


def is_tensor(obj: Any) -> bool:
    """Whether ``obj`` is a Lucid tensor."""
    return isinstance(obj, Tensor)


@autocast_op("cdist")
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0) -> Tensor:
    """Pairwise ``p``-distances between the rows of ``x1`` and ``x2`` (the last two axes)."""
    d = lc.expand_dims(x1, axis=-2) - lc.expand_dims(x2, axis=-3)
    if p == math.inf:
        # PyTorch's gradient of the largest |difference| goes whole to every tied coordinate (vector_norm's
        # shares it among them): the maximum plus a term that is exactly 0 in value and carries that gradient
        a = lc.abs(d)
        m = lc.max(a.detach(), axis=-1, keepdims=True)
        ties = lc.astype(a.detach() == m, a.dtype)
        return lc.squeeze(m, axis=-1) + lc.sum(ties * (a - m), axis=-1)
    return lc.linalg.vector_norm(d, axis=-1, ord=p)


def get_default_dtype() -> lc.DType:
    """The dtype of new floating-point tensors (float32)."""
    return lc.float32


def manual_seed(seed: int) -> Any:
    """Seed every backend's generator (and Python's ``random`` used by data loading)."""
    lc.manual_seed(seed)
    return seed


def seed() -> int:
    """Seed the generators from the clock; returns the seed used."""
    import time

    s = int(time.time_ns()) % (2**63)
    lc.manual_seed(s)
    return s


def initial_seed() -> int:
    """The seed last given to :func:`manual_seed` (PyTorch's default seed before any)."""
    from lucid_core._generator import DEFAULT_SEED

    s = lc.initial_seed()
    return DEFAULT_SEED if s is None else s


_OWN_MODULES = (__name__, "lucid_core.ops.elementwise", "lucid_core.ops.manipulation")
__all__ = sorted(
    name
    for name, value in globals().items()
    if (not name.startswith("_") and callable(value) and getattr(value, "__module__", "") in _OWN_MODULES
    and name not in ("Tensor", "Callable", "Sequence", "Any"))
    or name in _TABLE
)  # fmt: skip
