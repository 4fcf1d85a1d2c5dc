"""Making tensors the PyTorch way: ``from_numpy``, ``*_like`` random tensors, ``randint(high, size)``,
``multinomial``, ``bernoulli(probs)``, and ``arange`` with PyTorch's dtype rule."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import lucid_core as lc
from lucid_core import Tensor
from lucid_core.ops.random import multinomial as _multinomial


def tensor(
    data: Any, *, dtype: lc.DTypeLike = None, device: lc.DeviceLike = None, requires_grad: bool = False
) -> Tensor:
    """A copy of ``data`` on ``device`` (the default device when None, even for another library's array)."""
    return lc.tensor(data, dtype=dtype, device=lc.get_default_device() if device is None else device,
                     requires_grad=requires_grad)  # fmt: skip


def from_numpy(ndarray: Any) -> Tensor:
    """A tensor with the values of a NumPy array, on the default device (shared where the backend allows)."""
    return lc.asarray(ndarray)


def as_tensor(data: Any, dtype: lc.DTypeLike = None, device: lc.DeviceLike = None) -> Tensor:
    """``data`` as a tensor, without a copy where possible."""
    return (
        data
        if isinstance(data, Tensor) and dtype is None and device is None
        else lc.asarray(data, dtype=dtype, device=device)
    )


def arange(
    start: float,
    end: float | None = None,
    step: float = 1,
    *,
    dtype: lc.DTypeLike = None,
    device: lc.DeviceLike = None,
    requires_grad: bool = False,
) -> Tensor:
    """``start, start + step, ...`` below ``end``: int64 when every bound is an int, else the default float dtype
    (PyTorch's rule)."""
    bounds = (start, end, step)
    if dtype is None and any(isinstance(b, float) for b in bounds):
        dtype = lc.get_default_dtype()
    out = lc.arange(start, end, step, dtype=dtype, device=device)
    return out.requires_grad_() if requires_grad else out


def randint(
    low: int,
    high: int | Sequence[int] | None = None,
    size: Sequence[int] | None = None,
    *,
    dtype: lc.DTypeLike = None,
    device: lc.DeviceLike = None,
) -> Tensor:
    """Integers in ``[low, high)``; ``randint(high, size)`` draws from ``[0, high)``, as PyTorch allows."""
    if size is None:
        if not isinstance(high, (tuple, list)):
            raise TypeError("randint: size is required, e.g. randint(0, 10, (3,)) or randint(10, (3,))")
        low, high, size = 0, low, high
    return lc.randint(low, high, tuple(size), dtype=dtype or lc.int64, device=device)


def rand_like(
    input: Tensor, *, dtype: lc.DTypeLike = None, device: lc.DeviceLike = None, requires_grad: bool = False
) -> Tensor:
    """Uniform samples in [0, 1) with ``input``'s shape, dtype and device."""
    return lc.rand(*input.shape, dtype=dtype or input.dtype, device=device or input.device, requires_grad=requires_grad)


def randn_like(
    input: Tensor, *, dtype: lc.DTypeLike = None, device: lc.DeviceLike = None, requires_grad: bool = False
) -> Tensor:
    """Standard normal samples with ``input``'s shape, dtype and device."""
    return lc.randn(
        *input.shape, dtype=dtype or input.dtype, device=device or input.device, requires_grad=requires_grad
    )


def randint_like(
    input: Tensor, low: int, high: int | None = None, *, dtype: lc.DTypeLike = None, device: lc.DeviceLike = None
) -> Tensor:
    """Integers in ``[low, high)`` (``[0, low)`` with one bound) with ``input``'s shape, dtype and device."""
    if high is None:
        low, high = 0, low
    return lc.randint(low, high, input.shape, dtype=dtype or input.dtype, device=device or input.device)


def bernoulli(input: Tensor, p: float | None = None) -> Tensor:
    """1 with probability ``input[i]`` (or ``p``), else 0, in ``input``'s dtype."""
    probs = input if p is None else lc.full_like(input, p)
    return lc.astype(lc.bernoulli(probs), input.dtype)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False) -> Tensor:
    """Indices drawn from the categories weighted by each row of ``input`` (1-D or 2-D), as int64: PyTorch's
    algorithm and checks (``lucid_core.ops.random.multinomial``), its numbers on the numpy backend."""
    return _multinomial(input, num_samples, replacement)


def normal(
    mean: float | Tensor = 0.0,
    std: float | Tensor = 1.0,
    size: Sequence[int] | None = None,
    *,
    dtype: lc.DTypeLike = None,
    device: lc.DeviceLike = None,
) -> Tensor:
    """Samples of N(mean, std²): tensors of means/stds broadcast, or numbers with ``size``."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        like = mean if isinstance(mean, Tensor) else std
        shape = lc.broadcast_shapes(getattr(mean, "shape", ()), getattr(std, "shape", ()))
        return mean + std * lc.randn(*shape, dtype=like.dtype, device=like.device)
    return lc.normal(mean, std, size, dtype=dtype, device=device)
