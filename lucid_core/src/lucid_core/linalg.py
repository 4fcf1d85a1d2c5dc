"""The Array API ``linalg`` extension, with gradients (PyTorch's formulas and conventions).

Forwards run through the backend namespace's own ``xp.linalg``; a backend without the
extension raises ``NotImplementedError`` naming it. Backwards are written in Lucid ops, so
they run on every backend and are differentiable again. Decompositions with sign or gauge
freedom (``qr``, ``svd``, ``eigh``) give gradients of gauge-invariant losses, as in PyTorch.
"""

from __future__ import annotations

import builtins
import math
from typing import Any, Literal, NamedTuple

from . import _dtypes as dt
from ._autograd import Function
from ._forward_ad import jvp_from_vjp
from ._tensor import Tensor, _new_tensor, check_tensor
from ._typing import DTypeLike
from .amp import autocast_op
from .ops._helpers import binary_operands, expand_reduced, normalize_axes, sum_to
from .ops.complex import imag, real
from .ops.creation import eye, tril, triu, zeros_like
from .ops.elementwise import abs as abs_
from .ops.elementwise import conj, where
from .ops.manipulation import astype, broadcast_to, concat, expand_dims, matrix_transpose
from .ops.products import matmul, outer, tensordot, vecdot
from .ops.reduction import ACCUMULATE, widened
from .ops.reduction import max as max_
from .ops.reduction import min as min_
from .ops.reduction import sum as sum_

__all__ = [
    "cholesky", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv", "matmul", "matrix_norm",
    "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve",
    "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm",
    "EigResult", "EighResult", "QRResult", "SlogdetResult", "SVDResult",
]  # fmt: skip


class EigResult(NamedTuple):
    """``linalg.eig``'s results: complex eigenvalues (..., n) and unit-norm eigenvectors as columns (..., n, n)."""

    eigenvalues: Tensor
    eigenvectors: Tensor


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


# -- helpers -------------------------------------------------------------------------------


def _kernel(ctx: Any, name: str) -> Any:
    """``xp.linalg.<name>`` of the op's backend, or a clear error when it lacks the extension."""
    fn = getattr(getattr(ctx.xp, "linalg", None), name, None)
    if fn is None:
        raise NotImplementedError(
            f"linalg.{name}: backend {ctx.device.backend.name!r} does not provide linalg.{name} "
            "(its Array API namespace lacks the linalg extension or this function)"
        )
    return fn


class ShapeError(ValueError, RuntimeError):
    """A matrix of the wrong shape: a ValueError (the Array API's kind) that is also a RuntimeError, the class
    PyTorch raises for it, so code written for either catches it."""


class LinAlgError(RuntimeError):
    """A matrix that the operation cannot handle: singular (``inv``, ``solve``) or not positive-definite
    (``cholesky``); PyTorch's ``torch.linalg.LinAlgError``."""


_FAILURES = {
    "inv": "the inversion could not be completed because the input matrix is singular",
    "solve": "the solver failed because the input matrix is singular",
    "cholesky": "the factorization could not be completed because the input is not positive-definite",
}


def _guarded(ctx: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    """``xp.linalg.<name>(*args)``, a backend's report of a singular or indefinite matrix raised as
    :class:`LinAlgError` (NumPy raises its LinAlgError, MLX a RuntimeError naming the factorization)."""
    fn = _kernel(ctx, name)
    backend = ctx.device.backend
    try:
        out = fn(*args, **kwargs)
        if backend.capabilities.get("lazy"):
            backend.eval(out)  # a lazy library reports the failure when it computes: now, as PyTorch does
        return out
    except Exception as exc:
        text = str(exc).lower()
        if type(exc).__name__ == "LinAlgError" or "failed with error code" in text or "singular" in text:
            raise LinAlgError(f"linalg.{name}: {_FAILURES[name]} ({exc})") from exc
        raise


def _check_positive_definite(ctx: Any, factor: Any) -> None:
    """Raise where a backend returned a Cholesky factor without checking (MLX): a diagonal element that is
    not positive (or NaN) means the leading minor of that order is not positive-definite."""
    xp = ctx.xp
    n = factor.shape[-1]
    if n == 0:
        return
    d = xp.sum(factor * xp.eye(n, dtype=factor.dtype), axis=-1)
    good = (xp.real(d) if xp.isdtype(d.dtype, "complex floating") else d) > 0
    if bool(xp.all(good)):
        return
    bad = xp.logical_not(good)
    first = int(xp.min(xp.where(bad, xp.arange(n), n)))
    raise LinAlgError(
        f"linalg.cholesky: {_FAILURES['cholesky']} (the leading minor of order {first + 1} is not positive-definite)"
    )


def _matrix(x: Any, name: str, square: builtins.bool = False) -> Tensor:
    check_tensor(x, f"linalg.{name}")
    if x.ndim < 2:
        raise ShapeError(f"linalg.{name}: expected a matrix or a stack of matrices, got shape {x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"linalg.{name}: expected square matrices, got shape {x.shape}")
    if x.dtype.kind not in "fc":
        raise TypeError(f"linalg.{name}: expected a floating-point tensor, got {x.dtype.name}")
    return x


def _mH(x: Tensor) -> Tensor:  # noqa: N802 - the conjugate transpose, as ``mH`` in PyTorch
    t = matrix_transpose(x)
    return conj(t) if x.dtype.kind == "c" else t


def _eye(n: int, like: Tensor) -> Tensor:
    return eye(n, dtype=like.dtype, device=like.device)


def _col(v: Tensor) -> Tensor:
    return expand_dims(v, axis=-1)


def _row(v: Tensor) -> Tensor:
    return expand_dims(v, axis=-2)


def _keep(ctx: Any, *natives: Any) -> tuple[Any, ...]:
    """Remember a multi-output op's results: backward may need one the caller dropped."""
    ctx.kept = natives
    return natives


def _out(ctx: Any, i: int) -> Tensor:
    """Output ``i`` (graph-connected while alive; a constant rebuilt from the kept array otherwise)."""

    t = ctx.outputs[i]()
    return t if t is not None else _new_tensor(ctx.kept[i], ctx.device)


def _skew(x: Tensor) -> Tensor:
    return x - _mH(x)


def _offdiag_inverse_gaps(v: Tensor) -> Tensor:
    """``F[..., i, j] = 1 / (v_j - v_i)`` off the diagonal, 0 on it (the eigen/singular gap matrix)."""
    n = v.shape[-1]
    gaps = _row(v) - _col(v)
    on_diag = astype(_eye(n, real(v)), dt.bool)
    safe = where(on_diag, 1.0, gaps)
    return where(on_diag, 0.0, 1.0 / safe)


def _diag_embed(v: Tensor) -> Tensor:
    return _col(v) * _eye(v.shape[-1], v)


# -- inverse, determinant, solve -------------------------------------------------------------


class Inv(Function):
    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x):
        return _guarded(ctx, "inv", x)

    @staticmethod
    def backward(ctx, gy):
        y = ctx.output()
        yh = _mH(y)
        return -matmul(matmul(yh, gy), yh)


@autocast_op("linalg_inv")
def inv(x: Tensor, /) -> Tensor:
    """The inverse of each square matrix."""
    return Inv.apply(_matrix(x, "inv", square=True))


class Det(Function):
    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x):
        return _kernel(ctx, "det")(x)

    @staticmethod
    def backward(ctx, gy):
        (x,) = ctx.inputs
        d = ctx.output()
        scale = gy * conj(d) if d.dtype.kind == "c" else gy * d
        # a singular matrix gets gradient 0, as PyTorch's gives (d * inv(x) with d == 0), without inverting it
        singular = _col(_col(d == 0))
        safe = where(singular, _eye(x.shape[-1], x), x)
        return _col(_col(scale)) * _mH(inv(safe))


def det(x: Tensor, /) -> Tensor:
    """The determinant of each square matrix."""
    return Det.apply(_matrix(x, "det", square=True))


class Slogdet(Function):
    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x):
        r = _kernel(ctx, "slogdet")(x)
        return r[0], r[1]

    @staticmethod
    def backward(ctx, gsign, glogabs):
        (x,) = ctx.inputs
        if glogabs is None:
            return None
        return _col(_col(glogabs)) * _mH(inv(x))


def slogdet(x: Tensor, /) -> SlogdetResult:
    """Sign and log of the absolute determinant (differentiable in ``logabsdet``)."""
    s, la = Slogdet.apply(_matrix(x, "slogdet", square=True))
    return SlogdetResult(s, la)


class Solve(Function):
    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, a, b):
        return _guarded(ctx, "solve", a, b)

    @staticmethod
    def backward(ctx, gx):
        a, b = ctx.inputs
        x = ctx.output()
        vector = b.ndim == 1
        gb = solve(_mH(a), gx)
        ga = None
        need_a, need_b = ctx.needs_input_grad
        if need_a:
            if vector:
                xc = conj(x) if x.dtype.kind == "c" else x
                ga = -(_col(gb) * _row(xc))
            else:
                ga = -matmul(gb, _mH(x))
            ga = sum_to(ga, a.shape)
        return ga, (sum_to(gb, b.shape) if need_b else None)


@autocast_op("linalg_solve")
def solve(x1: Tensor, x2: Tensor, /) -> Tensor:
    """Solve ``x1 @ out = x2`` for square ``x1``; a 1-D ``x2`` is one right-hand-side vector."""
    a = _matrix(x1, "solve", square=True)
    if not isinstance(x2, Tensor):
        raise TypeError(f"linalg.solve: x2 must be a Tensor, got {type(x2).__name__}")
    if x2.dtype is not a.dtype:
        target = dt.result_type(a, x2)
        a, x2 = astype(a, target, copy=False), astype(x2, target, copy=False)
    k = x2.shape[0] if x2.ndim == 1 else x2.shape[-2] if x2.ndim >= 2 else None
    if k != a.shape[-1]:
        raise ShapeError(
            f"linalg.solve: x1 has shape {x1.shape} but x2 has shape {x2.shape}; x2 needs {a.shape[-1]} rows"
        )
    return Solve.apply(a, x2)


# -- decompositions --------------------------------------------------------------------------


class Cholesky(Function):
    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x, upper):
        out = _guarded(ctx, "cholesky", x, upper=upper)
        _check_positive_definite(ctx, out)
        return out

    @staticmethod
    def backward(ctx, gy):

        upper = ctx.inputs[1]
        ll = ctx.output()
        if upper:
            ll, gy = _mH(ll), _mH(gy)
        phi = tril(matmul(_mH(ll), gy))
        n = ll.shape[-1]
        phi = phi - 0.5 * phi * _eye(n, phi)
        linv = inv(ll)
        g = matmul(matmul(_mH(linv), phi), linv)
        return 0.5 * (g + _mH(g)), None


@autocast_op("linalg_cholesky")
def cholesky(x: Tensor, /, *, upper: builtins.bool = False) -> Tensor:
    """The Cholesky factor of each symmetric (Hermitian) positive-definite matrix (lower unless ``upper``)."""
    return Cholesky.apply(_matrix(x, "cholesky", square=True), builtins.bool(upper))


class QR(Function):
    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x, mode):
        r = _kernel(ctx, "qr")(x, mode=mode)
        return _keep(ctx, r[0], r[1])

    @staticmethod
    def backward(ctx, gq, gr):

        x, mode = ctx.inputs
        q, r = _out(ctx, 0), _out(ctx, 1)
        m, n = x.shape[-2], x.shape[-1]
        if m < n or (mode == "complete" and m > n):
            raise NotImplementedError(
                f"linalg.qr: the gradient is defined for mode='reduced' with rows >= columns; got shape {x.shape} "
                f"and mode={mode!r}"
            )
        gq = zeros_like(q) if gq is None else gq
        gr = zeros_like(r) if gr is None else gr
        mm = matmul(r, _mH(gr)) - matmul(_mH(gq), q)
        low = tril(mm, k=-1)
        sym = low + _mH(low) + real(mm) * _eye(n, real(mm))
        b = gq + matmul(q, sym)
        return _mH(solve(r, _mH(b))), None


@autocast_op("linalg_qr", "qr")
def qr(x: Tensor, /, *, mode: Literal["reduced", "complete"] = "reduced") -> QRResult:
    """The QR decomposition ``x = Q @ R`` (``mode="reduced"`` or ``"complete"``)."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"linalg.qr: mode must be 'reduced' or 'complete', got {mode!r}")
    q, r = QR.apply(_matrix(x, "qr"), mode)
    return QRResult(q, r)


class Eigh(Function):
    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x):
        r = _kernel(ctx, "eigh")(x)
        return _keep(ctx, r[0], r[1])

    @staticmethod
    def backward(ctx, gl, gv):
        lam, v = _out(ctx, 0), _out(ctx, 1)
        inner = zeros_like(v) if gv is None else 0.5 * _skew(matmul(_mH(v), gv)) * _offdiag_inverse_gaps(lam)
        if gl is not None:
            inner = inner + _diag_embed(astype(gl, v.dtype))
        return matmul(matmul(v, inner), _mH(v))


@autocast_op("linalg_eigh")
def eigh(x: Tensor, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of each symmetric (Hermitian) matrix."""
    lam, v = Eigh.apply(_matrix(x, "eigh", square=True))
    return EighResult(lam, v)


@autocast_op("linalg_eigvalsh")
def eigvalsh(x: Tensor, /) -> Tensor:
    """Eigenvalues (ascending) of each symmetric (Hermitian) matrix."""
    return eigh(x).eigenvalues


def _complex_for(ctx: Any, x: Any, name: str) -> Any:
    """The complex dtype of ``x``'s precision (the standard's dtype for eig's results); an error, not a
    narrower result, where the backend has no 128-bit complex for a float64 input (MLX)."""
    xp = ctx.xp
    double = getattr(xp, "complex128", None)
    if x.dtype != xp.float64 and (double is None or x.dtype != double):
        return xp.complex64
    if double is None:
        raise TypeError(
            f"linalg.{name}: a float64 input needs complex128 results, which backend "
            f"{ctx.device.backend.name!r} does not have; cast the input to float32 for complex64 results"
        )
    return double


def _as(ctx: Any, a: Any, dtype: Any) -> Any:
    return a if a.dtype == dtype else ctx.xp.astype(a, dtype)


def _eig_backward(x: Tensor, lam: Tensor, v: Tensor, gl: Any, gv: Any) -> Tensor:
    """The gradient of a general eigendecomposition ``x = V diag(L) V^-1`` (unit-norm columns), as
    PyTorch's: ``V^-H (diag(gL) + (V^H gV - V^H V diag(Re diag(V^H gV))) / conj(E)) V^H`` with
    ``E[i, j] = L_j - L_i`` (1 on the diagonal); its real part for a real ``x``. Eigenvectors are defined up
    to a phase per column, so a loss that depends on that phase has no gradient: it raises, as PyTorch's."""
    vh = _mH(v)
    n = v.shape[-1]
    if gv is None:
        g = zeros_like(v)
    else:
        vhgv = matmul(vh, gv)
        d = diagonal(vhgv)
        phase = builtins.float(max_(abs_(imag(d))).item())
        if phase > 1e-6 * builtins.max(1.0, builtins.float(max_(abs_(d)).item())):
            raise ValueError(
                "linalg.eig: the loss depends on the eigenvectors' phase (each is defined up to a factor "
                "e^(i phi)), so its gradient is not defined; use a phase-invariant function such as abs(v)"
            )
        g = vhgv - matmul(vh, v * _row(astype(real(d), v.dtype)))
        lc_ = conj(lam)
        on_diag = astype(_eye(n, real(lam)), dt.bool)
        g = g / where(on_diag, 1.0, _row(lc_) - _col(lc_))
    if gl is not None:
        g = g + _diag_embed(astype(gl, v.dtype))
    ga = solve(vh, matmul(g, vh))
    return real(ga) if x.dtype.kind == "f" else ga


class Eig(Function):
    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x):
        want = _complex_for(ctx, x, "eig")
        w, v = _kernel(ctx, "eig")(x)
        return _keep(ctx, _as(ctx, w, want), _as(ctx, v, want))

    @staticmethod
    def backward(ctx, gl, gv):
        return _eig_backward(ctx.inputs[0], _out(ctx, 0), _out(ctx, 1), gl, gv)


class Eigvals(Function):
    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x):
        want = _complex_for(ctx, x, "eigvals")
        return _as(ctx, _kernel(ctx, "eigvals")(x), want)

    @staticmethod
    def backward(ctx, gl):
        x = ctx.inputs[0]
        lam, v = eig(x)  # the eigenvectors the gradient needs, in Lucid ops (higher orders work)
        return _eig_backward(x, lam, v, gl, None)


@autocast_op("linalg_eig")
def eig(x: Tensor, /) -> EigResult:
    """Eigenvalues and eigenvectors (unit-norm columns) of each square matrix, complex even for real input
    (the standard's ``linalg.eig``); differentiable as in PyTorch, for distinct eigenvalues."""
    w, v = Eig.apply(_matrix(x, "eig", square=True))
    return EigResult(w, v)


@autocast_op("linalg_eigvals")
def eigvals(x: Tensor, /) -> Tensor:
    """Eigenvalues of each square matrix, complex; differentiable (distinct eigenvalues)."""
    return Eigvals.apply(_matrix(x, "eigvals", square=True))


class SVD(Function):
    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x, full_matrices):
        r = _kernel(ctx, "svd")(x, full_matrices=full_matrices)
        return _keep(ctx, r[0], r[1], r[2])

    @staticmethod
    def backward(ctx, gu, gs, gvh):
        x, full = ctx.inputs
        u, s, vh = _out(ctx, 0), _out(ctx, 1), _out(ctx, 2)
        m, n = x.shape[-2], x.shape[-1]
        k = min(m, n)
        if (gu is not None or gvh is not None) and full and m != n:
            raise NotImplementedError(
                "linalg.svd: gradients of U or Vh need full_matrices=False for non-square inputs "
                f"(shape {x.shape}); only S is differentiable with full_matrices=True"
            )
        if full and m != n:
            u, vh = u[..., :, :k], vh[..., :k, :]
        if x.dtype.kind == "c" and (gu is not None or gvh is not None):
            raise NotImplementedError("linalg.svd: gradients of U or Vh are implemented for real inputs only")
        sc = astype(s, x.dtype)
        inner = zeros_like(matmul(_mH(u), u)) if gs is None else _diag_embed(astype(gs, x.dtype))
        v = _mH(vh)
        extra = None
        if gu is not None or gvh is not None:
            f = _offdiag_inverse_gaps(s * s)
            f = astype(f, x.dtype)
            if gu is not None:
                j = f * _skew(matmul(_mH(u), gu))
                inner = inner + j * _row(sc)
                if m > k:
                    proj = gu - matmul(u, matmul(_mH(u), gu))
                    extra = matmul(proj / _row(sc), vh)
            if gvh is not None:
                gv = _mH(gvh)
                kk = f * _skew(matmul(vh, gv))
                inner = inner + _col(sc) * kk
                if n > k:
                    proj = gv - matmul(v, matmul(vh, gv))
                    term = matmul(u, _mH(proj) / _col(sc))
                    extra = term if extra is None else extra + term
        g = matmul(matmul(u, inner), vh)
        return (g if extra is None else g + extra), None


@autocast_op("linalg_svd", "svd")
def svd(x: Tensor, /, *, full_matrices: builtins.bool = True) -> SVDResult:
    """The singular value decomposition ``x = U @ diag(S) @ Vh`` (S descending)."""
    u, s, vh = SVD.apply(_matrix(x, "svd"), builtins.bool(full_matrices))
    return SVDResult(u, s, vh)


@autocast_op("linalg_svdvals")
def svdvals(x: Tensor, /) -> Tensor:
    """The singular values of each matrix, descending."""
    return svd(x, full_matrices=False).S


class Pinv(Function):
    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x, rtol):
        return _kernel(ctx, "pinv")(x, rtol=rtol)

    @staticmethod
    def backward(ctx, gp):
        a = ctx.inputs[0]
        p = ctx.output()
        ph, pa, ap = _mH(p), matmul(p, a), matmul(a, p)
        m, n = a.shape[-2], a.shape[-1]
        g = -matmul(matmul(ph, gp), ph)
        gph = _mH(gp)
        g = g + matmul(matmul(_eye(m, a) - ap, gph), matmul(p, ph))
        g = g + matmul(matmul(matmul(ph, p), gph), _eye(n, a) - pa)
        return g, None


def pinv(x: Tensor, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse (gradient exact where the rank is constant)."""
    if isinstance(rtol, Tensor):
        rtol = rtol._data
    return Pinv.apply(_matrix(x, "pinv"), rtol)


class MatrixRank(Function):
    native = True
    differentiable = False

    @staticmethod
    def forward(ctx, x, rtol):
        return _kernel(ctx, "matrix_rank")(x, rtol=rtol)


@autocast_op("linalg_matrix_rank")
def matrix_rank(x: Tensor, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """The number of singular values above ``rtol * max(S)`` (default ``max(M, N) * eps``)."""
    if isinstance(rtol, Tensor):
        rtol = rtol._data
    return MatrixRank.apply(_matrix(x, "matrix_rank"), rtol)


# -- products and composites ------------------------------------------------------------------


class Cross(Function):
    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, a, b, axis):
        return _kernel(ctx, "cross")(a, b, axis=axis)

    @staticmethod
    def backward(ctx, gy):
        a, b, axis = ctx.inputs
        c = (lambda t: conj(t)) if gy.dtype.kind == "c" else (lambda t: t)
        need_a, need_b, _ = ctx.needs_input_grad
        ga = sum_to(cross(c(b), gy, axis=axis), a.shape) if need_a else None
        gb = sum_to(cross(gy, c(a), axis=axis), b.shape) if need_b else None
        return ga, gb, None


def cross(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``axis`` (other axes broadcast)."""

    x1, x2 = binary_operands(x1, x2, "cross")
    if not isinstance(x1, Tensor) or not isinstance(x2, Tensor):
        raise TypeError("linalg.cross: operands must be Tensors")
    if axis >= 0:
        raise ValueError(f"linalg.cross: axis must be negative (counted from the last axis), got {axis}")
    if -axis > min(x1.ndim, x2.ndim) or x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(
            f"linalg.cross: axis {axis} must have size 3 in both inputs; got shapes {x1.shape} and {x2.shape}"
        )
    return Cross.apply(x1, x2, axis)


def diagonal(x: Tensor, /, *, offset: int = 0) -> Tensor:
    """The ``offset``-th diagonal of each matrix (over the last two axes)."""
    if not isinstance(x, Tensor) or x.ndim < 2:
        raise ValueError(f"linalg.diagonal: expected a stack of matrices, got {getattr(x, 'shape', x)!r}")
    if x.dtype is dt.bool:
        # the selection products below need numbers; each output sums one element, so int8 is exact
        return astype(diagonal(astype(x, dt.int8), offset=offset), dt.bool)
    m, n = x.shape[-2], x.shape[-1]
    rows0, cols0 = max(0, -offset), max(0, offset)
    length = max(0, min(m - rows0, n - cols0))
    # differentiable through products with 0/1 selection matrices (the gradient scatters back)
    sel_r = eye(m, length, k=-rows0, dtype=x.dtype, device=x.device)
    sel_c = eye(n, length, k=-cols0, dtype=x.dtype, device=x.device)
    picked = matmul(matrix_transpose(sel_r), x) if length else None
    # dtype=x.dtype: a sum of small integers would otherwise widen (int8 -> int64), and the diagonal keeps x's dtype
    if picked is None:
        return sum_(x[..., :0, :0], axis=-1, dtype=x.dtype)
    return sum_(matmul(picked, sel_c) * _eye(length, x), axis=-1, dtype=x.dtype)


def trace(x: Tensor, /, *, offset: int = 0, dtype: DTypeLike = None) -> Tensor:
    """The sum of the ``offset``-th diagonal of each matrix."""
    return sum_(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def matrix_power(x: Tensor, n: int, /) -> Tensor:
    """``x`` multiplied by itself ``n`` times (the identity for 0, powers of the inverse for n < 0)."""
    x = _matrix(x, "matrix_power", square=True) if x.dtype.kind in "fc" else x
    if not isinstance(n, int) or isinstance(n, builtins.bool):
        raise TypeError(f"linalg.matrix_power: n must be an int, got {type(n).__name__}")
    if n == 0:
        return broadcast_to(eye(x.shape[-1], dtype=x.dtype, device=x.device), x.shape) * 1
    base = inv(x) if n < 0 else x
    n = abs(n)
    out = None
    while n:
        if n & 1:
            out = base if out is None else matmul(out, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    assert out is not None
    return out


class _Norm2(Function):
    """The Euclidean norm along axes, with gradient 0 (not NaN) at the zero vector, as in PyTorch."""

    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x, axes, keepdims):
        xp = ctx.xp
        ax = xp.abs(x)
        return xp.sqrt(xp.sum(ax * ax, axis=axes, keepdims=keepdims))

    @staticmethod
    def backward(ctx, gy):

        x, axes, keepdims = ctx.inputs
        y = ctx.output()
        shape = x.shape
        yy = expand_reduced(y, shape, axes, keepdims)
        gg = expand_reduced(gy, shape, axes, keepdims)
        safe = where(yy == 0, 1.0, yy)
        return where(yy == 0, 0.0, gg / safe) * x, None, None


class _PNorm(Function):
    """``sum(|x| ** p) ** (1 / p)`` for a finite ``p`` other than 0, 1 and 2, with PyTorch's gradient at zeros.

    The gradient is ``sgn(x) |x|**(p-1) * gy / norm**(p-1)``: 0 for a zero vector, and for p < 1 also 0 at
    each zero element (where ``|x|**(p-1)`` is infinite), instead of the NaN the composed formula gives.
    """

    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x, axes, keepdims, p):
        xp = ctx.xp
        return xp.pow(xp.sum(xp.pow(xp.abs(x), p), axis=axes, keepdims=keepdims), 1.0 / p)

    @staticmethod
    def backward(ctx, gy):
        x, axes, keepdims, p = ctx.inputs
        shape = x.shape
        norm = expand_reduced(ctx.output(), shape, axes, keepdims)
        gg = expand_reduced(gy, shape, axes, keepdims)
        a = abs_(x)
        sgn = where(a == 0, 0.0, x / where(a == 0, 1.0, a))  # x / |x| (complex too), 0 at 0
        if p < 1:
            scaled = where(a == 0, 0.0, where(a == 0, 1.0, a) ** (p - 1))
            return sgn * scaled * gg * norm ** (1 - p), None, None, None
        zero = norm == 0
        scale = where(zero, 0.0, gg / where(zero, 1.0, norm) ** (p - 1))
        return sgn * a ** (p - 1) * scale, None, None, None


def vector_norm(
    x: Tensor,
    /,
    *,
    axis: int | tuple[int, ...] | None = None,
    keepdims: builtins.bool = False,
    ord: float = 2,  # noqa: A002
) -> Tensor:
    """The ``ord``-norm over ``axis`` (all axes by default); ``ord`` in ``inf``, ``-inf``, 0 or any nonzero p."""

    if not isinstance(x, Tensor) or x.dtype.kind not in "fc":
        raise TypeError(f"linalg.vector_norm: expected a floating-point Tensor, got {getattr(x, 'dtype', x)!r}")
    axes = normalize_axes(axis, x.ndim, "linalg.vector_norm")
    if x.dtype in ACCUMULATE:
        return widened(vector_norm, x, axis=axis, keepdims=keepdims, ord=ord)
    if ord == 2:
        return _Norm2.apply(x, axes, builtins.bool(keepdims))
    a = abs_(x)
    if ord == math.inf:
        return max_(a, axis=axes, keepdims=keepdims)
    if ord == -math.inf:
        return min_(a, axis=axes, keepdims=keepdims)
    if ord == 0:
        return sum_(astype(a != 0, a.dtype), axis=axes, keepdims=keepdims)
    if ord == 1:
        return sum_(a, axis=axes, keepdims=keepdims)
    return _PNorm.apply(x, axes, builtins.bool(keepdims), float(ord))


def matrix_norm(
    x: Tensor,
    /,
    *,
    keepdims: builtins.bool = False,
    ord: float | Literal["fro", "nuc"] | None = "fro",  # noqa: A002
) -> Tensor:
    """Matrix norm over the last two axes: ``"fro"``, ``"nuc"``, 1, -1, 2, -2, ``inf``, ``-inf``."""
    x = _matrix(x, "matrix_norm")
    if ord in ("fro", None):
        out = vector_norm(x, axis=(-2, -1))
    elif ord == "nuc":
        out = sum_(svdvals(x), axis=-1)
    elif ord in (2, -2):
        s = svdvals(x)
        out = max_(s, axis=-1) if ord == 2 else min_(s, axis=-1)
    elif ord in (1, -1):
        col = sum_(abs_(x), axis=-2)
        out = max_(col, axis=-1) if ord == 1 else min_(col, axis=-1)
    elif ord in (math.inf, -math.inf):
        row = sum_(abs_(x), axis=-1)
        out = max_(row, axis=-1) if ord > 0 else min_(row, axis=-1)
    else:
        raise ValueError(f"linalg.matrix_norm: ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, got {ord!r}")
    if keepdims:
        out = expand_dims(expand_dims(out, axis=-1), axis=-1)
    return out


# -- beyond the standard: PyTorch's torch.linalg (triangular solves, LU, least squares, matrix_exp) ----


def solve_triangular(
    a: Tensor, b: Tensor, /, *, upper: builtins.bool, left: builtins.bool = True, unitriangular: builtins.bool = False
) -> Tensor:
    """Solve ``a @ x = b`` (``left``) or ``x @ a = b`` for triangular ``a``; only its triangle is read
    (and not its diagonal when ``unitriangular``), so the gradient of ``a`` lies in that triangle."""
    a = _matrix(a, "solve_triangular", square=True)
    b = _matrix(b, "solve_triangular")
    n = a.shape[-1]
    t = triu(a) if upper else tril(a)
    if unitriangular:
        t = t - t * _eye(n, t) + _eye(n, t)
    if left:
        if b.shape[-2] != n:
            raise ValueError(
                f"linalg.solve_triangular: a has shape {a.shape} but b has shape {b.shape}; b needs {n} rows"
            )
        return solve(t, b)
    if b.shape[-1] != n:
        raise ValueError(
            f"linalg.solve_triangular: a has shape {a.shape} but b has shape {b.shape}; b needs {n} columns"
        )
    return matrix_transpose(solve(matrix_transpose(t), matrix_transpose(b)))


class LUResult(NamedTuple):
    """``lu``'s results: ``A = P @ L @ U``."""

    P: Tensor
    L: Tensor
    U: Tensor


def _lu_native(xp: Any, a: Any) -> tuple[Any, Any, Any, Any]:
    """Gaussian elimination with partial pivoting (LAPACK getrf's choice of pivots), batched, in standard
    functions: (P, L, U, pivots) with ``a = P L U`` and 1-based int32 pivots. Row swaps are products with
    0/1 permutation matrices, exact in floating point; a zero pivot column is skipped, as getrf does."""
    m, n = a.shape[-2], a.shape[-1]
    k = builtins.min(m, n)
    dtype = a.dtype
    rows_i = xp.arange(m)
    rows = xp.reshape(rows_i, (m, 1))
    cols = xp.reshape(xp.arange(n), (1, n))
    eye_m = xp.eye(m, dtype=dtype)
    perm = xp.broadcast_to(eye_m, (*a.shape[:-2], m, m))
    pivots = []
    for j in range(k):
        col = xp.abs(a[..., :, j])
        col = xp.where(rows_i >= j, col, -xp.ones_like(col))
        p = xp.argmax(col, axis=-1)
        pivots.append(p)
        ej = xp.astype(rows_i == j, dtype)
        ep = xp.astype(rows_i == xp.expand_dims(p, axis=-1), dtype)
        ejc, epc = xp.expand_dims(ej, axis=-1), xp.expand_dims(ep, axis=-1)
        ejr, epr = xp.expand_dims(ej, axis=-2), xp.expand_dims(ep, axis=-2)
        swap = eye_m - ejc * ejr - epc * epr + ejc * epr + epc * ejr
        a = xp.matmul(swap, a)
        perm = xp.matmul(perm, swap)
        pivot = a[..., j, j]
        nonzero = pivot != 0
        safe = xp.where(nonzero, pivot, xp.ones_like(pivot))
        keep = xp.logical_and(rows_i > j, xp.expand_dims(nonzero, axis=-1))
        mult = xp.where(keep, a[..., :, j] / xp.expand_dims(safe, axis=-1), xp.zeros_like(a[..., :, j]))
        right = xp.where(xp.arange(n) > j, a[..., j, :], xp.zeros_like(a[..., j, :]))
        a = a - xp.expand_dims(mult, axis=-1) * xp.expand_dims(right, axis=-2)
        a = xp.where(xp.logical_and(cols == j, rows > j), xp.expand_dims(mult, axis=-1), a)
    low = xp.where(rows > cols, a, xp.zeros_like(a))[..., :, :k] + xp.eye(m, k, dtype=dtype)
    up = xp.where(rows <= cols, a, xp.zeros_like(a))[..., :k, :]
    piv = xp.stack(pivots, axis=-1) if pivots else xp.zeros((*a.shape[:-2], 0), dtype=xp.int64)
    return perm, low, up, xp.astype(piv + 1, xp.int32)


class LU(Function):
    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x):
        return _keep(ctx, *_lu_native(ctx.xp, x))

    @staticmethod
    def backward(ctx, gp, gl, gu, gpiv):
        x = ctx.inputs[0]
        if x.shape[-1] != x.shape[-2]:
            raise NotImplementedError(
                f"linalg.lu: the gradient is implemented for square matrices; got shape {x.shape}"
            )
        p, ll, uu = _out(ctx, 0), _out(ctx, 1), _out(ctx, 2)
        inner = zeros_like(x)
        if gl is not None:
            inner = inner + tril(matmul(_mH(ll), gl), k=-1)
        if gu is not None:
            inner = inner + triu(matmul(gu, _mH(uu)))
        # A = P L U: gA = P L^-H (tril(L^H gL, -1) + triu(gU U^H)) U^-H
        left = solve_triangular(_mH(ll), inner, upper=True, unitriangular=True)
        g = solve_triangular(_mH(uu), left, upper=False, left=False)
        return matmul(p, g)


def lu(x: Tensor, /) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The LU decomposition with partial pivoting: (P, L, U, pivots), ``x = P @ L @ U``; pivots 1-based."""
    p, ll, uu, piv = LU.apply(_matrix(x, "lu"))
    return p.detach(), ll, uu, piv.detach()


def lu_pack(ll: Tensor, uu: Tensor) -> Tensor:
    """L's strict lower triangle and U's upper triangle in one (m, n) matrix (LAPACK's packed LU)."""
    m, k, n = ll.shape[-2], ll.shape[-1], uu.shape[-1]
    if n > k:
        ll = concat([ll, _zeros((*ll.shape[:-1], n - k), ll)], axis=-1)
    if m > k:
        uu = concat([uu, _zeros((*uu.shape[:-2], m - k, n), uu)], axis=-2)
    return tril(ll, k=-1) + triu(uu)


def _zeros(shape: tuple[int, ...], like: Tensor) -> Tensor:
    from .ops.creation import zeros

    return zeros(shape, dtype=like.dtype, device=like.device)


def permutation_from_pivots(pivots: Tensor, m: int, like: Tensor) -> Tensor:
    """The (m, m) permutation P of ``A = P L U`` from 1-based LAPACK pivots (applied swap by swap)."""
    from .ops.creation import arange

    rows = arange(m, device=like.device)
    eye_m = _eye(m, like)
    perm = broadcast_to(eye_m, (*pivots.shape[:-1], m, m))
    piv = astype(pivots, dt.int64) - 1
    for j in range(pivots.shape[-1]):
        ej = astype(rows == j, like.dtype)
        ep = astype(rows == expand_dims(piv[..., j], axis=-1), like.dtype)
        swap = eye_m - _col(ej) * _row(ej) - _col(ep) * _row(ep) + _col(ej) * _row(ep) + _col(ep) * _row(ej)
        perm = matmul(perm, swap)
    return perm


def lu_solve(
    lu_: Tensor, pivots: Tensor, b: Tensor, /, *, left: builtins.bool = True, adjoint: builtins.bool = False
) -> Tensor:
    """Solve ``A x = b`` (``A^H x = b`` when ``adjoint``; ``x A = b`` unless ``left``) from ``lu_factor``'s
    packed LU and pivots; differentiable in ``lu_`` and ``b``."""
    n = lu_.shape[-1]
    p = permutation_from_pivots(pivots, n, lu_)
    ll = tril(lu_, k=-1) + _eye(n, lu_)
    uu = triu(lu_)
    if not left:  # x A = b  <=>  A^H x^H = b^H
        return _mH(lu_solve(lu_, pivots, _mH(b), left=True, adjoint=not adjoint))
    if adjoint:  # A^H = U^H L^H P^T
        y = solve_triangular(_mH(uu), b, upper=False)
        y = solve_triangular(_mH(ll), y, upper=True, unitriangular=True)
        return matmul(p, y)
    y = matmul(matrix_transpose(p), b)
    y = solve_triangular(ll, y, upper=False, unitriangular=True)
    return solve_triangular(uu, y, upper=True)


def matrix_exp(x: Tensor, /) -> Tensor:
    """The matrix exponential by scaling and squaring: a degree-18 Taylor polynomial of ``x / 2**s`` with
    ``||x / 2**s||_1 <= 1/2`` (truncation below 1e-22), squared ``s`` times; differentiable through its
    products, to the same precision."""
    x = _matrix(x, "matrix_exp", square=True)
    n = x.shape[-1]
    if n == 0 or x.size == 0:
        return x * 1
    norm1 = builtins.float(max_(sum_(abs_(x), axis=-2)).item())
    s = builtins.max(0, math.ceil(math.log2(norm1 / 0.5))) if norm1 > 0.5 and math.isfinite(norm1) else 0
    a = x / (2.0**s)
    ident = _eye(n, x)
    e = ident + a / 18.0
    for k in range(17, 0, -1):
        e = ident + matmul(a, e) / builtins.float(k)
    for _ in range(s):
        e = matmul(e, e)
    return e


@autocast_op("linalg_householder_product")
def householder_product(a: Tensor, tau: Tensor, /) -> Tensor:
    """The first ``n`` columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^H`` with ``v_i`` the i-th column
    of ``a`` below its diagonal and 1 on it (LAPACK's orgqr); differentiable."""
    a = _matrix(a, "householder_product")
    m, n = a.shape[-2], a.shape[-1]
    k = tau.shape[-1]
    if n > m or k > n:
        raise ValueError(
            f"linalg.householder_product: expected rows >= columns >= len(tau); got a {a.shape} and tau {tau.shape}"
        )
    eye_mn = eye(m, n, dtype=a.dtype, device=a.device)
    v_all = tril(a, k=-1) + eye_mn
    q = broadcast_to(eye_mn, a.shape) * 1
    for i in range(k - 1, -1, -1):
        v = v_all[..., :, i] * astype(_arange_mask(m, i, a), a.dtype)
        vc = _col(v)
        q = q - _col(_col(tau[..., i])) * matmul(vc, matmul(_mH(vc), q))
    return q


def _arange_mask(m: int, i: int, like: Tensor) -> Tensor:
    from .ops.creation import arange

    return arange(m, device=like.device) >= i


def vander(x: Tensor, /, *, n: int | None = None) -> Tensor:
    """The Vandermonde matrix of the last axis: columns ``x**0, x**1, ..., x**(n-1)`` (``n`` = len(x))."""
    from .ops.manipulation import concat as concat_
    from .ops.reduction import cumulative_prod

    check_tensor(x, "linalg.vander")
    if x.ndim < 1:
        raise ValueError(f"linalg.vander: expected at least one axis, got shape {x.shape}")
    n = x.shape[-1] if n is None else n
    if n < 1:
        raise ValueError(f"linalg.vander: n must be at least 1, got {n}")
    ones = _col(x * 0 + 1)
    if n == 1:
        return ones
    powers = cumulative_prod(broadcast_to(_col(x), (*x.shape, n - 1)), axis=-1)
    return concat_([ones, powers], axis=-1)


class LstsqResult(NamedTuple):
    """``lstsq``'s results, PyTorch's fields (``residuals``/``rank``/``singular_values`` may be empty)."""

    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


@autocast_op("linalg_lstsq")
def lstsq(a: Tensor, b: Tensor, /, *, rcond: float | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """The least-squares solution of ``a @ x = b`` (minimum norm), ``a``'s rank and its singular values:
    ``x = pinv(a) @ b``, differentiable where the rank is constant."""
    a = _matrix(a, "lstsq")
    check_tensor(b, "linalg.lstsq")
    vector = b.ndim == a.ndim - 1
    bb = _col(b) if vector else b
    if bb.shape[-2] != a.shape[-2]:
        raise ValueError(f"linalg.lstsq: a has shape {a.shape} but b has shape {b.shape}; b needs {a.shape[-2]} rows")
    if bb.dtype is not a.dtype:
        target = dt.result_type(a, bb)
        a, bb = astype(a, target), astype(bb, target)
    m, n = a.shape[-2], a.shape[-1]
    eps = dt.finfo(a.dtype).eps
    tol = builtins.max(m, n) * eps if rcond is None else rcond
    s = svdvals(a).detach()
    x = matmul(pinv(a, rtol=tol), bb)
    smax = max_(s, axis=-1, keepdims=True) if s.shape[-1] else s
    rank = sum_(astype(s > tol * smax, dt.int64), axis=-1) if s.shape[-1] else astype(s[..., :0], dt.int64)
    return (x[..., 0] if vector else x), rank, s


@autocast_op("linalg_cond")
def cond(x: Tensor, /, *, p: float | str | None = None) -> Tensor:
    """The condition number in norm ``p`` (2 by default: the ratio of extreme singular values)."""
    x = _matrix(x, "cond")
    if p in (None, 2, -2):
        s = svdvals(x)
        big, small = max_(s, axis=-1), min_(s, axis=-1)
        return big / small if p in (None, 2) else small / big
    x = _matrix(x, "cond", square=True)
    return matrix_norm(x, ord=p) * matrix_norm(inv(x), ord=p)  # type: ignore[arg-type]


__all__ += [
    "LinAlgError", "ShapeError", "LUResult", "LstsqResult", "cond", "householder_product", "lstsq", "lu", "lu_pack",
    "lu_solve", "matrix_exp", "permutation_from_pivots", "solve_triangular", "vander",
]  # fmt: skip


# -- PyTorch's main-namespace spellings (torch.det, torch.svd(some=)...) and their Tensor methods --------


class _TorchSVD(NamedTuple):
    U: Tensor
    S: Tensor
    V: Tensor


class _TriangularSolve(NamedTuple):
    solution: Tensor
    cloned_coefficient: Tensor


def _t_det(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's argument names
    """``torch.det``."""
    return det(input)


def _t_logdet(input: Tensor) -> Tensor:  # noqa: A002
    """log(det): NaN for a negative determinant, -inf for a singular matrix (``torch.logdet``)."""
    sign, logabs = slogdet(input)
    return where(sign < 0, math.nan, logabs)


def _t_slogdet(input: Tensor) -> SlogdetResult:  # noqa: A002
    """``torch.slogdet``: (sign, logabsdet)."""
    return slogdet(input)


def _t_inverse(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.inverse``: the inverse of each square matrix."""
    return inv(input)


def _t_pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:  # noqa: A002
    """``torch.pinverse``: the pseudo-inverse, singular values below ``rcond * max(S)`` dropped."""
    return pinv(input, rtol=rcond)


def _t_cholesky(input: Tensor, upper: builtins.bool = False) -> Tensor:  # noqa: A002
    """``torch.cholesky``: the Cholesky factor (lower unless ``upper``)."""
    return cholesky(input, upper=upper)


def _t_cholesky_solve(input: Tensor, input2: Tensor, upper: builtins.bool = False) -> Tensor:  # noqa: A002
    """Solve ``A X = input`` with ``A = L L^H`` given its Cholesky factor ``input2`` (``torch.cholesky_solve``)."""
    ll = _mH(input2) if upper else input2
    y = solve_triangular(ll, input, upper=False)
    return solve_triangular(_mH(ll), y, upper=True)


def _t_cholesky_inverse(input: Tensor, upper: builtins.bool = False) -> Tensor:  # noqa: A002
    """The inverse of ``L L^H`` from its Cholesky factor (``torch.cholesky_inverse``)."""
    n = input.shape[-1]
    return _t_cholesky_solve(broadcast_to(_eye(n, input), input.shape) * 1, input, upper)


def _t_svd(input: Tensor, some: builtins.bool = True, compute_uv: builtins.bool = True) -> _TorchSVD:  # noqa: A002
    """``torch.svd``: (U, S, V) with V (not Vh); reduced unless ``some=False``; U and V zero without compute_uv."""
    u, s, vh = svd(input, full_matrices=not some)
    if not compute_uv:
        from .ops.creation import zeros

        m, n = input.shape[-2], input.shape[-1]
        sh = input.shape[:-2]
        return _TorchSVD(
            zeros((*sh, m, m), dtype=input.dtype, device=input.device),
            s.detach(),
            zeros((*sh, n, n), dtype=input.dtype, device=input.device),
        )
    return _TorchSVD(u, s, _mH(vh))


def _t_qr(input: Tensor, some: builtins.bool = True) -> QRResult:  # noqa: A002
    """``torch.qr``: reduced (``some=True``) or complete QR."""
    return qr(input, mode="reduced" if some else "complete")


def _t_lu(A: Tensor, pivot: builtins.bool = True, get_infos: builtins.bool = False) -> tuple[Tensor, ...]:  # noqa: N803
    """``torch.lu``: (LU, pivots) in LAPACK's packed form, plus ``infos`` when asked."""
    if not pivot:
        raise NotImplementedError("lu: pivot=False is CUDA-only in PyTorch and not provided")
    _, ll, uu, piv = lu(A)
    packed = lu_pack(ll, uu)
    if not get_infos:
        return packed, piv
    from .ops.creation import zeros

    return packed, piv, zeros(A.shape[:-2], dtype=dt.int32, device=A.device)


def _t_lu_unpack(
    LU_data: Tensor,  # noqa: N803
    LU_pivots: Tensor,  # noqa: N803
    unpack_data: builtins.bool = True,
    unpack_pivots: builtins.bool = True,
) -> LUResult:
    """(P, L, U) from a packed LU and its pivots (``torch.lu_unpack``)."""
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = builtins.min(m, n)
    from .ops.creation import zeros

    empty = zeros((0,), dtype=LU_data.dtype, device=LU_data.device)
    p = permutation_from_pivots(LU_pivots, m, LU_data) if unpack_pivots else empty
    if not unpack_data:
        return LUResult(p, empty, empty)
    ll = tril(LU_data[..., :, :k], k=-1) + eye(m, k, dtype=LU_data.dtype, device=LU_data.device)
    return LUResult(p, ll, triu(LU_data[..., :k, :]))


def _t_lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:  # noqa: N803
    """``torch.lu_solve``: solve ``A x = b`` from ``torch.lu``'s packed LU and pivots."""
    return lu_solve(LU_data, LU_pivots, b)


def _t_triangular_solve(
    b: Tensor,
    A: Tensor,  # noqa: N803
    upper: builtins.bool = True,
    transpose: builtins.bool = False,
    unitriangular: builtins.bool = False,
) -> _TriangularSolve:
    """``torch.triangular_solve``: (solution of ``A X = b`` or ``A^T X = b``, a copy of ``A``)."""
    a = matrix_transpose(A) if transpose else A
    x = solve_triangular(a, b, upper=upper != transpose, unitriangular=unitriangular)
    return _TriangularSolve(x, A * 1)


def _t_matrix_exp(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.matrix_exp``: the matrix exponential."""
    return matrix_exp(input)


def _t_matrix_power(input: Tensor, n: int) -> Tensor:  # noqa: A002
    """``torch.matrix_power``: the integer power ``n`` of each square matrix."""
    return matrix_power(input, n)


def _t_cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:  # noqa: A002
    """``torch.cross``: along ``dim``, or without it along the first axis of size 3 (PyTorch's default)."""
    from .ops.manipulation import broadcast_arrays

    a, b = broadcast_arrays(input, other)
    if dim is None:
        if 3 not in a.shape:
            raise ShapeError(f"cross: no axis of size 3 in the inputs' broadcast shape {a.shape}")
        dim = a.shape.index(3)
    return cross(a, b, axis=dim - a.ndim if dim >= 0 else dim)


def _t_ger(input: Tensor, vec2: Tensor) -> Tensor:  # noqa: A002
    """``torch.ger``: the outer product of two vectors (an alias of ``outer``)."""
    return outer(input, vec2)


#: PyTorch's main-namespace linear-algebra functions (``torch.det``...), by name; each is also a Tensor method.
TORCH_FUNCTIONS = {
    "det": _t_det, "logdet": _t_logdet, "slogdet": _t_slogdet, "inverse": _t_inverse, "pinverse": _t_pinverse,
    "cholesky": _t_cholesky, "cholesky_solve": _t_cholesky_solve, "cholesky_inverse": _t_cholesky_inverse,
    "svd": _t_svd, "qr": _t_qr, "lu": _t_lu, "lu_unpack": _t_lu_unpack, "lu_solve": _t_lu_solve,
    "triangular_solve": _t_triangular_solve, "matrix_exp": _t_matrix_exp, "matrix_power": _t_matrix_power,
    "cross": _t_cross, "ger": _t_ger,
}  # fmt: skip
_NOT_METHODS = {"lu_unpack"}


def _attach_methods() -> None:
    """Put ``x.det()``, ``x.svd()``, ``x.inverse()``... on Tensor (PyTorch's methods of these names)."""
    for name, fn in TORCH_FUNCTIONS.items():
        if name not in _NOT_METHODS and not hasattr(Tensor, name):
            setattr(Tensor, name, fn)


_attach_methods()
