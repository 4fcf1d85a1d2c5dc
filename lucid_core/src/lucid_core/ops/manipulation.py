"""Shape and layout ops: reshape, transpose, concat/stack/split, flip/roll/tile/repeat/pad, casts, moves."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import _dtypes as dt
from .. import _views as _v
from .. import kernels
from .._autograd import Function
from .._registry import resolve_device
from .._tensor import Tensor, check_tensor
from .._typing import DeviceLike, DTypeLike
from . import _helpers as _h
from . import complex as _cx
from . import creation as _c
from . import indexing as _i

__all__ = [
    "reshape", "permute_dims", "matrix_transpose", "swapaxes", "moveaxis", "expand_dims", "squeeze",
    "broadcast_to", "broadcast_arrays", "broadcast_shapes", "concat", "stack", "split", "unstack", "flip", "roll",
    "repeat", "tile", "pad", "astype", "to_device", "clone", "flatten",
]  # fmt: skip


class Reshape(Function):
    native = True
    linear = True  # forward mode: the op itself on the tangents
    saves_inputs = False  # the gradient needs shapes only

    @staticmethod
    def forward(ctx, x, shape):
        return ctx.xp.reshape(x, shape)

    @staticmethod
    def backward(ctx, gy):
        return reshape(gy, ctx.inputs[0].shape), None

    @staticmethod
    def backward_raw(ctx, gy):
        shape = tuple(ctx.inputs[0]._data.shape)
        return (gy if tuple(gy.shape) == shape else ctx.xp.reshape(gy, shape)), None


def reshape(x: Tensor, /, shape: Sequence[int], *, copy: bool | None = None) -> Tensor:
    """The same elements in a new shape (one dimension may be -1).

    A view of ``x`` where strides can express the new shape (always for a contiguous ``x``), else a copy,
    as PyTorch's ``reshape``; ``copy=True`` always copies, ``copy=False`` raises rather than copy.
    """
    check_tensor(x, "reshape")
    shape = tuple(int(s) for s in shape)
    if shape == x.shape and copy is not True:
        return x
    return _reshape(x, shape, "copy" if copy else "view" if copy is False else "reshape")


def view(x: Tensor, /, shape: Sequence[int]) -> Tensor:
    """PyTorch's ``view``: a view of ``x`` in a new shape; a shape that ``x``'s strides cannot express raises."""
    check_tensor(x, "view")
    return _reshape(x, tuple(int(s) for s in shape), "view")


def _reshape(x: Tensor, shape: tuple[int, ...], mode: str) -> Tensor:
    n = x.size
    unknown = [i for i, s in enumerate(shape) if s == -1]
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise ValueError(f"reshape: invalid dimension {s} in shape {shape}")
            known *= s
    if len(unknown) > 1:
        raise ValueError(f"reshape: only one dimension can be -1, got shape {shape}")
    if (unknown and (known == 0 or n % known)) or (not unknown and known != n):
        raise ValueError(f"reshape: cannot reshape a tensor of shape {x.shape} ({n} elements) into shape {shape}")
    if unknown:
        shape = tuple(n // known if s == -1 else s for s in shape)
    if mode == "copy":
        return Reshape.apply(clone(x), shape)
    if x._view is not None:
        old_shape, strides, _ = _v.layout(x)
        if _v.view_strides(old_shape, strides, shape) is None:
            if mode == "view":
                raise RuntimeError(
                    f"view size is not compatible with input tensor's size and stride (at least one dimension "
                    f"spans across two contiguous subspaces): shape {x.shape} with strides {strides} cannot be "
                    f"viewed as {shape}. Use .reshape(...) instead."
                )
            return Reshape.apply(clone(x), shape)
    return _v.make_view(Reshape.apply(x, shape), x, _v.Reshape(shape))


def flatten(x: Tensor, /, start_axis: int = 0, end_axis: int = -1) -> Tensor:
    """Merge axes ``start_axis..end_axis`` into one."""
    check_tensor(x, "flatten")
    if x.ndim == 0:
        return reshape(x, (1,))
    s = _h.normalize_axis(start_axis, x.ndim, "flatten")
    e = _h.normalize_axis(end_axis, x.ndim, "flatten")
    if s > e:
        raise ValueError(f"flatten: start_axis {start_axis} comes after end_axis {end_axis}")
    shape = x.shape
    merged = 1
    for d in shape[s : e + 1]:
        merged *= d
    return reshape(x, (*shape[:s], merged, *shape[e + 1 :]))


class PermuteDims(Function):
    native = True
    linear = True  # forward mode: the op itself on the tangents
    saves_inputs = False  # the gradient needs shapes only

    @staticmethod
    def forward(ctx, x, axes):
        return ctx.xp.permute_dims(x, axes)

    @staticmethod
    def backward(ctx, gy):
        return permute_dims(gy, _inverse(ctx.inputs[1])), None

    @staticmethod
    def backward_raw(ctx, gy):
        return ctx.xp.permute_dims(gy, _inverse(ctx.inputs[1])), None


def _inverse(axes: tuple[int, ...]) -> tuple[int, ...]:
    """The permutation that undoes ``axes``."""
    inv = [0] * len(axes)
    for i, a in enumerate(axes):
        inv[a] = i
    return tuple(inv)


def permute_dims(x: Tensor, /, axes: Sequence[int]) -> Tensor:
    """Reorder the axes: output axis ``i`` is input axis ``axes[i]``."""
    check_tensor(x, "permute_dims")
    axes = tuple(_h.normalize_axis(a, x.ndim, "permute_dims") for a in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"permute_dims: axes {axes} are not a permutation of the {x.ndim} axes")
    return _v.make_view(PermuteDims.apply(x, axes), x, _v.Permute(axes))


def swapaxes(x: Tensor, axis0: int, axis1: int) -> Tensor:
    """Exchange two axes."""
    check_tensor(x, "swapaxes")
    a = _h.normalize_axis(axis0, x.ndim, "swapaxes")
    b = _h.normalize_axis(axis1, x.ndim, "swapaxes")
    axes = list(range(x.ndim))
    axes[a], axes[b] = axes[b], axes[a]
    axes = tuple(axes)  # a permutation by construction: no second check
    return _v.make_view(PermuteDims.apply(x, axes), x, _v.Permute(axes))


def matrix_transpose(x: Tensor, /) -> Tensor:
    """Swap the last two axes."""
    check_tensor(x, "matrix_transpose")
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: needs at least 2 dimensions, got {x.ndim}")
    return swapaxes(x, -1, -2)


def moveaxis(x: Tensor, source: int | Sequence[int], destination: int | Sequence[int], /) -> Tensor:
    """Move axes to new positions, keeping the others in order."""
    check_tensor(x, "moveaxis")
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: {len(src)} source axes but {len(dst)} destinations")
    src = [_h.normalize_axis(a, x.ndim, "moveaxis") for a in src]
    dst = [_h.normalize_axis(a, x.ndim, "moveaxis") for a in dst]
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, order)


def expand_dims(x: Tensor, /, axis: int | Sequence[int] = 0) -> Tensor:
    """Insert size-1 axes at ``axis`` (positions in the result)."""
    check_tensor(x, "expand_dims")
    axes = [axis] if isinstance(axis, int) else list(axis)
    nd = x.ndim + len(axes)
    axes = sorted(_h.normalize_axis(a, nd, "expand_dims") for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"expand_dims: axis {axis} names a position of the result more than once")
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return reshape(x, shape)


def squeeze(x: Tensor, /, axis: int | Sequence[int] | None = None) -> Tensor:
    """Remove size-1 axes (all of them when ``axis`` is None)."""
    check_tensor(x, "squeeze")
    if axis is None:
        return reshape(x, [s for s in x.shape if s != 1])
    axes = {_h.normalize_axis(a, x.ndim, "squeeze") for a in ([axis] if isinstance(axis, int) else axis)}
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} has size {x.shape[a]}, not 1 (shape {x.shape})")
    return reshape(x, [s for i, s in enumerate(x.shape) if i not in axes])


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape that ``shapes`` broadcast to, or a ValueError naming them."""
    nd = 0
    for s in shapes:
        nd = nd if nd >= len(s) else len(s)
    out = [1] * nd
    for s in shapes:
        for i, d in enumerate(s):
            j = nd - len(s) + i
            if out[j] == 1:
                out[j] = d
            elif d != 1 and d != out[j]:
                raise ValueError(
                    f"shapes {[tuple(x) for x in shapes]} do not broadcast (axis {j - nd}: {out[j]} vs {d})"
                )
    return tuple(out)


class BroadcastTo(Function):
    native = True
    linear = True  # forward mode: the op itself on the tangents
    saves_inputs = False  # the gradient needs shapes only

    @staticmethod
    def forward(ctx, x, shape):
        return ctx.xp.broadcast_to(x, shape)

    @staticmethod
    def backward(ctx, gy):
        return _h.sum_to(gy, ctx.inputs[0].shape), None

    @staticmethod
    def backward_raw(ctx, gy):
        return _h.sum_to_raw(ctx.xp, gy, tuple(ctx.inputs[0]._data.shape)), None


def broadcast_to(x: Tensor, /, shape: Sequence[int]) -> Tensor:
    """Repeat ``x`` along size-1 and new leading axes to ``shape``."""
    check_tensor(x, "broadcast_to")
    shape = tuple(int(s) for s in shape)
    if shape == x.shape:
        return x
    if broadcast_shapes(x.shape, shape) != shape:
        raise ValueError(f"broadcast_to: cannot broadcast shape {x.shape} to {shape}")
    return _v.make_view(BroadcastTo.apply(x, shape), x, _v.Expand(shape))


def broadcast_arrays(*arrays: Tensor) -> tuple[Tensor, ...]:
    """Broadcast every tensor to their common shape (a tuple, as the 2025.12 standard and PyTorch return)."""
    shape = broadcast_shapes(*[check_tensor(a, "broadcast_arrays").shape for a in arrays])
    return tuple(broadcast_to(a, shape) for a in arrays)


class Concat(Function):
    native = True
    linear = True  # forward mode: the op itself on the tangents
    saves_inputs = False  # the gradient needs shapes only

    @staticmethod
    def forward(ctx, axis, *xs):
        return ctx.xp.concat(xs, axis=axis)

    @staticmethod
    def backward(ctx, gy):
        axis = ctx.inputs[0]
        xs = ctx.inputs[1:]
        sizes = [x.shape[axis] for x in xs]
        return (None, *split(gy, sizes, axis=axis))


def _same_dtype(tensors: Sequence[Tensor], name: str) -> list[Tensor]:
    ts = []
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}: element {i} is a {type(t).__name__}, expected a Tensor")
        ts.append(t)
    if not ts:
        raise ValueError(f"{name}: needs at least one tensor")
    target = dt.result_type(*[t.dtype for t in ts])
    return [t if t.dtype is target else astype(t, target) for t in ts]


def concat(arrays: Sequence[Tensor], /, *, axis: int | None = 0) -> Tensor:
    """Join tensors along an existing axis (``axis=None`` flattens them first)."""
    ts = _same_dtype(list(arrays), "concat")
    if axis is None:
        ts = [reshape(t, (-1,)) for t in ts]
        axis = 0
    nd = ts[0].ndim
    if nd == 0:
        raise ValueError("concat: cannot concatenate 0-d tensors; use stack")
    ax = _h.normalize_axis(axis, nd, "concat")
    ref = ts[0].shape
    for i, t in enumerate(ts[1:], 1):
        if t.ndim != nd or any(a != b for j, (a, b) in enumerate(zip(t.shape, ref)) if j != ax):
            raise ValueError(f"concat: tensor {i} has shape {t.shape}, incompatible with {ref} along axis {axis}")
    return Concat.apply(ax, *ts)


def stack(arrays: Sequence[Tensor], /, *, axis: int = 0) -> Tensor:
    """Join same-shape tensors along a new axis."""
    ts = _same_dtype(list(arrays), "stack")
    ref = ts[0].shape
    for i, t in enumerate(ts[1:], 1):
        if t.shape != ref:
            raise ValueError(f"stack: all tensors must have the same shape; tensor 0 is {ref}, tensor {i} is {t.shape}")
    ax = _h.normalize_axis(axis, len(ref) + 1, "stack")
    return concat([expand_dims(t, axis=ax) for t in ts], axis=ax)


class Split(Function):
    """The pieces of ``x`` along ``axis``, as one node: its gradient is the pieces' gradients joined (zeros
    for a piece that got none), not one zero-filled ``x``-sized array per piece added up."""

    native = True
    linear = True  # forward mode: the op itself on the tangents
    saves_inputs = False  # the gradient needs shapes only

    @staticmethod
    def forward(ctx, x, axis, sizes):
        out, start = [], 0
        lead, trail = (slice(None),) * axis, (slice(None),) * (x.ndim - axis - 1)  # a full key: strict libraries
        for s in sizes:
            out.append(kernels.call(ctx.device, "getitem", x, (*lead, slice(start, start + s), *trail)))
            start += s
        return tuple(out)

    @staticmethod
    def backward(ctx, *gys):
        x, axis, sizes = ctx.inputs
        pieces = [
            _c.zeros(_piece_shape(x.shape, axis, s), dtype=x.dtype, device=x.device) if g is None else g
            for g, s in zip(gys, sizes)
        ]
        return (pieces[0] if len(pieces) == 1 else Concat.apply(axis, *pieces)), None, None

    @staticmethod
    def backward_raw(ctx, *gys):
        x, axis, sizes = ctx.inputs
        xp = ctx.xp
        dtype = ctx.device.backend.native_dtype(x.dtype)
        pieces = [xp.zeros(_piece_shape(x.shape, axis, s), dtype=dtype) if g is None else g for g, s in zip(gys, sizes)]
        return (pieces[0] if len(pieces) == 1 else xp.concat(pieces, axis=axis)), None, None


def _piece_shape(shape: tuple[int, ...], axis: int, size: int) -> tuple[int, ...]:
    return (*shape[:axis], size, *shape[axis + 1 :])


def split_sizes(x: Tensor, axis: int, sizes: Sequence[int]) -> tuple[Tensor, ...]:
    """``x`` cut along ``axis`` (normalized) into views of ``sizes`` (checked by the caller to add up)."""
    pieces = Split.apply(x, axis, tuple(sizes))
    lead, trail = (slice(None),) * axis, (slice(None),) * (x.ndim - axis - 1)
    start = 0
    for i, (p, s) in enumerate(zip(pieces, sizes)):
        _v.make_view(p, x, _v.Index((*lead, slice(start, start + s), *trail)), multi=("Split", i))
        start += s
    return pieces


def split(x: Tensor, indices_or_sections: int | Sequence[int], /, axis: int = 0) -> list[Tensor]:
    """Split into equal ``sections`` (an int) or pieces of the given sizes (a list, summing to the axis)."""

    check_tensor(x, "split")
    ax = _h.normalize_axis(axis, x.ndim, "split")
    n = x.shape[ax]
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if k <= 0 or n % k:
            raise ValueError(f"split: axis {axis} of size {n} does not divide into {k} equal sections")
        sizes = [n // k] * k
    else:
        sizes = [int(s) for s in indices_or_sections]
        if sum(sizes) != n:
            raise ValueError(f"split: sizes {sizes} sum to {sum(sizes)}, but axis {axis} has size {n}")
        if any(s < 0 for s in sizes):
            raise ValueError(f"split: sizes must not be negative, got {sizes}")
    return list(split_sizes(x, ax, sizes))


def unstack(x: Tensor, /, *, axis: int = 0) -> tuple[Tensor, ...]:
    """The slices of ``x`` along ``axis``, as a tuple."""

    check_tensor(x, "unstack")
    ax = _h.normalize_axis(axis, x.ndim, "unstack")
    pre = (slice(None),) * ax
    out = tuple(_i.getitem(x, (*pre, i)) for i in range(x.shape[ax]))
    for i, t in enumerate(out):  # one op's several views, as PyTorch's unbind: not writable in the graph
        if t._view is not None:
            t._view.multi = ("Unbind", i)
    return out


class Flip(Function):
    native = True
    linear = True  # forward mode: the op itself on the tangents
    saves_inputs = False  # the gradient needs shapes only

    @staticmethod
    def forward(ctx, x, axes):
        return ctx.xp.asarray(ctx.xp.flip(x, axis=axes), copy=True)  # a copy, as PyTorch's (NumPy's is a view)

    @staticmethod
    def backward(ctx, gy):
        return flip(gy, axis=ctx.inputs[1]), None


def flip(x: Tensor, /, *, axis: int | Sequence[int] | None = None) -> Tensor:
    """Reverse the order of elements along ``axis`` (all axes by default)."""

    check_tensor(x, "flip")
    return Flip.apply(x, _h.normalize_axes(axis, x.ndim, "flip"))


class Roll(Function):
    native = True
    linear = True  # forward mode: the op itself on the tangents
    saves_inputs = False  # the gradient needs shapes only

    @staticmethod
    def forward(ctx, x, shift, axis):
        return ctx.xp.roll(x, shift, axis=axis)

    @staticmethod
    def backward(ctx, gy):
        _, shift, axis = ctx.inputs
        neg = tuple(-s for s in shift) if isinstance(shift, tuple) else -shift
        return roll(gy, neg, axis=axis), None, None


def roll(x: Tensor, /, shift: int | Sequence[int], *, axis: int | Sequence[int] | None = None) -> Tensor:
    """Shift elements cyclically along ``axis`` (flattened when None)."""
    check_tensor(x, "roll")
    if not isinstance(shift, int):
        shift = tuple(int(s) for s in shift)
    if axis is not None and not isinstance(axis, int):
        axis = tuple(axis)
    return Roll.apply(x, shift, axis)


def repeat(x: Tensor, repeats: int | Tensor | Sequence[int], /, *, axis: int | None = None) -> Tensor:
    """Repeat each element ``repeats`` times along ``axis`` (flattened when None)."""

    check_tensor(x, "repeat")
    if axis is None:
        x = reshape(x, (-1,))
        axis = 0
    ax = _h.normalize_axis(axis, x.ndim, "repeat")
    n = x.shape[ax]
    if isinstance(repeats, Tensor):
        repeats = repeats.tolist()
    counts = [int(repeats)] * n if isinstance(repeats, int) else [int(r) for r in repeats]
    if len(counts) == 1 and n != 1:
        counts = counts * n  # one count broadcasts to the axis (the standard), also to an empty one
    if len(counts) != n:
        raise ValueError(f"repeat: {len(counts)} repeat counts for an axis of size {n}")
    idx = [i for i, c in enumerate(counts) for _ in range(c)]
    return _i.take(x, _c.asarray(idx, dtype=dt.int64, device=x.device), axis=ax)


def tile(x: Tensor, repetitions: Sequence[int], /) -> Tensor:
    """Repeat the whole tensor ``repetitions[i]`` times along each axis."""
    check_tensor(x, "tile")
    reps = tuple(int(r) for r in repetitions)
    nd = max(len(reps), x.ndim)
    reps = (1,) * (nd - len(reps)) + reps
    x = reshape(x, (1,) * (nd - x.ndim) + x.shape)
    # insert an axis before each, broadcast it to the repetition count, and merge
    inter = []
    for r, s in zip(reps, x.shape):
        inter += [r, s]
    y = broadcast_to(reshape(x, tuple(v for s in x.shape for v in (1, s))), tuple(inter))
    return reshape(y, tuple(r * s for r, s in zip(reps, x.shape)))


def pad(
    x: Tensor, pad_width: Sequence[Sequence[int]] | Sequence[int], mode: str = "constant", value: float = 0.0
) -> Tensor:
    """Pad with ``value`` (``mode="constant"``) or by reflection/edge values.

    ``pad_width`` is NumPy-style: one ``(before, after)`` pair per axis, or a single pair for all.
    """

    check_tensor(x, "pad")
    pw = list(pad_width)
    if pw and isinstance(pw[0], int):
        pw = [tuple(pw)] * x.ndim  # type: ignore[list-item]
    if len(pw) != x.ndim:
        raise ValueError(f"pad: {len(pw)} (before, after) pairs for a {x.ndim}-D tensor")
    if mode not in ("constant", "reflect", "edge", "replicate", "circular"):
        raise ValueError(f"pad: unknown mode {mode!r}; expected constant, reflect, edge or circular")
    out = x
    for ax, (before, after) in enumerate(pw):  # type: ignore[misc]
        if before < 0 or after < 0:
            raise ValueError(f"pad: negative padding {(before, after)} on axis {ax}")
        if before == 0 and after == 0:
            continue
        n = out.shape[ax]
        parts = []

        def sl(a: int, b: int, step: int = 1, _ax: int = ax, _t: Tensor = out) -> Tensor:
            key = [slice(None)] * _t.ndim
            key[_ax] = slice(a, b, step)
            return _i.getitem(_t, tuple(key))

        if mode == "constant":
            shape_b = list(out.shape)
            shape_b[ax] = before
            shape_a = list(out.shape)
            shape_a[ax] = after
            if before:
                parts.append(_c.full(tuple(shape_b), value, dtype=out.dtype, device=out.device))
            parts.append(out)
            if after:
                parts.append(_c.full(tuple(shape_a), value, dtype=out.dtype, device=out.device))
        elif mode == "reflect":
            if before >= n or after >= n:
                raise ValueError(f"pad: reflect padding {(before, after)} must be smaller than axis {ax} size {n}")
            if before:
                parts.append(flip(sl(1, before + 1), axis=ax))
            parts.append(out)
            if after:
                parts.append(flip(sl(n - after - 1, n - 1), axis=ax))
        elif mode in ("edge", "replicate"):
            if before:
                parts.append(concat([sl(0, 1)] * before, axis=ax))
            parts.append(out)
            if after:
                parts.append(concat([sl(n - 1, n)] * after, axis=ax))
        else:  # circular
            if before > n or after > n:
                raise ValueError(f"pad: circular padding {(before, after)} larger than axis {ax} size {n}")
            if before:
                parts.append(sl(n - before, n))
            parts.append(out)
            if after:
                parts.append(sl(0, after))
        out = concat(parts, axis=ax)
    return out


class Astype(Function):
    native = True
    linear = True  # forward mode: the op itself on the tangents
    saves_inputs = False  # the gradient needs shapes only

    @staticmethod
    def forward(ctx, x, native_dtype):
        return ctx.xp.astype(x, native_dtype)

    @staticmethod
    def backward(ctx, gy):
        return _cast_grad(gy, ctx.inputs[0].dtype), None


def _cast_grad(g: Tensor, dtype: dt.DType) -> Tensor:
    """``g`` cast back to an input's ``dtype``; a real input gets the real part of a complex gradient."""
    if dtype.kind != "c" and g.dtype.kind == "c":
        g = _cx.real(g)
        if g.dtype is dtype:
            return g
    return astype(g, dtype)


def astype(x: Tensor, dtype: DTypeLike, /, *, copy: bool = True, device: DeviceLike = None) -> Tensor:
    """Cast to ``dtype``; casting to a non-float dtype leaves the graph."""
    check_tensor(x, "astype")
    target = dt.as_dtype(dtype)
    if device is not None:
        x = to_device(x, device)
    if target is x.dtype:
        return clone(x) if copy else x
    native = x._device.backend.native_dtype(target)
    if target.kind not in "fc":
        return Astype.apply(x.detach(), native)
    return Astype.apply(x, native)


class ToDevice(Function):
    native = True
    linear = True  # forward mode: the op itself on the tangents
    saves_inputs = False  # the gradient needs shapes only

    @staticmethod
    def forward(ctx, x, device):
        src = ctx.device
        ctx.source = src
        ctx.device = device  # the result lives on the destination
        if device.backend is src.backend:
            return device.backend.move(x, src, device)
        return device.backend.from_foreign(x, src.backend, device)

    @staticmethod
    def backward(ctx, gy):
        return to_device(gy, ctx.source), None


def to_device(x: Tensor, device: DeviceLike, /, *, stream: Any = None) -> Tensor:
    """Move to ``device`` (``"mlx"``, ``"numpy"``, ``"gpu"``...); gradients flow back across the move."""

    check_tensor(x, "to_device")
    dev = resolve_device(device)
    if dev is x._device:
        return x
    return ToDevice.apply(x, dev)


class Clone(Function):
    native = True
    linear = True  # forward mode: the op itself on the tangents
    saves_inputs = False  # the gradient needs shapes only

    @staticmethod
    def forward(ctx, x):
        return ctx.xp.asarray(x, copy=True)

    @staticmethod
    def backward(ctx, gy):
        return gy


def clone(x: Tensor, /) -> Tensor:
    """A copy with its own storage (recorded in the graph)."""
    check_tensor(x, "clone")
    return Clone.apply(x)
