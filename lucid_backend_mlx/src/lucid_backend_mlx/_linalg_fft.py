"""The Array API ``linalg`` and ``fft`` extensions over ``mx.linalg`` and ``mx.fft``.

MLX's factorizations run on its CPU stream only, so every ``linalg`` function passes
``stream=mx.cpu`` (unified memory: the result serves the GPU too); they take float32 and float64
(no complex, except ``eigh``/``svd``). The standard's options MLX lacks are built here: ``det`` and
``slogdet`` from the LU factorization, ``solve`` with broadcasting and vector right-hand sides,
``qr(mode="complete")``, reduced ``svd``, ``pinv``/``matrix_rank`` with ``rtol``, and ``fft``'s
``norm=`` (MLX always normalises "backward"; the other modes are a scale). MLX has no complex128,
so an ``fft`` of float64 data raises instead of silently computing in single precision.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import mlx.core as mx

__all__ = ["make_fft", "make_linalg"]

_CPU = mx.cpu
_EPS = {mx.float32: 2.0**-23, mx.float64: 2.0**-52, mx.float16: 2.0**-10, mx.complex64: 2.0**-23}


def _real_dtype(x: Any) -> Any:
    return mx.float32 if x.dtype == mx.complex64 else x.dtype


# -- linalg ------------------------------------------------------------------------------------------


def inv(x: Any, /) -> Any:
    return mx.linalg.inv(x, stream=_CPU)


def _lu_parts(x: Any) -> tuple[Any, Any]:
    """The LU factor's diagonal and the permutation's parity (1 or -1), batched."""
    lu, piv = mx.linalg.lu_factor(x, stream=_CPU)
    n = x.shape[-1]
    diag = mx.diagonal(lu, axis1=-2, axis2=-1, stream=_CPU)
    swaps = mx.sum(piv != mx.arange(n, dtype=piv.dtype), axis=-1, stream=_CPU)
    parity = 1 - 2 * (swaps % 2).astype(x.dtype)
    return diag, parity


def det(x: Any, /) -> Any:
    if x.shape[-1] == 0:
        return mx.ones(x.shape[:-2], dtype=x.dtype)
    diag, parity = _lu_parts(x)
    return parity * mx.prod(diag, axis=-1, stream=_CPU)


def slogdet(x: Any, /) -> tuple[Any, Any]:
    if x.shape[-1] == 0:
        return mx.ones(x.shape[:-2], dtype=x.dtype), mx.zeros(x.shape[:-2], dtype=x.dtype)
    diag, parity = _lu_parts(x)
    sign = parity * mx.prod(mx.sign(diag), axis=-1, stream=_CPU)
    logabs = mx.sum(mx.log(mx.abs(diag)), axis=-1, stream=_CPU)
    return sign, logabs


def _batch_broadcast(a: Any, b: Any) -> tuple[Any, Any]:
    batch = mx.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return mx.broadcast_to(a, (*batch, *a.shape[-2:])), mx.broadcast_to(b, (*batch, *b.shape[-2:]))


def solve(x1: Any, x2: Any, /) -> Any:
    """``x1 @ out = x2``; a 1-D ``x2`` is one vector, otherwise a stack of matrices (batch dims broadcast)."""
    if x2.ndim == 1:
        a, b = _batch_broadcast(x1, x2[:, None])
        return mx.linalg.solve(a, b, stream=_CPU)[..., 0]
    a, b = _batch_broadcast(x1, x2)
    return mx.linalg.solve(a, b, stream=_CPU)


def cholesky(x: Any, /, *, upper: bool = False) -> Any:
    return mx.linalg.cholesky(x, upper=upper, stream=_CPU)


def qr(x: Any, /, *, mode: str = "reduced") -> tuple[Any, Any]:
    m, n = x.shape[-2], x.shape[-1]
    if mode == "complete" and m > n:
        # Householder QR treats columns in order: padding with m - n more columns leaves the first n
        # reflectors alone and completes Q to a square orthogonal matrix
        pad = mx.broadcast_to(mx.eye(m, m - n, dtype=x.dtype), (*x.shape[:-2], m, m - n))
        q, r = mx.linalg.qr(mx.concatenate([x, pad], axis=-1), stream=_CPU)
        return q, mx.triu(r[..., :n], k=0)
    return mx.linalg.qr(x, stream=_CPU)


def svd(x: Any, /, *, full_matrices: bool = True) -> tuple[Any, Any, Any]:
    u, s, vh = mx.linalg.svd(x, stream=_CPU)
    if not full_matrices:
        k = min(x.shape[-2], x.shape[-1])
        u, vh = u[..., :, :k], vh[..., :k, :]
    return u, s, vh


def svdvals(x: Any, /) -> Any:
    return mx.linalg.svd(x, compute_uv=False, stream=_CPU)


def eigh(x: Any, /) -> tuple[Any, Any]:
    return mx.linalg.eigh(x, stream=_CPU)


def eigvalsh(x: Any, /) -> Any:
    return mx.linalg.eigvalsh(x, stream=_CPU)


def eig(x: Any, /) -> tuple[Any, Any]:
    return mx.linalg.eig(x, stream=_CPU)


def eigvals(x: Any, /) -> Any:
    return mx.linalg.eigvals(x, stream=_CPU)


def _cutoff(x: Any, s: Any, rtol: Any) -> Any:
    if rtol is None:
        rtol = max(x.shape[-2], x.shape[-1]) * _EPS.get(x.dtype, 2.0**-52)
    elif isinstance(rtol, mx.array):
        rtol = rtol[..., None]
    return rtol * mx.max(s, axis=-1, keepdims=True)


def pinv(x: Any, /, *, rtol: Any = None) -> Any:
    u, s, vh = svd(x, full_matrices=False)
    keep = s > _cutoff(x, s, rtol)
    s_inv = mx.where(keep, 1.0 / mx.where(keep, s, 1.0), 0.0).astype(s.dtype)
    uh = mx.conj(mx.swapaxes(u, -1, -2)) if u.dtype == mx.complex64 else mx.swapaxes(u, -1, -2)
    v = mx.conj(mx.swapaxes(vh, -1, -2)) if vh.dtype == mx.complex64 else mx.swapaxes(vh, -1, -2)
    return mx.matmul(v * s_inv[..., None, :], uh, stream=_CPU)


def matrix_rank(x: Any, /, *, rtol: Any = None) -> Any:
    s = svdvals(x)
    return mx.sum(s > _cutoff(x, s, rtol), axis=-1).astype(mx.int64)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    return mx.linalg.cross(x1, x2, axis=axis, stream=_CPU)


_LINALG = (inv, det, slogdet, solve, cholesky, qr, svd, svdvals, eig, eigvals, eigh, eigvalsh, pinv, matrix_rank, cross)


def make_linalg() -> SimpleNamespace:
    """The ``xp.linalg`` namespace (the same for every device: factorizations run on the CPU)."""
    return SimpleNamespace(**{f.__name__: f for f in _LINALG})


# -- fft -----------------------------------------------------------------------------------------------


def _no_f64(x: Any, name: str) -> None:
    if x.dtype == mx.float64:
        raise TypeError(
            f"fft.{name}: MLX has no complex128, so it cannot transform float64 data without losing "
            "precision; cast to float32 (complex64 results) or use the numpy backend"
        )


def _scale(out: Any, n: int, norm: str, inverse: bool) -> Any:
    """MLX normalises "backward" (1/n on the inverse); rescale to ``norm``."""
    if norm == "backward" or n == 0:
        return out
    if norm == "ortho":
        f = math.sqrt(n) if inverse else 1.0 / math.sqrt(n)
    elif norm == "forward":
        f = float(n) if inverse else 1.0 / n
    else:
        raise ValueError(f"fft: norm must be 'backward', 'ortho' or 'forward', got {norm!r}")
    return out * f


def _nd(name: str, inverse: bool, real_out: bool = False) -> Callable[..., Any]:
    kernel = getattr(mx.fft, name)

    def transform(
        x: Any, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str = "backward"
    ) -> Any:
        _no_f64(x, name)
        if axes is None:
            axes = list(range(x.ndim)) if s is None else list(range(x.ndim - len(s), x.ndim))
        axes = [a % x.ndim for a in axes]
        if s is None:
            sizes = [x.shape[a] for a in axes]
            if real_out:
                sizes[-1] = 2 * (sizes[-1] - 1)
        else:
            sizes = [x.shape[a] if n == -1 else n for n, a in zip(s, axes)]
        out = kernel(x, s=sizes, axes=axes)
        return _scale(out, math.prod(sizes), norm, inverse)

    transform.__name__ = name
    return transform


def _one_d(nd: Callable[..., Any], name: str) -> Callable[..., Any]:
    def transform(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Any:
        return nd(x, s=None if n is None else [n], axes=[axis], norm=norm)

    transform.__name__ = name
    return transform


def make_fft(bind: Callable[[Callable[..., Any]], Callable[..., Any]]) -> SimpleNamespace:
    """The ``xp.fft`` namespace; ``bind`` puts each function on the device's stream."""
    fftn, ifftn = _nd("fftn", False), _nd("ifftn", True)
    rfftn, irfftn = _nd("rfftn", False), _nd("irfftn", True, real_out=True)
    fns = {
        "fftn": fftn, "ifftn": ifftn, "rfftn": rfftn, "irfftn": irfftn,
        "fft": _one_d(fftn, "fft"), "ifft": _one_d(ifftn, "ifft"),
        "rfft": _one_d(rfftn, "rfft"), "irfft": _one_d(irfftn, "irfft"),
    }  # fmt: skip
    return SimpleNamespace(**{k: bind(f) for k, f in fns.items()})
