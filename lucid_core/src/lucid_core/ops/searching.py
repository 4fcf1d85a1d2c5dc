"""Searching and sorting: argmax/argmin, sort/argsort, topk, nonzero, searchsorted."""

from __future__ import annotations

from typing import Any

from .. import _dtypes as dt
from .._autograd import Function
from .._forward_ad import jvp_from_vjp
from .._tensor import Tensor, check_tensor
from ..backend import take_along_axis_native
from . import _helpers as _h
from . import elementwise as _e
from . import indexing as _i
from . import manipulation as _m
from . import reduction as _r

__all__ = ["argmax", "argmin", "sort", "argsort", "topk", "nonzero", "searchsorted", "count_nonzero"]


class _Index(Function):
    """Ops whose result is integer positions: no gradient."""

    native = True
    differentiable = False


class Argmax(_Index):
    __slots__ = ()

    @staticmethod
    def forward(ctx, x, axis, keepdims):
        return ctx.xp.argmax(x, axis=axis, keepdims=keepdims)


class Argmin(_Index):
    __slots__ = ()

    @staticmethod
    def forward(ctx, x, axis, keepdims):
        return ctx.xp.argmin(x, axis=axis, keepdims=keepdims)


class Argsort(_Index):
    __slots__ = ()

    @staticmethod
    def forward(ctx, x, axis, descending, stable):
        return ctx.xp.argsort(x, axis=axis, descending=descending, stable=stable)


def _axis_or_none(x: Tensor, axis: int | None, name: str) -> int | None:
    check_tensor(x, name)
    if x.size == 0:
        raise ValueError(f"{name}: cannot be taken over an empty tensor (shape {x.shape})")
    return None if axis is None else _h.normalize_axis(axis, x.ndim, name)


def _as_int64(t: Tensor) -> Tensor:

    return t if t.dtype is dt.int64 else _m.astype(t, dt.int64)


def argmax(x: Tensor, /, *, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index of the first largest value along ``axis`` (of the flattened tensor when None)."""
    return _as_int64(Argmax.apply(x, _axis_or_none(x, axis, "argmax"), keepdims))


def argmin(x: Tensor, /, *, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index of the first smallest value along ``axis`` (of the flattened tensor when None)."""
    return _as_int64(Argmin.apply(x, _axis_or_none(x, axis, "argmin"), keepdims))


def argsort(x: Tensor, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """Indices that sort ``x`` along ``axis``."""
    check_tensor(x, "argsort")
    if x.ndim == 0:
        raise ValueError("argsort: needs at least 1 dimension")
    return _as_int64(Argsort.apply(x, _h.normalize_axis(axis, x.ndim, "argsort"), descending, stable))


class _Permute(Function):
    """``x`` gathered along ``axis`` by a permutation; the gradient gathers back by its inverse.

    Only ``take_along_axis`` (or one flat ``take``) is needed, never n-d fancy indexing or a scatter."""

    native = True
    linear = True  # forward mode: the op itself on the tangents

    @staticmethod
    def forward(ctx, x, perm, inverse, axis):

        return take_along_axis_native(ctx.xp, x, perm, axis)

    @staticmethod
    def backward(ctx, gy):
        _, perm, inverse, axis = ctx.inputs
        return _Permute.apply(gy, inverse, perm, axis), None, None, None


class Sort(Function):
    """The library's own sort; backward sends each gradient back to its value's original place."""

    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x, axis, descending, stable):
        return ctx.xp.sort(x, axis=axis, descending=descending, stable=stable)

    @staticmethod
    def backward(ctx, gy):
        x, axis, descending, stable = ctx.inputs
        perm = argsort(x.detach(), axis=axis, descending=descending, stable=stable)  # the same order, stable
        return _Permute.apply(gy, argsort(perm, axis=axis), perm, axis), None, None, None


def sort(x: Tensor, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """``x`` sorted along ``axis``; the gradient goes back to each value's original place."""
    check_tensor(x, "sort")
    if x.ndim == 0:
        raise ValueError("sort: needs at least 1 dimension")
    return Sort.apply(x, _h.normalize_axis(axis, x.ndim, "sort"), descending, stable)


def topk(x: Tensor, k: int, /, *, axis: int = -1, largest: bool = True, sorted: bool = True) -> tuple[Tensor, Tensor]:  # noqa: A002
    """The ``k`` largest (or smallest) values along ``axis`` and their indices."""

    check_tensor(x, "topk")
    ax = _h.normalize_axis(axis, x.ndim, "topk")
    if not 0 <= k <= x.shape[ax]:
        raise ValueError(f"topk: k={k} is out of range for axis {axis} of size {x.shape[ax]}")
    order = argsort(x, axis=ax, descending=largest, stable=True)
    key = [slice(None)] * x.ndim
    key[ax] = slice(0, k)
    idx = _i.getitem(order, tuple(key))
    return _i.take_along_axis(x, idx, axis=ax), idx


class Nonzero(_Index):
    __slots__ = ()

    @staticmethod
    def forward(ctx, x):
        return tuple(ctx.xp.nonzero(x))


def nonzero(x: Tensor, /) -> tuple[Tensor, ...]:
    """The indices of non-zero elements, one tensor per axis."""
    check_tensor(x, "nonzero")
    if x.ndim == 0:
        raise ValueError("nonzero: a 0-d tensor has no indices; reshape it to 1-D first")
    if not x._device.backend.capabilities.get("data_dependent_shapes", True):
        raise RuntimeError(
            f"nonzero: backend {x._device.backend.name!r} cannot produce data-dependent shapes; "
            "move the tensor with .to('numpy') first"
        )
    return tuple(_as_int64(t) for t in Nonzero.apply(x))


def count_nonzero(x: Tensor, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:
    """How many elements along ``axis`` are non-zero."""

    return _r.sum(_e.not_equal(x, 0), axis=axis, keepdims=keepdims)


class Searchsorted(_Index):
    __slots__ = ()

    @staticmethod
    def forward(ctx, x1, x2, side):
        return ctx.xp.searchsorted(x1, x2, side=side)


def searchsorted(x1: Tensor, x2: Tensor, /, *, side: str = "left", sorter: Tensor | None = None) -> Tensor:
    """Where ``x2``'s values would be inserted into the sorted 1-D ``x1`` (no gradient)."""

    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-D, got shape {x1.shape}")
    if sorter is not None:
        x1 = _i.take(x1, sorter)
    return _as_int64(Searchsorted.apply(x1, x2, side))
