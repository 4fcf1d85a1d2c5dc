"""Indexing: ``x[key]`` with gradients that scatter back (repeated indices accumulate), take, and
``x[key] = value``, an in-place write that is recorded in the graph like any other op.

Keys are normalised here, once, so every backend receives only what the Array API standard allows
(a boolean mask is the sole index; elsewhere it becomes the integer arrays of its true positions)."""

from __future__ import annotations

from typing import Any

from .. import _dtypes as dt
from .. import _views as _v
from .. import kernels
from .._autograd import Function, _mode
from .._forward_ad import involved as _fw_involved
from .._tensor import Tensor
from ..backend import Device
from . import _helpers as _h
from . import creation as _c
from . import manipulation as _m

__all__ = ["getitem", "setitem", "take", "take_along_axis"]

_SCALARS = (bool, int, float, complex)


def _native_key(x: Tensor, key: Any) -> tuple[Any, bool]:
    """Translate an index into the backend's terms; report whether it uses advanced indexing."""
    if not isinstance(key, tuple):
        key = (key,)
    if any(type(k) is range for k in key):  # PyTorch takes a range as the list of its integers
        key = tuple(list(k) if type(k) is range else k for k in key)
    out = []
    masks = []
    advanced = False
    for k in key:
        if isinstance(k, Tensor):
            if k._device is not x._device:
                raise RuntimeError(f"indexing: the index is on {k.device} but the tensor is on {x.device}")
            kind = k.dtype.kind
            if kind not in "biu":
                raise IndexError(f"indexing: tensors used as indices must be integer or bool, got {k.dtype.name}")
            if kind == "b" and not x._device.backend.capabilities.get("data_dependent_shapes", True):
                raise IndexError(
                    f"indexing: backend {x._device.backend.name!r} cannot index with a boolean mask (the result's "
                    "shape depends on the data); use lucid_core.where(mask, x, 0) instead"
                )
            if kind == "b":
                masks.append(len(out))
            out.append(k._data)
            advanced = True
        elif isinstance(k, (list, tuple)):
            is_mask = _is_bool_list(k)
            if is_mask:
                masks.append(len(out))
            out.append(x._device.backend.asarray(k, dt.bool if is_mask else dt.int64, x._device))
            advanced = True
        elif k is None or k is Ellipsis or isinstance(k, (int, slice)):
            if isinstance(k, bool):
                raise IndexError("indexing: a Python bool is not a valid index; use a bool tensor")
            out.append(k)
        elif hasattr(k, "__index__"):
            out.append(int(k))
        elif x._device.backend.array_types and isinstance(k, x._device.backend.array_types):
            out.append(k)
            advanced = True
        else:
            raise IndexError(f"indexing: unsupported index of type {type(k).__name__}")
    _check_host_indices(x, key)
    if masks:
        out = _mask_key(x, out, masks)
        if len(out) == 1:
            return tuple(out), True
    # the standard wants a key that covers every axis: x[k] on a 2-D tensor is x[k, ...]; a basic key always
    # ends in one, so that NumPy gives a view even when ints pick every axis (x[0] of a vector: a 0-d view)
    consumed = 0
    for k in out:
        if k is Ellipsis:
            return tuple(out), advanced
        if k is not None:
            consumed += 1
    if consumed < len(x._data.shape) or not advanced:
        out.append(Ellipsis)
    return tuple(out), advanced


def _mask_key(x: Tensor, out: list[Any], masks: list[int]) -> list[Any]:
    """The standard allows a boolean mask only as the sole index: ``x[m]``, ``x[m, ...]`` and ``x[m, :]``
    become ``x[m]``; a mask among other indices becomes the integer arrays of its true positions."""
    if masks == [0]:
        rest = out[1:]
        if all(k is Ellipsis or (isinstance(k, slice) and k == slice(None)) for k in rest):
            mask_ndim = len(out[0].shape)
            if mask_ndim + sum(1 for k in rest if k is not Ellipsis) > len(x._data.shape):
                raise IndexError(f"too many indices for a tensor of dimension {x.ndim} (a {mask_ndim}-D mask and more)")
            return out[:1]
    nonzero = x._device.xp.nonzero
    spelled: list[Any] = []
    for i, k in enumerate(out):
        if i in masks:
            spelled.extend(nonzero(k))
        else:
            spelled.append(k)
    return spelled


def write_native(device: Device, array: Any, key: Any, value: Any, advanced: bool = False) -> Any:
    """``array[key] = value`` through the ``setitem`` kernel (native, or the composed default); the result array.

    A library with immutable arrays (JAX) must register ``kernels["setitem"](array, key, value)``
    returning the new array; without it the composed default's error says so. Integer-array keys, which
    the standard does not require ``__setitem__`` to take, fall back to a scatter through ``index_add``.
    """
    if not advanced and isinstance(key, tuple) and any(k is None for k in key):
        # the standard's __setitem__ takes no None: drop the new axes from the key and from the value
        region = kernels.call(device, "getitem", array, key).shape
        key = tuple(k for k in key if k is not None)
        xp = device.xp
        if getattr(value, "ndim", 0):
            value = xp.reshape(xp.broadcast_to(value, region), tuple(kernels.call(device, "getitem", array, key).shape))
    return kernels.call(device, "setitem", array, key, value)


def _flat(values: Any) -> Any:
    for v in values:
        if isinstance(v, (list, tuple)):
            yield from _flat(v)
        else:
            yield v


def _check_host_indices(x: Tensor, key: tuple[Any, ...]) -> None:
    """Python ints and lists are host data: check them here with a clear IndexError, since lazy
    backends may not check at all (tensor indices are left to the backend: checking would sync)."""
    if any((isinstance(k, Tensor) and k.dtype is dt.bool) or _is_bool_list(k) for k in key):
        return  # masks consume several axes; leave those keys to the backend
    consuming = sum(1 for k in key if k is not None and k is not Ellipsis)
    if consuming > x.ndim:
        raise IndexError(f"too many indices ({consuming}) for a tensor of dimension {x.ndim}")
    dim = 0
    for k in key:
        if k is Ellipsis:
            dim += x.ndim - consuming
            continue
        if k is None:
            continue
        if isinstance(k, (list, tuple)):
            values: Any = _flat(k)
        elif isinstance(k, (Tensor, slice)):
            values = ()
        else:
            values = (k,)
        n = x.shape[dim]
        for v in values:
            if not -n <= v < n:
                raise IndexError(f"index {v} is out of bounds for axis {dim} with size {n}")
        dim += 1


def _is_bool_list(k: Any) -> bool:
    return isinstance(k, (list, tuple)) and bool(k) and all(isinstance(v, bool) for v in k)


class GetItem(Function):
    native = True
    linear = True  # forward mode: the op itself on the tangents
    saves_inputs = False  # backward needs the key and x's shape, not its values

    @staticmethod
    def forward(ctx, x, key, advanced):
        return kernels.call(ctx.device, "getitem", x, key)

    @staticmethod
    def backward(ctx, gy):
        x, key, advanced = ctx.inputs
        return IndexAdd.apply(gy, key, advanced, x.shape), None, None

    @staticmethod
    def backward_raw(ctx, gy):
        x, key, advanced = ctx.inputs
        return IndexAdd.forward(ctx, gy, key, advanced, x.shape), None, None  # IndexAdd.apply's numbers


class IndexAdd(Function):
    """Zeros of ``shape`` with ``values`` added at ``key`` (repeated indices accumulate)."""

    native = True
    linear = True  # forward mode: the op itself on the tangents
    saves_inputs = False

    @staticmethod
    def forward(ctx, values, key, advanced, shape):
        xp = ctx.xp
        z = xp.zeros(shape, dtype=values.dtype)
        if advanced:  # positions may repeat: they must accumulate
            return kernels.call(ctx.device, "index_add", z, key, values)
        return write_native(ctx.device, z, key, values)  # a basic key hits each position once

    @staticmethod
    def backward(ctx, gz):
        _, key, advanced, _ = ctx.inputs
        return GetItem.apply(gz, key, advanced), None, None, None


def getitem(x: Tensor, key: Any) -> Tensor:
    """``x[key]``: ints, slices, ``...``, ``None``, bool masks and integer tensors/lists.

    A basic key (ints, slices, ``...``, ``None``) gives a view of ``x``, as in PyTorch: writes through it land
    in ``x``. Masks and integer arrays give a copy.
    """
    nkey, advanced = _native_key(x, key)
    try:
        out = GetItem.apply(x, nkey, advanced)
    except IndexError as exc:
        raise IndexError(f"indexing a tensor of shape {x.shape}: {exc}") from None
    return out if advanced else _v.make_view(out, x, _v.Index(nkey))


class SetItem(Function):
    """``x`` with ``value`` written at ``key``, as a new array: ``x[key] = value`` recorded in the graph.

    The gradient reaches ``value`` (the assigned region, summed over broadcast axes) and ``x``
    everywhere else (zero at the assigned positions), as in PyTorch.
    """

    native = True
    saves_inputs = False  # backward needs the key and the shapes only

    @staticmethod
    def forward(ctx, x, key, advanced, value):
        return write_native(ctx.device, ctx.xp.asarray(x, copy=True), key, value, advanced)

    @staticmethod
    def jvp(ctx, tx, _k, _a, tv):
        x, key, advanced, _ = ctx.inputs
        if tx is None and tv is None:
            return None
        return SetItem.apply(_c.zeros_like(x) if tx is None else tx, key, advanced, 0.0 if tv is None else tv)

    @staticmethod
    def backward(ctx, g):
        _, key, advanced, value = ctx.inputs
        need_x, _, _, need_value = ctx.needs_input_grad
        gx = SetItem.apply(g, key, advanced, 0.0) if need_x else None
        gv = None
        if need_value:
            gv = _h.sum_to(GetItem.apply(g, key, advanced), value.shape)
        return gx, None, None, gv


class Overwrite(Function):
    """An array of ``target``'s shape and dtype holding ``value`` (a tensor, broadcast, or a number).

    ``copy_`` and ``fill_`` recorded in the graph: ``target`` is an input (its old values get no
    gradient) so the graph keeps the history the write replaced.
    """

    native = True
    saves_inputs = False

    @staticmethod
    def forward(ctx, target, value):
        xp = ctx.xp
        if isinstance(value, _SCALARS):
            return xp.full(target.shape, value, dtype=target.dtype)
        return xp.asarray(xp.broadcast_to(value, target.shape), copy=True)

    @staticmethod
    def jvp(ctx, _, tv):
        return None if tv is None else Overwrite.apply(ctx.inputs[0], tv)  # the old values have no tangent

    @staticmethod
    def backward(ctx, g):
        value = ctx.inputs[1]
        if ctx.needs_input_grad[1]:
            return None, _h.sum_to(g, value.shape)
        return None, None


def setitem(x: Tensor, key: Any, value: Any) -> None:
    """``x[key] = value``, in place (every detached view of ``x`` sees it).

    When ``x`` or ``value`` requires grad (in grad mode) the write is an op in the graph, as in
    PyTorch: ``x`` becomes its output, with gradients to ``value`` and to ``x``'s earlier contents.
    A leaf that requires grad can only be written under ``no_grad()``.
    """
    nkey, advanced = _native_key(x, key)
    if isinstance(value, Tensor):
        if value._device is not x._device:
            raise RuntimeError(f"setitem: value is on {value.device} but the tensor is on {x.device}")
        if value._data.dtype != x._data.dtype:
            value = _m.astype(value, x.dtype)
        if (_mode.enabled and (x._requires_grad or value._requires_grad)) or _fw_involved(x, value):
            x._apply_inplace(lambda t: SetItem.apply(t, nkey, advanced, value), "setitem", value)
            return
        v = value._data
    else:
        v = x._device.backend.asarray(value, x.dtype, x._device)
        if (_mode.enabled and x._requires_grad) or _fw_involved(x):
            x._apply_inplace(lambda t: SetItem.apply(t, nkey, advanced, v), "setitem")
            return
    view = x._view
    if view is not None:
        _v.check_writable(x, "setitem")
        if view.alias:  # a memory view of its storage: write there (the standard's __setitem__ on a mutable array)
            x._data[nkey] = v
            box = x._box
            box.rebind(box.data)
            box.version += 1
            return
    x._set_data(write_native(x._device, x._data, nkey, v, advanced))


def take(x: Tensor, indices: Any, /, *, axis: int | None = None) -> Tensor:
    """Elements at integer ``indices`` along ``axis`` (flattened when None)."""

    if axis is None:
        if x.ndim != 1:
            x = _m.reshape(x, (-1,))
        axis = 0
    ax = _h.normalize_axis(axis, x.ndim, "take")
    if not isinstance(indices, Tensor):
        indices = _c.asarray(indices, dtype=dt.int64, device=x.device)
    from ._index_checks import check_index_range  # it imports reduction, which imports this module

    # negative indices count from the end (as in PyTorch's take); beyond [-n, n) raises on every backend
    check_index_range(indices, x.shape[ax], "take", ax, negative=True)
    return getitem(x, (slice(None),) * ax + (indices,))


def take_along_axis(x: Tensor, indices: Tensor, /, *, axis: int = -1) -> Tensor:
    """Pick ``x``'s elements along ``axis`` by ``indices`` of the same rank (as after ``argsort``)."""

    if indices.ndim != x.ndim:
        raise ValueError(f"take_along_axis: indices have {indices.ndim} dimensions but x has {x.ndim}")
    ax = _h.normalize_axis(axis, x.ndim, "take_along_axis")
    from ._index_checks import check_index_range  # it imports reduction, which imports this module

    check_index_range(indices, x.shape[ax], "take_along_axis", ax, negative=True)
    key = []
    for d in range(x.ndim):
        if d == ax:
            key.append(indices)
        else:
            shape = [1] * x.ndim
            shape[d] = indices.shape[d] if indices.shape[d] == x.shape[d] else x.shape[d]
            key.append(_m.reshape(_c.arange(x.shape[d], device=x.device), shape))
    return getitem(x, tuple(key))
