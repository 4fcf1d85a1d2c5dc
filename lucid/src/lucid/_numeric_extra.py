"""``torch.gradient`` and ``torch.histogramdd`` on Lucid tensors.

``gradient`` estimates each partial derivative of the function sampled by ``input`` with finite differences:
second-order central differences inside (for unevenly spaced coordinates, the three-point formula weighted
by the distances to both neighbours) and first- or second-order one-sided differences at the two edges. Each
estimate is a weighted sum of slices of ``input``, written with Lucid ops, so gradients flow back to ``input``
and to coordinate tensors given as ``spacing``.

``histogramdd`` bins the points of ``input`` (its innermost dimension holds the coordinates) one coordinate at
a time with the binning rule of ``lucid.histogram`` (equal-width edges over the data's range or ``range``, or
the given edges; left edges inclusive, the last bin also its right edge) and counts the combined bins with one
``index_add``. Counts are not differentiable, as in PyTorch.
"""

from __future__ import annotations

import builtins
import math
import numbers
from collections import namedtuple
from collections.abc import Sequence
from typing import Any

import lucid_core as lc
from lucid_core import Tensor

from ._tensor_surface import _bin_index, _equal_bin_edges

__all__ = ["gradient", "histogramdd"]

histogramdd_result = namedtuple("histogramdd", ["hist", "bin_edges"])


# -- gradient ---------------------------------------------------------------------------------------------------
def _norm_dims(dim: Any, ndim: int) -> list[int]:
    """``dim`` (None, an int or a sequence of ints) as a list of distinct non-negative dimensions."""
    if dim is None:
        return list(builtins.range(ndim))
    dims = [dim] if isinstance(dim, numbers.Integral) and not isinstance(dim, bool) else dim
    if not isinstance(dims, Sequence) or not all(
        isinstance(d, numbers.Integral) and not isinstance(d, bool) for d in dims
    ):
        raise TypeError(f"gradient(): dim must be an int or a sequence of ints, got {dim!r}")
    out = []
    for d in dims:
        lo, hi = (-ndim, ndim - 1) if ndim else (-1, 0)
        if not lo <= d <= hi:
            raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {d})")
        d = int(d) % builtins.max(ndim, 1)
        if d in out:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        out.append(d)
    return out


def _is_number(x: Any) -> bool:
    return isinstance(x, (numbers.Number, bool))


def _spacings(spacing: Any, dims: list[int], dim_given: bool, ndim: int) -> list[Any]:
    """One spacing per dimension of ``dims``: a Python number or a 1-D coordinate tensor."""
    if spacing is None:
        return [1] * len(dims)
    if isinstance(spacing, Tensor):
        if spacing.ndim != 0:
            raise TypeError(
                "gradient(): spacing must be a scalar, a sequence of scalars or a sequence of 1-D tensors, "
                f"got a {spacing.ndim}-D tensor (wrap coordinate tensors in a tuple)"
            )
        return [spacing.item()] * len(dims)
    if _is_number(spacing):
        return [spacing] * len(dims)
    if not isinstance(spacing, Sequence) or isinstance(spacing, str):
        raise TypeError(
            "gradient(): spacing must be a scalar, a sequence of scalars or a sequence of 1-D tensors, "
            f"got {type(spacing).__name__}"
        )
    items = list(spacing)
    tensors = [isinstance(s, Tensor) for s in items]
    if any(tensors) and not all(tensors):
        raise TypeError("gradient(): spacing must hold only scalars or only tensors, got a mix of both")
    if not all(tensors) and not all(_is_number(s) for s in items):
        raise TypeError("gradient(): spacing must hold only scalars or only tensors")
    if len(items) != len(dims):
        if dim_given:
            raise RuntimeError(
                "gradient expected spacing to be unspecified, a scalar or it's spacing and dim arguments to "
                f"have the same length, but got a spacing argument of length {len(items)} and a dim argument "
                f"of length {len(dims)}."
            )
        raise RuntimeError(
            "gradient expected spacing to be unspecified, a scalar, or a list of length equal to "
            f"'self.dim() = {ndim}', since dim argument was not given, but got a list of length {len(items)}"
        )
    for s in items:
        if isinstance(s, Tensor) and s.ndim != 1:
            raise RuntimeError(
                "gradient expected each element of spacing to have one dimension, but got an element with "
                f"{s.ndim} dimensions!"
            )
    return items


def _float_dtype(*dtypes: Any) -> Any:
    """The dtype the differences are computed in: the promoted dtype, or the default float for integers."""
    dt = lc.result_type(*dtypes) if len(dtypes) > 1 else dtypes[0]
    return dt if dt.kind in "fc" else lc.get_default_dtype()


def _along(x: Tensor, d: int, start: int | None, stop: int | None) -> Tensor:
    """``x[start:stop]`` along dimension ``d``."""
    return x[(slice(None),) * d + (slice(start, stop),)]


def _shaped(v: Tensor, d: int, ndim: int) -> Tensor:
    """A 1-D ``v`` shaped to broadcast along dimension ``d`` of an ``ndim``-D tensor."""
    return lc.reshape(v, (1,) * d + (v.shape[0],) + (1,) * (ndim - d - 1))


def _uniform(f: Tensor, d: int, h: Any, edge_order: int) -> Tensor:
    """The derivative along ``d`` of samples ``h`` apart."""
    inner = (_along(f, d, 2, None) - _along(f, d, None, -2)) / (2 * h)
    f0, f1, fl, fm = _along(f, d, 0, 1), _along(f, d, 1, 2), _along(f, d, -1, None), _along(f, d, -2, -1)
    if edge_order == 1:
        left, right = (f1 - f0) / h, (fl - fm) / h
    else:
        f2, fn = _along(f, d, 2, 3), _along(f, d, -3, -2)
        left = (-3 * f0 + 4 * f1 - f2) / (2 * h)
        right = (3 * fl - 4 * fm + fn) / (2 * h)
    return lc.concat([left, inner, right], axis=d)


def _coordinates(f: Tensor, d: int, x: Tensor, edge_order: int) -> Tensor:
    """The derivative along ``d`` of samples at coordinates ``x`` (1-D, one per sample)."""
    nd = f.ndim
    dx = x[1:] - x[:-1]
    hl, hr = _shaped(dx[:-1], d, nd), _shaped(dx[1:], d, nd)
    # f(x + hr) and f(x - hl) by Taylor's theorem, solved for f'(x)
    inner = (hl * hl * _along(f, d, 2, None) - hr * hr * _along(f, d, None, -2)
             + (hr * hr - hl * hl) * _along(f, d, 1, -1)) / (hl * hr * (hl + hr))  # fmt: skip
    f0, f1, fl, fm = _along(f, d, 0, 1), _along(f, d, 1, 2), _along(f, d, -1, None), _along(f, d, -2, -1)
    if edge_order == 1:
        left = (f1 - f0) / dx[0]
        right = (fl - fm) / dx[-1]
    else:  # the derivative of the parabola through the three samples at each end
        f2, fn = _along(f, d, 2, 3), _along(f, d, -3, -2)
        a, b = dx[0], dx[1]
        left = (-(2 * a + b) / (a * (a + b))) * f0 + ((a + b) / (a * b)) * f1 - (a / (b * (a + b))) * f2
        a, b = dx[-2], dx[-1]
        right = (b / (a * (a + b))) * fn - ((a + b) / (a * b)) * fm + ((2 * b + a) / (b * (a + b))) * fl
    return lc.concat([left, inner, right], axis=d)


def gradient(
    input: Tensor,
    *,
    spacing: Any = 1,
    dim: int | Sequence[int] | None = None,
    edge_order: int = 1,
) -> tuple[Tensor, ...]:
    """The partial derivatives of the function sampled by ``input``, one tensor per dimension in ``dim``
    (all by default): central differences inside, one-sided differences of order ``edge_order`` (1 or 2) at
    the edges. ``spacing`` gives the sample coordinates: a scalar step for every dimension, one step per
    dimension, or one 1-D coordinate tensor per dimension."""
    if not isinstance(input, Tensor):
        raise TypeError(f"gradient(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not isinstance(edge_order, numbers.Integral) or isinstance(edge_order, bool):
        raise TypeError(f"gradient(): edge_order must be an int, got {type(edge_order).__name__}")
    if edge_order not in (1, 2):
        raise RuntimeError("gradient only supports edge_order=1 and edge_order=2.")
    if input.dtype is lc.bool:
        raise RuntimeError("gradient does not support bool input (samples are subtracted); convert it first")
    if input.dtype.kind == "u":
        if input.dtype is lc.uint8:
            raise RuntimeError("gradient does not support uint8 input.")
        raise NotImplementedError(f"gradient does not support {input.dtype.name} input")
    dims = _norm_dims(dim, input.ndim)
    steps = _spacings(spacing, dims, dim is not None, input.ndim)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError(
                "gradient expected each dimension size to be at least edge_order+1, but dimension "
                f"{d} has size {input.shape[d]} (edge_order={edge_order})"
            )
    out = []
    for d, h in zip(dims, steps):
        if isinstance(h, Tensor):
            if h.shape[0] != input.shape[d]:
                raise RuntimeError(
                    f"gradient expected the coordinates for dimension {d} to have one entry per sample "
                    f"({input.shape[d]}), but got {h.shape[0]}"
                )
            dt = _float_dtype(input.dtype, h.dtype)
            f = input if input.dtype is dt else lc.astype(input, dt)
            x = h if h.dtype is dt else lc.astype(h, dt)
            out.append(_coordinates(f, d, x, edge_order))
        else:
            f = input if input.dtype.kind in "fc" else lc.astype(input, lc.get_default_dtype())
            out.append(_uniform(f, d, h, edge_order))
    return tuple(out)


# -- histogramdd ------------------------------------------------------------------------------------------------
def _dd_bins(bins: Any, n: int) -> list[Any]:
    """``bins`` as N entries, each a positive bin count or a 1-D edge tensor."""
    if isinstance(bins, numbers.Integral) and not isinstance(bins, bool):
        items: list[Any] = [int(bins)] * n
    elif isinstance(bins, Sequence) and not isinstance(bins, str):
        items = list(bins)
        if all(isinstance(b, Tensor) for b in items):
            pass
        elif all(isinstance(b, numbers.Integral) and not isinstance(b, bool) for b in items):
            items = [int(b) for b in items]
        else:
            raise TypeError("histogramdd(): bins must be an int, a sequence of ints or a sequence of 1-D tensors")
        if len(items) != n:
            raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    else:
        raise TypeError(
            f"histogramdd(): bins must be an int, a sequence of ints or a sequence of 1-D tensors, "
            f"got {type(bins).__name__}"
        )
    return items


def _dd_edges(x: Tensor, items: list[Any], range: Any, dtype: Any) -> list[Tensor]:
    """The edges of each dimension: the given tensors, or equal-width edges over ``range`` or the data."""
    n = len(items)
    given = range is not None and not all(isinstance(b, Tensor) for b in items)
    if given:
        if not isinstance(range, Sequence) or not all(_is_number(r) for r in range):
            raise TypeError("histogramdd(): range must be a flat sequence of 2N numbers (min0, max0, min1, ...)")
        if len(range) != 2 * n:
            raise RuntimeError(
                f"histogramdd: for a {n}-dimensional histogram range should have {2 * n} elements, but got {len(range)}"
            )
    edges = []
    for d, b in enumerate(items):
        if isinstance(b, Tensor):
            if b.ndim != 1:
                raise RuntimeError(
                    f"histogramdd: bins tensor should have one dimension, but got {b.ndim} dimensions in the "
                    f"bins tensor for dimension {d}"
                )
            if b.shape[0] == 0:
                raise RuntimeError(
                    "histogramdd: bins tensor should have at least 1 element, but got 0 elements in the bins "
                    f"tensor for dimension {d}"
                )
            if b.shape[0] == 1:
                raise RuntimeError(f"histogramdd: bins must be > 0, but got 0 for dimension {d}")
            if b.dtype is not dtype:
                raise RuntimeError(
                    "histogramdd: input tensor and bins tensors should have the same dtype, but got input with "
                    f"dtype {dtype.name} and bins for dimension {d} with dtype {b.dtype.name}"
                )
            if builtins.bool(lc.any(b[1:] < b[:-1]).item()):
                raise RuntimeError(f"histogramdd: the bin edges for dimension {d} must be increasing, got {b.tolist()}")
            edges.append(b)
            continue
        if b <= 0:
            raise RuntimeError(f"histogramdd: bins must be > 0, but got {b} for dimension {d}")
        lo, hi = (
            (float(range[2 * d]), float(range[2 * d + 1]))
            if given
            else ((x[:, d].min().item(), x[:, d].max().item()) if x.shape[0] else (0.0, 1.0))
        )
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise RuntimeError(f"histogramdd: dimension {d}'s range [{lo:g}, {hi:g}] is not finite")
        if lo > hi:
            raise RuntimeError(
                f"histogramdd: min should not exceed max, but got min {lo:g} max {hi:g} for dimension {d}"
            )
        edges.append(_equal_bin_edges(lo, hi, b, dtype))
    return edges


def histogramdd(
    input: Tensor,
    bins: int | Sequence[int] | Sequence[Tensor],
    *,
    range: Sequence[float] | None = None,
    weight: Tensor | None = None,
    density: bool = False,
) -> Any:
    """``(hist, bin_edges)``: the N-dimensional histogram of the points in ``input`` (shape ``(..., N)``), with
    ``bins`` equal-width bins per dimension (an int or N ints, over ``range`` = ``(min0, max0, min1, ...)`` or
    the data's extent) or the given N edge tensors; each point counts once (or its ``weight``), and
    ``density`` divides by the total and each bin's volume."""
    if not isinstance(input, Tensor):
        raise TypeError(f"histogramdd(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim < 2:
        raise RuntimeError("histogramdd: input tensor should have at least 2 dimensions")
    if input.dtype not in (lc.float32, lc.float64):
        raise NotImplementedError(
            f'"histogramdd" not implemented for {input.dtype.name}: expected a float32 or float64 input'
        )
    n = input.shape[-1]
    items = _dd_bins(bins, n)
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape[:-1]):
            raise RuntimeError(
                "histogramdd: if weight tensor is provided it should have the same shape as the input tensor "
                f"excluding its innermost dimension, but got input with shape {list(input.shape)} and weight "
                f"with shape {list(weight.shape)}"
            )
        if weight.dtype is not input.dtype:
            raise RuntimeError(
                "histogramdd: if weight tensor is provided, input tensor and weight tensor should have the same "
                f"dtype, but got input({input.dtype.name}), and weight({weight.dtype.name})"
            )
    x = lc.reshape(input.detach(), (-1, n))
    edges = _dd_edges(x, items, range, input.dtype)
    if n == 0:
        return histogramdd_result(lc.zeros((), dtype=input.dtype), ())
    shape = tuple(e.shape[0] - 1 for e in edges)
    flat = None
    inside = None
    for d, e in enumerate(edges):  # row-major flat index of each point's bin
        which, ins = _bin_index(e.detach(), x[:, d])
        flat = which if flat is None else flat * shape[d] + which
        inside = ins if inside is None else inside & ins
    w = lc.ones((x.shape[0],), dtype=input.dtype) if weight is None else lc.reshape(weight.detach(), (-1,))
    w = lc.where(inside, w, lc.zeros_like(w))
    flat = lc.where(inside, flat, lc.zeros_like(flat))
    total = math.prod(shape)
    hist = lc.reshape(lc.zeros((total,), dtype=input.dtype).index_add(0, flat, w), shape)
    if density:
        volume = None
        for d, e in enumerate(edges):
            width = _shaped(e.detach()[1:] - e.detach()[:-1], d, n)
            volume = width if volume is None else volume * width
        hist = hist / hist.sum() / volume
    return histogramdd_result(hist, tuple(edges))
