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
from ._tensor import Tensor, _new_tensor, check_tensor
from ._typing import DTypeLike
from .ops._helpers import binary_operands, expand_reduced, normalize_axes, sum_to
from .ops.complex import imag, real
from .ops.creation import eye, tril, zeros_like
from .ops.elementwise import abs as abs_
from .ops.elementwise import conj, where
from .ops.manipulation import astype, broadcast_to, expand_dims, matrix_transpose
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


def _matrix(x: Any, name: str, square: builtins.bool = False) -> Tensor:
    check_tensor(x, f"linalg.{name}")
    if x.ndim < 2:
        raise ValueError(f"linalg.{name}: expected a matrix or a stack of matrices, got shape {x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"linalg.{name}: expected square matrices, got shape {x.shape}")
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

    @staticmethod
    def forward(ctx, x):
        return _kernel(ctx, "inv")(x)

    @staticmethod
    def backward(ctx, gy):
        y = ctx.output()
        yh = _mH(y)
        return -matmul(matmul(yh, gy), yh)


def inv(x: Tensor, /) -> Tensor:
    """The inverse of each square matrix."""
    return Inv.apply(_matrix(x, "inv", square=True))


class Det(Function):
    native = True

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

    @staticmethod
    def forward(ctx, a, b):
        return _kernel(ctx, "solve")(a, b)

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
        raise ValueError(
            f"linalg.solve: x1 has shape {x1.shape} but x2 has shape {x2.shape}; x2 needs {a.shape[-1]} rows"
        )
    return Solve.apply(a, x2)


# -- decompositions --------------------------------------------------------------------------


class Cholesky(Function):
    native = True

    @staticmethod
    def forward(ctx, x, upper):
        return _kernel(ctx, "cholesky")(x, upper=upper)

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


def cholesky(x: Tensor, /, *, upper: builtins.bool = False) -> Tensor:
    """The Cholesky factor of each symmetric (Hermitian) positive-definite matrix (lower unless ``upper``)."""
    return Cholesky.apply(_matrix(x, "cholesky", square=True), builtins.bool(upper))


class QR(Function):
    native = True

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


def qr(x: Tensor, /, *, mode: Literal["reduced", "complete"] = "reduced") -> QRResult:
    """The QR decomposition ``x = Q @ R`` (``mode="reduced"`` or ``"complete"``)."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"linalg.qr: mode must be 'reduced' or 'complete', got {mode!r}")
    q, r = QR.apply(_matrix(x, "qr"), mode)
    return QRResult(q, r)


class Eigh(Function):
    native = True

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


def eigh(x: Tensor, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of each symmetric (Hermitian) matrix."""
    lam, v = Eigh.apply(_matrix(x, "eigh", square=True))
    return EighResult(lam, v)


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

    @staticmethod
    def forward(ctx, x):
        want = _complex_for(ctx, x, "eigvals")
        return _as(ctx, _kernel(ctx, "eigvals")(x), want)

    @staticmethod
    def backward(ctx, gl):
        x = ctx.inputs[0]
        lam, v = eig(x)  # the eigenvectors the gradient needs, in Lucid ops (higher orders work)
        return _eig_backward(x, lam, v, gl, None)


def eig(x: Tensor, /) -> EigResult:
    """Eigenvalues and eigenvectors (unit-norm columns) of each square matrix, complex even for real input
    (the standard's ``linalg.eig``); differentiable as in PyTorch, for distinct eigenvalues."""
    w, v = Eig.apply(_matrix(x, "eig", square=True))
    return EigResult(w, v)


def eigvals(x: Tensor, /) -> Tensor:
    """Eigenvalues of each square matrix, complex; differentiable (distinct eigenvalues)."""
    return Eigvals.apply(_matrix(x, "eigvals", square=True))


class SVD(Function):
    native = True

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


def svd(x: Tensor, /, *, full_matrices: builtins.bool = True) -> SVDResult:
    """The singular value decomposition ``x = U @ diag(S) @ Vh`` (S descending)."""
    u, s, vh = SVD.apply(_matrix(x, "svd"), builtins.bool(full_matrices))
    return SVDResult(u, s, vh)


def svdvals(x: Tensor, /) -> Tensor:
    """The singular values of each matrix, descending."""
    return svd(x, full_matrices=False).S


class Pinv(Function):
    native = True

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


def matrix_rank(x: Tensor, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """The number of singular values above ``rtol * max(S)`` (default ``max(M, N) * eps``)."""
    if isinstance(rtol, Tensor):
        rtol = rtol._data
    return MatrixRank.apply(_matrix(x, "matrix_rank"), rtol)


# -- products and composites ------------------------------------------------------------------


class Cross(Function):
    native = True

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
