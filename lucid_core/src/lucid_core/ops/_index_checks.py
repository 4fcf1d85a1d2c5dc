"""Bounds checks for index tensors (gather, scatter, index_select, take, embedding), with PyTorch's rules.

Libraries differ on a bad index: NumPy wraps negative ones and raises for the rest, MLX clamps or reads
garbage. Lucid checks before indexing, so every backend gives the same error, and never wraps silently where
PyTorch refuses negative indices. The check is one min and one max reduction of the index, evaluated together
(one sync on lazy backends), which is what PyTorch's own kernels pay.
"""

from __future__ import annotations

from .._autograd import traced_check
from .._tensor import Tensor
from ..backend import evaluate
from . import reduction as _r


class IndexOutOfRangeError(IndexError, RuntimeError):
    """An index outside its dimension: an ``IndexError``, and the ``RuntimeError`` PyTorch raises for gather/scatter."""


def index_bounds(index: Tensor) -> tuple[int, int]:
    """The smallest and largest entries of a non-empty integer ``index``; a lazy backend computes both in one
    evaluation (an eager one reads them back directly: stacking them first costs more than it saves)."""
    while hasattr(index, "_phys"):  # under vmap: the bounds of every example's index at once
        index = index._phys
    lo, hi = _r.min(index), _r.max(index)
    if index._device.backend.capabilities.get("lazy", False):
        evaluate((lo, hi))
    return int(lo.item()), int(hi.item())


@traced_check
def check_index_range(index: Tensor, size: int, name: str, dim: int | None = None, negative: bool = False) -> None:
    """Raise :class:`IndexOutOfRangeError` unless every entry of ``index`` lies in ``[0, size)``, or in
    ``[-size, size)`` where ``negative`` (counted from the end, as ``take`` and ``take_along_axis`` allow).

    The message names the first bad bound found (the smallest or largest index), the dimension and the valid range.
    """
    if not isinstance(index, Tensor):
        raise TypeError(f"{name}: index must be an integer Tensor, got {type(index).__name__}")
    if index.dtype.kind not in "iu":
        raise TypeError(f"{name}: index must be an integer tensor, got {index.dtype.name}")
    if index.size == 0:
        return
    lo, hi = index_bounds(index)
    first = -size if negative else 0
    if first <= lo and hi < size:
        return
    bad = lo if lo < first else hi
    where = "" if dim is None else f" for dimension {dim}"
    if size == 0:
        valid = "there are no valid indices"
    else:
        valid = f"valid indices are {first} to {size - 1}"
    hint = "" if negative or bad >= 0 else " (negative indices are not counted from the end here)"
    raise IndexOutOfRangeError(f"{name}: index {bad} is out of bounds{where} with size {size}; {valid}{hint}")
