"""The namespace functions that PyTorch spells or means differently from the Array API standard.

Most are the tensor method of the same name (``lucid.sum(x, 1)`` is ``x.sum(1)``): the methods in
``lucid_core`` already follow PyTorch, so the namespace function hands its arguments to the method and
one implementation serves both. The rest adapt a ``lucid_core`` function's signature (``dim=`` instead of
``axis=``, positional dims, PyTorch's return values).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

import lucid_core as lc
from lucid_core import Tensor

# namespace functions that are exactly the tensor method of the same name
_FROM_METHODS = (
    "sum", "mean", "prod", "var", "std", "all", "any", "logsumexp", "amax", "amin", "max", "min", "argmax",
    "argmin", "cumsum", "cumprod", "norm", "count_nonzero", "sort", "argsort", "topk", "split", "chunk", "unbind",
    "flatten", "unflatten", "permute", "transpose", "t", "squeeze", "unsqueeze", "masked_fill", "gather",
    "scatter", "scatter_add", "index_select", "index_add", "masked_select", "eq", "ne", "lt", "le", "gt", "ge",
    "add", "sub", "mul", "div", "mm", "bmm", "softmax", "log_softmax", "numel", "is_floating_point",
    "is_complex", "fmod", "narrow", "select", "diagonal", "as_strided", "tensor_split", "movedim", "swapdims",
    "swapaxes", "moveaxis",
)  # fmt: skip


def _from_method(name: str) -> Callable[..., Any]:
    method = getattr(Tensor, name)

    def function(input: Tensor, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(input, Tensor):
            raise TypeError(f"lucid.{name}: expected a Tensor as the first argument, got {type(input).__name__}")
        return method(input, *args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"``lucid.{name}(x, ...)`` is ``x.{name}(...)``: {(method.__doc__ or '').splitlines()[0]}"
    return function


for _name in _FROM_METHODS:
    globals()[_name] = _from_method(_name)
del _name

multiply, subtract, divide, clamp, clip = mul, sub, div, lc.clip, lc.clip  # type: ignore[name-defined] # noqa: F821


def cat(tensors: Sequence[Tensor], dim: int = 0, *, axis: int | None = None) -> Tensor:
    """Join ``tensors`` along ``dim`` (PyTorch's ``cat``; ``lucid_core.concat`` in the standard)."""
    return lc.concat(list(tensors), axis=dim if axis is None else axis)


concat = concatenate = cat


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


def repeat_interleave(input: Tensor, repeats: int | Tensor, dim: int | None = None) -> Tensor:
    """Repeat each element ``repeats`` times along ``dim`` (of the flattened tensor when None)."""
    return lc.repeat(input, repeats, axis=dim)


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    """Repeat ``input`` along each axis; fewer ``dims`` than axes pad with 1 in front, as in PyTorch."""
    dims = tuple(dims)
    return lc.tile(input, (1,) * (input.ndim - len(dims)) + dims)


def flip(input: Tensor, dims: Sequence[int]) -> Tensor:
    """Reverse the order of elements along ``dims``."""
    return lc.flip(input, axis=tuple(dims) if not isinstance(dims, int) else dims)


def roll(input: Tensor, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
    """Shift elements cyclically along ``dims``."""
    return lc.roll(input, shifts, axis=dims)


def diff(
    input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None, append: Tensor | None = None
) -> Tensor:
    """The ``n``-th forward difference along ``dim``."""
    return lc.diff(input, axis=dim, n=n, prepend=prepend, append=append)


def where(condition: Tensor, input: Tensor | complex | None = None, other: Tensor | complex | None = None) -> Any:
    """``input`` where ``condition`` holds, ``other`` elsewhere; with only ``condition``, its nonzero indices."""
    if input is None and other is None:
        return lc.nonzero(condition)
    return lc.where(condition, input, other)


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:
    """Indices of nonzero elements: an ``(n, ndim)`` tensor, or one 1-D tensor per axis with ``as_tuple``."""
    idx = lc.nonzero(input)
    return idx if as_tuple else lc.stack(list(idx), axis=1)


def equal(input: Tensor, other: Tensor) -> bool:
    """True if both tensors have the same shape and elements (a Python bool, as PyTorch's ``equal``)."""
    return input.shape == other.shape and builtins.bool(lc.all(lc.equal(input, other)).item())


def isclose(
    input: Tensor, other: Tensor | complex, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> Tensor:
    """Element-wise ``|input - other| <= atol + rtol * |other|`` (NaNs equal with ``equal_nan``)."""
    other = other if isinstance(other, Tensor) else lc.asarray(other, dtype=input.dtype, device=input.device)
    if input.dtype.kind not in "fc":
        return lc.equal(input, other)
    close = lc.less_equal(lc.abs(input - other), atol + rtol * lc.abs(other))
    close = lc.logical_or(close, lc.equal(input, other))  # equal infinities
    if equal_nan:
        close = lc.logical_or(close, lc.logical_and(lc.isnan(input), lc.isnan(other)))
    return close


def allclose(
    input: Tensor, other: Tensor | complex, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> bool:
    """Whether every element is close (see :func:`isclose`); a Python bool."""
    return builtins.bool(lc.all(isclose(input, other, rtol, atol, equal_nan)).item())


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle (below ``diagonal``) of the last two axes, zeros above."""
    return lc.tril(input, k=diagonal)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle (above ``diagonal``) of the last two axes, zeros below."""
    return lc.triu(input, k=diagonal)


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


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """Pick elements along ``dim`` by ``indices`` (of the flattened tensor when None)."""
    if dim is None:
        return lc.take(input, lc.reshape(indices, (-1,)))
    return lc.take_along_axis(input, indices, axis=dim)


def searchsorted(
    sorted_sequence: Tensor, values: Tensor | float | Sequence[float], *, right: bool = False, side: str | None = None
) -> Tensor:
    """Insertion points of ``values`` in the 1-D ``sorted_sequence``."""
    if not isinstance(values, Tensor):
        values = lc.asarray(values, dtype=sorted_sequence.dtype, device=sorted_sequence.device)
    return lc.searchsorted(sorted_sequence, values, side=side or ("right" if right else "left"))


def bitwise_not(input: Tensor) -> Tensor:
    """Element-wise bitwise NOT (logical NOT for bools)."""
    return lc.bitwise_invert(input)


def is_tensor(obj: Any) -> bool:
    """Whether ``obj`` is a Lucid tensor."""
    return isinstance(obj, Tensor)


def is_nonzero(input: Tensor) -> bool:
    """Whether the single element of ``input`` is nonzero."""
    return builtins.bool(input)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0) -> Tensor:
    """Pairwise ``p``-distances between the rows of ``x1`` and ``x2`` (the last two axes)."""
    d = lc.expand_dims(x1, axis=-2) - lc.expand_dims(x2, axis=-3)
    return lc.linalg.vector_norm(d, axis=-1, ord=p)


def dist(input: Tensor, other: Tensor, p: float = 2.0) -> Tensor:
    """The ``p``-norm of ``input - other``."""
    return lc.linalg.vector_norm(input - other, ord=p)


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
    """The seed last given to :func:`manual_seed`."""
    return lc.initial_seed()


_OWN_MODULES = (__name__, "lucid_core.ops.elementwise", "lucid_core.ops.manipulation")
__all__ = sorted(
    name
    for name, value in globals().items()
    if not name.startswith("_") and callable(value) and getattr(value, "__module__", "") in _OWN_MODULES
    and name not in ("Tensor", "Callable", "Sequence", "Any")
)  # fmt: skip
