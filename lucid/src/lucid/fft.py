"""``torch.fft`` on Lucid tensors: PyTorch's names and arguments (``n=``, ``s=``, ``dim=``, ``norm=``, ``out=``).

The transforms and their gradients are :mod:`lucid_core.fft`'s; this module adapts the signatures and adds
the two-dimensional and Hermitian n-dimensional forms. ``norm=None`` is ``"backward"``; integer inputs are
promoted to the default float dtype, as in PyTorch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import lucid_core as lc
from lucid_core import Tensor
from lucid_core import fft as _f
from lucid_core.linalg import ShapeError  # a ValueError that is also PyTorch's RuntimeError

__all__ = [
    "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
    "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]  # fmt: skip

_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _norm(norm: str | None) -> str:
    if norm not in (None, "backward", "ortho", "forward"):
        raise ShapeError(f"fft: norm must be None, 'backward', 'ortho' or 'forward', got {norm!r}")
    return "backward" if norm is None else norm


def _in(x: Tensor, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"fft.{name}: expected a Tensor, got {type(x).__name__}")
    return x if x.dtype.kind in "fc" else lc.astype(x, lc.float32)


def _out(result: Tensor, out: Tensor | None) -> Tensor:
    if out is None:
        return result
    if tuple(out.shape) != tuple(result.shape):
        raise ValueError(f"out=: expected a tensor of shape {tuple(result.shape)}, got {tuple(out.shape)}")
    with lc.no_grad():
        out.copy_(result)
    return out


def _dims(x: Tensor, s: Sequence[int] | None, dim: int | Sequence[int] | None) -> tuple[Any, Any]:
    """PyTorch's (s, dim) of an n-dimensional transform as the engine's (s, axes)."""
    if isinstance(dim, int):
        dim = (dim,)
    if s is not None:
        s = tuple(s)
        if dim is None:
            dim = tuple(range(x.ndim - len(s), x.ndim))
    return s, (None if dim is None else tuple(dim))


def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out: Any = None) -> Tensor:
    """The one-dimensional discrete Fourier transform along ``dim``."""
    return _out(_f.fft(_in(input, "fft"), n=n, axis=dim, norm=_norm(norm)), out)  # type: ignore[arg-type]


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out: Any = None) -> Tensor:
    """The one-dimensional inverse transform."""
    return _out(_f.ifft(_in(input, "ifft"), n=n, axis=dim, norm=_norm(norm)), out)  # type: ignore[arg-type]


def fftn(
    input: Tensor,
    s: Sequence[int] | None = None,
    dim: int | Sequence[int] | None = None,
    norm: str | None = None,
    *,
    out: Any = None,
) -> Tensor:
    """The n-dimensional transform over ``dim`` (all axes, or the last ``len(s)``)."""
    x = _in(input, "fftn")
    s_, axes = _dims(x, s, dim)
    return _out(_f.fftn(x, s=s_, axes=axes, norm=_norm(norm)), out)  # type: ignore[arg-type]


def ifftn(
    input: Tensor,
    s: Sequence[int] | None = None,
    dim: int | Sequence[int] | None = None,
    norm: str | None = None,
    *,
    out: Any = None,
) -> Tensor:
    """The n-dimensional inverse transform."""
    x = _in(input, "ifftn")
    s_, axes = _dims(x, s, dim)
    return _out(_f.ifftn(x, s=s_, axes=axes, norm=_norm(norm)), out)  # type: ignore[arg-type]


def fft2(
    input: Tensor,
    s: Sequence[int] | None = None,
    dim: Sequence[int] = (-2, -1),
    norm: str | None = None,
    *,
    out: Any = None,
) -> Tensor:
    """The two-dimensional transform over ``dim``."""
    return fftn(input, s, dim, norm, out=out)


def ifft2(
    input: Tensor,
    s: Sequence[int] | None = None,
    dim: Sequence[int] = (-2, -1),
    norm: str | None = None,
    *,
    out: Any = None,
) -> Tensor:
    """The two-dimensional inverse transform."""
    return ifftn(input, s, dim, norm, out=out)


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out: Any = None) -> Tensor:
    """The transform of a real signal: its ``n // 2 + 1`` non-negative frequencies."""
    return _out(_f.rfft(_in(input, "rfft"), n=n, axis=dim, norm=_norm(norm)), out)  # type: ignore[arg-type]


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out: Any = None) -> Tensor:
    """The inverse of :func:`rfft` (a real signal of length ``n``, default ``2 (m - 1)``)."""
    return _out(_f.irfft(_in(input, "irfft"), n=n, axis=dim, norm=_norm(norm)), out)  # type: ignore[arg-type]


def rfftn(
    input: Tensor,
    s: Sequence[int] | None = None,
    dim: int | Sequence[int] | None = None,
    norm: str | None = None,
    *,
    out: Any = None,
) -> Tensor:
    """The n-dimensional transform of a real signal (one-sided along the last of ``dim``)."""
    x = _in(input, "rfftn")
    s_, axes = _dims(x, s, dim)
    return _out(_f.rfftn(x, s=s_, axes=axes, norm=_norm(norm)), out)  # type: ignore[arg-type]


def irfftn(
    input: Tensor,
    s: Sequence[int] | None = None,
    dim: int | Sequence[int] | None = None,
    norm: str | None = None,
    *,
    out: Any = None,
) -> Tensor:
    """The inverse of :func:`rfftn`."""
    x = _in(input, "irfftn")
    s_, axes = _dims(x, s, dim)
    return _out(_f.irfftn(x, s=s_, axes=axes, norm=_norm(norm)), out)  # type: ignore[arg-type]


def rfft2(
    input: Tensor,
    s: Sequence[int] | None = None,
    dim: Sequence[int] = (-2, -1),
    norm: str | None = None,
    *,
    out: Any = None,
) -> Tensor:
    """The two-dimensional transform of a real signal."""
    return rfftn(input, s, dim, norm, out=out)


def irfft2(
    input: Tensor,
    s: Sequence[int] | None = None,
    dim: Sequence[int] = (-2, -1),
    norm: str | None = None,
    *,
    out: Any = None,
) -> Tensor:
    """The inverse of :func:`rfft2`."""
    return irfftn(input, s, dim, norm, out=out)


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out: Any = None) -> Tensor:
    """The transform of a Hermitian-symmetric signal given by its first half: a real spectrum."""
    return _out(_f.hfft(_in(input, "hfft"), n=n, axis=dim, norm=_norm(norm)), out)  # type: ignore[arg-type]


def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out: Any = None) -> Tensor:
    """The inverse of :func:`hfft`."""
    return _out(_f.ihfft(_in(input, "ihfft"), n=n, axis=dim, norm=_norm(norm)), out)  # type: ignore[arg-type]


def hfftn(
    input: Tensor,
    s: Sequence[int] | None = None,
    dim: int | Sequence[int] | None = None,
    norm: str | None = None,
    *,
    out: Any = None,
) -> Tensor:
    """The n-dimensional :func:`hfft`: ``irfftn`` of the conjugate with the dual normalisation."""
    x = _in(input, "hfftn")
    if x.dtype.kind == "f":
        x = lc.astype(x, lc.complex128 if x.dtype is lc.float64 else lc.complex64)
    s_, axes = _dims(x, s, dim)
    r = _f.irfftn(lc.conj(x), s=s_, axes=axes, norm=_DUAL[_norm(norm)])  # type: ignore[arg-type]
    return _out(r, out)


def ihfftn(
    input: Tensor,
    s: Sequence[int] | None = None,
    dim: int | Sequence[int] | None = None,
    norm: str | None = None,
    *,
    out: Any = None,
) -> Tensor:
    """The inverse of :func:`hfftn`: the conjugate of ``rfftn`` with the dual normalisation."""
    x = _in(input, "ihfftn")
    s_, axes = _dims(x, s, dim)
    r = lc.conj(_f.rfftn(x, s=s_, axes=axes, norm=_DUAL[_norm(norm)]))  # type: ignore[arg-type]
    return _out(r, out)


def hfft2(
    input: Tensor,
    s: Sequence[int] | None = None,
    dim: Sequence[int] = (-2, -1),
    norm: str | None = None,
    *,
    out: Any = None,
) -> Tensor:
    """The two-dimensional :func:`hfftn`."""
    return hfftn(input, s, dim, norm, out=out)


def ihfft2(
    input: Tensor,
    s: Sequence[int] | None = None,
    dim: Sequence[int] = (-2, -1),
    norm: str | None = None,
    *,
    out: Any = None,
) -> Tensor:
    """The two-dimensional :func:`ihfftn`."""
    return ihfftn(input, s, dim, norm, out=out)


def fftfreq(
    n: int,
    d: float = 1.0,
    *,
    out: Any = None,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The sample frequencies of an ``n``-point transform with sample spacing ``d``."""
    r = _f.fftfreq(n, d=d, dtype=dtype, device=device)
    return _out(r.requires_grad_(True) if requires_grad else r, out)


def rfftfreq(
    n: int,
    d: float = 1.0,
    *,
    out: Any = None,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The non-negative sample frequencies of an ``n``-point :func:`rfft`."""
    r = _f.rfftfreq(n, d=d, dtype=dtype, device=device)
    return _out(r.requires_grad_(True) if requires_grad else r, out)


def fftshift(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """Move the zero frequency to the centre of ``dim`` (all axes by default)."""
    return _f.fftshift(input, axes=dim)


def ifftshift(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """The inverse of :func:`fftshift`."""
    return _f.ifftshift(input, axes=dim)
