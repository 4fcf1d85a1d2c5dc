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
# ``multinomial`` is PyTorch's (not the Array API's): the face exports it, the core namespace does not


def _float(dtype: DTypeLike, device: DeviceLike, name: str) -> tuple[Any, dt.DType]:
    dev, d = _c._dev_dtype(dtype, device)
    if d.kind != "f":
        raise TypeError(f"{name}: dtype must be a real floating-point dtype, got {d.name}")
    return dev, d


#: set by ``lucid_core.func.vmap`` while a vmap is active: makes a draw as the levels' ``randomness`` say
_batched_draw: Any = None


def _drawn(dev: Any, draw: Any, shape: tuple[int, ...], *rest: Any) -> Tensor:
    """``draw(shape, *rest)`` as a tensor on ``dev`` (under vmap: per example, once, or an error)."""
    if _batched_draw is not None:
        return _batched_draw(dev, draw, shape, *rest)
    return _new_tensor(draw(shape, *rest), dev)


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        t.requires_grad_(True)
    return t


def randn(*shape: Any, dtype: DTypeLike = None, device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """Standard normal samples (float32 unless ``dtype`` says otherwise)."""
    dev, d = _float(dtype, device, "randn")
    return _finish(_drawn(dev, dev.backend.random_normal, _c._varshape(shape, None, "randn"), d, dev), requires_grad)


def rand(*shape: Any, dtype: DTypeLike = None, device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """Uniform samples in [0, 1)."""
    dev, d = _float(dtype, device, "rand")
    return _finish(_drawn(dev, dev.backend.random_uniform, _c._varshape(shape, None, "rand"), d, dev), requires_grad)


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
    return _drawn(dev, lambda s, *r: dev.backend.random_integers(int(low), int(high), s, *r), shape, d, dev)


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
        return _drawn(dev, dev.backend.random_normal_scaled, shape, d, dev, float(mean), float(std))
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
        return _drawn(dev, dev.backend.random_uniform_range, shape, d, dev, float(low), float(high))
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


def multinomial(input: Tensor, num_samples: int, replacement: bool = False) -> Tensor:  # noqa: A002
    """``torch.multinomial``: ``num_samples`` category indices (int64) per row of the weights ``input`` (1-D or
    2-D; rows need not sum to 1), with PyTorch's checks and error messages.

    Without replacement, or for one sample, it is PyTorch's exponential trick: ``argmax``/``topk`` of
    ``input / q`` with ``q ~ Exp(1)``; with replacement, a search of each row's normalised cumulative sums for
    uniforms. The backend's ``random_multinomial`` draws where it has one (the numpy backend: PyTorch's CPU
    numbers); otherwise the same algorithms are composed from the backend's uniforms.
    """
    if input.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got {input.ndim}-D")
    if input.dtype.kind != "f":
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {input.dtype.name}")
    if num_samples <= 0:
        raise RuntimeError(f"multinomial: cannot sample n_sample <= 0 samples (got {num_samples})")
    w = input.detach() if input.ndim == 2 else _m.reshape(input.detach(), (1, -1))
    n = w.shape[1]
    if not replacement and num_samples > n:
        raise RuntimeError(
            f"multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement "
            f"({num_samples} > {n})"
        )
    if w.shape[0] == 0:
        out = _c.zeros((0, num_samples), dtype=dt.int64, device=w.device)
    else:
        _check_weights(w, exponential=not replacement or num_samples == 1)
        native = w.device.backend.random_multinomial(w._data, int(num_samples), bool(replacement), w.device)
        if native is None:
            out = _composed_multinomial(w, num_samples, replacement)
        else:
            out = _new_tensor(native, w.device)
    return out if input.ndim == 2 else _m.reshape(out, (num_samples,))


def _check_weights(w: Tensor, exponential: bool) -> None:
    """PyTorch's checks, whose messages differ between its two paths."""
    from . import elementwise as _e
    from . import reduction as _r

    if exponential:
        if not bool((_r.max(w) < float("inf")).item()) or not bool((_r.min(w) >= 0).item()):
            raise RuntimeError("multinomial: probability tensor contains either `inf`, `nan` or element < 0")
    else:
        if not bool(_r.all(w >= 0).item()):
            raise RuntimeError("multinomial: invalid multinomial distribution (encountering probability entry < 0)")
        if not bool(_r.all(_e.isfinite(w)).item()):
            raise RuntimeError(
                "multinomial: invalid multinomial distribution (encountering probability entry = infinity or NaN)"
            )
    if not bool(_r.all(_r.sum(w, axis=1) > 0).item()):
        raise RuntimeError("multinomial: invalid multinomial distribution (sum of probabilities <= 0)")


def _composed_multinomial(w: Tensor, num_samples: int, replacement: bool) -> Tensor:
    from . import elementwise as _e
    from . import reduction as _r

    if not replacement or num_samples == 1:
        q = -_e.log1p(-rand(*w.shape, dtype=w.dtype, device=w.device))
        keys = w / q
        if num_samples == 1:
            return _m.astype(_s.argmax(keys, axis=1, keepdims=True), dt.int64)
        return _m.astype(_s.topk(keys, num_samples, axis=1)[1], dt.int64)
    cum = _r.cumulative_sum(w, axis=1)
    cum = cum / cum[:, -1:]
    u = rand(w.shape[0], num_samples, 1, dtype=w.dtype, device=w.device)
    idx = _r.sum(_m.expand_dims(cum, axis=1) < u, axis=2)  # the first index whose cumulative sum is >= u
    return _m.astype(_e.minimum(idx, w.shape[1] - 1), dt.int64)
