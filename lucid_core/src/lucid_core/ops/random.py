"""Random tensors. Every draw comes from the device's backend generator, seeded by ``manual_seed``."""

from __future__ import annotations

from typing import Any

from .. import _dtypes as dt
from .._tensor import Tensor, _new_tensor
from .._typing import DeviceLike, DTypeLike
from . import creation as _c
from . import manipulation as _m
from . import searching as _s

__all__ = ["randn", "rand", "randint", "normal", "uniform", "bernoulli", "permutation", "randperm"]


def _float(dtype: DTypeLike, device: DeviceLike, name: str) -> tuple[Any, dt.DType]:
    dev, d = _c._dev_dtype(dtype, device)
    if d.kind != "f":
        raise TypeError(f"{name}: dtype must be a real floating-point dtype, got {d.name}")
    return dev, d


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        t.requires_grad_(True)
    return t


def randn(*shape: Any, dtype: DTypeLike = None, device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """Standard normal samples (float32 unless ``dtype`` says otherwise)."""
    dev, d = _float(dtype, device, "randn")
    data = dev.backend.random_normal(_c._varshape(shape, None, "randn"), d, dev)
    return _finish(_new_tensor(data, dev), requires_grad)


def rand(*shape: Any, dtype: DTypeLike = None, device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1)."""
    dev, d = _float(dtype, device, "rand")
    data = dev.backend.random_uniform(_c._varshape(shape, None, "rand"), d, dev)
    return _finish(_new_tensor(data, dev), requires_grad)


def randint(
    low: int, high: int | None = None, size: Any = (), *, dtype: DTypeLike = None, device: DeviceLike = None
) -> Tensor:
    """Integers drawn uniformly from [low, high) (``randint(high, size)`` starts at 0)."""
    if high is None:
        low, high = 0, low
    if high <= low:
        raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
    dev, d = _c._dev_dtype(dtype, device, dt.default_int)
    if d.kind not in "iu":
        raise TypeError(f"randint: dtype must be an integer dtype, got {d.name}")
    shape = (size,) if isinstance(size, int) else tuple(size)
    return _new_tensor(dev.backend.random_integers(int(low), int(high), shape, d, dev), dev)


def normal(
    mean: Any = 0.0, std: Any = 1.0, size: Any = None, *, dtype: DTypeLike = None, device: DeviceLike = None
) -> Tensor:
    """Normal samples with the given ``mean`` and ``std`` (numbers or tensors, broadcasting).

    With numbers, the backend draws and scales in one step (``Backend.random_normal_scaled``), so a backend
    that reproduces PyTorch's generator gives ``torch.normal``'s and ``Tensor.normal_``'s numbers.
    """
    if size is None:
        shapes = [t.shape for t in (mean, std) if isinstance(t, Tensor)]
        if not shapes:
            raise ValueError("normal: give size= when mean and std are numbers")

        size = _m.broadcast_shapes(*shapes)
        if device is None:
            device = next(t.device for t in (mean, std) if isinstance(t, Tensor))
    if _is_number(std) and std < 0:
        raise ValueError(f"normal: std must be non-negative, got {std}")
    shape = _size(size)
    if _is_number(mean) and _is_number(std):
        dev, d = _float(dtype, device, "normal")
        return _new_tensor(dev.backend.random_normal_scaled(shape, d, dev, float(mean), float(std)), dev)
    z = randn(*shape, dtype=dtype, device=device)
    return z * std + mean


def uniform(
    low: Any = 0.0, high: Any = 1.0, size: Any = (), *, dtype: DTypeLike = None, device: DeviceLike = None
) -> Tensor:
    """Uniform samples in [low, high) (numbers: drawn and scaled by the backend in one step, as ``normal``)."""
    shape = _size(size)
    if _is_number(low) and _is_number(high):
        if not low <= high:
            raise ValueError(f"uniform: low ({low}) must not be greater than high ({high})")
        dev, d = _float(dtype, device, "uniform")
        return _new_tensor(dev.backend.random_uniform_range(shape, d, dev, float(low), float(high)), dev)
    u = rand(*shape, dtype=dtype, device=device)
    return u * (high - low) + low


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _size(size: Any) -> tuple[int, ...]:
    return (size,) if isinstance(size, int) else tuple(size)


def bernoulli(p: Any, size: Any = None, *, dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """1 with probability ``p`` (a number or a tensor of probabilities), else 0, as floats."""
    if isinstance(p, Tensor):
        u = rand(*p.shape, dtype=p.dtype if dtype is None else dtype, device=p.device)
    else:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"bernoulli: p must be in [0, 1], got {p}")
        u = rand(
            *(() if size is None else ((size,) if isinstance(size, int) else tuple(size))), dtype=dtype, device=device
        )

    return _m.astype(u < p, u.dtype)


def permutation(n: int | Tensor, *, device: DeviceLike = None) -> Tensor:
    """A random permutation of ``range(n)`` (or of a tensor's first axis).

    The backend's ``random_permutation`` draws it where it has one (the numpy backend: ``torch.randperm``'s
    numbers); otherwise it is the argsort of uniforms.
    """

    if isinstance(n, Tensor):
        idx = permutation(n.shape[0], device=n.device)
        return n[idx]
    if n < 0:
        raise ValueError(f"permutation: n must be non-negative, got {n}")
    dev, d = _c._dev_dtype(None, device, dt.default_int)
    native = dev.backend.random_permutation(int(n), d, dev)
    if native is not None:
        return _new_tensor(native, dev)
    return _s.argsort(rand(n, dtype=dt.float64 if _has_f64(device) else dt.float32, device=device))


def _has_f64(device: DeviceLike) -> bool:
    dev, _ = _c._dev_dtype(None, device)
    return dt.float64 in dev.backend.dtypes


def randperm(n: int, *, device: DeviceLike = None) -> Tensor:
    """PyTorch's name for :func:`permutation`."""
    return permutation(n, device=device)
