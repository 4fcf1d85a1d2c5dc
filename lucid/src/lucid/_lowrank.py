"""``torch.svd_lowrank``, ``torch.pca_lowrank`` and ``torch.lobpcg`` on Lucid tensors.

``svd_lowrank`` is Halko, Martinsson and Tropp's randomized range finder: a Gaussian sketch ``A @ R`` (drawn with
``lucid.randn``, so ``lucid.manual_seed`` makes it repeatable) is orthonormalized by QR and refined by ``niter``
power iterations; the SVD of the small projection ``Q^H A`` gives the factors. Everything is ``lucid.linalg``
(``qr``, ``svd``) and ``matmul``, so gradients flow through the draws' fixed values like any other op.
``pca_lowrank`` centers the columns and calls it.

``lobpcg`` is Knyazev's locally optimal block preconditioned conjugate gradient for the extreme eigenpairs of a
symmetric (generalized) problem ``A x = lambda B x``: each step runs a Rayleigh-Ritz projection on the span of the
current vectors ``X``, their (preconditioned) residuals ``W`` and the previous step's directions ``P``. The
``"ortho"`` method B-orthonormalizes that basis through an eigendecomposition of its Gram matrix, dropping
directions that have become dependent; ``"basic"`` uses a Cholesky factor of the Gram matrix, cheaper but
failing when the basis is singular. Batches are solved one matrix at a time.
"""

# ruff: noqa: N803, N806 - PyTorch's argument names (A, B, X, M, iK) and the linear-algebra matrices named as in the papers

from __future__ import annotations

import math
from typing import Any

import lucid_core as lc
from lucid_core import Tensor

__all__ = ["lobpcg", "pca_lowrank", "svd_lowrank"]


def _linalg() -> Any:
    from . import linalg

    return linalg


def _randn(*shape: int, dtype: Any) -> Tensor:
    import lucid

    return lucid.randn(*shape, dtype=dtype)


def _grad_on() -> bool:
    import lucid

    return lucid.is_grad_enabled()


def _mh(x: Tensor) -> Tensor:
    return x.mH if x.dtype.kind == "c" else x.mT


def _check_matrix(name: str, A: Any) -> None:
    if not isinstance(A, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type(A).__name__}")
    if A.ndim < 2:
        raise ValueError(f"{name}: expected a matrix or a batch of matrices of shape (*, m, n), got {tuple(A.shape)}")
    if A.dtype.kind not in "fc":
        raise RuntimeError(f"{name}: expected a floating-point or complex input, got {A.dtype.name}")


def _range_basis(A: Tensor, q: int, niter: int) -> Tensor:
    """Orthonormal columns approximately spanning ``A``'s range: a QR'd Gaussian sketch plus power iterations."""
    qr = _linalg().qr
    R = _randn(*A.shape[:-2], A.shape[-1], q, dtype=A.dtype)
    Q = qr(lc.matmul(A, R))[0]
    for _ in range(niter):
        Z = qr(lc.matmul(_mh(A), Q))[0]
        Q = qr(lc.matmul(A, Z))[0]
    return Q


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int = 2, M: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """``(U, S, V)`` with ``A - M ~= U diag(S) V^H`` of rank ``q``, by a randomized range finder with ``niter``
    power iterations (``M``, broadcastable to ``A``, defaults to zero). Exact when the rank is at most ``q``;
    differentiable through ``qr``, ``svd`` and ``matmul``."""
    _check_matrix("svd_lowrank", A)
    q = 6 if q is None else q
    if not isinstance(q, int) or q < 0:
        raise RuntimeError(f"svd_lowrank: q must be a non-negative integer, got {q}")
    X = A if M is None else A - M
    m, n = X.shape[-2:]
    if m < n:  # work on the taller transpose: its range basis is the smaller one
        V, S, U = svd_lowrank(_mh(X), q, niter)
        return U, S, V
    Q = _range_basis(X, q, niter)
    U, S, Vh = _linalg().svd(lc.matmul(_mh(Q), X), full_matrices=False)
    return lc.matmul(Q, U), S, _mh(Vh)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2) -> tuple[Tensor, Tensor, Tensor]:
    """``(U, S, V)``: a rank-``q`` (default ``min(6, m, n)``) randomized SVD of ``A`` with its column means
    subtracted (unless ``center`` is False); ``V``'s columns are the principal directions."""
    _check_matrix("pca_lowrank", A)
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (isinstance(q, int) and 0 <= q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not (isinstance(niter, int) and niter >= 0):
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    C = A - lc.mean(A, axis=-2, keepdims=True) if center else A
    return svd_lowrank(C, q, niter)


def _b_orthonormal(S: Tensor, BS: Tensor, method: str) -> tuple[Tensor, Tensor]:
    """``S`` (and ``B S``) with B-orthonormal columns spanning the same space (``"ortho"`` drops dependent ones)."""
    la = _linalg()
    G = lc.matmul(_mh(S), BS)
    G = (G + _mh(G)) / 2
    if method == "basic":
        L = la.cholesky(G)
        T = _mh(la.solve_triangular(L, lc.eye(G.shape[0], dtype=G.dtype), upper=False))
    else:
        w, V = la.eigh(G)
        big = w.max().item()
        cut = max(big, 0.0) * lc.finfo(G.dtype).eps * G.shape[0] * 10
        keep = [i for i, v in enumerate(w.tolist()) if v > cut]
        T = V[:, keep] / lc.sqrt(w[keep])
    return lc.matmul(S, T), lc.matmul(BS, T)


def _unit_columns(v: Tensor) -> Tensor:
    norms = _linalg().vector_norm(v, dim=0)
    return v / lc.where(norms > 0, norms, lc.ones_like(norms))


def _lobpcg_one(
    A: Tensor,
    B: Tensor | None,
    X: Tensor,
    iK: Tensor | None,
    k: int,
    niter: int,
    tol: float,
    largest: bool,
    method: str,
    tracker: Any,
) -> tuple[Tensor, Tensor]:
    la = _linalg()
    n = X.shape[-1]

    def b(v: Tensor) -> Tensor:
        return v if B is None else lc.matmul(B, v)

    def ritz(S: Tensor, BS: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        # Rayleigh-Ritz on the B-orthonormal basis S: the n extreme pairs of S^H A S
        AS = lc.matmul(A, S)
        H = lc.matmul(_mh(S), AS)
        w, C = la.eigh((H + _mh(H)) / 2)
        size = w.shape[0]
        sel = list(range(size - 1, size - 1 - n, -1)) if largest else list(range(n))
        Cs = C[:, sel]
        return w[sel], lc.matmul(S, Cs), lc.matmul(BS, Cs), lc.matmul(AS, Cs)

    S, BS = _b_orthonormal(X, b(X), "ortho")
    if S.shape[-1] < n:
        raise RuntimeError(f"lobpcg: the initial X has rank {S.shape[-1]}, less than its {n} columns")
    E, X, BX, AX = ritz(S, BS)
    P = None
    step = 0
    while True:
        R = AX - BX * E
        scale = la.vector_norm(AX, dim=0) + lc.abs(E) * la.vector_norm(BX, dim=0)
        rerr = la.vector_norm(R, dim=0) / lc.where(scale > 0, scale, lc.ones_like(scale))
        converged = sum(1 for v in rerr[:k].tolist() if v < tol)
        if tracker is not None:
            tracker({"E": E, "X": X, "R": R, "iteration": step, "converged": converged})
        if converged >= k or (niter >= 0 and step >= niter):
            break
        W = R if iK is None else lc.matmul(iK, R)
        # the new search directions, B-orthogonalized against X and scaled to unit columns
        basis = [X, _unit_columns(W - lc.matmul(X, lc.matmul(_mh(BX), W)))]
        if P is not None:
            basis.append(_unit_columns(P - lc.matmul(X, lc.matmul(_mh(BX), P))))
        S = lc.concat(basis, axis=-1)
        try:
            S, BS = _b_orthonormal(S, b(S), method)
        except Exception as err:  # "basic": the Cholesky factor of a singular Gram matrix
            raise RuntimeError(
                f"lobpcg (method={method!r}): the search basis became singular at step {step}: {err}"
            ) from err
        Xold, BXold = X, BX
        E, X, BX, AX = ritz(S, BS)
        # the step just taken, outside the old span: the conjugate direction of the next one
        P = X - lc.matmul(Xold, lc.matmul(_mh(BXold), X))
        step += 1
    return E[:k], X[:, :k]


def lobpcg(
    A: Tensor,
    k: int | None = None,
    B: Tensor | None = None,
    X: Tensor | None = None,
    n: int | None = None,
    iK: Tensor | None = None,
    niter: int | None = None,
    tol: float | None = None,
    largest: bool | None = None,
    method: str | None = None,
    tracker: Any = None,
    ortho_iparams: dict[str, int] | None = None,
    ortho_fparams: dict[str, float] | None = None,
    ortho_bparams: dict[str, bool] | None = None,
) -> tuple[Tensor, Tensor]:
    """``(E, X)``: the ``k`` largest (``largest=False``: smallest) eigenvalues and B-orthonormal eigenvectors of
    the symmetric positive definite problem ``A x = lambda B x`` (``B`` the identity by default), by LOBPCG from a
    start ``X`` (``n`` random columns by default, ``n = k``), preconditioned by ``iK``, until the relative residual
    of the first ``k`` pairs is below ``tol`` or ``niter`` steps (default 1000, -1: no limit). ``E`` is
    differentiable in ``A`` (through Rayleigh quotients of the converged vectors); ``X`` is not."""
    _check_matrix("lobpcg", A)
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {tuple(A.shape)}")
    if B is not None and tuple(B.shape) != tuple(A.shape):
        raise AssertionError(f"B must have the same shape as A, got {tuple(B.shape)} and {tuple(A.shape)}")
    method = "ortho" if method is None else method
    if method not in ("basic", "ortho"):
        raise ValueError(f"lobpcg: method must be 'basic' or 'ortho', got {method!r}")
    m = A.shape[-1]
    if X is not None:
        if X.ndim < 2 or X.shape[-2] != m:
            raise ValueError(f"lobpcg: X must have shape (*, {m}, n), got {tuple(X.shape)}")
        n = X.shape[-1]
        k = n if k is None else k
    else:
        k = 1 if k is None else k
        n = k if n is None else n
    if not (isinstance(k, int) and k >= 1):
        raise ValueError(f"lobpcg: k must be a positive integer, got {k}")
    if n < k:
        raise ValueError(f"lobpcg: the number of vectors n (={n}) must be at least the number of eigenpairs k (={k})")
    if m < 3 * n:
        raise ValueError(
            f"LOBPCG algorithm is not applicable when the number of A rows (={m}) is smaller than 3 x the number "
            f"of requested eigenpairs (={n})"
        )
    niter = 1000 if niter is None else niter
    tol = math.sqrt(lc.finfo(A.dtype).eps) if tol is None else tol
    largest = True if largest is None else largest
    batch = A.shape[:-2]
    count = math.prod(batch)
    As = A.detach().reshape(count, m, m)
    Bs = None if B is None else B.detach().reshape(count, m, m)
    if X is None:
        Xs = _randn(count, m, n, dtype=A.dtype)
    else:
        Xs = X.detach().astype(A.dtype).broadcast_to((*batch, m, n)).reshape(count, m, n)
    Es, Vs = [], []
    with lc.no_grad():
        for i in range(count):
            e, v = _lobpcg_one(
                As[i],
                None if Bs is None else Bs[i],
                Xs[i],
                None if iK is None else iK.detach(),
                k,
                niter,
                tol,
                largest,
                method,
                tracker,
            )
            Es.append(e)
            Vs.append(v)
    V = lc.stack(Vs).reshape((*batch, m, k))
    E = lc.stack(Es).reshape((*batch, k))
    if A.requires_grad and _grad_on():
        # d lambda = x^H dA x for a B-normalized eigenvector x: the Rayleigh quotient carries the exact gradient
        E = (
            lc.sum(lc.conj(V) * lc.matmul(A, V), axis=-2).real
            if A.dtype.kind == "c"
            else lc.sum(V * lc.matmul(A, V), axis=-2)
        )
    return E, V
