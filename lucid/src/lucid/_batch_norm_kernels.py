"""SyncBatchNorm's ``batch_norm_*`` kernels, ``native_norm``, ``norm_except_dim`` and ``embedding_renorm_``.

PyTorch splits a synchronised batch norm into per-rank kernels that a process group stitches together:
``batch_norm_stats`` (a rank's per-channel mean and inverse std), ``batch_norm_gather_stats[_with_counts]``
(the global statistics from every rank's, updating the running buffers with the unbiased variance),
``batch_norm_elemt`` (normalise with given statistics), ``batch_norm_backward_reduce`` (a rank's per-channel
gradient sums) and ``batch_norm_backward_elemt`` (the input gradient from the all-reduced sums). Here each is a
composition of lucid_core ops over every axis but 1 (the channels), so the numbers are the full-batch ones of
``lucid.nn.functional.batch_norm`` when the ranks' pieces are combined, and gradients flow through them.

Statistics come back in the accumulation dtype PyTorch's kernels use (float32 for float16/bfloat16 input);
running buffers are updated in place under ``no_grad``. ``native_norm`` is ``linalg.vector_norm``,
``norm_except_dim`` the norm over all axes but one (weight norm's helper), and ``embedding_renorm_`` reuses
``nn.functional.embedding``'s in-place ``max_norm`` renormalisation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import lucid_core as lc
from lucid_core import Tensor

__all__ = [
    "batch_norm_backward_elemt",
    "batch_norm_backward_reduce",
    "batch_norm_elemt",
    "batch_norm_gather_stats",
    "batch_norm_gather_stats_with_counts",
    "batch_norm_stats",
    "batch_norm_update_stats",
    "embedding_renorm_",
    "native_norm",
    "norm_except_dim",
]


def _check_input(x: Any, name: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected input to be a Tensor, got {type(x).__name__}")
    if x.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got 1) ({name} needs "
                         f"an input of shape (N, C, ...), got {x.ndim} dimension(s))")  # fmt: skip
    if x.dtype.kind != "f":
        raise RuntimeError(f"{name}: expected a floating-point input, got {x.dtype.name}")


def _reduce_axes(x: Tensor) -> tuple[int, ...]:
    return (0, *range(2, x.ndim))


def _per_channel(v: Tensor, x: Tensor) -> Tensor:
    """A per-channel vector shaped to broadcast against ``x`` (channels on axis 1)."""
    return lc.reshape(v, (1, -1, *([1] * (x.ndim - 2))))


def _acc_dtype(x: Tensor) -> Any:
    return lc.float32 if x.dtype in (lc.float16, lc.bfloat16) else x.dtype


def _update_running(running: Tensor | None, value: Tensor, momentum: float) -> None:
    if running is not None:
        with lc.no_grad():
            running.copy_(running * (1 - momentum) + lc.astype(value.detach(), running.dtype) * momentum)


def batch_norm_stats(input: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """Per-channel ``(mean, invstd)`` over every axis but 1, ``invstd = 1 / sqrt(biased_var + eps)``.

    One rank's share of SyncBatchNorm's statistics; float16/bfloat16 input gives float32 statistics.
    """
    _check_input(input, "batch_norm_stats")
    x = lc.astype(input, _acc_dtype(input))
    axes = _reduce_axes(x)
    mean = lc.mean(x, axis=axes)
    var = lc.var(x, axis=axes, correction=0)
    return mean, lc.rsqrt(var + eps)


def batch_norm_elemt(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    mean: Tensor,
    invstd: Tensor,
    eps: float,
    *,
    out: Tensor | None = None,
) -> Tensor:
    """``(input - mean) * invstd * weight + bias`` per channel (``eps`` is unused, as in PyTorch).

    Normalises one rank's input with the gathered global statistics; None weight/bias mean 1 and 0.
    """
    _check_input(input, "batch_norm_elemt")
    y = (input - _per_channel(mean, input)) * _per_channel(invstd, input)
    if weight is not None:
        y = y * _per_channel(weight, input)
    if bias is not None:
        y = y + _per_channel(bias, input)
    y = lc.astype(y, input.dtype)
    if out is not None:
        out.copy_(y)
        return out
    return y


def batch_norm_gather_stats_with_counts(
    input: Tensor,
    mean: Tensor,
    invstd: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    momentum: float,
    eps: float,
    counts: Tensor,
) -> tuple[Tensor, Tensor]:
    """The global ``(mean, invstd)`` from every rank's ``mean``/``invstd`` (shape (world, C)) and element counts.

    Ranks are merged as a pooled mean and variance (a rank with count 0 contributes nothing); the running
    buffers, when given, are updated in place with the global mean and the unbiased global variance.
    ``input`` only supplies the dtype/device context in PyTorch and is not read.
    """
    if not isinstance(mean, Tensor) or not isinstance(invstd, Tensor) or mean.ndim != 2 or invstd.shape != mean.shape:
        raise RuntimeError(
            "batch_norm_gather_stats_with_counts: expected mean and invstd of the same shape (world_size, C), got "
            f"{getattr(mean, 'shape', None)} and {getattr(invstd, 'shape', None)}"
        )
    if not isinstance(counts, Tensor):
        counts = lc.asarray(counts, dtype=mean.dtype)
    counts = lc.reshape(lc.astype(counts, mean.dtype), (-1,))
    if counts.shape[0] != mean.shape[0]:
        raise RuntimeError(
            f"batch_norm_gather_stats_with_counts: expected one count per rank ({mean.shape[0]}), got {counts.shape[0]}"
        )
    n = lc.expand_dims(counts, axis=1)
    total = lc.sum(counts)
    g_mean = lc.sum(n * mean, axis=0) / total
    rank_var = 1.0 / (invstd * invstd) - eps
    d = mean - g_mean
    g_var = lc.sum(n * (rank_var + d * d), axis=0) / total
    _update_running(running_mean, g_mean, momentum)
    _update_running(running_var, g_var * (total / (total - 1)), momentum)
    return g_mean, lc.rsqrt(g_var + eps)


def batch_norm_gather_stats(
    input: Tensor,
    mean: Tensor,
    invstd: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    momentum: float,
    eps: float,
    count: int,
) -> tuple[Tensor, Tensor]:
    """``batch_norm_gather_stats_with_counts`` where every rank saw the same ``count`` elements per channel."""
    if not isinstance(mean, Tensor) or mean.ndim != 2:
        raise RuntimeError(f"batch_norm_gather_stats: expected mean of shape (world_size, C), got "
                           f"{getattr(mean, 'shape', None)}")  # fmt: skip
    counts = lc.full((mean.shape[0],), float(count), dtype=mean.dtype, device=mean.device)
    return batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps, counts)


def batch_norm_backward_reduce(
    grad_out: Tensor,
    input: Tensor,
    mean: Tensor,
    invstd: Tensor,
    weight: Tensor | None,
    input_g: bool,
    weight_g: bool,
    bias_g: bool,
) -> tuple[Tensor | None, Tensor | None, Tensor | None, Tensor | None]:
    """One rank's gradient sums ``(sum_dy, sum_dy_xmu, grad_weight, grad_bias)`` per channel.

    ``sum_dy = sum(grad_out)``, ``sum_dy_xmu = sum(grad_out * (input - mean))`` (only when ``input_g``),
    ``grad_weight = sum_dy_xmu * invstd`` (``weight_g``) and ``grad_bias = sum_dy`` (``bias_g``); a result not
    asked for, or a weight gradient without a weight, is None.
    """
    _check_input(input, "batch_norm_backward_reduce")
    if not isinstance(grad_out, Tensor) or grad_out.shape != input.shape:
        raise RuntimeError(f"batch_norm_backward_reduce: expected grad_out of the input's shape {input.shape}, "
                           f"got {getattr(grad_out, 'shape', None)}")  # fmt: skip
    acc = mean.dtype
    axes = _reduce_axes(input)
    dy = lc.astype(grad_out, acc)
    sum_dy = lc.sum(dy, axis=axes)
    sum_dy_xmu = lc.sum(dy * (lc.astype(input, acc) - _per_channel(mean, input)), axis=axes)
    has_weight = weight is not None
    grad_weight = lc.astype(sum_dy_xmu * invstd, weight.dtype) if weight_g and has_weight else None
    grad_bias = lc.astype(sum_dy, weight.dtype) if bias_g and has_weight else None
    if not input_g:
        sum_dy = sum_dy_xmu = None
    return sum_dy, sum_dy_xmu, grad_weight, grad_bias


def batch_norm_backward_elemt(
    grad_out: Tensor,
    input: Tensor,
    mean: Tensor,
    invstd: Tensor,
    weight: Tensor | None,
    sum_dy: Tensor,
    sum_dy_xmu: Tensor,
    count: Tensor,
) -> Tensor:
    """The input gradient from the all-reduced sums, ``count`` holding every rank's element count.

    ``(grad_out - sum_dy / N - (input - mean) * invstd**2 * sum_dy_xmu / N) * invstd * weight`` with
    ``N = count.sum()``; a None weight means 1.
    """
    _check_input(input, "batch_norm_backward_elemt")
    if not isinstance(count, Tensor):
        raise TypeError(f"batch_norm_backward_elemt: expected count to be a Tensor, got {type(count).__name__}")
    total = lc.sum(lc.astype(count, mean.dtype))
    inv = _per_channel(invstd, input)
    xmu = input - _per_channel(mean, input)
    g = grad_out - _per_channel(sum_dy / total, input) - xmu * inv * inv * _per_channel(sum_dy_xmu / total, input)
    g = g * inv
    if weight is not None:
        g = g * _per_channel(weight, input)
    return lc.astype(g, input.dtype)


def batch_norm_update_stats(
    input: Tensor, running_mean: Tensor | None, running_var: Tensor | None, momentum: float
) -> tuple[Tensor, Tensor]:
    """The batch's per-channel ``(mean, biased variance)``; updates the given running buffers in place.

    ``running = (1 - momentum) * running + momentum * stat`` with the unbiased variance, as batch norm in training.
    """
    _check_input(input, "batch_norm_update_stats")
    axes = _reduce_axes(input)
    mean = lc.mean(input, axis=axes)
    var = lc.var(input, axis=axes, correction=0)
    n = input.size // input.shape[1]
    _update_running(running_mean, mean, momentum)
    _update_running(running_var, var * (n / (n - 1)) if n > 1 else var * float("inf"), momentum)
    return mean, var


def native_norm(
    input: Tensor,
    p: float | None = 2,
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
    dtype: Any = None,
) -> Tensor:
    """The ``p``-norm of all elements, or over ``dim`` (``native_norm(input, p, dim, keepdim, dtype)``).

    PyTorch's two overloads in one: ``p`` None means 2; ``dim`` None or empty reduces everything.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"native_norm: expected input to be a Tensor, got {type(input).__name__}")
    if input.dtype.kind not in "fc":
        raise RuntimeError(
            f"norm(): input dtype should be either floating point or complex. Got {input.dtype.name} instead."
        )
    if dim is not None and not isinstance(dim, int) and len(tuple(dim)) == 0:
        dim = None
    from . import linalg

    return linalg.vector_norm(input, 2 if p is None else p, dim, keepdim, dtype=dtype)


def norm_except_dim(v: Tensor, pow: int = 2, dim: int = 0) -> Tensor:
    """The ``pow``-norm over every axis but ``dim``, keeping the reduced axes (weight norm's ``g``).

    ``dim=-1`` means no axis is kept: the norm of the whole tensor, a 0-d result (as PyTorch).
    """
    if not isinstance(v, Tensor):
        raise TypeError(f"norm_except_dim: expected v to be a Tensor, got {type(v).__name__}")
    if isinstance(pow, bool) or not isinstance(pow, int):
        raise TypeError(f"norm_except_dim(): argument 'pow' (position 2) must be int, not {type(pow).__name__}")
    from . import linalg

    if dim == -1:
        return linalg.vector_norm(v, pow)
    if v.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -v.ndim <= dim < v.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-v.ndim}, {v.ndim - 1}], "
                         f"but got {dim})")  # fmt: skip
    d = dim % v.ndim
    return linalg.vector_norm(v, pow, tuple(a for a in range(v.ndim) if a != d), keepdim=True)


def embedding_renorm_(input: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> Tensor:
    """Rescale, in place, the rows of ``input`` named in ``indices`` whose norm exceeds ``max_norm``.

    Each such row (once, however often it is named) is multiplied by ``max_norm / (norm + 1e-7)``; negative
    indices count from the end. Returns ``input``. Like PyTorch, refuses a leaf that requires grad outside
    ``no_grad``.
    """
    if not isinstance(input, Tensor) or input.ndim != 2:
        got = f"{input.ndim}-dimensional tensor" if isinstance(input, Tensor) else type(input).__name__
        raise RuntimeError(f"Expected 2-dimensional tensor, but got {got} for argument #1 'self' "
                           "(while checking arguments for embedding_renorm_)")  # fmt: skip
    if not isinstance(indices, Tensor) or indices.dtype.kind not in "iu":
        got = indices.dtype.name if isinstance(indices, Tensor) else type(indices).__name__
        raise RuntimeError(
            "Expected tensor for argument #2 'indices' to have one of the following scalar types: "
            f"Long, Int; but got {got} instead (while checking arguments for embedding_renorm_)"
        )
    if input.requires_grad and lc.is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    n = input.shape[0]
    if indices.size == 0:
        return input
    flat = lc.reshape(indices, (-1,))
    lo, hi = int(lc.min(flat).item()), int(lc.max(flat).item())
    if lo < -n or hi >= n:
        bad = hi if hi >= n else lo
        raise IndexError(f"select(): index {bad} out of range for tensor of size {list(input.shape)} at dimension 0")
    from lucid_nn.functional import embedding

    with lc.no_grad():
        embedding(lc.remainder(flat, n), input, max_norm=max_norm, norm_type=norm_type)
    return input
