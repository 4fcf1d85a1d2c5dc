"""lucid/_lowrank.py (svd_lowrank, pca_lowrank, lobpcg): draw-independent results against PyTorch's, gradients,
errors.

Values: every case of ``fixtures/lowrank_cases.py`` against ``fixtures/lowrank.npz`` (written once by
``casebook.py`` with PyTorch 2.13). The cases return only what does not depend on the random draws
(singular values and reconstructions of low-rank matrices, Gram matrices, eigenvalues, eigenvectors up to sign),
so the tolerance is that of the algorithms, not of bitwise agreement. Then the eigen-equations, float64 gradient
checks with a fixed draw, seeded repeatability and PyTorch's errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import lucid
from tests.pytorch_face.fixtures import casebook
from tests.pytorch_face.fixtures import lowrank_cases as cases

TORCH = casebook.load("lowrank")


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_matches_pytorch(name):
    casebook.assert_matches_pytorch(cases, TORCH, name, 0.0001, 1e-07)


def test_singular_values_are_the_exact_ones():
    want = np.linalg.svd(cases.LOW, compute_uv=False)[:6]
    np.testing.assert_allclose(TORCH["svd_lowrank_tall:0"], want, atol=1e-9)
    lucid.manual_seed(0)
    _, S, _ = lucid.svd_lowrank(lucid.tensor(cases.LOW), q=6)
    np.testing.assert_allclose(S.numpy(), want, atol=1e-9)


@pytest.mark.parametrize("method", ["ortho", "basic"])
@pytest.mark.parametrize("largest", [True, False])
def test_lobpcg_solves_the_generalized_eigen_equations(method, largest):
    A, B = lucid.tensor(cases.SPD), lucid.tensor(cases.BMAT)
    lucid.manual_seed(3)
    E, X = lucid.lobpcg(A, k=3, B=B, largest=largest, method=method, tol=1e-10, niter=500)
    ev = np.sort(np.linalg.eigvals(np.linalg.solve(cases.BMAT, cases.SPD)).real)
    np.testing.assert_allclose(E.numpy(), ev[::-1][:3] if largest else ev[:3], rtol=1e-9)
    np.testing.assert_allclose((A @ X).numpy(), (B @ X * E).numpy(), atol=1e-7)


def test_draws_repeat_under_manual_seed():
    a = lucid.tensor(cases.LOW)
    lucid.manual_seed(5)
    U1, _, _ = lucid.svd_lowrank(a, q=3, niter=0)
    lucid.manual_seed(5)
    U2, _, _ = lucid.svd_lowrank(a, q=3, niter=0)
    assert lucid.equal(U1, U2)


def _fixed_draw(fn):
    def run(*args):
        lucid.manual_seed(0)
        return fn(*args)

    return run


FULL = np.random.default_rng(21).normal(size=(6, 4)) @ np.diag([5.0, 3.0, 2.0, 1.0])


@pytest.mark.parametrize(
    "fn",
    [
        _fixed_draw(lambda a: lucid.svd_lowrank(a, q=4, niter=1)[1].sum()),
        _fixed_draw(lambda a: lucid.pca_lowrank(a, q=3, niter=1)[1].sum()),
        _fixed_draw(lambda a: lucid.svd_lowrank(a.mT, q=4)[1].sum()),
    ],
    ids=["svd_lowrank", "pca_lowrank", "svd_lowrank_wide"],
)
def test_singular_value_gradients_match_finite_differences(fn):
    # q equals the rank (pca: centering drops one), so the range basis is exact and S is a smooth function of A
    x = lucid.tensor(FULL, dtype=lucid.float64, requires_grad=True)
    assert lucid.autograd.gradcheck(fn, (x,))


def test_lobpcg_eigenvalue_gradient_is_the_outer_product_of_the_eigenvector():
    a = lucid.tensor(cases.SPD, requires_grad=True)
    lucid.manual_seed(0)
    E, X = lucid.lobpcg(a, k=1, tol=1e-12, niter=500)
    E.sum().backward()
    x = X.detach().numpy()[:, 0]
    np.testing.assert_allclose(a.grad.numpy(), np.outer(x, x), atol=1e-8)


def test_errors():
    a = lucid.tensor(cases.LOW)
    with pytest.raises(ValueError, match=r"q\(=10\) must be non-negative integer and not greater than min\(m, n\)=9"):
        lucid.pca_lowrank(a, q=10)
    with pytest.raises(ValueError, match=r"q\(=-1\) must be non-negative"):
        lucid.pca_lowrank(a, q=-1)
    with pytest.raises(ValueError, match=r"niter\(=-1\) must be non-negative integer"):
        lucid.pca_lowrank(a, niter=-1)
    with pytest.raises(RuntimeError, match="q must be a non-negative integer"):
        lucid.svd_lowrank(a, q=-1)
    with pytest.raises(ValueError, match="shape \\(\\*, m, n\\)"):
        lucid.svd_lowrank(lucid.ones(5))
    spd = lucid.tensor(cases.SPD)
    with pytest.raises(ValueError, match=r"smaller than 3 x the number of requested eigenpairs \(=7\)"):
        lucid.lobpcg(spd, k=7)
    with pytest.raises(AssertionError, match="A must be square"):
        lucid.lobpcg(lucid.ones(3, 4))
    with pytest.raises(ValueError, match="method must be 'basic' or 'ortho'"):
        lucid.lobpcg(spd, k=1, method="x")
    with pytest.raises(ValueError, match=r"n \(=1\) must be at least the number of eigenpairs k \(=2\)"):
        lucid.lobpcg(spd, k=2, n=1)
    with pytest.raises(RuntimeError, match="floating-point or complex"):
        lucid.lobpcg(lucid.ones(9, 9, dtype=lucid.int64))
