"""``torch.linalg`` on Lucid tensors: PyTorch's names, arguments (``dim=``, ``out=``) and named-tuple results.

The math is :mod:`lucid_core.linalg`'s (the Array API extension plus PyTorch's extras: ``lu``,
``solve_triangular``, ``matrix_exp``...); this module only adapts signatures. Not provided: the ``ldl_*``
family (no Bunch-Kaufman factorization in the engine) and ``driver=`` choices (each call uses the one
algorithm the engine has; ``lstsq`` gives the minimum-norm solution on every driver).
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import lucid_core as lc
from lucid_core import Tensor
from lucid_core import linalg as _la
from lucid_core.linalg import LinAlgError

__all__ = [
    "LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals",
    "eigvalsh", "householder_product", "inv", "inv_ex", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve",
    "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr",
    "slogdet", "solve", "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve", "vander",
    "vecdot", "vector_norm",
]  # fmt: skip


def _out(result: Any, out: Any) -> Any:
    """``result``, written into ``out`` (a Tensor or a tuple of them) when PyTorch's ``out=`` is given."""
    if out is None:
        return result
    pairs = zip(out, result) if isinstance(result, tuple) else [(out, result)]
    for o, r in pairs:
        if tuple(o.shape) != tuple(r.shape):
            raise ValueError(f"out=: expected a tensor of shape {tuple(r.shape)}, got {tuple(o.shape)}")
        with lc.no_grad():
            o.copy_(r)
    return out if not isinstance(result, tuple) else type(result)(*out)


def _float(x: Tensor) -> Tensor:
    return x if x.dtype.kind in "fc" else lc.astype(x, lc.float32)


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class EigResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


class LUResult(NamedTuple):
    P: Tensor
    L: Tensor
    U: Tensor


class LUFactorResult(NamedTuple):
    LU: Tensor
    pivots: Tensor


class LUFactorExResult(NamedTuple):
    LU: Tensor
    pivots: Tensor
    info: Tensor


class LstsqResult(NamedTuple):
    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


class InvExResult(NamedTuple):
    inverse: Tensor
    info: Tensor


class CholeskyExResult(NamedTuple):
    L: Tensor
    info: Tensor


class SolveExResult(NamedTuple):
    result: Tensor
    info: Tensor


# -- norms -------------------------------------------------------------------------------------------


def vector_norm(
    x: Tensor,
    ord: float = 2,
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    dtype: Any = None,
    out: Tensor | None = None,
) -> Tensor:
    """The ``ord``-norm of ``x`` over ``dim`` (all elements by default)."""
    x = lc.astype(x, dtype) if dtype is not None else _float(x)
    axis = tuple(dim) if isinstance(dim, (list, tuple)) else dim
    return _out(_la.vector_norm(x, axis=axis, keepdims=keepdim, ord=ord), out)


def matrix_norm(
    A: Tensor,  # noqa: N803
    ord: float | str = "fro",
    dim: tuple[int, int] = (-2, -1),
    keepdim: bool = False,
    *,
    dtype: Any = None,
    out: Tensor | None = None,
) -> Tensor:
    """The matrix norm over the two axes ``dim``: 'fro', 'nuc', inf, -inf, 1, -1, 2, -2."""
    A = lc.astype(A, dtype) if dtype is not None else _float(A)  # noqa: N806
    d0, d1 = (d % A.ndim for d in dim)
    if d0 == d1:
        raise ValueError(f"linalg.matrix_norm: dim must name two different axes, got {dim}")
    moved = lc.moveaxis(A, (d0, d1), (-2, -1))
    r = _la.matrix_norm(moved, ord=ord, keepdims=False)
    if keepdim:
        for d in sorted((d0, d1)):
            r = lc.expand_dims(r, axis=d)
    return _out(r, out)


def norm(
    A: Tensor,  # noqa: N803
    ord: float | str | None = None,
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    out: Tensor | None = None,
    dtype: Any = None,
) -> Tensor:
    """A vector norm (``dim`` an int, or a 1-D input) or a matrix norm (``dim`` a pair, or a 2-D input)."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is None and ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype, out=out)
    if dim is None:
        if A.ndim not in (1, 2):
            raise ValueError(f"linalg.norm: with ord and no dim the input must be 1-D or 2-D, got {A.ndim}-D")
        dim = tuple(range(A.ndim))
    if len(dim) == 1:
        return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)  # type: ignore[arg-type]
    if len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, tuple(dim), keepdim, dtype=dtype, out=out)  # type: ignore[arg-type]
    raise ValueError(f"linalg.norm: dim must have one or two entries, got {dim}")


# -- determinants, inverses, solves ---------------------------------------------------------------------


def det(A: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: N803
    """The determinant of each square matrix."""
    return _out(_la.det(A), out)


def slogdet(A: Tensor, *, out: tuple[Tensor, Tensor] | None = None) -> SlogdetResult:  # noqa: N803
    """(sign, logabsdet) of the determinant."""
    return _out(SlogdetResult(*_la.slogdet(A)), out)


def inv(A: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: N803
    """The inverse of each square matrix (``LinAlgError`` if one is singular)."""
    return _out(_la.inv(A), out)


def _info_zeros(A: Tensor) -> Tensor:  # noqa: N803
    return lc.zeros(tuple(A.shape[:-2]), dtype=lc.int32, device=A.device)


def inv_ex(A: Tensor, *, check_errors: bool = False, out: Any = None) -> InvExResult:  # noqa: N803
    """``inv`` that reports a singular matrix in ``info`` (1 for every matrix of the batch) instead of raising."""
    try:
        r = InvExResult(_la.inv(A), _info_zeros(A))
    except LinAlgError:
        if check_errors:
            raise
        r = InvExResult(lc.full_like(A, math.nan), lc.ones(tuple(A.shape[:-2]), dtype=lc.int32, device=A.device))
    return _out(r, out)


def solve(A: Tensor, B: Tensor, *, left: bool = True, out: Tensor | None = None) -> Tensor:  # noqa: N803
    """The solution of ``A X = B`` (``X A = B`` when not ``left``); a batch of vectors B is allowed."""
    if left:
        if B.ndim == A.ndim - 1 and B.ndim >= 1 and tuple(B.shape[:-1]) == tuple(A.shape[:-2]) and B.ndim > 1:
            return _out(lc.squeeze(_la.solve(A, lc.expand_dims(B, axis=-1)), axis=-1), out)
        return _out(_la.solve(A, B), out)
    return _out(lc.matrix_transpose(_la.solve(lc.matrix_transpose(A), lc.matrix_transpose(B))), out)


def solve_ex(
    A: Tensor,  # noqa: N803
    B: Tensor,  # noqa: N803
    *,
    left: bool = True,
    check_errors: bool = False,
    out: Any = None,
) -> SolveExResult:
    """``solve`` that reports a singular matrix in ``info`` instead of raising."""
    try:
        r = SolveExResult(solve(A, B, left=left), _info_zeros(A))
    except LinAlgError:
        if check_errors:
            raise
        r = SolveExResult(lc.full_like(B, math.nan), lc.ones(tuple(A.shape[:-2]), dtype=lc.int32, device=A.device))
    return _out(r, out)


def solve_triangular(
    A: Tensor,  # noqa: N803
    B: Tensor,  # noqa: N803
    *,
    upper: bool,
    left: bool = True,
    unitriangular: bool = False,
    out: Tensor | None = None,
) -> Tensor:
    """Solve a triangular system (only ``A``'s triangle is read)."""
    return _out(_la.solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular), out)


def cholesky(A: Tensor, *, upper: bool = False, out: Tensor | None = None) -> Tensor:  # noqa: N803
    """The Cholesky factor (``LinAlgError`` if ``A`` is not positive-definite)."""
    return _out(_la.cholesky(A, upper=upper), out)


def cholesky_ex(
    A: Tensor,  # noqa: N803
    *,
    upper: bool = False,
    check_errors: bool = False,
    out: Any = None,
) -> CholeskyExResult:
    """``cholesky`` that reports failure in ``info``: the order of the first leading minor that is not
    positive-definite (one number for the whole batch)."""
    try:
        r = CholeskyExResult(_la.cholesky(A, upper=upper), _info_zeros(A))
    except LinAlgError as exc:
        order = _failed_order(str(exc), A)
        if check_errors:
            raise LinAlgError(
                f"linalg.cholesky_ex: the leading minor of order {order} is not positive-definite"
            ) from exc
        r = CholeskyExResult(
            lc.full_like(A, math.nan), lc.full(tuple(A.shape[:-2]), order, dtype=lc.int32, device=A.device)
        )
    return _out(r, out)


def _failed_order(message: str, A: Tensor) -> int:  # noqa: N803
    """The leading minor that failed: from the engine's message, else the first whose determinant is <= 0."""
    import re

    found = re.search(r"order (\d+)", message)
    if found:
        return builtins.int(found.group(1))
    for k in range(1, A.shape[-1] + 1):
        if builtins.bool((_la.det(A[..., :k, :k]) <= 0).any().item()):
            return k
    return A.shape[-1]


def lu_factor(A: Tensor, *, pivot: bool = True, out: Any = None) -> LUFactorResult:  # noqa: N803
    """LAPACK's packed LU and 1-based pivots."""
    if not pivot:
        raise NotImplementedError("linalg.lu_factor: pivot=False is CUDA-only in PyTorch and not provided")
    _, ll, uu, piv = _la.lu(A)
    return _out(LUFactorResult(_la.lu_pack(ll, uu), piv), out)


def lu_factor_ex(
    A: Tensor,  # noqa: N803
    *,
    pivot: bool = True,
    check_errors: bool = False,
    out: Any = None,
) -> LUFactorExResult:
    """``lu_factor`` plus ``info``: k where U[k-1, k-1] is exactly zero (1-based), else 0."""
    lu_, piv = lu_factor(A, pivot=pivot)
    k = builtins.min(A.shape[-2], A.shape[-1])
    d = _la.diagonal(lu_)[..., :k]
    idx = lc.arange(1, k + 1, device=A.device)
    zero = d == 0
    info = lc.min(lc.where(zero, idx, k + 1), axis=-1) if k else lc.zeros(tuple(A.shape[:-2]), dtype=lc.int64)
    info = lc.astype(lc.where(info == k + 1, 0, info), lc.int32)
    if check_errors and builtins.bool((info > 0).any().item()):
        raise LinAlgError("linalg.lu_factor_ex: the factorization found a zero pivot (the matrix is singular)")
    return _out(LUFactorExResult(lu_, piv, info), out)


def lu(A: Tensor, *, pivot: bool = True, out: Any = None) -> LUResult:  # noqa: N803
    """``A = P @ L @ U`` with partial pivoting."""
    if not pivot:
        raise NotImplementedError("linalg.lu: pivot=False is CUDA-only in PyTorch and not provided")
    p, ll, uu, _ = _la.lu(A)
    return _out(LUResult(p, ll, uu), out)


def lu_solve(
    LU: Tensor,  # noqa: N803
    pivots: Tensor,
    B: Tensor,  # noqa: N803
    *,
    left: bool = True,
    adjoint: bool = False,
    out: Tensor | None = None,
) -> Tensor:
    """Solve with ``lu_factor``'s results."""
    return _out(_la.lu_solve(LU, pivots, B, left=left, adjoint=adjoint), out)


def lstsq(
    A: Tensor,  # noqa: N803
    B: Tensor,  # noqa: N803
    rcond: float | None = None,
    *,
    driver: str | None = None,
) -> LstsqResult:
    """The minimum-norm least-squares solution with PyTorch's fields for each CPU driver: ``residuals`` (the
    squared column residuals) for 'gels', 'gelsd' and 'gelss' when rows > columns and A has full rank, else
    empty (always for the default 'gelsy'); ``rank`` except for 'gels'; ``singular_values`` for 'gelsd' and
    'gelss'."""
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise ValueError(f"linalg.lstsq: driver must be one of None, 'gels', 'gelsy', 'gelsd', 'gelss'; got {driver!r}")
    x, rank, s = _la.lstsq(A, B, rcond=rcond)
    m, n = A.shape[-2], A.shape[-1]
    empty = lc.zeros((0,), dtype=x.dtype, device=x.device)
    residuals = empty
    if driver not in (None, "gelsy") and m > n and builtins.bool((rank == n).all().item()):
        bb = lc.expand_dims(B, axis=-1) if B.ndim == A.ndim - 1 else B
        xx = lc.expand_dims(x, axis=-1) if B.ndim == A.ndim - 1 else x
        r = lc.matmul(A, xx) - bb
        residuals = lc.sum(lc.abs(r) ** 2, axis=-2)
        if B.ndim == A.ndim - 1:
            residuals = residuals[..., 0]
    if driver == "gels":
        rank = lc.zeros((0,), dtype=lc.int64, device=x.device)
    sv = s if driver in ("gelsd", "gelss") else lc.zeros((0,), dtype=s.dtype, device=x.device)
    return LstsqResult(x, residuals, rank, sv)


def pinv(
    A: Tensor,  # noqa: N803
    *,
    atol: float | Tensor | None = None,
    rtol: float | Tensor | None = None,
    hermitian: bool = False,
    out: Tensor | None = None,
) -> Tensor:
    """The pseudo-inverse, singular values below ``max(atol, rtol * max(S))`` dropped."""
    if atol is None:
        return _out(_la.pinv(A, rtol=rtol), out)
    u, s, vh = _la.svd(A, full_matrices=False)
    smax = lc.max(s, axis=-1, keepdims=True)
    r = 0.0 if rtol is None else rtol
    tol = lc.maximum(lc.asarray(atol, dtype=s.dtype, device=s.device) * 1.0, r * smax)
    keep = s > tol
    sinv = lc.where(keep, 1.0 / lc.where(keep, s, 1.0), 0.0)
    return _out(lc.matmul(lc.matrix_transpose(vh) * lc.expand_dims(sinv, axis=-2), lc.matrix_transpose(u)), out)


def matrix_rank(
    A: Tensor,  # noqa: N803
    *,
    atol: float | Tensor | None = None,
    rtol: float | Tensor | None = None,
    hermitian: bool = False,
    out: Tensor | None = None,
) -> Tensor:
    """The number of singular values above ``max(atol, rtol * max(S))`` (rtol defaults to eps * max(m, n))."""
    s = lc.abs(_la.eigvalsh(A)) if hermitian else _la.svdvals(A)
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else lc.finfo(s.dtype).eps * builtins.max(A.shape[-2], A.shape[-1])
    atol = 0.0 if atol is None else atol
    smax = lc.max(s, axis=-1, keepdims=True) if s.shape[-1] else s
    tol = lc.maximum(smax * rtol, lc.asarray(atol, dtype=s.dtype, device=s.device))
    return _out(lc.sum(lc.astype(s > tol, lc.int64), axis=-1), out)


def cond(A: Tensor, p: float | str | None = None, *, out: Tensor | None = None) -> Tensor:  # noqa: N803
    """The condition number in norm ``p``."""
    return _out(_la.cond(A, p=p), out)


# -- decompositions ----------------------------------------------------------------------------------


def qr(A: Tensor, mode: str = "reduced", *, out: Any = None) -> QRResult:  # noqa: N803
    """``A = Q R``: mode 'reduced', 'complete', or 'r' (R only; Q is an empty tensor)."""
    if mode == "r":
        _, r = _la.qr(A, mode="reduced")
        return _out(QRResult(lc.zeros((0,), dtype=A.dtype, device=A.device), r), out)
    return _out(QRResult(*_la.qr(A, mode=mode)), out)  # type: ignore[arg-type]


def _symmetric(A: Tensor, uplo: str, name: str) -> Tensor:  # noqa: N803
    if uplo not in ("L", "U"):
        raise ValueError(f"linalg.{name}: UPLO must be 'L' or 'U', got {uplo!r}")
    return A if uplo == "L" else lc.conj(lc.matrix_transpose(A)) if A.dtype.kind == "c" else lc.matrix_transpose(A)


def eigh(A: Tensor, UPLO: str = "L", *, out: Any = None) -> EighResult:  # noqa: N803
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix, read from its ``UPLO`` triangle."""
    return _out(EighResult(*_la.eigh(_symmetric(A, UPLO, "eigh"))), out)


def eigvalsh(A: Tensor, UPLO: str = "L", *, out: Tensor | None = None) -> Tensor:  # noqa: N803
    """Eigenvalues (ascending) of a symmetric matrix."""
    return _out(_la.eigvalsh(_symmetric(A, UPLO, "eigvalsh")), out)


def eig(A: Tensor, *, out: Any = None) -> EigResult:  # noqa: N803
    """Complex eigenvalues and eigenvectors of a square matrix."""
    return _out(EigResult(*_la.eig(A)), out)


def eigvals(A: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: N803
    """Complex eigenvalues of a square matrix."""
    return _out(_la.eigvals(A), out)


def svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None, out: Any = None) -> SVDResult:  # noqa: N803
    """``A = U diag(S) Vh``, S descending."""
    return _out(SVDResult(*_la.svd(A, full_matrices=full_matrices)), out)


def svdvals(A: Tensor, *, driver: str | None = None, out: Tensor | None = None) -> Tensor:  # noqa: N803
    """The singular values, descending."""
    return _out(_la.svdvals(A), out)


# -- products and others ---------------------------------------------------------------------------


def matrix_power(A: Tensor, n: int, *, out: Tensor | None = None) -> Tensor:  # noqa: N803
    """``A`` to the integer power ``n``."""
    return _out(_la.matrix_power(A, n), out)


def matrix_exp(A: Tensor) -> Tensor:  # noqa: N803
    """The matrix exponential."""
    return _la.matrix_exp(A)


def cross(input: Tensor, other: Tensor, *, dim: int = -1, out: Tensor | None = None) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (broadcasting)."""
    input, other = lc.broadcast_arrays(input, other)
    return _out(_la.cross(input, other, axis=dim if dim < 0 else dim - input.ndim), out)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:  # noqa: N803
    """The ``offset``-th diagonal over the axes ``dim1`` and ``dim2``."""
    moved = lc.moveaxis(A, (dim1 % A.ndim, dim2 % A.ndim), (-2, -1))
    return _la.diagonal(moved, offset=offset)


def matmul(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The matrix product."""
    return _out(lc.matmul(input, other), out)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1, out: Tensor | None = None) -> Tensor:
    """The dot product along ``dim`` (``x`` conjugated)."""
    return _out(lc.vecdot(x, y, axis=dim), out)


def multi_dot(tensors: Sequence[Tensor], *, out: Tensor | None = None) -> Tensor:
    """The product of a chain of matrices (the first may be a row vector, the last a column vector)."""
    ts = list(tensors)
    if len(ts) < 2:
        raise ValueError(f"linalg.multi_dot: expected at least 2 tensors, got {len(ts)}")
    first_vec, last_vec = ts[0].ndim == 1, ts[-1].ndim == 1
    if first_vec:
        ts[0] = lc.expand_dims(ts[0], axis=0)
    if last_vec:
        ts[-1] = lc.expand_dims(ts[-1], axis=-1)
    for i, t in enumerate(ts):
        if t.ndim != 2:
            raise ValueError(f"linalg.multi_dot: tensor {i} must be 2-D (1-D allowed first and last), got {t.ndim}-D")
    r = ts[0]
    for t in ts[1:]:
        r = lc.matmul(r, t)
    if first_vec:
        r = r[0]
    if last_vec:
        r = r[..., 0]
    return _out(r, out)


def householder_product(A: Tensor, tau: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: N803
    """The product of Householder reflectors (LAPACK's orgqr)."""
    return _out(_la.householder_product(A, tau), out)


def tensorinv(A: Tensor, ind: int = 2, *, out: Tensor | None = None) -> Tensor:  # noqa: N803
    """The inverse of ``A`` seen as a linear map from its last ``ndim - ind`` axes to its first ``ind``."""
    if ind <= 0:
        raise ValueError(f"linalg.tensorinv: ind must be positive, got {ind}")
    lead, rest = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    m, n = math.prod(lead), math.prod(rest)
    if m != n:
        raise ValueError(f"linalg.tensorinv: prod(shape[:ind]) = {m} must equal prod(shape[ind:]) = {n}")
    return _out(lc.reshape(_la.inv(lc.reshape(A, (m, n))), rest + lead), out)


def tensorsolve(
    A: Tensor,  # noqa: N803
    B: Tensor,  # noqa: N803
    dims: Sequence[int] | None = None,
    *,
    out: Tensor | None = None,
) -> Tensor:
    """X with ``tensordot(A, X, X.ndim) = B``."""
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        order = [d for d in range(A.ndim) if d not in dims] + list(dims)
        A = lc.permute_dims(A, tuple(order))  # noqa: N806
    rest = tuple(A.shape[B.ndim :])
    n = math.prod(rest)
    x = _la.solve(lc.reshape(A, (math.prod(B.shape), n)), lc.reshape(B, (-1, 1)))
    return _out(lc.reshape(x, rest), out)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:  # noqa: N803
    """The Vandermonde matrix ``x**0, x**1, ..., x**(N-1)`` along a new last axis."""
    return _la.vander(x, n=N)
