"""``segment_reduce``: PyTorch's reduction of consecutive segments along one axis of a tensor.

Segments are given by ``lengths`` or ``offsets``, whose last axis runs over the segments and whose leading axes
match ``data``'s axes before ``axis`` (each leading index has its own segments). The reduction is built from
differentiable Lucid ops, so autograd gives PyTorch's backward: a mask (..., S, N) marks which of the N positions
along ``axis`` belong to each of the S segments, ``where`` fills the others with the reduction's identity and an
ordinary reduction over N finishes. Max/min are computed without a graph and a small node (``_Routed``) sends
each segment's gradient to its own members equal to the result, split evenly between ties (NaN matching NaN),
as PyTorch's segment backward does: never to the filled positions (a ``-inf`` datum ties with max's fill) and to
none of them when ``initial`` wins outright. Empty segments give PyTorch's values: 0 for sum, NaN for mean, -inf/inf
for max/min, 1 for prod, or ``initial`` when it is given (which otherwise joins every segment's reduction; for
mean, ``(initial + sum) / length``). The mask costs S x N x (the other axes) memory: this is a reference
implementation, not a fused kernel.
"""

from __future__ import annotations

from typing import Any

import lucid_core as lc
from lucid_core import Tensor

__all__ = ["segment_reduce"]

_REDUCE = {"sum": "sum", "mean": "mean", "max": "max", "amax": "max", "min": "min", "amin": "min", "prod": "prod"}


def _check_int_tensor(t: Any, name: str) -> Tensor:
    if not isinstance(t, Tensor) or not lc.isdtype(t.dtype, "integral"):
        got = getattr(t, "dtype", type(t).__name__)
        raise RuntimeError(f"segment_reduce(): expected {name} to be an integer tensor, got {got}")
    return t


def _offsets(data: Tensor, axis: int, lengths: Any, offsets: Any, unsafe: bool) -> Tensor:
    """The segment boundaries (..., S + 1) along ``axis``, validated."""
    size = data.shape[axis]
    seg = _check_int_tensor(
        offsets if offsets is not None else lengths, "offsets" if offsets is not None else "lengths"
    )
    name = "offsets" if offsets is not None else "lengths"
    if seg.ndim != axis + 1:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of {name} but got {axis}.")
    if tuple(seg.shape[:-1]) != tuple(data.shape[:axis]):
        raise RuntimeError(
            f"segment_reduce(): {name} has leading shape {tuple(seg.shape[:-1])} but data's axes before axis "
            f"{axis} are {tuple(data.shape[:axis])}; they must match"
        )
    if offsets is None:
        if bool(lc.any(seg < 0)):
            raise RuntimeError("segment_reduce(): lengths contains negative value!")
        if not unsafe and seg.shape[-1] > 0 and bool(lc.any(lc.sum(seg, axis=-1) != size)):
            raise RuntimeError(
                f"segment_reduce(): Expected all rows of lengths along axis to sum to data.size({axis}) = {size} "
                "when !unsafe."
            )
        return lc.cumulative_sum(seg, axis=-1, include_initial=True)
    if seg.shape[-1] == 0:
        raise RuntimeError("segment_reduce(): offsets must hold at least one boundary (S + 1 for S segments)")
    if bool(lc.any(seg[..., 1:] < seg[..., :-1])):
        raise RuntimeError("segment_reduce(): offsets must be non-decreasing (a segment's length is >= 0)")
    if bool(lc.any(seg < 0)) or bool(lc.any(seg > size)):
        raise RuntimeError(f"segment_reduce(): offsets must lie in [0, data.size({axis})] = [0, {size}]")
    return seg


def segment_reduce(
    data: Tensor,
    reduce: str,
    *,
    lengths: Tensor | None = None,
    indices: Tensor | None = None,
    offsets: Tensor | None = None,
    axis: int = 0,
    unsafe: bool = False,
    initial: float | None = None,
) -> Tensor:
    """Reduce consecutive segments of ``data`` along ``axis`` ("sum", "mean", "max", "min" or "prod").

    ``lengths`` (..., S) gives each segment's length, ``offsets`` (..., S + 1) its boundaries (used when both are
    given); their leading axes are ``data``'s axes before ``axis``. The result has S in place of ``axis``.
    ``initial`` joins every segment's reduction and fills empty segments; ``unsafe`` skips the check that the
    lengths cover the axis. Differentiable in ``data``.
    """
    if not isinstance(data, Tensor):
        raise TypeError(f"segment_reduce(): data must be a Tensor, got {type(data).__name__}")
    if reduce not in _REDUCE:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    op = _REDUCE[reduce]
    if not lc.isdtype(data.dtype, "real floating"):
        raise NotImplementedError(f"segment_reduce(): not implemented for {data.dtype} data; expected floating point")
    if data.ndim == 0:
        raise RuntimeError("segment_reduce(): data must have at least one dimension, got a 0-d tensor")
    if not isinstance(axis, int) or not -data.ndim <= axis < data.ndim:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-data.ndim}, {data.ndim - 1}], but got {axis})"
        )
    axis %= data.ndim
    if lengths is None and offsets is None:
        if indices is not None:
            raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    bounds = _offsets(data, axis, lengths, offsets, unsafe)
    start = lc.expand_dims(bounds[..., :-1], axis=-1)  # (..., S, 1)
    end = lc.expand_dims(bounds[..., 1:], axis=-1)
    pos = lc.arange(data.shape[axis], device=data.device)
    mask = (start <= pos) & (pos < end)  # (..., S, N)
    trailing = data.ndim - axis - 1
    mask = lc.reshape(mask, (*mask.shape, *([1] * trailing)))  # (..., S, N, 1, ...)
    count = lc.reshape(lc.astype(end - start, data.dtype), (*start.shape[:-1], *([1] * trailing)))  # (..., S, 1...)
    x = lc.expand_dims(data, axis=axis)  # (..., 1, N, rest)
    over = axis + 1
    if op in ("sum", "mean"):
        out = lc.sum(lc.where(mask, x, 0.0), axis=over)
        if initial is not None:
            out = out + initial
        if op == "mean":
            empty = count == 0
            out = lc.where(
                empty, float("nan") if initial is None else float(initial), out / lc.where(empty, 1.0, count)
            )
    elif op == "prod":
        out = lc.prod(lc.where(mask, x, 1.0), axis=over)
        if initial is not None:
            out = out * initial
    else:
        fill = float("-inf") if op == "max" else float("inf")
        out = _extremum(data, lc.where(mask, x, fill), mask, op, initial, axis)
    return out


class _Routed(lc.Function):
    """The precomputed extrema ``value``; backward sends each segment's gradient along ``route`` (segment x
    position weights, ties sharing evenly), PyTorch's rule, which counts neither fill positions nor ``initial``."""

    @staticmethod
    def forward(ctx, data, value, route, axis):
        ctx.save_for_backward(route)
        ctx.axis = axis
        return value * 1.0

    @staticmethod
    def backward(ctx, grad):
        (route,) = ctx.saved_tensors
        g = lc.expand_dims(grad, axis=ctx.axis + 1)
        return lc.sum(route * g, axis=ctx.axis), None, None, None


def _extremum(data: Tensor, spread: Tensor, member: Tensor, reduce: str, initial: Any, axis: int) -> Tensor:
    """max or min of every segment (with ``initial``); the gradient goes to the members equal to it (NaN to NaN)."""
    with lc.no_grad():
        value = (lc.max if reduce == "max" else lc.min)(spread, axis=axis + 1)
        if initial is not None:
            bound = lc.asarray(initial, dtype=data.dtype, device=data.device)
            value = (lc.maximum if reduce == "max" else lc.minimum)(value, bound)
        v = lc.expand_dims(value, axis=axis + 1)
        hit = member & ((spread == v) | (lc.isnan(spread) & lc.isnan(v)))
        ties = lc.sum(lc.astype(hit, data.dtype), axis=axis + 1, keepdims=True)
        route = lc.where(hit, 1.0 / lc.where(ties == 0, 1.0, ties), 0.0)
    return _Routed.apply(data, value, route, axis)
