"""The rest of PyTorch's ``Tensor`` surface: method forms of face functions, queries, and a few free functions.

Method forms call the face's free functions (``x.gcd(y)`` is ``lucid.gcd(x, y)``); their in-place forms
compute out of place and write with ``copy_`` (views, versions and autograd behave as for any write).
The queries answer what is true of every Lucid tensor (never nested, never pinned, never distributed).
The free functions (``unique``, ``mode``, ``histogram``, ``nonzero_static``, ``unravel_index``,
``hash_tensor``) follow PyTorch's signatures and results.
"""

from __future__ import annotations

__all__ = [
    "geqrf",
    "hash_tensor",
    "histogram",
    "is_distributed",
    "mode",
    "nonzero_static",
    "orgqr",
    "ormqr",
    "resize_as_",
    "unique",
    "unravel_index",
]

import builtins
import functools
import math
import operator
import struct
import warnings
from collections import namedtuple
from collections.abc import Callable, Sequence
from typing import Any

import lucid_core as lc
from lucid_core import Tensor, _views

mode_result = namedtuple("mode", ["values", "indices"])
histogram_result = namedtuple("histogram", ["hist", "bin_edges"])


# -- free functions ------------------------------------------------------------------------------------------
def unique(
    input: Tensor,
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: int | None = None,
) -> Any:
    """The distinct elements of ``input`` (or its distinct slices along ``dim``), sorted; with
    ``return_inverse`` each element's position in them, with ``return_counts`` how often each occurs."""
    if dim is None:  # sorted, then the first of each run: tensor ops, no Python loop over the elements
        flat = input.reshape(-1)
        if flat.size == 0:
            empty = lc.zeros((0,), dtype=lc.int64)
            result: list[Any] = [flat]
            result += [lc.zeros(input.shape, dtype=lc.int64)] if return_inverse else []
            result += [empty] if return_counts else []
            return result[0] if len(result) == 1 else tuple(result)
        values, order = flat.sort()
        first = lc.concat([lc.ones((1,), dtype=lc.bool), values[1:] != values[:-1]])
        starts = lc.nonzero(first)[0]
        result = [values[starts]]
        if return_inverse:
            inverse = lc.zeros((flat.size,), dtype=lc.int64)
            inverse[order] = lc.cumulative_sum(lc.astype(first, lc.int64)) - 1
            result.append(inverse.reshape(input.shape))
        if return_counts:
            ends = lc.concat([starts[1:], lc.asarray([flat.size], dtype=starts.dtype)])
            result.append(lc.astype(ends - starts, lc.int64))
        return result[0] if len(result) == 1 else tuple(result)
    d = dim + input.ndim if dim < 0 else dim
    if not 0 <= d < input.ndim:
        raise IndexError(f"unique: dim {dim} out of range for a tensor of {input.ndim} dimensions")
    moved = lc.moveaxis(input, d, 0)
    rows = [tuple(lc.reshape(moved[i], (-1,)).tolist()) for i in builtins.range(moved.shape[0])]
    distinct = builtins.sorted(set(rows))
    where = {r: i for i, r in enumerate(distinct)}
    first_at: dict[tuple[Any, ...], int] = {}
    counts: dict[tuple[Any, ...], int] = {}
    for i, r in enumerate(rows):
        first_at.setdefault(r, i)
        counts[r] = counts.get(r, 0) + 1
    picks = [first_at[r] for r in distinct]
    uniq = lc.moveaxis(moved[lc.asarray(picks, dtype=lc.int64)], 0, d) if picks else input
    result = [uniq]
    if return_inverse:
        result.append(lc.asarray([where[r] for r in rows], dtype=lc.int64))
    if return_counts:
        result.append(lc.asarray([counts[r] for r in distinct], dtype=lc.int64))
    return result[0] if len(result) == 1 else tuple(result)


def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> Any:
    """``(values, indices)``: along ``dim``, the most frequent value (the smallest on a tie) and the last
    index where it occurs, as PyTorch gives them."""
    if input.ndim == 0:
        return mode_result(input.clone(), lc.zeros((), dtype=lc.int64))
    d = dim + input.ndim if dim < 0 else dim
    if not 0 <= d < input.ndim:
        raise IndexError(f"mode: dim {dim} out of range for a tensor of {input.ndim} dimensions")
    if input.shape[d] == 0:
        raise IndexError(f"mode(): expected a non-empty dimension {dim}, got size 0")
    moved = lc.moveaxis(input.detach(), d, -1)
    lines = lc.reshape(moved, (-1, moved.shape[-1])).tolist()
    vals, idxs = [], []
    for line in lines:
        counts: dict[Any, int] = {}
        for v in line:
            counts[v] = counts.get(v, 0) + 1
        best = builtins.max(counts.values())
        v = builtins.min(k for k, c in counts.items() if c == best)
        vals.append(v)
        idxs.append(builtins.max(i for i, x in enumerate(line) if x == v))
    shape = moved.shape[:-1]
    index = lc.reshape(lc.asarray(idxs, dtype=lc.int64, device=input.device), shape)
    values = input.take_along_dim(index.unsqueeze(d), dim=d)
    if not keepdim:
        values = values.squeeze(d)
    else:
        index = index.unsqueeze(d)
    return mode_result(values, index)


def histogram(
    input: Tensor,
    bins: int | Tensor = 100,
    *,
    range: tuple[float, float] | None = None,
    weight: Tensor | None = None,
    density: bool = False,
) -> Any:
    """``(hist, bin_edges)``: counts (or summed ``weight``) of ``input``'s elements in ``bins`` equal bins over
    ``range`` (the data's min and max by default) or between the given edges; the last bin is closed."""
    if input.dtype.kind != "f":
        raise RuntimeError(
            f"histogram: input tensor and bins tensors should have a floating dtype, got {input.dtype.name}"
        )
    x = input.detach().reshape(-1)
    if isinstance(bins, Tensor):
        edges = bins.detach().astype(input.dtype)
    else:
        if bins <= 0:
            raise ValueError(f"histogram: bins must be > 0, got {bins}")
        lo, hi = range if range is not None else ((x.min().item(), x.max().item()) if x.size else (0.0, 0.0))
        if lo > hi:
            raise ValueError(f"histogram: max must be larger than min, got range ({lo}, {hi})")
        edges = _equal_bin_edges(lo, hi, bins, input.dtype)
    nb = edges.shape[0] - 1
    which, inside = _bin_index(edges, x)
    w = lc.ones_like(x) if weight is None else weight.detach().reshape(-1).astype(input.dtype)
    w = lc.where(inside, w, lc.zeros_like(w))
    hist = lc.zeros((nb,), dtype=input.dtype).index_add(0, which, w)
    if density:
        hist = hist / (hist.sum() * (edges[1:] - edges[:-1]))
    return histogram_result(hist, edges)


def _equal_bin_edges(lo: float, hi: float, bins: int, dtype: Any) -> Tensor:
    """``bins + 1`` equal edges from ``lo`` to ``hi``; an empty range is widened by 0.5 on each side, as PyTorch
    does. Shared by ``histogram`` and ``histogramdd`` (lucid/_numeric_extra.py)."""
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return lc.linspace(lo, hi, bins + 1, dtype=dtype)


def _bin_index(edges: Tensor, x: Tensor) -> tuple[Tensor, Tensor]:
    """``(which, inside)``: each element's bin between increasing ``edges`` (the last bin closed, so it holds its
    right edge) and whether it lies within the edges at all (``which`` is 0 where it does not)."""
    nb = edges.shape[0] - 1
    inside = (x >= edges[0]) & (x <= edges[-1])
    which = lc.searchsorted(edges, x, side="right") - 1
    which = lc.where(which >= nb, which - 1, which)
    return lc.where(inside, which, lc.zeros_like(which)), inside


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """``nonzero(input)`` cut or padded with ``fill_value`` to exactly ``size`` rows (a static shape)."""
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, got {size}")
    found = input.nonzero() if input.ndim else input.reshape(1).nonzero()[:, :0]
    found = found[:size]
    missing = size - found.shape[0]
    if missing:
        pad = lc.full((missing, found.shape[1]), fill_value, dtype=lc.int64, device=input.device)
        found = lc.concat([found.astype(lc.int64), pad], axis=0)
    return found.astype(lc.int64)


def unravel_index(indices: Tensor, shape: int | Sequence[int]) -> tuple[Tensor, ...]:
    """The coordinates in a tensor of ``shape`` of the flat ``indices`` (negative ones count from the end),
    one tensor per dimension."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"unravel_index: expected 'indices' to be a tensor, got {type(indices).__name__}")
    if indices.dtype.kind not in "iu":
        raise TypeError(f"unravel_index: expected 'indices' to be an integer tensor, got {indices.dtype.name}")
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(s < 0 for s in dims):
        raise ValueError(f"unravel_index: 'shape' cannot have negative values, got {dims}")
    total = 1
    for s in dims:
        total *= s
    idx = indices.astype(lc.int64)
    if idx.size and builtins.bool(((idx < -total) | (idx >= total)).any()):
        raise RuntimeError(f"unravel_index: 'indices' must be in range [{-total}, {total - 1}] for shape {dims}")
    idx = lc.where(idx < 0, idx + total, idx)
    out = []
    for s in reversed(dims):
        out.append(idx % s)
        idx = idx // s
    return tuple(reversed(out))


def hash_tensor(input: Tensor, dim: int | Sequence[int] | None = None, *, keepdim: bool = False,
                mode: int = 0) -> Tensor:  # fmt: skip
    """The xor of ``input``'s elements (over ``dim``), each widened to 64 bits (float64 or int64) and read as
    uint64; a uint64 tensor, PyTorch's ``mode=0``."""
    if mode != 0:
        raise RuntimeError(f"hash_tensor: only mode=0 (xor reduction) is supported, got mode={mode}")
    x = input.detach()
    axes = builtins.range(x.ndim) if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    axes = builtins.sorted({a + x.ndim if a < 0 else a for a in axes})
    if any(not 0 <= a < x.ndim for a in axes):
        raise IndexError(f"hash_tensor: dim {dim} out of range for a tensor of {x.ndim} dimensions")
    kept = [a for a in builtins.range(x.ndim) if a not in axes]
    moved = lc.permute_dims(x, (*kept, *axes)) if x.ndim else x
    kept_shape = tuple(x.shape[a] for a in kept)
    width = math.prod(x.shape[a] for a in axes)
    rows = math.prod(kept_shape)
    lines = lc.reshape(moved, (rows, width)).tolist() if width else [[] for _ in builtins.range(rows)]
    word = _float_bits if x.dtype.kind == "f" else _int_bits
    hashes = [functools.reduce(operator.xor, (word(v) for v in line), 0) for line in lines]
    out = lc.reshape(lc.asarray(hashes, dtype=lc.uint64, device=input.device), kept_shape)
    if keepdim:
        for a in axes:
            out = out.unsqueeze(a)
    return out


def _float_bits(v: float) -> int:
    """The IEEE-754 float64 bits of ``v`` as an unsigned 64-bit integer."""
    return struct.unpack("<Q", struct.pack("<d", v))[0]


def _int_bits(v: int) -> int:
    """``v`` widened to 64 bits and read as unsigned (two's complement)."""
    return int(v) & 0xFFFFFFFFFFFFFFFF


def is_distributed(input: Tensor) -> bool:
    """Whether ``input`` is a distributed tensor: never, in Lucid (as for PyTorch's dense tensors)."""
    return False


def geqrf(input: Tensor) -> Any:
    """LAPACK's ``geqrf``: ``(a, tau)`` with R on and above ``a``'s diagonal and the Householder vectors
    (unit first element implied) below it, ``tau`` their scales; batched over leading dims. No gradient
    (as in PyTorch, whose geqrf has none)."""
    if input.ndim < 2:
        raise RuntimeError(f"geqrf: input must have at least 2 dimensions, got {input.ndim}")
    if input.dtype.kind != "f":
        raise RuntimeError(f"geqrf: expected a floating point tensor, got {input.dtype.name}")
    m, n = input.shape[-2:]
    mats = lc.reshape(input.detach(), (-1, m, n)).tolist()
    taus = []
    for a in mats:
        tau = []
        for j in builtins.range(builtins.min(m, n)):
            alpha, rest = a[j][j], [a[i][j] for i in builtins.range(j + 1, m)]
            xnorm = math.sqrt(builtins.sum(v * v for v in rest))
            if xnorm == 0.0:
                tau.append(0.0)
                continue
            beta = -math.copysign(math.hypot(alpha, xnorm), alpha)
            tau.append((beta - alpha) / beta)
            for i in builtins.range(j + 1, m):
                a[i][j] /= alpha - beta
            a[j][j] = beta
            v = [1.0] + [a[i][j] for i in builtins.range(j + 1, m)]
            for c in builtins.range(j + 1, n):  # apply H = I - tau v v^T to the remaining columns
                w = tau[-1] * builtins.sum(v[k] * a[j + k][c] for k in builtins.range(len(v)))
                for k in builtins.range(len(v)):
                    a[j + k][c] -= w * v[k]
        taus.append(tau)
    k = builtins.min(m, n)
    a_out = lc.reshape(lc.asarray(mats, dtype=input.dtype, device=input.device), input.shape)
    tau_out = lc.reshape(lc.asarray(taus, dtype=input.dtype, device=input.device), (*input.shape[:-2], k))
    return a_out, tau_out


def _reflectors(input: Tensor, tau: Tensor) -> list[Tensor]:
    """The Householder matrices ``H_i = I - tau_i v_i v_i^T`` stored in ``geqrf``'s ``(input, tau)``."""
    m, n = input.shape[-2:]
    k = tau.shape[-1]
    if k > n or k > m:
        raise RuntimeError(f"Householder product: tau has {k} scales but input is {m} x {n} (need k <= n <= m)")
    eye = lc.eye(m, dtype=input.dtype, device=input.device)
    out = []
    for i in builtins.range(k):
        below = (lc.arange(m, device=input.device) > i).astype(input.dtype)
        at = (lc.arange(m, device=input.device) == i).astype(input.dtype)
        v = input[..., :, i] * below + at  # (..., m)
        t = tau[..., i][..., None, None]
        out.append(eye - t * (v[..., :, None] * v[..., None, :]))
    return out


def orgqr(input: Tensor, tau: Tensor) -> Tensor:
    """The first ``n`` columns of ``Q = H_1 ... H_k`` from ``geqrf``'s ``(input, tau)``
    (``linalg.householder_product``); differentiable."""
    m, n = input.shape[-2:]
    if n > m:
        raise RuntimeError(f"orgqr: input.shape[-2] must be greater than or equal to input.shape[-1], got {m} x {n}")
    q = lc.eye(m, n, dtype=input.dtype, device=input.device)
    for h in reversed(_reflectors(input, tau)):
        q = h @ q
    return q


def ormqr(input: Tensor, tau: Tensor, other: Tensor, left: bool = True, transpose: bool = False) -> Tensor:
    """``other`` multiplied by ``Q`` of ``geqrf``'s ``(input, tau)``: ``Q @ other`` (``left``) or ``other @ Q``,
    with ``Q^T`` when ``transpose``; ``input`` holds as many rows as the side of ``other`` it meets."""
    side = other.shape[-2] if left else other.shape[-1]
    if input.shape[-2] != side:
        raise RuntimeError(
            f"ormqr: input.shape[-2] ({input.shape[-2]}) must equal other.shape[{-2 if left else -1}] ({side})"
        )
    hs = _reflectors(input, tau)
    q = hs[0] if hs else lc.eye(side, dtype=input.dtype, device=input.device)
    for h in hs[1:]:
        q = q @ h
    if transpose:
        q = q.mT
    return q @ other if left else other @ q


# -- methods -----------------------------------------------------------------------------------------------
def _face(name: str) -> Callable[..., Any]:
    import lucid

    return getattr(lucid, name)


def _method(name: str) -> Callable[..., Any]:
    """``Tensor.name``: the face's ``lucid.name`` with the tensor first."""

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        return _face(name)(self, *args, **kwargs)

    method.__name__, method.__qualname__ = name, f"Tensor.{name}"
    method.__doc__ = f"``lucid.{name}(self, ...)``."
    return method


def _inplace_method(name: str) -> Callable[..., Tensor]:
    """``Tensor.name_``: ``lucid.name(self, ...)`` written into this tensor (its views see it)."""

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        result = _face(name)(self, *args, **kwargs)
        if result.dtype.kind != self.dtype.kind and not (self.dtype.kind == "f" and result.dtype.kind in "iub"):
            raise RuntimeError(f"{name}_: result type {result.dtype.name} can't be cast to {self.dtype.name}")
        return self.copy_(result)

    method.__name__, method.__qualname__ = f"{name}_", f"Tensor.{name}_"
    method.__doc__ = f"In-place ``{name}``: the result written into this tensor (its views see it)."
    return method


def _volatile(self: Tensor) -> bool:
    """Always False, with PyTorch's warning that ``volatile`` was removed."""
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2)
    return False


def _output_nr(self: Tensor) -> int:
    """Which output of its ``grad_fn`` this tensor is (0 for a leaf or a single output). It follows Lucid's
    graph: where Lucid builds an op from several nodes (``var_mean``, ``unbind``) each result is output 0."""
    return self._out_idx if self._node is not None else 0


def _pin_memory(self: Tensor, device: Any = None) -> Tensor:
    """PyTorch's error on a machine without an accelerator: Lucid's host memory is never pinned."""
    raise RuntimeError("Cannot access accelerator device when none is available.")


def _to_dense(self: Tensor, dtype: Any = None, *, masked_grad: bool | None = None) -> Tensor:
    """The dense tensor: ``self`` (a strided tensor already is), cast to ``dtype`` when given."""
    return self if dtype is None or dtype is self.dtype else self.astype(dtype)


def _new(self: Tensor, *args: Any, device: Any = None) -> Tensor:
    """PyTorch's legacy constructor: ``x.new(2, 3)`` an uninitialised tensor of that size, ``x.new(data)``
    a tensor of ``data``, ``x.new()`` an empty one; always ``self``'s dtype (and device unless given)."""
    dev = self.device if device is None else device
    if not args:
        return lc.empty((0,), dtype=self.dtype, device=dev)
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0]
    if all(isinstance(a, int) for a in args):
        return lc.empty(args, dtype=self.dtype, device=dev)
    if len(args) == 1 and isinstance(args[0], tuple) and all(isinstance(a, int) for a in args[0]):
        return lc.empty(args[0], dtype=self.dtype, device=dev)
    if len(args) == 1:
        return lc.asarray(args[0], dtype=self.dtype, device=dev)
    raise TypeError(f"new(): expected sizes or one sequence of data, got {args!r}")


def _new_empty_strided(self: Tensor, size: Sequence[int], stride: Sequence[int], *, dtype: Any = None,
                       device: Any = None, requires_grad: bool = False, **_: Any) -> Tensor:  # fmt: skip
    """An uninitialised tensor of ``size`` laid out with ``stride`` (``self``'s dtype and device unless given)."""
    import lucid

    return lucid.empty_strided(tuple(size), tuple(stride), dtype=dtype or self.dtype,
                               device=device or self.device, requires_grad=requires_grad)  # fmt: skip


def _module_load(self: Tensor, other: Tensor, assign: bool = False) -> Tensor:
    """What ``load_state_dict`` loads into ``self``: ``other`` detached when ``assign``, else ``other``'s
    values copied into ``self`` (detached), as PyTorch's default."""
    return other.detach() if assign else self.copy_(other).detach()


def _fill_diagonal_(self: Tensor, fill_value: float, wrap: bool = False) -> Tensor:
    """Write ``fill_value`` on the main diagonal (every dimension equal beyond 2-D); a tall matrix with
    ``wrap`` starts again below each ``N x N`` block, after one skipped row, as NumPy and PyTorch do."""
    if self.ndim < 2:
        raise RuntimeError(f"fill_diagonal_: dimensions must larger than 1, got a {self.ndim}-D tensor")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError(f"fill_diagonal_: all dimensions of input must be of equal length, got {tuple(self.shape)}")
    strides = [math.prod(self.shape[i + 1 :]) for i in builtins.range(self.ndim)]
    step = builtins.sum(strides)
    n = self.size if self.ndim == 2 and wrap else builtins.min(self.shape) * step - step + 1
    n = builtins.min(n, self.size)
    index = lc.arange(0, n, step, dtype=lc.int64, device=self.device) if n > 0 else lc.zeros((0,), dtype=lc.int64)
    return self.put_(index, lc.full((index.shape[0],), fill_value, dtype=self.dtype, device=self.device))


def _map2_(self: Tensor, x: Tensor, y: Tensor, callable: Callable[[Any, Any, Any], Any]) -> Tensor:
    """``self[i] = callable(self[i], x[i], y[i])`` for every element (``x`` and ``y`` broadcast to ``self``);
    host tensors only, as PyTorch's."""
    xs = lc.broadcast_to(x, self.shape).tolist() if x.shape != self.shape else x.tolist()
    ys = lc.broadcast_to(y, self.shape).tolist() if y.shape != self.shape else y.tolist()

    def walk(a: Any, b: Any, c: Any) -> Any:
        return [walk(*t) for t in zip(a, b, c)] if isinstance(a, list) else callable(a, b, c)

    values = lc.asarray(walk(self.tolist(), xs, ys), dtype=self.dtype, device=self.device)
    return self.copy_(values)


def _relayout(self: Tensor, view: Tensor, opname: str) -> Tensor:
    """Make ``self`` take ``view``'s shape over the same values, in place (``t_``, ``squeeze_``, ``resize_``...).

    Done for a tensor that owns its storage alone and is outside the graph; a leaf that requires grad
    refuses as in PyTorch, and a view or a tensor with live views (whose layout Lucid would have to
    rebuild) or one in the graph raises rather than leave them inconsistent.
    """
    if self._requires_grad and self._node is None and lc.is_grad_enabled():
        raise RuntimeError(f"{opname}: a leaf Variable that requires grad is being used in an in-place operation.")
    if self._requires_grad and lc.is_grad_enabled():
        raise RuntimeError(f"{opname}: changing the shape of a tensor in the graph in place is not supported; "
                           f"use the out-of-place {opname[:-1]}")  # fmt: skip
    box = self._storage()
    others = [r for r in box.views if r() is not None and r() is not self]
    if self._view is not None or others:
        raise RuntimeError(f"{opname}: this tensor shares its storage with views; changing its shape in place is "
                           f"only supported for a tensor that owns its storage alone (use {opname[:-1]})")  # fmt: skip
    data = view.detach()._data
    box.rebind(data)
    box.version += 1
    return self


def _inplace_view(name: str) -> Callable[..., Tensor]:
    """``Tensor.name_``: ``self`` reshaped in place to ``self.name(...)``'s layout."""

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return _relayout(self, getattr(self, name)(*args, **kwargs).clone(), f"{name}_")

    method.__name__, method.__qualname__ = f"{name}_", f"Tensor.{name}_"
    method.__doc__ = f"In-place ``{name}``: this tensor takes ``{name}``'s shape (a tensor owning its storage)."
    return method


def _resize_(self: Tensor, *sizes: Any, memory_format: Any = None) -> Tensor:
    """Give this tensor ``sizes``: its elements in order are kept, new ones are zero (PyTorch leaves them
    uninitialised); a tensor that requires grad refuses, as in PyTorch."""
    shape = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else tuple(sizes)
    if any(not isinstance(s, int) or s < 0 for s in shape):
        raise RuntimeError(f"resize_: sizes must be non-negative integers, got {shape}")
    if self._requires_grad:
        raise RuntimeError("resize_: cannot resize variables that require grad")
    n, flat = math.prod(shape), self.detach().reshape(-1)
    if n > flat.shape[0]:
        flat = lc.concat([flat, lc.zeros((n - flat.shape[0],), dtype=self.dtype, device=self.device)])
    resized = flat[:n].reshape(shape).clone()
    del flat  # an alias of this tensor's storage; it must not count as a view
    return _relayout(self, resized, "resize_")


def resize_as_(input: Tensor, the_template: Tensor, *, memory_format: Any = None) -> Tensor:
    """``input.resize_(the_template.shape)``."""
    return _resize_(input, the_template.shape)


def _resize(self: Tensor, *sizes: Any) -> Tensor:
    """Deprecated out-of-place resize: ``self`` in a new shape of as many elements (a view where the layout
    allows), with PyTorch's deprecation warning; another number of elements raises, as in PyTorch."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    shape = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else tuple(sizes)
    n = math.prod(shape)
    if n != self.size:
        dims = "x".join(str(s) for s in shape)
        raise RuntimeError(
            f"requested resize to {dims} ({n} elements in total), but the given tensor has a size of "
            f"{'x'.join(str(s) for s in self.shape)} ({self.size} elements). autograd's resize can only change "
            "the shape of a given tensor, while preserving the number of elements."
        )
    return self.reshape(shape)


def _resize_as(self: Tensor, tensor: Tensor) -> Tensor:
    """Deprecated out-of-place ``resize_as``: ``self`` in ``tensor``'s shape (same number of elements)."""
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return self.reshape(tensor.shape)


def _is_set_to(self: Tensor, tensor: Tensor) -> bool:
    """Whether both tensors are the same storage seen the same way (dtype, shape, strides and offset)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"is_set_to(): argument 'tensor' must be Tensor, not {type(tensor).__name__}")
    return (
        self._storage() is tensor._storage()
        and self.dtype is tensor.dtype
        and _views.layout(self) == _views.layout(tensor)
    )


def _storage_type(self: Tensor) -> type:
    """The typed storage class of this tensor's dtype (``lucid.FloatStorage`` for float32)."""
    import lucid

    for name in dir(lucid):
        cls = getattr(lucid, name)
        if name.endswith("Storage") and name not in ("Storage", "TypedStorage", "UntypedStorage"):
            if cls(0).dtype is self.dtype:
                return cls
    raise RuntimeError(f"storage_type: Lucid has no typed storage class for {self.dtype.name}")


_METHODS = (
    "as_strided_scatter", "bernoulli", "diagonal_scatter", "frexp", "gcd", "lcm", "hardshrink", "index_reduce",
    "multinomial", "narrow_copy", "nextafter", "prelu", "put", "select_scatter", "slice_scatter", "unsafe_chunk",
    "unsafe_split", "unsafe_split_with_sizes", "unique", "mode", "histogram", "nonzero_static", "hash_tensor",
    "geqrf", "orgqr", "ormqr",
)  # fmt: skip
_INPLACE = ("gcd", "lcm", "index_reduce", "nextafter", "put")


def _is_pinned(self: Tensor, device: Any = None) -> bool:
    """Whether the tensor sits in page-locked host memory: never, in Lucid (there is no device to copy to)."""
    return False


def _const_data_ptr(self: Tensor) -> int:
    """The address of the tensor's first element, for reading only: :meth:`Tensor.data_ptr`'s."""
    return self.data_ptr()


def _install() -> None:
    for name in _METHODS:
        if not hasattr(Tensor, name):
            setattr(Tensor, name, _method(name))
    for name in _INPLACE:
        if not hasattr(Tensor, f"{name}_"):
            setattr(Tensor, f"{name}_", _inplace_method(name))
    extras: dict[str, Any] = {
        "is_nested": property(lambda self: False, doc="Whether this is a nested tensor: never, in Lucid."),
        "volatile": property(_volatile),
        "output_nr": property(_output_nr),
        "name": property(lambda self: None, doc="The tensor's name: None (Lucid has no named tensors)."),
        "is_pinned": _is_pinned,
        "is_distributed": is_distributed,
        "const_data_ptr": _const_data_ptr,
        "pin_memory": _pin_memory,
        "to_dense": _to_dense,
        "new": _new,
        "new_empty_strided": _new_empty_strided,
        "module_load": _module_load,
        "resize_": _resize_,
        "resize_as_": resize_as_,
        "resize": _resize,
        "resize_as": _resize_as,
        "is_set_to": _is_set_to,
        "storage_type": _storage_type,
        "fill_diagonal_": _fill_diagonal_,
        "map2_": _map2_,
    }
    for name in ("t", "transpose", "swapaxes", "swapdims", "squeeze", "unsqueeze"):
        if not hasattr(Tensor, f"{name}_"):
            setattr(Tensor, f"{name}_", _inplace_view(name))
    for name, value in extras.items():
        if not hasattr(Tensor, name):
            setattr(Tensor, name, value)


_install()
