"""Tensor methods, PyTorch style: attached to :class:`~lucid_core.Tensor` when the package loads.

The Array API standard defines the namespace's functions and a tensor's operators and a few attributes
(``shape``, ``dtype``, ``device``, ``ndim``, ``size``, ``T``, ``mT``, ``to_device``); it says nothing about
methods, so methods follow PyTorch: ``x.sum(dim=1, keepdim=True)`` (``axis=``/``keepdims=`` are accepted
too), ``x.max(dim)`` returns ``(values, indices)``, ``x.split(2)`` splits into chunks of 2, ``x.repeat`` tiles,
``x.var()`` is unbiased. ``x.size`` stays the element count the standard requires; it is an ``int`` that can
also be called, so ``x.size()`` / ``x.size(-1)`` work as in PyTorch (see :class:`SizeInt`).

The namespace functions (``lucid_core.max``, ``lucid_core.split``...) keep the standard's meaning; the
``lucid`` distribution's namespace follows these methods.
"""

from __future__ import annotations

__all__ = ["Size", "SizeInt", "ValuesIndices", "attach"]

import builtins
import itertools
import math
import sys
from collections.abc import Sequence
from typing import Any, NamedTuple

from . import _dtypes as dt
from . import _views, linalg
from ._autograd import Function
from ._registry import resolve_device
from ._tensor import Tensor
from ._tensor_operators import _scaled
from ._tensor_operators import attach as _attach_operators
from ._typing import DeviceLike, DTypeLike
from .ops import _index_checks as _ix
from .ops import complex as _cx
from .ops import creation as _c
from .ops import elementwise as _e
from .ops import extended as _x
from .ops import indexing as _i
from .ops import manipulation as _m
from .ops import random as _rand
from .ops import reduction as _r
from .ops import searching as _s
from .ops._helpers import normalize_axis


class Size(tuple):
    """A tensor's shape as ``x.size()`` returns it (PyTorch's ``torch.Size``): a tuple with ``numel()``."""

    __slots__ = ()

    def numel(self) -> int:
        """The number of elements of a tensor of this shape."""
        return math.prod(self)

    def __repr__(self) -> str:
        return f"lucid.Size({list(self)})"

    def __getitem__(self, key: Any) -> Any:
        out = tuple.__getitem__(self, key)
        return Size(out) if isinstance(key, slice) else out


class SizeInt(int):
    """``x.size``: the element count (an ``int``, as the Array API requires) that can also be called.

    ``x.size == 6`` and ``x.size // 2`` are integer arithmetic; ``x.size()`` returns the shape as a
    :class:`Size` and ``x.size(d)`` the length of axis ``d``, as in PyTorch.
    """

    _shape: tuple[int, ...]

    def __new__(cls, shape: tuple[int, ...]) -> SizeInt:
        n = 1
        for s in shape:
            n *= s
        self = super().__new__(cls, n)
        self._shape = shape
        return self

    def __call__(self, dim: int | None = None) -> Any:
        if dim is None:
            return Size(self._shape)
        if not isinstance(dim, int) or isinstance(dim, builtins.bool):
            raise TypeError(f"size(dim): dim must be an int, got {type(dim).__name__}")
        return self._shape[normalize_axis(dim, len(self._shape), "size")]

    def __repr__(self) -> str:
        return int.__repr__(self)

    def __reduce__(self) -> Any:
        return (int, (int(self),))  # pickles and copies as the plain count


class ValuesIndices(NamedTuple):
    """What ``max``/``min``/``sort``/``topk``/``mode``-style ops with ``dim`` return: values and their indices."""

    values: Tensor
    indices: Tensor


_MISSING: Any = object()


def _dim(dim: Any, axis: Any, name: str) -> Any:
    """PyTorch's ``dim`` or the standard's ``axis`` (one of them), lists turned into tuples."""
    if axis is not _MISSING:
        if dim is not None and dim is not _MISSING:
            raise TypeError(f"{name}: pass dim= or axis=, not both")
        dim = axis
    if dim is _MISSING:
        dim = None
    if isinstance(dim, list):
        dim = tuple(dim)
    return dim


def _keep(keepdim: bool, keepdims: Any) -> bool:
    return builtins.bool(keepdim if keepdims is _MISSING else keepdims)


def _shape_args(shape: tuple[Any, ...]) -> tuple[int, ...]:
    """``f(2, 3)`` or ``f((2, 3))`` / ``f(lucid.Size([2, 3]))``."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


# -- shape ------------------------------------------------------------------------------------------------------
def _size(self: Tensor) -> SizeInt:
    return SizeInt(tuple(self._data.shape))


def dim(self: Tensor) -> int:
    """The number of axes (PyTorch's name for ``ndim``)."""
    return self.ndim


def nelement(self: Tensor) -> int:
    """The number of elements (PyTorch's other name for ``numel``)."""
    return int(self.size)


def reshape(self: Tensor, *shape: Any) -> Tensor:
    """``x.reshape(2, 3)`` or ``x.reshape((2, 3))``; -1 infers one axis."""
    return _m.reshape(self, _shape_args(shape))


def view(self: Tensor, *shape: Any) -> Tensor:
    """A view in a new shape (writes through it land here); a shape the strides cannot express raises, as in
    PyTorch (``reshape`` copies then)."""
    return _m.view(self, _shape_args(shape))


def view_as(self: Tensor, other: Tensor) -> Tensor:
    """A view in ``other``'s shape."""
    return _m.view(self, other.shape)


def reshape_as(self: Tensor, other: Tensor) -> Tensor:
    """Reshape to ``other``'s shape."""
    return _m.reshape(self, other.shape)


def contiguous(self: Tensor, memory_format: Any = None) -> Tensor:
    """The tensor itself when it is contiguous (C order), else a contiguous copy, as PyTorch's."""
    return self if is_contiguous(self) else _m.clone(self)


def is_contiguous(self: Tensor, memory_format: Any = None) -> builtins.bool:
    """Whether the elements lie in C order in the storage (PyTorch's rule: axes of length 1 do not count)."""
    if self._view is None:
        return True
    shape, strides, _ = _views.layout(self)
    return _views.is_contiguous(shape, strides)


def stride(self: Tensor, dim: int | None = None) -> Any:
    """The step in the storage, in elements, along each axis (or along ``dim``), as PyTorch reports it."""
    strides = _views.contiguous_strides(self.shape) if self._view is None else _views.layout(self)[1]
    return tuple(strides) if dim is None else strides[normalize_axis(dim, self.ndim, "stride")]


def storage_offset(self: Tensor) -> int:
    """Where the first element lies in the storage, in elements."""
    return 0 if self._view is None else _views.layout(self)[2]


def element_size(self: Tensor) -> int:
    """Bytes per element."""
    return self.dtype.itemsize


def untyped_storage(self: Tensor) -> UntypedStorage:
    """The storage this tensor shares with its base, aliases and views (PyTorch's ``untyped_storage()``)."""
    return UntypedStorage(self)


def data_ptr(self: Tensor) -> int:
    """The address of the first element: the storage's (see :class:`UntypedStorage`) plus the offset."""
    return untyped_storage(self).data_ptr() + storage_offset(self) * element_size(self)


class UntypedStorage:
    """A tensor's storage as identity: ``data_ptr()`` is equal for tensors that share it and differs otherwise.

    Lucid's storages live in whichever library the backend wraps (and move when an immutable library's
    array is replaced by a write), so the address is not the memory's: each storage gets a stable, unique
    number, spaced so that ``data_ptr()`` of its elements never meets another storage's.
    """

    __slots__ = ("_box", "_nbytes")

    def __init__(self, t: Tensor) -> None:
        self._box = t._storage()
        data = self._box.data
        n = 1
        for d in data.shape:
            n *= d
        self._nbytes = n * t._device.backend.lucid_dtype(data.dtype).itemsize

    def data_ptr(self) -> int:
        """The storage's address (stable while it lives)."""
        return _views.address(self._box)

    def nbytes(self) -> int:
        """Its size in bytes."""
        return self._nbytes

    def size(self) -> int:
        """Its size in bytes (an untyped storage counts bytes)."""
        return self._nbytes

    def __eq__(self, other: object) -> builtins.bool:
        return isinstance(other, UntypedStorage) and other._box is self._box

    def __hash__(self) -> int:
        return id(self._box)

    def __repr__(self) -> str:
        return f"<UntypedStorage of {self._nbytes} bytes at {self.data_ptr():#x}>"


def _base(self: Tensor) -> Tensor | None:
    """The tensor this one is a view of (the first one of a chain of views), or None (PyTorch's ``_base``)."""
    v = self._view
    return v.base if v is not None and v.track else None


def _real(self: Tensor) -> Tensor:
    """The real part: a view for complex tensors (writes land here), the tensor itself for real ones."""
    return _cx.real(self)


def _imag(self: Tensor) -> Tensor:
    """The imaginary part of a complex tensor, as a view (writes land here)."""
    if self.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return _cx.imag(self)


def _is_view(self: Tensor) -> builtins.bool:
    """Whether this tensor is a view of another one (``detach()`` gives none, as in PyTorch)."""
    v = self._view
    return v is not None and v.track


def narrow(self: Tensor, dim: int, start: Any, length: int) -> Tensor:
    """The view of ``length`` elements from ``start`` along ``dim``."""
    d = normalize_axis(dim, self.ndim, "narrow")
    n = self.shape[d]
    start = int(start)
    if start < 0:
        start += n
    if not 0 <= start <= n or length < 0 or start + length > n:
        raise IndexError(f"narrow: start ({start}) + length ({length}) exceeds dimension {dim} of size {n}")
    return _i.getitem(self, (slice(None),) * d + (slice(start, start + length),))


def select(self: Tensor, dim: int, index: int) -> Tensor:
    """The view at ``index`` along ``dim``, without that axis."""
    d = normalize_axis(dim, self.ndim, "select")
    n = self.shape[d]
    if not -n <= int(index) < n:
        raise IndexError(f"select: index {index} out of range for dimension {dim} of size {n}")
    return _i.getitem(self, (slice(None),) * d + (int(index),))


def tensor_split(self: Tensor, indices_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Views split along ``dim``: into ``n`` near-equal parts (the first ones one longer), or at the indices."""
    d = normalize_axis(dim, self.ndim, "tensor_split")
    n = self.shape[d]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if k <= 0:
            raise ValueError(f"tensor_split: number of sections must be larger than 0, got {k}")
        q, r = divmod(n, k)
        bounds = [i * q + builtins.min(i, r) for i in range(k + 1)]
    else:
        bounds = [0, *(builtins.min(builtins.max(int(i), 0), n) for i in indices_or_sections), n]
    lead = (slice(None),) * d
    return tuple(_i.getitem(self, (*lead, slice(a, builtins.max(a, b)))) for a, b in itertools.pairwise(bounds))


def movedim(self: Tensor, source: Any, destination: Any) -> Tensor:
    """The view with axes ``source`` moved to ``destination`` (the others keep their order)."""
    return _m.moveaxis(self, source, destination)


def diagonal(self: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The view of the ``offset``-th diagonal of axes ``dim1``, ``dim2``, as a new last axis (writes land here)."""
    a = normalize_axis(dim1, self.ndim, "diagonal")
    b = normalize_axis(dim2, self.ndim, "diagonal")
    if a == b:
        raise ValueError(f"diagonal: dim1 and dim2 cannot be the same axis ({dim1})")
    step = _views.Diagonal(int(offset), a, b)
    return _views.make_view(step.op(self), self, step)


def unfold(self: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """The view of every window of ``size`` elements, ``step`` apart, along ``dimension`` (a new last axis)."""
    d = normalize_axis(dimension, builtins.max(self.ndim, 1), "unfold")
    n = self.shape[d] if self.ndim else 1
    if size < 0 or size > n:
        raise RuntimeError(f"unfold: maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"unfold: step is {step} but must be > 0")
    x = self if self.ndim else _m.reshape(self, (1,))
    s = _views.Unfold(d, int(size), int(step))
    return _views.make_view(s.op(x), x, s)


def as_strided(self: Tensor, size: Any, stride: Any, storage_offset: int | None = None) -> Tensor:
    """The view whose element ``i`` lies at ``storage_offset + sum(i[k] * stride[k])`` of the storage."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"as_strided: mismatch in length of strides ({len(stride)}) and shape ({len(size)})")
    if self._view is not None and builtins.any(isinstance(st, _views.Component) for st in self._view.chain):
        raise NotImplementedError("as_strided of the real or imaginary part of a complex tensor")
    offset = self.storage_offset() if storage_offset is None else int(storage_offset)  # the argument hides the function
    box = self._storage()
    numel = 1
    for d in box.data.shape:
        numel *= d
    last = offset + builtins.sum((n - 1) * st for n, st in zip(size, stride) if n > 0)
    if builtins.any(st < 0 for st in stride) or offset < 0 or (0 not in size and last >= numel):
        raise RuntimeError(
            f"as_strided: setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset} need a "
            f"storage of {last + 1} elements, but the storage has {numel}"
        )
    s = _views.Strided(size, stride, offset)
    v = self._view
    src = self if v is None else v.base if v.track else v.base.detach()  # the tensor holding the storage's array
    return _views.make_view(s.op(src), self, s, track=v is None or v.track)


def flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge axes ``start_dim``..``end_dim`` into one."""
    return _m.flatten(self, start_dim, end_dim)


def unflatten(self: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Split axis ``dim`` into ``sizes`` (the inverse of ``flatten``)."""
    d = normalize_axis(dim, self.ndim, "unflatten")
    return _m.reshape(self, self.shape[:d] + tuple(sizes) + self.shape[d + 1 :])


def permute(self: Tensor, *dims: Any) -> Tensor:
    """Reorder the axes: ``x.permute(2, 0, 1)`` or ``x.permute((2, 0, 1))``."""
    return _m.permute_dims(self, _shape_args(dims))


def transpose(self: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two axes."""
    return _m.swapaxes(self, dim0, dim1)


def t(self: Tensor) -> Tensor:
    """Transpose a 2-D tensor (0-D and 1-D tensors come back as they are), as PyTorch's ``t()``."""
    if self.ndim > 2:
        raise ValueError(f"t() expects a tensor with <= 2 dimensions, got {self.ndim}; use transpose or mT")
    return self if self.ndim < 2 else _m.swapaxes(self, 0, 1)


def squeeze(self: Tensor, dim: Any = None, *, axis: Any = _MISSING) -> Tensor:
    """Drop axes of length 1 (all of them, or those in ``dim``); an axis of another length stays, as in PyTorch."""
    d = _dim(dim, axis, "squeeze")
    if d is None:
        return _m.squeeze(self, tuple(i for i, s in enumerate(self.shape) if s == 1))
    dims = d if isinstance(d, tuple) else (d,)
    dims = tuple(normalize_axis(a, builtins.max(self.ndim, 1), "squeeze") for a in dims)
    return _m.squeeze(self, tuple(a for a in dims if self.ndim and self.shape[a] == 1))


def unsqueeze(self: Tensor, dim: int) -> Tensor:
    """Insert an axis of length 1 at ``dim``."""
    return _m.expand_dims(self, axis=dim)


def expand(self: Tensor, *sizes: Any) -> Tensor:
    """Broadcast to ``sizes`` (-1 keeps an axis), as PyTorch's ``expand``."""
    shape = _shape_args(sizes)
    lead = len(shape) - self.ndim
    if lead < 0:
        raise ValueError(f"expand: the tensor has {self.ndim} dimensions but only {len(shape)} sizes were given")
    shape = tuple(self.shape[i - lead] if s == -1 else s for i, s in enumerate(shape))
    return _m.broadcast_to(self, shape)


def expand_as(self: Tensor, other: Tensor) -> Tensor:
    """Broadcast to ``other``'s shape."""
    return _m.broadcast_to(self, other.shape)


def repeat(self: Tensor, *sizes: Any) -> Tensor:
    """Tile the tensor ``sizes[i]`` times along each axis (PyTorch's ``repeat``, NumPy's ``tile``)."""
    reps = _shape_args(sizes)
    if len(reps) < self.ndim:
        raise ValueError(
            f"repeat: {len(reps)} repeat counts for a {self.ndim}-D tensor; give at least one per dimension"
        )
    return _m.tile(self, reps)


def split(self: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Split along ``dim`` into chunks of ``split_size`` (the last may be smaller), or of the given sizes."""
    d = normalize_axis(dim, self.ndim, "split")
    n = self.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0:
            raise ValueError(f"split: split_size must be positive, got {step}")
        sizes = [builtins.min(step, n - i) for i in range(0, n, step)] or [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if builtins.sum(sizes) != n:
            raise ValueError(f"split: sizes {sizes} add up to {builtins.sum(sizes)} but dimension {dim} has {n}")
    if builtins.any(s < 0 for s in sizes):
        raise ValueError(f"split: sizes must not be negative, got {sizes}")
    return _m.split_sizes(self, d, sizes)


def chunk(self: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into ``chunks`` pieces of equal size along ``dim`` (the last may be smaller; fewer if too short)."""
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    n = self.shape[normalize_axis(dim, self.ndim, "chunk")]
    return split(self, builtins.max(-(-n // chunks), 1), dim)


def unbind(self: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along ``dim``, each without that axis."""
    return tuple(_m.unstack(self, axis=dim))


def flip(self: Tensor, *dims: Any, **kwargs: Any) -> Tensor:
    """Reverse the order of elements along ``dims`` (``x.flip(0, 1)``, ``x.flip((0, 1))`` or ``x.flip(dims=...)``)."""
    if kwargs:
        if dims or set(kwargs) != {"dims"}:
            raise TypeError(f"flip() takes the dims once, positionally or as dims=; got {dims} and {sorted(kwargs)}")
        dims = (kwargs["dims"],)
    return _m.flip(self, axis=_shape_args(dims))


def roll(self: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """Shift elements cyclically along ``dims`` (of the flattened tensor when None)."""
    return _m.roll(self, shifts, axis=dims)


# -- reductions --------------------------------------------------------------------------------------------------
def sum(
    self: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: DTypeLike = None, axis: Any = _MISSING,
    keepdims: Any = _MISSING,
) -> Tensor:  # fmt: skip
    """Sum over ``dim`` (all axes by default)."""
    return _r.sum(self, axis=_dim(dim, axis, "sum"), keepdims=_keep(keepdim, keepdims), dtype=dtype)


def mean(
    self: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: DTypeLike = None, axis: Any = _MISSING,
    keepdims: Any = _MISSING,
) -> Tensor:  # fmt: skip
    """Mean over ``dim`` (all axes by default)."""
    x = self if dtype is None else _m.astype(self, dtype)
    return _r.mean(x, axis=_dim(dim, axis, "mean"), keepdims=_keep(keepdim, keepdims))


def prod(
    self: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: DTypeLike = None, axis: Any = _MISSING,
    keepdims: Any = _MISSING,
) -> Tensor:  # fmt: skip
    """Product over ``dim`` (all axes by default)."""
    x = self if dtype is None else _m.astype(self, dtype)
    return _r.prod(x, axis=_dim(dim, axis, "prod"), keepdims=_keep(keepdim, keepdims))


def _correction(unbiased: Any, correction: Any) -> float:
    if correction is not None:
        return float(correction)
    return 1.0 if unbiased is None or unbiased else 0.0


def var(
    self: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction: Any = None,
    axis: Any = _MISSING, keepdims: Any = _MISSING,
) -> Tensor:  # fmt: skip
    """Variance over ``dim``; unbiased (``correction=1``) by default, as in PyTorch."""
    if isinstance(dim, builtins.bool):  # the old spelling var(unbiased)
        dim, unbiased = None, dim
    d = _dim(dim, axis, "var")
    return _r.var(self, axis=d, keepdims=_keep(keepdim, keepdims), correction=_correction(unbiased, correction))


def std(
    self: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *, correction: Any = None,
    axis: Any = _MISSING, keepdims: Any = _MISSING,
) -> Tensor:  # fmt: skip
    """Standard deviation over ``dim``; unbiased (``correction=1``) by default, as in PyTorch."""
    if isinstance(dim, builtins.bool):
        dim, unbiased = None, dim
    d = _dim(dim, axis, "std")
    return _r.std(self, axis=d, keepdims=_keep(keepdim, keepdims), correction=_correction(unbiased, correction))


def all(
    self: Tensor, dim: Any = None, keepdim: bool = False, *, axis: Any = _MISSING, keepdims: Any = _MISSING
) -> Tensor:
    """Whether every element (along ``dim``) is true."""
    return _r.all(self, axis=_dim(dim, axis, "all"), keepdims=_keep(keepdim, keepdims))


def any(
    self: Tensor, dim: Any = None, keepdim: bool = False, *, axis: Any = _MISSING, keepdims: Any = _MISSING
) -> Tensor:
    """Whether any element (along ``dim``) is true."""
    return _r.any(self, axis=_dim(dim, axis, "any"), keepdims=_keep(keepdim, keepdims))


def logsumexp(
    self: Tensor, dim: Any = None, keepdim: bool = False, *, axis: Any = _MISSING, keepdims: Any = _MISSING
) -> Tensor:
    """``log(sum(exp(x)))`` over ``dim``, computed stably."""
    return _r.logsumexp(self, axis=_dim(dim, axis, "logsumexp"), keepdims=_keep(keepdim, keepdims))


def amax(self: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Largest value over ``dim`` (values only; tied maxima share the gradient)."""
    return _r.max(self, axis=_dim(dim, _MISSING, "amax"), keepdims=keepdim)


def amin(self: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Smallest value over ``dim`` (values only; tied minima share the gradient)."""
    return _r.min(self, axis=_dim(dim, _MISSING, "amin"), keepdims=keepdim)


def _extremum(self: Tensor, dim: Any, keepdim: bool, name: str, axis: Any, keepdims: Any) -> Any:
    if isinstance(dim, Tensor):  # x.max(other): the element-wise maximum
        return (_e.maximum if name == "max" else _e.minimum)(self, dim)
    d = _dim(dim, axis, name)
    keep = _keep(keepdim, keepdims)
    if d is None:
        return (_r.max if name == "max" else _r.min)(self, keepdims=keep)
    if isinstance(d, tuple):
        raise TypeError(f"{name}: dim must be an int (use amax/amin for several dims), got {d}")
    idx = (_s.argmax if name == "max" else _s.argmin)(self, axis=d, keepdims=True)
    values = _i.take_along_axis(self, idx, axis=d)  # the gradient goes to the chosen index, as in PyTorch
    if not keep:
        values, idx = _m.squeeze(values, d), _m.squeeze(idx, d)
    return ValuesIndices(values, idx)


def max(self: Tensor, dim: Any = None, keepdim: bool = False, *, axis: Any = _MISSING, keepdims: Any = _MISSING) -> Any:
    """The largest value; with ``dim``, ``(values, indices)`` along it; with a tensor, the element-wise maximum."""
    return _extremum(self, dim, keepdim, "max", axis, keepdims)


def min(self: Tensor, dim: Any = None, keepdim: bool = False, *, axis: Any = _MISSING, keepdims: Any = _MISSING) -> Any:
    """The smallest value; with ``dim``, ``(values, indices)`` along it; with a tensor, the element-wise minimum."""
    return _extremum(self, dim, keepdim, "min", axis, keepdims)


def argmax(
    self: Tensor, dim: Any = None, keepdim: bool = False, *, axis: Any = _MISSING, keepdims: Any = _MISSING
) -> Tensor:
    """Index of the first largest value along ``dim`` (of the flattened tensor when None)."""
    return _s.argmax(self, axis=_dim(dim, axis, "argmax"), keepdims=_keep(keepdim, keepdims))


def argmin(
    self: Tensor, dim: Any = None, keepdim: bool = False, *, axis: Any = _MISSING, keepdims: Any = _MISSING
) -> Tensor:
    """Index of the first smallest value along ``dim`` (of the flattened tensor when None)."""
    return _s.argmin(self, axis=_dim(dim, axis, "argmin"), keepdims=_keep(keepdim, keepdims))


def cumsum(self: Tensor, dim: int, *, dtype: DTypeLike = None) -> Tensor:
    """Running sum along ``dim``."""
    return _r.cumulative_sum(self, axis=dim, dtype=dtype)


def cumprod(self: Tensor, dim: int, *, dtype: DTypeLike = None) -> Tensor:
    """Running product along ``dim``."""
    x = self if dtype is None else _m.astype(self, dtype)
    return _r.cumulative_prod(x, axis=dim)


def norm(self: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: DTypeLike = None) -> Tensor:
    """The ``p``-norm over ``dim`` (all elements by default); ``"fro"`` is the 2-norm, ``"nuc"`` the nuclear norm."""
    x = self if dtype is None else _m.astype(self, dtype)
    d = _dim(dim, _MISSING, "norm")
    if p == "nuc":
        return (
            linalg.matrix_norm(x, keepdims=keepdim, ord="nuc")
            if d is None
            else linalg.matrix_norm(_m.moveaxis(x, d, (-2, -1)), keepdims=False, ord="nuc")
        )
    order = 2 if p in ("fro", None) else p
    return linalg.vector_norm(x, axis=d, keepdims=keepdim, ord=order)


def count_nonzero(self: Tensor, dim: Any = None) -> Tensor:
    """The number of nonzero elements (along ``dim``)."""
    return _s.count_nonzero(self, axis=_dim(dim, _MISSING, "count_nonzero"))


# -- sorting ------------------------------------------------------------------------------------------------------
def sort(self: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> ValuesIndices:
    """``(values, indices)`` sorted along ``dim``; ties keep their order (the sort is always stable)."""
    idx = _s.argsort(self, axis=dim, descending=descending, stable=True)
    return ValuesIndices(_i.take_along_axis(self, idx, axis=dim), idx)


def argsort(self: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """Indices that sort along ``dim`` (stable)."""
    return _s.argsort(self, axis=dim, descending=descending, stable=True)


def topk(self: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> ValuesIndices:
    """The ``k`` largest (or smallest) ``(values, indices)`` along ``dim``."""
    values, idx = _s.topk(self, k, axis=dim, largest=largest, sorted=sorted)
    return ValuesIndices(values, idx)


# -- element-wise and comparisons ----------------------------------------------------------------------------------
def add(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    """``self + alpha * other``."""
    return _e.add(self, _scaled(other, alpha))


def sub(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    """``self - alpha * other``."""
    return _e.subtract(self, _scaled(other, alpha))


def div(self: Tensor, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """``self / other``; ``rounding_mode="floor"`` or ``"trunc"`` rounds the quotient."""
    if rounding_mode is None:
        return _e.divide(self, other)
    if rounding_mode == "floor":
        return _e.floor_divide(self, other)
    if rounding_mode == "trunc":
        _e.check_integer_divisor(self, other, "div")  # integers by 0 raise, as in PyTorch
        q = _e.divide(self, other)
        return _e.trunc(q) if self.dtype.kind in "fc" else _m.astype(_e.trunc(q), self.dtype)
    raise ValueError(f"div: rounding_mode must be None, 'floor' or 'trunc', got {rounding_mode!r}")


def masked_fill(self: Tensor, mask: Tensor, value: Any) -> Tensor:
    """``value`` where ``mask`` is true, this tensor elsewhere (``mask`` broadcasts)."""
    if isinstance(mask, Tensor) and mask.dtype is not dt.bool:
        mask = _e.not_equal(mask, 0)
    if isinstance(value, Tensor):
        value = _m.astype(value, self.dtype) if value.dtype is not self.dtype else value
    else:
        value = _c.asarray(value, dtype=self.dtype, device=self._device)
    return _e.where(mask, value, self)


def where(self: Tensor, condition: Tensor, other: Any) -> Tensor:
    """This tensor where ``condition`` holds, ``other`` elsewhere."""
    return _e.where(condition, self, other)


def type_as(self: Tensor, other: Tensor) -> Tensor:
    """Cast to ``other``'s dtype."""
    return self if self.dtype is other.dtype else _m.astype(self, other.dtype)


def half(self: Tensor) -> Tensor:
    """Cast to float16."""
    return _m.astype(self, dt.float16)


def bfloat16(self: Tensor) -> Tensor:
    """Cast to bfloat16 (rounding to nearest even)."""
    return _m.astype(self, dt.bfloat16)


def byte(self: Tensor) -> Tensor:
    """Cast to uint8."""
    return _m.astype(self, dt.uint8)


def char(self: Tensor) -> Tensor:
    """Cast to int8."""
    return _m.astype(self, dt.int8)


def short(self: Tensor) -> Tensor:
    """Cast to int16."""
    return _m.astype(self, dt.int16)


def cfloat(self: Tensor) -> Tensor:
    """Cast to complex64."""
    return _m.astype(self, dt.complex64)


def cdouble(self: Tensor) -> Tensor:
    """Cast to complex128."""
    return _m.astype(self, dt.complex128)


def is_signed(self: Tensor) -> bool:
    """Whether the dtype holds negative numbers (signed integers, floats, complex)."""
    return self.dtype.kind in "ifc"


def get_device(self: Tensor) -> int:
    """PyTorch's device index: -1 for a CPU tensor, 0 for a GPU one (Lucid has one device of each kind)."""
    return -1 if self._device.type == "cpu" else 0


def _is_cpu(self: Tensor) -> bool:
    """Whether the tensor is on a CPU device."""
    return self._device.type == "cpu"


def _nbytes(self: Tensor) -> int:
    """The bytes its elements take (``numel() * element_size()``)."""
    return self.size * (self.dtype.bits // 8)


def _itemsize(self: Tensor) -> int:
    """The bytes one element takes."""
    return self.dtype.bits // 8


def conj(self: Tensor) -> Tensor:
    """The complex conjugate; a real tensor itself (PyTorch's conj of a real tensor is a view of it)."""
    return _e.conj(self) if self.dtype.kind == "c" else self


def conj_physical(self: Tensor) -> Tensor:
    """The complex conjugate as a new tensor (Lucid has no lazy conjugate bit: the same as ``conj``)."""
    return _e.conj(self) if self.dtype.kind == "c" else self.clone()


def resolve_conj(self: Tensor) -> Tensor:
    """Itself: Lucid never holds a lazy conjugate."""
    return self


def resolve_neg(self: Tensor) -> Tensor:
    """Itself: Lucid never holds a lazy negation."""
    return self


def is_conj(self: Tensor) -> bool:
    """False: Lucid conjugates eagerly, never by a flag."""
    return False


def is_neg(self: Tensor) -> bool:
    """False: Lucid negates eagerly, never by a flag."""
    return False


def adjoint(self: Tensor) -> Tensor:
    """The conjugate transpose of the last two axes (a view for real tensors)."""
    if self.ndim < 2:
        raise RuntimeError(f"adjoint() is only supported for tensors of at least 2 dimensions, got {self.ndim}")
    return conj(_m.swapaxes(self, -2, -1))


def _mH(self: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name
    """The conjugate transpose of the last two axes."""
    return adjoint(self)


def _H(self: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name
    """The conjugate transpose of a matrix (2-D only, as PyTorch's ``H``)."""
    if self.ndim != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors), got {self.ndim}-D")
    return adjoint(self)


def sum_to_size(self: Tensor, *size: Any) -> Tensor:
    """Sum to ``size``, a shape this tensor broadcasts from (the gradient of a broadcast)."""
    shape = _shape_args(size)
    if len(shape) > self.ndim or builtins.any(s not in (1, n) for s, n in zip(reversed(shape), reversed(self.shape))):
        raise RuntimeError(f"size {{{', '.join(map(str, shape))}}} is not expandable to size {tuple(self.shape)}")
    lead = self.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and self.shape[lead + i] != 1)
    out = _r.sum(self, axis=axes, keepdims=True) if axes else self
    return _m.reshape(out, tuple(shape))


def split_with_sizes(self: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Views of consecutive pieces of ``split_sizes`` along ``dim`` (``split`` with a list that must add up)."""
    sizes = [int(v) for v in split_sizes]
    n = self.shape[dim]
    if builtins.sum(sizes) != n or builtins.min(sizes, default=0) < 0:
        raise ValueError(f"split_with_sizes: sizes {sizes} must be non-negative and sum to {n} (dimension {dim})")
    return self.split(sizes, dim)


def dim_order(self: Tensor) -> tuple[int, ...]:
    """The axes from outermost to innermost in memory (``(0, 1, ..., n-1)`` for a contiguous tensor)."""
    st = self.stride()
    return tuple(sorted(range(self.ndim), key=lambda i: (-st[i], i)))


def apply_(self: Tensor, callable: Any) -> Tensor:
    """Replace every element by ``callable(element)``, in place (Python speed, as PyTorch's CPU-only apply_)."""
    return self.copy_(_from_values([callable(v) for v in _flat_values(self)], self))


def map_(self: Tensor, tensor: Tensor, callable: Any) -> Tensor:
    """``self[i] = callable(self[i], tensor[i])`` for every element (``tensor`` broadcast to this shape), in place."""
    other = _flat_values(_m.broadcast_to(tensor, self.shape))
    values = [callable(a, b) for a, b in zip(_flat_values(self), other)]
    return self.copy_(_from_values(values, self))


def _flat_values(t: Tensor) -> list[Any]:
    return _m.reshape(t, (-1,)).tolist()


def _from_values(values: list[Any], like: Tensor) -> Tensor:
    return _m.reshape(_c.asarray(values, dtype=like.dtype, device=like._device), tuple(like.shape))


def is_floating_point(self: Tensor) -> bool:
    """Whether the dtype is a real floating-point one."""
    return self.dtype.kind == "f"


def is_complex(self: Tensor) -> bool:
    """Whether the dtype is a complex one."""
    return self.dtype.kind == "c"


def softmax(self: Tensor, dim: int) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim``."""
    return _e.exp(log_softmax(self, dim))


def log_softmax(self: Tensor, dim: int) -> Tensor:
    """``x - logsumexp(x)`` along ``dim``."""
    return _e.subtract(self, _r.logsumexp(self, axis=dim, keepdims=True))


# -- indexing with index tensors -----------------------------------------------------------------------------------
def _index_key(index: Tensor, d: int) -> tuple[Any, ...]:
    """The advanced-indexing key that picks ``index``'s entries along axis ``d`` (aranges on the other axes)."""
    key = []
    for a in range(index.ndim):
        if a == d:
            key.append(index)
        else:
            shape = [1] * index.ndim
            shape[a] = index.shape[a]
            key.append(_m.reshape(_c.arange(index.shape[a], device=index.device), shape))
    return tuple(key)


def _check_index(self: Tensor, index: Tensor, name: str) -> None:
    if not isinstance(index, Tensor) or index.dtype.kind not in "iu":
        raise TypeError(f"{name}: index must be an integer tensor, got {getattr(index, 'dtype', type(index))}")
    if index.ndim != self.ndim:
        raise ValueError(f"{name}: index has {index.ndim} dimensions but the tensor has {self.ndim}")


def gather(self: Tensor, dim: int, index: Tensor) -> Tensor:
    """``out[i][j] = x[index[i][j]][j]`` for ``dim=0`` (and so on): values picked along ``dim`` by ``index``."""
    _check_index(self, index, "gather")
    d = normalize_axis(dim, self.ndim, "gather")
    _ix.check_index_range(index, self.shape[d], "gather", d)  # negative indices raise, as in PyTorch
    return _i.getitem(self, _index_key(index, d))


def _scattered(shape: tuple[int, ...], key: tuple[Any, ...], values: Tensor) -> Tensor:
    """Zeros of ``shape`` with ``values`` added at ``key`` (repeated positions accumulate), differentiable."""
    nkey, _ = _i._native_key(_c.zeros(shape, dtype=values.dtype, device=values.device), key)
    return _i.IndexAdd.apply(values, nkey, True, shape)


def _source(src: Any, index: Tensor, like: Tensor, name: str) -> Tensor:
    """``src`` as a tensor of ``index``'s shape (PyTorch uses the leading part of a larger ``src``)."""
    if not isinstance(src, Tensor):
        return _c.full(index.shape, src, dtype=like.dtype, device=like.device)
    if src.dtype is not like.dtype:
        raise TypeError(f"{name}: src has dtype {src.dtype.name} but the tensor has {like.dtype.name}")
    if src.shape != index.shape:
        if builtins.any(s < i for s, i in zip(src.shape, index.shape)) or src.ndim != index.ndim:
            raise ValueError(f"{name}: src of shape {src.shape} is smaller than index of shape {index.shape}")
        src = _i.getitem(src, tuple(slice(0, i) for i in index.shape))
    return src


def scatter_add(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy with ``src``'s values added at the positions ``index`` names along ``dim`` (repeats add up)."""
    _check_index(self, index, "scatter_add")
    d = normalize_axis(dim, self.ndim, "scatter_add")
    _ix.check_index_range(index, self.shape[d], "scatter_add", d)
    key = _index_key(index, d)
    return _e.add(self, _scattered(self.shape, key, _source(src, index, self, "scatter_add")))


class _Scatter(Function):
    """A copy of ``x`` with ``values`` written at ``key``; the gradient of overwritten positions is 0."""

    native = True
    linear = True  # forward mode: the op itself on the tangents

    @staticmethod
    def forward(ctx, x, values, key):
        z = ctx.xp.asarray(x, copy=True)
        k = ctx.device.backend.kernels.get("setitem")
        if k is not None:
            return k(z, key, values)
        z[key] = values
        return z

    @staticmethod
    def backward(ctx, gz):
        x, values, key = ctx.inputs
        written = _i.IndexAdd.apply(_c.ones(values.shape, dtype=gz.dtype, device=gz.device), key, True, x.shape)
        gx = _e.where(_e.greater(written, 0), _c.zeros_like(gz), gz)
        return gx, _i.GetItem.apply(gz, key, True), None


def scatter(
    self: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None, reduce: str | None = None
) -> Tensor:
    """A copy with ``src`` (or ``value``) written at the positions ``index`` names along ``dim``.

    ``reduce="add"`` adds instead (as :meth:`scatter_add`), ``reduce="multiply"`` multiplies.
    """
    _check_index(self, index, "scatter")
    source = _source(value if src is None else src, index, self, "scatter")
    d = normalize_axis(dim, self.ndim, "scatter")
    if reduce == "add":
        return scatter_add(self, d, index, source)  # checks the index itself
    _ix.check_index_range(index, self.shape[d], "scatter", d)
    if reduce == "multiply":
        factors = _Scatter.apply(_c.ones_like(self), source, _i._native_key(self, _index_key(index, d))[0])
        return _e.multiply(self, factors)
    if reduce is not None:
        raise ValueError(f"scatter: reduce must be None, 'add' or 'multiply', got {reduce!r}")
    nkey, _ = _i._native_key(self, _index_key(index, d))
    return _Scatter.apply(self, source, nkey)


def index_select(self: Tensor, dim: int, index: Tensor) -> Tensor:
    """The slices at ``index`` (1-D) along ``dim``."""
    if not isinstance(index, Tensor) or index.ndim > 1:
        raise ValueError(f"index_select: index must be a 0-D or 1-D integer tensor, got {index!r}")
    d = normalize_axis(dim, self.ndim, "index_select")
    index = _m.reshape(index, (-1,))
    _ix.check_index_range(index, self.shape[d] if self.ndim else 1, "index_select", d)  # no negatives (PyTorch)
    return _i.getitem(self, (slice(None),) * d + (index,))


def index_add(self: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    """A copy with ``alpha * source``'s slices added at the slots ``index`` (1-D) names along ``dim``."""
    d = normalize_axis(dim, self.ndim, "index_add")
    if not isinstance(index, Tensor) or index.ndim != 1:
        raise ValueError(f"index_add: index must be a 1-D integer tensor, got {index!r}")
    _ix.check_index_range(index, self.shape[d], "index_add", d)
    key = (slice(None),) * d + (index,)
    nkey, _ = _i._native_key(self, key)
    return _e.add(self, _i.IndexAdd.apply(_scaled(source, alpha), nkey, True, self.shape))


def masked_select(self: Tensor, mask: Tensor) -> Tensor:
    """The elements where ``mask`` is true, as a 1-D tensor."""
    x, m = _m.broadcast_arrays(self, mask)
    return _i.getitem(x, m)


# -- PyTorch ops of the op table that build on the helpers above ---------------------------------------------------
def dist(input: Tensor, other: Tensor, p: float = 2.0) -> Tensor:
    """The ``p``-norm of ``input - other``."""
    return linalg.vector_norm(_e.subtract(input, other), ord=p)


def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to norm ``maxnorm``."""
    d = normalize_axis(dim, input.ndim, "renorm")
    others = tuple(a for a in range(input.ndim) if a != d)
    norms = linalg.vector_norm(input, axis=others, keepdims=True, ord=p)
    scale = _e.where(_e.greater(norms, maxnorm), maxnorm / (norms + 1e-7), _c.ones_like(norms))
    return input * scale


def _split_at(input: Tensor, sections: Any, dim: int, name: str, min_ndim: int) -> tuple[Tensor, ...]:
    if input.ndim < min_ndim:
        raise RuntimeError(
            f"torch.{name} requires a tensor with at least {min_ndim} dimension, but got a tensor with {input.ndim} "
            "dimensions!"
        )
    if isinstance(sections, int) and input.shape[dim] % sections:
        raise RuntimeError(
            f"torch.{name} attempted to split along dimension {dim}, but the size of the dimension "
            f"{input.shape[dim]} is not divisible by the split_size {sections}!"
        )
    return tensor_split(input, sections, dim)


def vsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """Split along axis 0 (into equal parts, or at the indices)."""
    return _split_at(input, indices_or_sections, 0, "vsplit", 2)


def hsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """Split along axis 1 (axis 0 for 1-D tensors)."""
    return _split_at(input, indices_or_sections, 1 if input.ndim > 1 else 0, "hsplit", 1)


def dsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """Split along axis 2."""
    return _split_at(input, indices_or_sections, 2, "dsplit", 3)


def broadcast_shapes(*shapes: Any) -> Any:
    """The shape that ``shapes`` broadcast to (ints count as 1-D shapes), as a ``Size``."""
    return Size(_m.broadcast_shapes(*[(s,) if isinstance(s, int) else tuple(s) for s in shapes]))


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A 1-D tensor's values on the ``diagonal``-th diagonal of a square matrix, or a matrix's diagonal."""
    if input.ndim == 1:
        return _x.diag_embed(input, diagonal)
    if input.ndim != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    return _m.clone(input.diagonal(diagonal))


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy with the slices of ``source`` written at ``index`` along ``dim``."""
    d = normalize_axis(dim, builtins.max(input.ndim, 1), "index_copy")
    key = (slice(None),) * d + (_m.reshape(index, (-1,)),)
    nkey, _ = _i._native_key(input, key)
    return _Scatter.apply(input, _m.astype(source, input.dtype) if source.dtype is not input.dtype else source, nkey)


def index_put(input: Tensor, indices: Sequence[Tensor], values: Any, accumulate: bool = False) -> Tensor:
    """A copy with ``values`` written (or added, with ``accumulate``) at the advanced index ``indices``."""
    key = tuple(indices)
    if accumulate:
        v = values if isinstance(values, Tensor) else _c.asarray(values, dtype=input.dtype, device=input.device)
        sel = _i.getitem(input, key)
        return _e.add(input, _scattered(input.shape, key, _m.broadcast_to(_m.astype(v, input.dtype), sel.shape)))
    v = values if isinstance(values, Tensor) else _c.asarray(values, dtype=input.dtype, device=input.device)
    sel_shape = _i.getitem(input.detach(), key).shape
    nkey, _ = _i._native_key(input, key)
    return _Scatter.apply(input, _m.broadcast_to(_m.astype(v, input.dtype), sel_shape), nkey)


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy with ``source``'s leading elements written, in order, where ``mask`` (broadcast) is true."""
    m = _m.broadcast_to(mask, input.shape)
    k = int(_r.sum(_m.astype(m, dt.int64)).item())
    if k > source.size:
        raise RuntimeError(f"masked_scatter: the mask selects {k} elements but source has only {source.size}")
    return index_put(input, (m,), _m.reshape(source, (-1,))[:k])


def scatter_reduce(
    input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *, include_self: bool = True
) -> Tensor:
    """``input`` with ``src`` reduced (``"sum"``, ``"prod"``, ``"mean"``, ``"amax"``, ``"amin"``) into the slots
    ``index`` names along ``dim``."""
    _check_index(input, index, "scatter_reduce")
    d = normalize_axis(dim, input.ndim, "scatter_reduce")
    key = _index_key(index, d)
    src = _i.getitem(src, tuple(slice(0, i) for i in index.shape)) if src.shape != index.shape else src
    ones = _c.ones(index.shape, dtype=input.dtype, device=input.device)
    count = _scattered(input.shape, key, ones)
    touched = _e.greater(count, 0)
    if reduce in ("sum", "mean"):
        total = _scattered(input.shape, key, src)
        if include_self:
            total = total + input
            count = count + 1
        if reduce == "mean":
            total = total / _e.maximum(count, 1) if input.dtype.kind == "f" else total // _e.maximum(count, 1)
        return _e.where(touched, total, input) if not include_self else total
    if reduce == "prod":
        # a product is the exp of a sum of logs only for positive values; gather per slot instead
        return _reduce_slots(input, d, index, src, include_self, touched, lambda v: _r.prod(v, axis=-1), 1)
    if reduce in ("amax", "amin"):
        fill = -math.inf if reduce == "amax" else math.inf
        fn = (lambda v: _r.max(v, axis=-1)) if reduce == "amax" else (lambda v: _r.min(v, axis=-1))
        return _reduce_slots(input, d, index, src, include_self, touched, fn, fill)
    raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")


def _reduce_slots(input: Tensor, d: int, index: Tensor, src: Tensor, include_self: bool, touched: Tensor, fn: Any,
                  neutral: float) -> Tensor:  # fmt: skip
    """Reduce, for each slot of ``input``, the ``src`` values scattered into it (one hit matrix per axis ``d``)."""
    x = _m.moveaxis(input, d, -1)  # (..., n)
    idx = _m.moveaxis(index, d, -1)  # (..., k)
    s = _m.moveaxis(src, d, -1)
    n = x.shape[-1]
    lead = idx.shape[:-1]
    xl = _i.getitem(x, (*(slice(0, i) for i in lead), slice(None)))
    hit = _e.equal(_m.expand_dims(idx, axis=-2), _m.reshape(_c.arange(n, device=x.device), (n, 1)))  # (..., n, k)
    vals = _e.where(hit, _m.expand_dims(s, axis=-2), _c.full((), neutral, dtype=x.dtype, device=x.device))
    if include_self:
        vals = _m.concat([vals, _m.expand_dims(xl, axis=-1)], axis=-1)
    red = fn(vals)  # (lead..., n)
    pad = [(0, a - b) for a, b in zip(x.shape[:-1], lead)] + [(0, 0)]
    red = _m.pad(red, pad)
    region = _m.pad(_c.ones((*lead, n), dtype=dt.bool, device=x.device), pad)
    out = _e.where(region, red, x)
    return _e.where(touched, _m.moveaxis(out, -1, d), input)


# -- devices --------------------------------------------------------------------------------------------------------
def _gpu_is_metal() -> bool:
    return sys.platform == "darwin"


def is_cuda(self: Tensor) -> bool:
    """Whether the tensor is on a GPU that PyTorch would call CUDA (any GPU except Apple's Metal)."""
    return self._device.type == "gpu" and not _gpu_is_metal()


def is_mps(self: Tensor) -> bool:
    """Whether the tensor is on Apple's Metal GPU (PyTorch's ``mps``)."""
    return self._device.type == "gpu" and _gpu_is_metal()


def _same_backend(self: Tensor, kind: str) -> Any:
    devs = self._device.backend.devices
    return devs[kind] if kind in devs else resolve_device(kind)


def cuda(self: Tensor, device: DeviceLike = None, non_blocking: bool = False) -> Tensor:
    """Move to the GPU (this backend's, else the first backend with one; see ``"gpu"`` in the device docs)."""
    if self._device.type == "gpu":
        return self
    return _m.to_device(self, _same_backend(self, "gpu"))


def cpu(self: Tensor) -> Tensor:
    """Move to the CPU (a tensor already on a CPU device stays where it is)."""
    if self._device.type == "cpu":
        return self
    return _m.to_device(self, _same_backend(self, "cpu"))


# -- new tensors like this one --------------------------------------------------------------------------------------
def new_zeros(
    self: Tensor, *size: Any, dtype: DTypeLike = None, device: DeviceLike = None, requires_grad: bool = False
) -> Tensor:
    """Zeros of ``size`` with this tensor's dtype and device (unless given)."""
    return _c.zeros(
        _shape_args(size), dtype=dtype or self.dtype, device=device or self._device, requires_grad=requires_grad
    )


def new_ones(
    self: Tensor, *size: Any, dtype: DTypeLike = None, device: DeviceLike = None, requires_grad: bool = False
) -> Tensor:
    """Ones of ``size`` with this tensor's dtype and device (unless given)."""
    return _c.ones(
        _shape_args(size), dtype=dtype or self.dtype, device=device or self._device, requires_grad=requires_grad
    )


def new_empty(
    self: Tensor, *size: Any, dtype: DTypeLike = None, device: DeviceLike = None, requires_grad: bool = False
) -> Tensor:
    """An uninitialised tensor of ``size`` with this tensor's dtype and device (unless given)."""
    return _c.empty(
        _shape_args(size), dtype=dtype or self.dtype, device=device or self._device, requires_grad=requires_grad
    )


def new_full(
    self: Tensor,
    size: Any,
    fill_value: Any,
    *,
    dtype: DTypeLike = None,
    device: DeviceLike = None,
    requires_grad: bool = False,
) -> Tensor:
    """``fill_value`` in every element of ``size``, with this tensor's dtype and device (unless given)."""
    return _c.full(
        tuple(size), fill_value, dtype=dtype or self.dtype, device=device or self._device, requires_grad=requires_grad
    )


def new_tensor(
    self: Tensor, data: Any, *, dtype: DTypeLike = None, device: DeviceLike = None, requires_grad: bool = False
) -> Tensor:
    """A copy of ``data`` with this tensor's dtype and device (unless given)."""
    return _c.tensor(data, dtype=dtype or self.dtype, device=device or self._device, requires_grad=requires_grad)


# -- random fills (in place, as init code uses them) ----------------------------------------------------------------
def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fill with samples of N(mean, std²), in place."""
    return self.copy_(_rand.normal(mean, std, self.shape, dtype=self.dtype, device=self._device))


def uniform_(self: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Fill with samples of U(a, b), in place."""
    return self.copy_(_rand.uniform(a, b, self.shape, dtype=self.dtype, device=self._device))


def _uniform_like(self: Tensor, name: str) -> Tensor:
    """U(0, 1) draws of this tensor's shape, in its dtype (a float one) or the default float (integer tensors)."""
    d = self.dtype if self.dtype.kind == "f" else dt.default_float
    if self.dtype.kind == "c":
        raise TypeError(f"{name}: complex tensors are not supported (got {self.dtype.name})")
    return _rand.uniform(0.0, 1.0, self.shape, dtype=d, device=self._device)


def _floats_only(self: Tensor, name: str) -> None:
    if self.dtype.kind != "f":
        raise TypeError(f"{name} expects a floating point tensor, got {self.dtype.name}")


def exponential_(self: Tensor, lambd: float = 1.0) -> Tensor:
    """Fill with samples of the exponential distribution of rate ``lambd`` (``-log(1 - u) / lambd``), in place."""
    _floats_only(self, "exponential_")
    if not lambd > 0.0:
        raise ValueError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return self.copy_(-_e.log1p(-_uniform_like(self, "exponential_")) / lambd)


def geometric_(self: Tensor, p: float) -> Tensor:
    """Fill with the number of Bernoulli(``p``) trials up to the first success (1, 2, ...), in place."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    u = _uniform_like(self, "geometric_")
    return self.copy_(_e.ceil(_e.log1p(-u) / math.log1p(-p)))


def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0) -> Tensor:
    """Fill with ``exp`` of N(``mean``, ``std``²) samples, in place."""
    _floats_only(self, "log_normal_")
    if not std > 0.0:
        raise ValueError(f"log_normal_ expects std > 0.0, but found std={std}")
    return self.copy_(_e.exp(_rand.normal(mean, std, self.shape, dtype=self.dtype, device=self._device)))


def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0) -> Tensor:
    """Fill with samples of the Cauchy distribution (``median + sigma * tan(pi * (u - 1/2))``), in place."""
    _floats_only(self, "cauchy_")
    if not sigma > 0.0:
        raise ValueError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    return self.copy_(median + sigma * _e.tan(math.pi * (_uniform_like(self, "cauchy_") - 0.5)))


_MANTISSA = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def random_(self: Tensor, from_: int | None = None, to: int | None = None, **kwargs: Any) -> Tensor:
    """Fill with integers drawn uniformly from ``[from, to - 1]`` (``random_(to)``: from 0), in place.

    Without bounds: ``[0, 2**mantissa]`` for floats (every value exact), ``[0, max]`` for integers, {0, 1} for bool.
    ``from`` is a Python keyword, so PyTorch's ``random_(from=..., to=...)`` is taken through ``**kwargs``.
    """
    named = "from" in kwargs
    if named:
        from_ = kwargs.pop("from")
    if kwargs:
        raise TypeError(f"random_() got unexpected keyword arguments {sorted(kwargs)}")
    if from_ is not None and to is None and not named:
        from_, to = 0, from_  # random_(to)
    low = 0 if from_ is None else int(from_)
    kind = self.dtype.kind
    if kind == "c":
        raise TypeError(f"random_: complex tensors are not supported (got {self.dtype.name})")
    if to is None:
        if kind == "b":
            high = 2
        elif kind == "f":
            high = 2 ** _MANTISSA[self.dtype.name] + 1
        else:
            high = dt.iinfo(self.dtype).max + 1
    else:
        high = int(to)
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    return self.copy_(_rand.randint(low, high, self.shape, dtype=dt.int64, device=self._device))


def bernoulli_(self: Tensor, p: Any = 0.5) -> Tensor:
    """Fill with 1 with probability ``p`` (a number, or a tensor broadcast to this shape), else 0, in place."""
    if isinstance(p, Tensor):
        p = _m.broadcast_to(p, self.shape) if tuple(p.shape) != tuple(self.shape) else p
        draws = _rand.bernoulli(p if p.dtype.kind == "f" else _m.astype(p, dt.default_float))
    else:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        d = self.dtype if self.dtype.kind == "f" else None
        draws = _rand.bernoulli(p, self.shape, dtype=d, device=self._device)
    return self.copy_(draws)


def attach() -> None:
    """Put the operators and methods on :class:`Tensor` (done once, from ``lucid_core/__init__.py``).

    The methods are declared in :mod:`lucid_core._op_table` (with their in-place forms); the properties here.
    """
    from . import _op_table

    _attach_operators()
    _op_table.install()
    Tensor.size = property(_size, doc=SizeInt.__doc__)  # type: ignore[assignment]
    Tensor._base = property(_base, doc=_base.__doc__)  # type: ignore[attr-defined]
    Tensor.real = property(_real, doc=_real.__doc__)  # type: ignore[attr-defined]
    Tensor.imag = property(_imag, doc=_imag.__doc__)  # type: ignore[attr-defined]
    Tensor.is_cuda = property(is_cuda, doc=is_cuda.__doc__)  # type: ignore[attr-defined]
    Tensor.is_cpu = property(_is_cpu, doc=_is_cpu.__doc__)  # type: ignore[attr-defined]
    Tensor.nbytes = property(_nbytes, doc=_nbytes.__doc__)  # type: ignore[attr-defined]
    Tensor.itemsize = property(_itemsize, doc=_itemsize.__doc__)  # type: ignore[attr-defined]
    Tensor.mH = property(_mH, doc=_mH.__doc__)  # type: ignore[attr-defined]
    Tensor.H = property(_H, doc=_H.__doc__)  # type: ignore[attr-defined]
    Tensor.is_mps = property(is_mps, doc=is_mps.__doc__)  # type: ignore[attr-defined]
