"""Views: tensors that share their base's storage, as PyTorch's do, on mutable and immutable libraries alike.

A view records how it was taken, not where it lies in memory: its *recipe* is the chain of view steps
(:class:`Index`, :class:`Permute`, :class:`Reshape`, :class:`Expand`, :class:`Diagonal`, :class:`Unfold`,
:class:`Component`, :class:`Strided`) that turns the storage's array (the base's data) into the view's
array. Every tensor that shares a storage (the base, its ``detach()`` aliases and every view of them) is
listed, weakly, in one :class:`~lucid_core._tensor._Storage`, with one version counter. Then:

- **Reading** needs nothing: each view holds its own native array, computed when the view was taken and
  recomputed from the storage's array (``recipe.apply``) after any write the view could not see.
- **Writing a view** writes its new values into the storage's array (``scatter``: each step knows how to
  put a piece back into its input, so a chain is undone step by step) and rebinds every tensor of the
  storage; on libraries with immutable arrays (MLX, JAX) this is the only way, and it is what PyTorch's
  functionalization does for XLA. Where the backend's arrays are mutable and the view's array is a true
  memory view of the storage's (NumPy slices, transposes, reshapes), the write goes straight into that
  memory instead (``Backend.view_of`` tells the core so), and only views that are copies (a gather, a
  reshape NumPy had to copy) are recomputed.
- **In the graph**, a write through a view of a non-leaf rebases the base's history (PyTorch's
  CopySlices): the base becomes the output of :class:`WriteView` (gradients to its old values outside the
  written region and to the written values inside it), and every differentiable view of it becomes the
  replay of its recipe on the new base, so gradients through old and new values are both right and
  higher-order gradients still work (both ops are written in Lucid ops).
- **Layout.** Each step also maps a logical (shape, strides, offset) triple, starting from a contiguous
  base, so ``stride()``, ``storage_offset()``, ``is_contiguous()``, ``data_ptr()`` and the rule of
  ``view()`` (which refuses shapes that strides cannot express) follow PyTorch whatever the backend does
  physically.
"""

from __future__ import annotations

__all__ = [
    "Component", "Diagonal", "Expand", "Index", "Permute", "Reshape", "Strided", "Unfold", "ViewInfo", "WriteView",
    "layout", "make_view", "view_strides",
]  # fmt: skip

import itertools
import sys
from typing import Any

from . import kernels
from ._autograd import Function
from ._grad_mode import _mode
from ._tensor import Tensor, _new_tensor

_addresses = itertools.count(1)


class Step:
    """One view op on native arrays: its view, the same as a differentiable op, its write-back, its layout."""

    __slots__ = ()

    def apply(self, device: Any, a: Any) -> Any:
        """The view of native array ``a``."""
        raise NotImplementedError

    def op(self, t: Tensor) -> Tensor:
        """The view as a differentiable Lucid op on ``t`` (no view registered)."""
        raise NotImplementedError

    def scatter(self, device: Any, a: Any, piece: Any) -> Any:
        """A new array: ``a`` with the elements this step picks replaced by ``piece`` (``a`` is left alone)."""
        return _scatter_by_index(self, device, a, piece)

    def layout(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> tuple[Any, Any, int]:
        """The view's (shape, strides, offset) from its input's."""
        raise NotImplementedError


def _copy(device: Any, a: Any) -> Any:
    return device.xp.asarray(a, copy=True)


def _scatter_by_index(step: Step, device: Any, a: Any, piece: Any) -> Any:
    """Write ``piece`` at the positions ``step`` picks from ``a``, found by applying ``step`` to the flat positions."""
    xp = device.xp
    n = 1
    for s in a.shape:
        n *= s
    positions = step.apply(device, xp.reshape(xp.arange(n, dtype=xp.int64), tuple(a.shape)))
    flat = xp.reshape(_copy(device, a), (n,))
    flat = kernels.call(device, "setitem", flat, (xp.reshape(positions, (-1,)),), xp.reshape(piece, (-1,)))
    return xp.reshape(flat, tuple(a.shape))


class Index(Step):
    """Basic indexing: ints, slices, ``None`` and ``...`` (a native key that covers every axis)."""

    __slots__ = ("key",)

    def __init__(self, key: tuple[Any, ...]) -> None:
        self.key = key

    def apply(self, device: Any, a: Any) -> Any:
        return kernels.call(device, "getitem", a, self.key)

    def op(self, t: Tensor) -> Tensor:
        from .ops.indexing import GetItem

        return GetItem.apply(t, self.key, False)

    def scatter(self, device: Any, a: Any, piece: Any) -> Any:
        from .ops.indexing import write_native

        return write_native(device, _copy(device, a), self.key, piece)

    def layout(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> tuple[Any, Any, int]:
        key = self.key
        consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
        out_shape: list[int] = []
        out_strides: list[int] = []
        d = 0
        for k in key:
            if k is Ellipsis:
                for _ in range(len(shape) - consumed):
                    out_shape.append(shape[d])
                    out_strides.append(strides[d])
                    d += 1
            elif k is None:  # PyTorch's unsqueeze: the stride that steps over the next axis
                out_shape.append(1)
                out_strides.append(shape[d] * strides[d] if d < len(shape) else 1)
            elif isinstance(k, slice):
                start, stop, step = k.indices(shape[d])
                out_shape.append(len(range(start, stop, step)))
                out_strides.append(strides[d] * step)
                if out_shape[-1]:
                    offset += start * strides[d]
                d += 1
            else:
                i = int(k)
                offset += (i + shape[d] if i < 0 else i) * strides[d]
                d += 1
        return tuple(out_shape), tuple(out_strides), offset


class Permute(Step):
    """Axes reordered (``permute``, ``transpose``, ``T``, ``movedim``...)."""

    __slots__ = ("axes",)

    def __init__(self, axes: tuple[int, ...]) -> None:
        self.axes = axes

    def apply(self, device: Any, a: Any) -> Any:
        return device.xp.permute_dims(a, self.axes)

    def op(self, t: Tensor) -> Tensor:
        from .ops.manipulation import PermuteDims

        return PermuteDims.apply(t, self.axes)

    def scatter(self, device: Any, a: Any, piece: Any) -> Any:
        inv = [0] * len(self.axes)
        for i, ax in enumerate(self.axes):
            inv[ax] = i
        return _copy(device, device.xp.permute_dims(piece, tuple(inv)))

    def layout(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> tuple[Any, Any, int]:
        return tuple(shape[a] for a in self.axes), tuple(strides[a] for a in self.axes), offset


class Reshape(Step):
    """The same elements in a new shape, where strides can express it (``view``, ``squeeze``, ``flatten``...)."""

    __slots__ = ("shape",)

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape

    def apply(self, device: Any, a: Any) -> Any:
        return device.xp.reshape(a, self.shape)

    def op(self, t: Tensor) -> Tensor:
        from .ops.manipulation import Reshape as _Reshape

        return _Reshape.apply(t, self.shape)

    def scatter(self, device: Any, a: Any, piece: Any) -> Any:
        return _copy(device, device.xp.reshape(piece, tuple(a.shape)))

    def layout(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> tuple[Any, Any, int]:
        new = view_strides(shape, strides, self.shape)
        assert new is not None, "a Reshape step is only recorded where strides can express it"
        return self.shape, new, offset


class Expand(Step):
    """Broadcast to a larger shape (``expand``): repeated elements share one place, so it cannot be written."""

    __slots__ = ("shape",)

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape

    def apply(self, device: Any, a: Any) -> Any:
        return device.xp.broadcast_to(a, self.shape)

    def op(self, t: Tensor) -> Tensor:
        from .ops.manipulation import BroadcastTo

        return BroadcastTo.apply(t, self.shape)

    def layout(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> tuple[Any, Any, int]:
        lead = len(self.shape) - len(shape)
        out = [0] * lead
        for i, (s, st) in enumerate(zip(shape, strides)):
            out.append(0 if s == 1 and self.shape[lead + i] != 1 else st)
        return self.shape, tuple(out), offset


class Diagonal(Step):
    """The ``offset``-th diagonal of axes ``axis1`` and ``axis2``, as a new last axis (``Tensor.diagonal``)."""

    __slots__ = ("axis1", "axis2", "offset")

    def __init__(self, offset: int, axis1: int, axis2: int) -> None:
        self.offset, self.axis1, self.axis2 = offset, axis1, axis2

    def _plan(self, shape: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...], list[int], int]:
        """The axes order that puts the two axes last, the shape with them merged, the diagonal's flat
        positions in the merged axis, and its first row."""
        rest = [d for d in range(len(shape)) if d not in (self.axis1, self.axis2)]
        m, n = shape[self.axis1], shape[self.axis2]
        r0, c0 = max(0, -self.offset), max(0, self.offset)
        length = max(0, min(m - r0, n - c0))
        merged = (*(shape[d] for d in rest), m * n)
        return (*rest, self.axis1, self.axis2), merged, [(r0 + i) * n + c0 + i for i in range(length)], r0

    def apply(self, device: Any, a: Any) -> Any:
        xp = device.xp
        perm, merged, pos, _ = self._plan(tuple(a.shape))
        b = xp.reshape(xp.permute_dims(a, perm), merged)
        return kernels.call(
            device, "getitem", b, (*(slice(None),) * (len(merged) - 1), xp.asarray(pos, dtype=xp.int64))
        )

    def op(self, t: Tensor) -> Tensor:
        from .ops.indexing import GetItem
        from .ops.manipulation import PermuteDims
        from .ops.manipulation import Reshape as _Reshape

        xp = t._device.xp
        perm, merged, pos, _ = self._plan(t.shape)
        b = _Reshape.apply(PermuteDims.apply(t, perm), merged)
        return GetItem.apply(b, (*(slice(None),) * (len(merged) - 1), xp.asarray(pos, dtype=xp.int64)), True)

    def layout(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> tuple[Any, Any, int]:
        perm, _, pos, _ = self._plan(shape)
        s1, s2 = strides[self.axis1], strides[self.axis2]
        if pos:
            offset += max(0, -self.offset) * s1 + max(0, self.offset) * s2
        return (*(shape[d] for d in perm[:-2]), len(pos)), (*(strides[d] for d in perm[:-2]), s1 + s2), offset


class Unfold(Step):
    """Windows of ``size`` every ``step`` along ``dim``, as a new last axis (``Tensor.unfold``)."""

    __slots__ = ("dim", "size", "step")

    def __init__(self, dim: int, size: int, step: int) -> None:
        self.dim, self.size, self.step = dim, size, step

    def _plan(self, shape: tuple[int, ...]) -> tuple[tuple[int, ...], list[int], tuple[int, ...], tuple[int, ...]]:
        """The axes order that puts ``dim`` last, the windows' flat positions along it, the shape of the picked
        windows, and the axes order that puts the windows' axis back at ``dim``."""
        nd = len(shape)
        others = [d for d in range(nd) if d != self.dim]
        windows = (shape[self.dim] - self.size) // self.step + 1
        pos = [w * self.step + i for w in range(windows) for i in range(self.size)]
        k = len(others)
        back = (*range(self.dim), k, *range(self.dim, k), k + 1)
        return (*others, self.dim), pos, (*(shape[d] for d in others), windows, self.size), back

    def apply(self, device: Any, a: Any) -> Any:
        xp = device.xp
        perm, pos, picked, back = self._plan(tuple(a.shape))
        key = (*(slice(None),) * (len(perm) - 1), xp.asarray(pos, dtype=xp.int64))
        out = kernels.call(device, "getitem", xp.permute_dims(a, perm), key)
        return xp.permute_dims(xp.reshape(out, picked), back)

    def op(self, t: Tensor) -> Tensor:
        from .ops.indexing import GetItem
        from .ops.manipulation import PermuteDims
        from .ops.manipulation import Reshape as _Reshape

        xp = t._device.xp
        perm, pos, picked, back = self._plan(t.shape)
        key = (*(slice(None),) * (len(perm) - 1), xp.asarray(pos, dtype=xp.int64))
        out = GetItem.apply(PermuteDims.apply(t, perm), key, True)
        return PermuteDims.apply(_Reshape.apply(out, picked), back)

    def layout(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> tuple[Any, Any, int]:
        windows = (shape[self.dim] - self.size) // self.step + 1
        new_shape = (*shape[: self.dim], windows, *shape[self.dim + 1 :], self.size)
        st = strides[self.dim]
        return new_shape, (*strides[: self.dim], st * self.step, *strides[self.dim + 1 :], st), offset


class Component(Step):
    """The real or imaginary part of a complex tensor (``x.real``, ``x.imag``)."""

    __slots__ = ("imag",)

    def __init__(self, imag: bool) -> None:
        self.imag = imag

    def apply(self, device: Any, a: Any) -> Any:
        return device.xp.imag(a) if self.imag else device.xp.real(a)

    def op(self, t: Tensor) -> Tensor:
        from .ops.complex import Imag, Real

        return (Imag if self.imag else Real).apply(t)

    def scatter(self, device: Any, a: Any, piece: Any) -> Any:
        xp = device.xp
        other = xp.real(a) if self.imag else xp.imag(a)
        re, im = (other, piece) if self.imag else (piece, other)
        return xp.asarray(re, dtype=a.dtype) + xp.asarray(im, dtype=a.dtype) * 1j

    def layout(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> tuple[Any, Any, int]:
        # in units of the real dtype, as PyTorch counts them: twice the complex strides, +1 for the imaginary part
        return shape, tuple(2 * s for s in strides), 2 * offset + int(self.imag)


class Strided(Step):
    """``as_strided``: elements at ``offset + sum(i_k * stride_k)`` of the storage's flat array (the first step)."""

    __slots__ = ("offset", "size", "stride")

    def __init__(self, size: tuple[int, ...], stride: tuple[int, ...], offset: int) -> None:
        self.size, self.stride, self.offset = size, stride, offset

    def _positions(self, xp: Any) -> Any:
        pos = xp.asarray(self.offset, dtype=xp.int64)
        nd = len(self.size)
        for k, (n, s) in enumerate(zip(self.size, self.stride)):
            shape = [1] * nd
            shape[k] = n
            pos = pos + xp.reshape(xp.arange(n, dtype=xp.int64) * s, tuple(shape))
        return xp.broadcast_to(pos, self.size) if nd else pos

    def apply(self, device: Any, a: Any) -> Any:
        xp = device.xp
        flat = xp.reshape(a, (-1,))
        picked = kernels.call(device, "getitem", flat, (xp.reshape(self._positions(xp), (-1,)),))
        return xp.reshape(picked, self.size)

    def op(self, t: Tensor) -> Tensor:
        from .ops.indexing import GetItem
        from .ops.manipulation import Reshape as _Reshape

        xp = t._device.xp
        flat = _Reshape.apply(t, (t.size,))
        return _Reshape.apply(GetItem.apply(flat, (xp.reshape(self._positions(xp), (-1,)),), True), self.size)

    def layout(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> tuple[Any, Any, int]:
        return self.size, self.stride, self.offset


class ViewInfo:
    """What a view knows of itself: its base (PyTorch's ``_base``), its recipe from the storage's array,
    whether it is a differentiable view (``detach()`` gives none), whether it was taken in no-grad mode of a
    base that requires grad (writing it in grad mode is refused, as in PyTorch), and whether its array is a
    true memory view of the storage's (then writes go straight into memory)."""

    __slots__ = ("alias", "base", "chain", "multi", "no_grad", "overlap", "track")

    def __init__(
        self, base: Tensor, chain: tuple[Step, ...], track: bool, no_grad: bool, alias: bool, multi: Any = None
    ) -> None:
        self.base = base
        self.chain = chain
        self.track = track
        self.no_grad = no_grad
        self.alias = alias
        self.multi = multi  # (op, output index) for a piece of split/chunk/unbind: not writable in the graph
        self.overlap: bool | None = None  # whether two of its elements share a place (found on first write)

    def apply(self, device: Any, data: Any) -> Any:
        """The view's array from the storage's ``data``."""
        for s in self.chain:
            data = s.apply(device, data)
        if type(data) is not device.array_type:
            data = device.backend.canonical(data)
        return data

    def scatter(self, device: Any, data: Any, piece: Any) -> Any:
        """A new storage array: ``data`` with this view's elements replaced by ``piece``."""
        if 0 in tuple(piece.shape):
            return data  # an empty view: nothing to write
        inputs = [data]
        for s in self.chain[:-1]:
            inputs.append(s.apply(device, inputs[-1]))
        for s, a in zip(reversed(self.chain), reversed(inputs)):
            piece = s.scatter(device, a, piece)
        return piece

    def replay(self, t: Tensor) -> Tensor:
        """The view taken again from ``t``, as differentiable ops."""
        for s in self.chain:
            t = s.op(t)
        return t


def layout(t: Tensor) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """``t``'s logical (shape, strides, offset) in its storage, in elements of its dtype (PyTorch's)."""
    v = t._view
    box = t._box
    shape = tuple(box.data.shape) if v is not None else t.shape
    strides = contiguous_strides(shape)
    offset = 0
    if v is not None:
        for s in v.chain:
            shape, strides, offset = s.layout(shape, strides, offset)
    return tuple(shape), tuple(strides), offset


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """C-order strides of ``shape``, in elements."""
    out = []
    acc = 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(out))


def is_contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """PyTorch's rule: C order, ignoring axes of length 1; an empty tensor is contiguous."""
    if 0 in shape:
        return True
    expected = 1
    for s, st in zip(reversed(shape), reversed(strides)):
        if s == 1:
            continue
        if st != expected:
            return False
        expected *= s
    return True


def overlapping(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether two elements of this layout may share one place (broadcast axes, overlapping windows)."""
    dims = sorted((st, s) for s, st in zip(shape, strides) if s > 1)
    extent = 0  # the span of the axes with smaller strides
    for st, s in dims:
        if st <= extent:
            return True
        extent += (s - 1) * st
    return False


def view_strides(shape: tuple[int, ...], strides: tuple[int, ...], new: tuple[int, ...]) -> tuple[int, ...] | None:
    """Strides that show the elements of (``shape``, ``strides``) in shape ``new`` without moving them, or
    None where no strides can (an axis of ``new`` would span two separate runs of memory): PyTorch's rule
    for ``view``."""
    numel = 1
    for s in shape:
        numel *= s
    if numel == 0 or not shape:
        return contiguous_strides(new)
    out = [0] * len(new)
    vd = len(new) - 1
    base = strides[-1]
    tnumel = 1
    vnumel = 1
    for td in range(len(shape) - 1, -1, -1):
        tnumel *= shape[td]
        if td == 0 or (shape[td - 1] != 1 and strides[td - 1] != tnumel * base):
            # axes td.. form one contiguous run: the new axes that fill it take strides inside it
            while vd >= 0 and (vnumel < tnumel or new[vd] == 1):
                out[vd] = vnumel * base
                vnumel *= new[vd]
                vd -= 1
            if vnumel != tnumel:
                return None
            if td > 0:
                base = strides[td - 1]
                tnumel = 1
                vnumel = 1
    if vd != -1:
        return None
    return tuple(out)


def make_view(out: Tensor, src: Tensor, step: Step | None, *, track: bool = True, multi: Any = None) -> Tensor:
    """Register ``out`` (just computed from ``src`` by ``step``) as a view sharing ``src``'s storage.

    ``step`` None makes a full alias (``detach``). ``track`` says whether it is a differentiable view;
    ``multi`` names the op and output index of one of several views one op returned (split, unbind).
    """
    box = src._storage()
    sv = src._view
    if sv is None:
        base, chain = src, ()
    else:
        base, chain = sv.base, sv.chain
    if step is not None:
        chain = (step,) if isinstance(step, Strided) else (*chain, step)
    if chain:
        data = box.data
        dev = src._device
        alias = dev.backend.view_of(out._data, data) if dev.backend.views_alias else False
        no_grad = not _mode.enabled and base._requires_grad and track
        if multi is None and sv is not None:
            multi = sv.multi
        out._view = ViewInfo(base, chain, track, no_grad or (sv is not None and sv.no_grad), alias, multi)
        if no_grad and not out._requires_grad:
            out._requires_grad = True  # PyTorch: a no-grad view of a tensor that requires grad says it does too
    out._box = box
    box.add_view(out)
    return out


def address(box: Any) -> int:
    """A stable, unique address for a storage (``data_ptr``): each gets its own terabyte, so no two meet."""
    if box.address is None:
        box.address = next(_addresses) << 40
    return box.address


class WriteView(Function):
    """``base`` with the elements of one view (``chain``) replaced by ``values``: an in-place write through a
    view, recorded in the graph (PyTorch's CopySlices). Gradients: to ``base`` everywhere but the view's
    elements, to ``values`` the view of the gradient."""

    native = True
    linear = True  # forward mode: the op itself on the tangents
    saves_inputs = False  # shapes and the recipe only

    @staticmethod
    def forward(ctx, base, values, info):
        return info.scatter(ctx.device, base, values)  # values has the view's shape (the write checked it)

    @staticmethod
    def backward(ctx, g):
        _, values, info = ctx.inputs
        need_base, need_values, _ = ctx.needs_input_grad
        gb = gv = None
        if need_base:
            zeros = _new_tensor(ctx.xp.zeros(values.shape, dtype=values._data.dtype), g._device)
            gb = WriteView.apply(g, zeros, info)
        if need_values:
            gv = info.replay(g)
        return gb, gv, None


# -- writes through views (called from Tensor's write path) -------------------------------------------------
def overlaps(t: Tensor) -> bool:
    """Whether two elements of view ``t`` share one place in its storage (``expand``, overlapping windows)."""
    v = t._view
    if v.overlap is None:
        shape, strides, _ = layout(t)
        v.overlap = overlapping(shape, strides)
    return v.overlap


def check_writable(t: Tensor, opname: str) -> None:
    """Refuse an in-place write into a view whose elements share places, as PyTorch does."""
    if overlaps(t):
        raise RuntimeError(
            f"{opname}: unsupported operation: more than one element of the written-to tensor refers to a single "
            "memory location (an expand()ed or overlapping view). Please clone() the tensor before performing "
            "the operation."
        )


def put(t: Tensor, data: Any) -> None:
    """Store ``data`` (the view's new values) into view ``t``'s storage, so every tensor sharing it sees them.

    Straight into memory where ``t``'s array is a memory view of the storage's (only views that are copies
    recompute); elsewhere the new values are scattered into a new storage array, which every tensor rebinds to.
    """
    v = t._view
    box = t._box
    dev = t._device
    check_writable(t, "in-place write")
    if v.alias and (data is t._data or dev.backend.inplace("copy", t._data, data, 1, into_view=True)):
        box.rebind(box.data)
        return
    box.rebind(v.scatter(dev, box.data, data))


def write_in_graph(t: Tensor, fn: Any, opname: str) -> Tensor:
    """Write ``fn(t)`` through differentiable view ``t`` in the graph: PyTorch's CopySlices.

    The base becomes :class:`WriteView` of its old self and the new values; every differentiable view of
    the base (``t`` among them) becomes its recipe replayed on the new base. The tensors as they were
    (ghosts) keep the edges made to them before the write.
    """
    v = t._view
    base = v.base
    if v.no_grad:
        raise RuntimeError(
            f"{opname}: A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
            "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by "
            "moving both the view and the inplace either both inside the no_grad block (if you don't want the "
            "inplace to be tracked) or both outside (if you want the inplace to be tracked)."
        )
    if v.multi is not None and (base._requires_grad or _mode.enabled):
        op, index = v.multi
        raise RuntimeError(
            f"{opname}: Output {index} of {op} is a view and is being modified inplace. This view is the output of a "
            "function that returns multiple views. Such functions do not allow the output views to be modified "
            "inplace. You should replace the inplace operation by an out-of-place one (or write it under "
            "`with lucid_core.no_grad():`)."
        )
    if base._requires_grad and base._node is None:
        raise RuntimeError(
            f"{opname}: a view of a leaf Variable that requires grad is being used in an in-place operation "
            "(write it under `with lucid_core.no_grad():`, or into a .clone())"
        )
    box = t._box
    ghost = t._ghost()
    result = fn(ghost)
    t._check_fits(result, opname)
    if not (result._requires_grad or base._requires_grad) or base._box is not box:
        # nothing to record after all (or a base whose data was replaced since): a plain write of the values
        if result._requires_grad:
            t._become(ghost, result)
        else:
            t._set_data(result._data)
        return t
    base_ghost = base._ghost()
    base._become(base_ghost, WriteView.apply(base_ghost, result, v), (t, ghost))
    return t


def hand_over_views(base: Tensor, written: Any) -> tuple[list[Tensor], list[Tensor]]:
    """Before ``base`` is written in the graph: each live differentiable view of it hands its edges to a ghost.

    Returns the views and the ghosts (which the new node keeps alive: older nodes reach them by version).
    ``written`` is ``(view, ghost)`` for the view the write came through (its ghost already exists).
    """
    views: list[Tensor] = []
    ghosts: list[Tensor] = []
    for r in list(base._box.views):
        u = r()
        if u is None or u is base:
            continue
        uv = u._view
        if uv is None or not uv.track or uv.base is not base:
            continue
        if u._requires_grad:
            g = written[1] if written is not None and u is written[0] else u._ghost()
            u._hand_over(g)
            ghosts.append(g)
        views.append(u)
    return views, ghosts


def retake_views(base: Tensor, views: tuple[list[Tensor], list[Tensor]]) -> None:
    """After ``base`` was written in the graph: each view becomes its recipe replayed on the new ``base``."""
    us, ghosts = views
    base._node.view_ghosts = ghosts
    version = base._box.version
    for u in us:
        u._take_node(u._view.replay(base), version)


def _attach() -> None:
    from . import _tensor

    _tensor._VIEWS = sys.modules[__name__]


_attach()
