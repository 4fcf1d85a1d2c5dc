"""The Array API ``fft`` extension, with gradients (PyTorch's conjugate convention for complex tensors).

Transforms run through the backend namespace's ``xp.fft``; a backend without the extension
raises ``NotImplementedError`` naming it. The gradient of a transform is the adjoint
transform with the dual normalisation (``"backward"`` <-> ``"forward"``), cut or zero-padded
back to the input's length; a real input gets the real part, as in PyTorch.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any, Literal

from . import _dtypes as dt
from ._autograd import Function
from ._tensor import Tensor, check_tensor
from ._typing import DeviceLike, DTypeLike
from .ops.complex import real
from .ops.creation import asarray, zeros
from .ops.elementwise import conj
from .ops.manipulation import concat, reshape, roll

__all__ = [
    "fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
    "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]  # fmt: skip

Norm = Literal["backward", "ortho", "forward"]
_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _kernel(ctx: Any, name: str) -> Any:
    fn = getattr(getattr(ctx.xp, "fft", None), name, None)
    if fn is None:
        raise NotImplementedError(
            f"fft.{name}: backend {ctx.device.backend.name!r} does not provide fft.{name} "
            "(its Array API namespace lacks the fft extension or this function)"
        )
    return fn


def _fit(g: Tensor, axis: int, size: int) -> Tensor:
    """Cut or zero-pad ``g`` along ``axis`` to ``size`` (the adjoint of the transform's own cut/pad)."""
    cur = g.shape[axis]
    if cur == size:
        return g
    if cur > size:
        key = (slice(None),) * axis + (slice(0, size),)
        return g[key]
    shape = list(g.shape)
    shape[axis] = size - cur
    return concat([g, zeros(tuple(shape), dtype=g.dtype, device=g.device)], axis=axis)


def _fit_all(g: Tensor, axes: Sequence[int], shape: Sequence[int]) -> Tensor:
    for a in axes:
        g = _fit(g, a, shape[a])
    return g


def _check(x: Any, name: str, norm: str) -> Tensor:
    check_tensor(x, f"fft.{name}")
    if x.dtype.kind not in "fc":
        raise TypeError(f"fft.{name}: expected a floating-point or complex tensor, got {x.dtype.name}")
    if norm not in _DUAL:
        raise ValueError(f"fft.{name}: norm must be 'backward', 'ortho' or 'forward', got {norm!r}")
    return x


def _axes_and_sizes(x: Tensor, s: Sequence[int] | None, axes: Sequence[int] | None, name: str) -> tuple[Any, Any]:
    """Normalised axes and output lengths of an n-dimensional transform."""
    if axes is None:
        axes = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    axes = tuple(a % x.ndim for a in axes)
    if s is None:
        s = tuple(x.shape[a] for a in axes)
    elif len(s) != len(axes):
        raise ValueError(f"fft.{name}: s has {len(s)} entries but axes has {len(axes)}")
    s = tuple(x.shape[a] if n == -1 else n for n, a in zip(s, axes))
    return axes, s


class _C2C(Function):
    """fft/ifft/fftn/ifftn: complex-to-complex transforms."""

    native = True

    @staticmethod
    def forward(ctx, x, inverse, s, axes, norm):
        return _kernel(ctx, "ifftn" if inverse else "fftn")(x, s=s, axes=axes, norm=norm)

    @staticmethod
    def backward(ctx, gy):
        x, inverse, _s, axes, norm = ctx.inputs
        g = _C2C.apply(gy, not inverse, tuple(gy.shape[a] for a in axes), axes, _DUAL[norm])
        g = _fit_all(g, axes, x.shape)
        return (real(g) if x.dtype.kind == "f" else g), None, None, None, None


class _R2C(Function):
    """rfft/rfftn: real input, one-sided complex output along the last transformed axis."""

    native = True

    @staticmethod
    def forward(ctx, x, s, axes, norm):
        return _kernel(ctx, "rfftn")(x, s=s, axes=axes, norm=norm)

    @staticmethod
    def backward(ctx, gy):
        x, s, axes, norm = ctx.inputs
        g = _fit(gy, axes[-1], s[-1])  # the dropped negative frequencies get zero gradient
        g = real(_C2C.apply(g, True, tuple(s), axes, _DUAL[norm]))
        return _fit_all(g, axes, x.shape), None, None, None


class _C2R(Function):
    """irfft/irfftn: one-sided complex input, real output of lengths ``s``."""

    native = True

    @staticmethod
    def forward(ctx, x, s, axes, norm):
        return _kernel(ctx, "irfftn")(x, s=s, axes=axes, norm=norm)

    @staticmethod
    def backward(ctx, gy):
        x, s, axes, norm = ctx.inputs
        g = _R2C.apply(gy, tuple(gy.shape[a] for a in axes), axes, _DUAL[norm])
        # each interior frequency stands for itself and its mirrored conjugate
        last = axes[-1]
        half = g.shape[last]
        doubled = s[-1] - half
        w = [1.0] + [2.0] * doubled + [1.0] * (half - 1 - doubled) if half else []
        wshape = [1] * g.ndim
        wshape[last] = half
        wdt = dt.float64 if g.dtype is dt.complex128 else dt.float32
        g = g * reshape(asarray(w, dtype=wdt, device=g.device), tuple(wshape))
        return _fit_all(g, axes, x.shape), None, None, None


def fft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Tensor:
    """The one-dimensional discrete Fourier transform along ``axis`` (cut or zero-padded to ``n``)."""
    x = _check(x, "fft", norm)
    return fftn(x, s=None if n is None else (n,), axes=(axis,), norm=norm)


def ifft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Tensor:
    """The one-dimensional inverse discrete Fourier transform."""
    x = _check(x, "ifft", norm)
    return ifftn(x, s=None if n is None else (n,), axes=(axis,), norm=norm)


def fftn(
    x: Tensor, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = "backward"
) -> Tensor:
    """The n-dimensional discrete Fourier transform over ``axes`` (all axes by default)."""
    x = _check(x, "fftn", norm)
    ax, sz = _axes_and_sizes(x, s, axes, "fftn")
    return _C2C.apply(x, False, sz, ax, norm)


def ifftn(
    x: Tensor, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = "backward"
) -> Tensor:
    """The n-dimensional inverse discrete Fourier transform."""
    x = _check(x, "ifftn", norm)
    ax, sz = _axes_and_sizes(x, s, axes, "ifftn")
    return _C2C.apply(x, True, sz, ax, norm)


def _real_input(x: Tensor, name: str) -> None:
    if x.dtype.kind != "f":
        raise TypeError(f"fft.{name}: expected a real floating-point tensor, got {x.dtype.name}")


def rfft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Tensor:
    """The one-dimensional transform of a real signal: the ``n // 2 + 1`` non-negative frequencies."""
    x = _check(x, "rfft", norm)
    return rfftn(x, s=None if n is None else (n,), axes=(axis,), norm=norm)


def rfftn(
    x: Tensor, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = "backward"
) -> Tensor:
    """The n-dimensional transform of a real signal (one-sided along the last of ``axes``)."""
    x = _check(x, "rfftn", norm)
    _real_input(x, "rfftn")
    ax, sz = _axes_and_sizes(x, s, axes, "rfftn")
    return _R2C.apply(x, sz, ax, norm)


def irfft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Tensor:
    """The inverse of :func:`rfft`: a real signal of length ``n`` (default ``2 * (m - 1)``)."""
    x = _check(x, "irfft", norm)
    return irfftn(x, s=None if n is None else (n,), axes=(axis,), norm=norm)


def irfftn(
    x: Tensor, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = "backward"
) -> Tensor:
    """The inverse of :func:`rfftn`; the last output length defaults to ``2 * (m - 1)``."""
    x = _check(x, "irfftn", norm)
    if x.dtype.kind == "f":
        x = x.astype(dt.complex128 if x.dtype is dt.float64 else dt.complex64)
    ax, sz = _axes_and_sizes(x, s, axes, "irfftn")
    if s is None:
        sz = (*sz[:-1], 2 * (x.shape[ax[-1]] - 1))
    return _C2R.apply(x, sz, ax, norm)


def hfft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Tensor:
    """The transform of a Hermitian-symmetric signal given by its first half: a real spectrum."""
    x = _check(x, "hfft", norm)
    if x.dtype.kind == "f":
        x = x.astype(dt.complex128 if x.dtype is dt.float64 else dt.complex64)
    return irfft(conj(x), n=n, axis=axis, norm=_DUAL[norm])  # type: ignore[arg-type]


def ihfft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Tensor:
    """The inverse of :func:`hfft`: the first half of a Hermitian-symmetric spectrum of a real signal."""
    x = _check(x, "ihfft", norm)
    return conj(rfft(x, n=n, axis=axis, norm=_DUAL[norm]))  # type: ignore[arg-type]


def _freq_tensor(values: list[float], dtype: DTypeLike, device: DeviceLike) -> Tensor:
    d = dt.default_float if dtype is None else dt.as_dtype(dtype)
    if d.kind != "f":
        raise TypeError(f"fft: frequencies need a real floating-point dtype, got {d.name}")
    return asarray(values, dtype=d, device=device)


def fftfreq(n: int, /, *, d: float = 1.0, dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """The sample frequencies of an ``n``-point transform with sample spacing ``d``."""
    if not isinstance(n, int) or isinstance(n, builtins.bool) or n <= 0:
        raise ValueError(f"fft.fftfreq: n must be a positive int, got {n!r}")
    k = list(range((n - 1) // 2 + 1)) + list(range(-(n // 2), 0))
    return _freq_tensor([i / (d * n) for i in k], dtype, device)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """The non-negative sample frequencies of an ``n``-point :func:`rfft`."""
    if not isinstance(n, int) or isinstance(n, builtins.bool) or n <= 0:
        raise ValueError(f"fft.rfftfreq: n must be a positive int, got {n!r}")
    return _freq_tensor([i / (d * n) for i in range(n // 2 + 1)], dtype, device)


def _shift(x: Tensor, axes: int | Sequence[int] | None, sign: int, name: str) -> Tensor:
    check_tensor(x, f"fft.{name}")
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, int):
        axes = (axes,)
    axes = tuple(axes)
    if not axes:
        return x
    return roll(x, shift=tuple(sign * (x.shape[a] // 2) for a in axes), axis=axes)


def fftshift(x: Tensor, /, *, axes: int | Sequence[int] | None = None) -> Tensor:
    """Move the zero frequency to the centre (along ``axes``, all by default)."""
    return _shift(x, axes, 1, "fftshift")


def ifftshift(x: Tensor, /, *, axes: int | Sequence[int] | None = None) -> Tensor:
    """The inverse of :func:`fftshift`."""
    return _shift(x, axes, -1, "ifftshift")
