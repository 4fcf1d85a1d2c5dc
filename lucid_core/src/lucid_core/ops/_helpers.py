"""Small helpers shared by the op families: operand normalisation, axes, and undoing broadcasts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import _dtypes as dt
from .._autograd import apply_binary
from .._tensor import Tensor
from . import creation as _c
from . import manipulation as _m
from . import reduction as _r

SCALAR_TYPES = (bool, int, float, complex)


def as_tensor_like(value: Any, like: Tensor) -> Tensor:
    """Make ``value`` (a list, a native array, ...) a Tensor on ``like``'s device."""

    return _c.asarray(value, device=like._device)


def binary_operands(a: Any, b: Any, name: str) -> tuple[Any, Any]:
    """Normalise the operands of a binary op: Tensors stay, Python scalars stay (weakly typed),
    anything else becomes a Tensor on the other operand's device. Mixed int/float tensors are cast
    to the float dtype, so results follow Lucid's promotion on every backend."""
    if isinstance(a, Tensor):
        if isinstance(b, Tensor):
            if a._device is not b._device:
                return a, b  # Function.apply reports the device mismatch
            da, db = a._data.dtype, b._data.dtype
            if da is not db and da != db:
                return _promote_tensors(a, b)
            return a, b
        if type(b) in SCALAR_TYPES:
            return _with_scalar(a, b), b
        if b is None:
            raise TypeError(f"{name}: unsupported operand None")
        return _promote_tensors(a, as_tensor_like(b, a))
    if isinstance(b, Tensor):
        if type(a) in SCALAR_TYPES:
            return a, _with_scalar(b, a)
        if a is None:
            raise TypeError(f"{name}: unsupported operand None")
        return _promote_tensors(as_tensor_like(a, b), b)
    raise TypeError(f"{name}: expected at least one Tensor operand, got {type(a).__name__} and {type(b).__name__}")


def _with_scalar(t: Tensor, s: Any) -> Tensor:
    """Cast ``t`` when the scalar's kind does not fit its dtype (int tensor * 0.5 -> float32)."""
    if type(s) is float or type(s) is complex or (type(s) is int and t._data.dtype == _bool_native(t)):
        target = dt.promote_with_scalar(t.dtype, s)
        if target is not t.dtype:
            return _m.astype(t, target)
    return t


def _bool_native(t: Tensor) -> Any:
    return t._device.backend.dtypes[dt.bool]


def _promote_tensors(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:

    if a._device is not b._device:
        return a, b  # Function.apply reports the device mismatch
    target = dt.result_type(a.dtype, b.dtype)
    if a.dtype is not target:
        a = _m.astype(a, target)
    if b.dtype is not target:
        b = _m.astype(b, target)
    return a, b


def sum_to(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum ``g`` down to ``shape``: undoes broadcasting in backward (differentiable)."""

    gshape = tuple(g._data.shape)
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and gshape[i + lead] != 1)
    out = _r.sum(g, axis=axes) if axes else g
    if tuple(out._data.shape) != shape:
        out = _m.reshape(out, shape)
    return out


def unbroadcast(g: Tensor, x: Any) -> Tensor | None:
    """The gradient for input ``x`` of a broadcasting op, or None if ``x`` needs none."""
    if not isinstance(x, Tensor) or not x._requires_grad:
        return None
    shape = tuple(x._data.shape)
    if tuple(g._data.shape) == shape:
        return g
    return sum_to(g, shape)


# -- the same gradients on native arrays (Function.backward_raw: first-order backward, no graph) ---------


def real_float(ctx: Any, g: Any, *operands: Any) -> bool:
    """Whether a raw backward may run: ``g`` a real float array and every tensor operand of its dtype.

    Anything else (complex gradients, mixed dtypes) goes to the op's ``backward`` in Lucid ops.
    """
    dtype = g.dtype
    if dtype not in ctx.device.real_natives:
        return False
    for x in operands:
        if isinstance(x, Tensor):
            if x._data.dtype != dtype:
                return False
        elif type(x) is not float and type(x) is not int:
            return False
    return True


def value(x: Any) -> Any:
    """A Tensor's native array (constants pass through)."""
    return x._data if isinstance(x, Tensor) else x


def sum_to_raw(xp: Any, g: Any, shape: tuple[int, ...]) -> Any:
    """:func:`sum_to` on a native array: the same calls, so the same numbers."""
    gshape = tuple(g.shape)
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and gshape[i + lead] != 1)
    out = xp.sum(g, axis=axes, keepdims=False, dtype=None) if axes else g
    if tuple(out.shape) != shape:
        out = xp.reshape(out, shape)
    return out


def unbroadcast_raw(xp: Any, g: Any, x: Any) -> Any:
    """:func:`unbroadcast` on a native array."""
    if not isinstance(x, Tensor) or not x._requires_grad:
        return None
    shape = x._data.shape
    if g.shape == shape:
        return g
    return sum_to_raw(xp, g, tuple(shape))


def expand_reduced_raw(xp: Any, g: Any, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> Any:
    """:func:`expand_reduced` on a native array."""
    if not keepdims and axes:
        kept = list(shape)
        for a in axes:
            kept[a] = 1
        if tuple(g.shape) != tuple(kept):
            g = xp.reshape(g, tuple(kept))
    if tuple(g.shape) != tuple(shape):
        g = xp.broadcast_to(g, tuple(shape))
    return g


class AxisError(ValueError, IndexError):
    """An axis out of range: both a ValueError and the IndexError the Array API standard asks for (as NumPy's)."""


def normalize_axis(axis: int, ndim: int, name: str) -> int:
    """A non-negative axis, with an error naming the op when it is out of range."""
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise TypeError(f"{name}: axis must be an int, got {type(axis).__name__}")
    if not -ndim <= axis < max(ndim, 1):
        raise AxisError(f"{name}: axis {axis} is out of range for a tensor with {ndim} dimensions")
    return axis % ndim if ndim else 0


def normalize_axes(axis: Any, ndim: int, name: str) -> tuple[int, ...]:
    """All reduced axes as a sorted tuple of non-negative ints (``None`` means every axis)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, Sequence):
        axes = tuple(normalize_axis(a, ndim, name) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"{name}: repeated axis in {tuple(axis)}")
        return tuple(sorted(axes))
    return (normalize_axis(axis, ndim, name),)


def expand_reduced(g: Tensor, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> Tensor:
    """Broadcast a reduction's gradient back to the input ``shape``."""

    if not keepdims and axes:
        kept = list(shape)
        for a in axes:
            kept[a] = 1
        g = _m.reshape(g, tuple(kept))
    return _m.broadcast_to(g, shape)


def binop(cls: Any, a: Tensor, b: Any) -> Tensor:
    """``a <op> b`` for a Tensor ``a``: the operator fast path (same-dtype tensors, float scalars)."""
    tb = type(b)
    if tb is float or tb is int:
        if a._data.dtype in a._device.float_natives:
            return apply_binary(cls, a, b)
    elif isinstance(b, Tensor):
        if a._device is not b._device:
            return cls.apply(a, b)  # reports the device mismatch
        da = a._data.dtype
        db = b._data.dtype
        if da is db or da == db:
            return apply_binary(cls, a, b)
    x, y = binary_operands(a, b, cls.__name__.lower())
    return cls.apply(x, y)


def rbinop(cls: Any, a: Any, b: Tensor) -> Tensor:
    """``a <op> b`` for a non-Tensor ``a`` (reflected operators)."""
    ta = type(a)
    if (ta is float or ta is int) and b._data.dtype in b._device.float_natives:
        return cls.apply(a, b)
    x, y = binary_operands(a, b, cls.__name__.lower())
    return cls.apply(x, y)
