"""The linalg and fft extensions: values against NumPy, and gradients against finite differences (float64)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.array_api import make_strategies_namespace

import lucid_core as lc
from lucid_core import fft, linalg
from lucid_core.ops.complex import imag, real

from ._complex import Complex, parts

xps = make_strategies_namespace(lc)
FEW = settings(max_examples=6)


def _has(device, ext):
    return getattr(device.xp, ext, None) is not None


@pytest.fixture
def lin(device):
    if not _has(device, "linalg"):
        with pytest.raises(NotImplementedError, match=device.backend.name):
            linalg.inv(lc.eye(2, device=device))
        pytest.skip(f"{device.backend.name} has no linalg extension (checked that it says so)")
    if lc.float64 not in device.backend.dtypes:
        pytest.skip("gradient checks need float64")
    return device


@pytest.fixture
def ffts(device):
    if not _has(device, "fft"):
        with pytest.raises(NotImplementedError, match=device.backend.name):
            fft.fft(lc.ones(4, device=device))
        pytest.skip(f"{device.backend.name} has no fft extension (checked that it says so)")
    return device


def _leaf(x, device):
    return lc.asarray(x.numpy(), dtype=lc.float64, device=device).requires_grad_()


def _well_conditioned(x):
    return x + 3 * lc.eye(x.shape[-1], dtype=x.dtype, device=x.device)


def _spd(x):
    return x @ x.mT + x.shape[-1] * lc.eye(x.shape[-1], dtype=x.dtype, device=x.device)


def _sym(x):
    # symmetric with well-separated eigenvalues, so eigenvector gradients are finite
    d = lc.asarray([0.0, 3.0, 6.0], dtype=x.dtype, device=x.device)
    return (x + x.mT) / 4 + d * lc.eye(3, dtype=x.dtype, device=x.device)


# f(x) with a gauge-invariant output (squares of singular/eigen vectors), per function
LINALG_CASES = {
    "inv": (lambda x: linalg.inv(_well_conditioned(x)), (3, 3)),
    "det": (lambda x: linalg.det(_well_conditioned(x)), (2, 3, 3)),
    "slogdet": (lambda x: linalg.slogdet(_well_conditioned(x)).logabsdet, (3, 3)),
    "solve": (lambda x: linalg.solve(_well_conditioned(x), x[..., :2]), (3, 3)),
    "solve_vector": (lambda x: linalg.solve(_well_conditioned(x), x[0]), (3, 3)),
    "cholesky": (lambda x: linalg.cholesky(_spd(x)), (3, 3)),
    "cholesky_upper": (lambda x: linalg.cholesky(_spd(x), upper=True), (3, 3)),
    "qr": (lambda x: tuple(linalg.qr(_dense(x))), (4, 3)),
    "qr_square": (lambda x: tuple(linalg.qr(_dense(x))), (3, 3)),
    "eigh": (lambda x: (lambda r: (r.eigenvalues, r.eigenvectors**2))(linalg.eigh(_sym(x))), (3, 3)),
    "eigvalsh": (lambda x: linalg.eigvalsh(_sym(x)), (3, 3)),
    "svd": (lambda x: (lambda r: (r.U**2, r.S, r.Vh**2))(linalg.svd(x + _gap(x), full_matrices=False)), (4, 3)),
    "svdvals": (lambda x: linalg.svdvals(x + _gap(x)), (3, 4)),
    "pinv": (lambda x: linalg.pinv(x + _gap(x)), (4, 3)),
    "matrix_power": (lambda x: linalg.matrix_power(_well_conditioned(x), -2), (3, 3)),
    "matrix_norm_nuc": (lambda x: linalg.matrix_norm(x + _gap(x), ord="nuc"), (3, 3)),
    # away from the zero matrix, where the norm has a kink finite differences cannot follow
    "matrix_norm_fro": (lambda x: linalg.matrix_norm(x + 2, keepdims=True), (2, 3, 3)),
    "vector_norm": (lambda x: linalg.vector_norm(x + 2, axis=-1, ord=3), (3, 3)),
    "cross": (lambda x: linalg.cross(x[0], x[1:]), (3, 3)),
    "trace": (lambda x: linalg.trace(x, offset=1), (3, 4)),
    "diagonal": (lambda x: linalg.diagonal(x, offset=-1), (4, 3)),
}


def _dense(x):
    # a fixed full-rank matrix with no zero entries: LAPACK's Householder QR jumps (a reflector switches
    # on) at inputs that are already triangular, where finite differences are meaningless
    m, n = x.shape[-2], x.shape[-1]
    base = np.random.default_rng(7).uniform(1.0, 2.0, (m, n)) + 3 * np.eye(m, n)
    return lc.asarray(base, dtype=x.dtype, device=x.device) + 0.3 * x


def _gap(x):
    # distinct singular values 4, 2.5, 1 (plus a small perturbation) keep SVD gradients finite
    m, n = x.shape[-2], x.shape[-1]
    k = min(m, n)
    d = [4.0, 2.5, 1.0][:k]
    e = np.zeros((m, n))
    e[range(k), range(k)] = d
    return lc.asarray(e, dtype=x.dtype, device=x.device) - x * 0.8


@pytest.mark.parametrize("name", sorted(LINALG_CASES))
@FEW
@given(data=st.data())
def test_linalg_gradients_match_finite_differences(lin, name, data):
    fn, shape = LINALG_CASES[name]
    x = data.draw(xps.arrays(dtype=lc.float64, shape=shape, elements={"min_value": -1, "max_value": 1}))
    assert lc.gradcheck(fn, [_leaf(x, lin)], atol=1e-5, rtol=1e-4)


def test_linalg_values_match_numpy(lin):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    s = a @ np.swapaxes(a, -1, -2)
    t = lambda v: lc.asarray(v, device=lin)  # noqa: E731
    np.testing.assert_allclose(linalg.inv(t(a)).numpy(), np.linalg.inv(a), rtol=1e-10)
    np.testing.assert_allclose(linalg.det(t(a)).numpy(), np.linalg.det(a), rtol=1e-10)
    np.testing.assert_allclose(linalg.cholesky(t(s)).numpy(), np.linalg.cholesky(s), rtol=1e-10)
    np.testing.assert_allclose(linalg.svdvals(t(a)).numpy(), np.linalg.svd(a, compute_uv=False), rtol=1e-10)
    np.testing.assert_allclose(linalg.eigvalsh(t(s)).numpy(), np.linalg.eigvalsh(s), rtol=1e-10)
    np.testing.assert_allclose(linalg.matrix_norm(t(a), ord=2).numpy(), np.linalg.norm(a, 2, axis=(-2, -1)), rtol=1e-10)
    np.testing.assert_allclose(linalg.vector_norm(t(a), ord=np.inf).numpy(), np.abs(a).max(), rtol=1e-12)
    np.testing.assert_allclose(linalg.trace(t(a)).numpy(), np.trace(a, axis1=-2, axis2=-1), rtol=1e-12)
    np.testing.assert_allclose(linalg.matrix_power(t(a), 3).numpy(), np.linalg.matrix_power(a, 3), rtol=1e-10)
    assert linalg.matrix_rank(t(np.ones((3, 3)))).tolist() == 1
    q, r = linalg.qr(t(a[0]))
    np.testing.assert_allclose((q @ r).numpy(), a[0], atol=1e-12)


def test_linalg_complex_gradient_uses_the_conjugate_convention(lin):
    if lc.complex128 not in lin.backend.dtypes:
        pytest.skip(f"{lin.backend.name} has no complex128")
    # L = sum(Re(Y) * Cr + Im(Y) * Ci), Y = inv(A): dL/dY = Cr + i Ci, so dL/dA = -Y^H (Cr + i Ci) Y^H (PyTorch)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 2)) + 1j * rng.standard_normal((2, 2)) + 3 * np.eye(2)
    cr, ci = rng.standard_normal((2, 2)), rng.standard_normal((2, 2))
    x = lc.asarray(a, device=lin).requires_grad_()
    y = linalg.inv(x)
    loss = lc.sum(real(y) * lc.asarray(cr, device=lin) + imag(y) * lc.asarray(ci, device=lin))
    (g,) = lc.grad(loss, [x])
    ia = np.linalg.inv(a)
    want = -(ia.conj().T @ (cr + 1j * ci) @ ia.conj().T)
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-10)


def test_linalg_errors_name_the_problem(device):
    with pytest.raises(ValueError, match="square"):
        linalg.inv(lc.ones((2, 3), device=device))
    with pytest.raises(ValueError, match="size 3"):
        linalg.cross(lc.ones(2, device=device), lc.ones(2, device=device))
    with pytest.raises(ValueError, match="mode must be"):
        linalg.qr(lc.ones((2, 2), device=device), mode="r")
    with pytest.raises(ValueError, match="ord must be"):
        linalg.matrix_norm(lc.ones((2, 2), device=device), ord=3)


def test_eig_and_eigvals_are_complex_and_diagonalise(device):
    """The standard's (2025.12) general eigendecomposition: complex results even for real input, A V = V diag(w),
    stacks; forward only, so backward says so instead of giving a gradient."""
    if not _has(device, "linalg"):
        pytest.skip(f"{device.backend.name} has no linalg extension")
    a_np = np.random.default_rng(0).standard_normal((3, 4, 4)).astype(np.float32)
    a_np[0] = [[0, -1, 0, 0], [1, 0, 0, 0], [0, 0, 2, 0], [0, 0, 0, 3]]  # a rotation block: eigenvalues +-i
    w, v = linalg.eig(lc.asarray(a_np, device=device))
    assert w.dtype is lc.complex64 and v.dtype is lc.complex64 and w.shape == (3, 4) and v.shape == (3, 4, 4)
    wn, vn = np.asarray(w.tolist()), np.asarray(v.tolist())
    np.testing.assert_allclose(a_np @ vn, vn * wn[:, None, :], atol=1e-4)
    np.testing.assert_allclose(sorted(wn[0].tolist(), key=lambda z: (z.real, z.imag)), [-1j, 1j, 2, 3], atol=1e-5)
    vals = np.asarray(linalg.eigvals(lc.asarray(a_np, device=device)).tolist())
    key = lambda z: (round(z.real, 4), round(z.imag, 4))  # noqa: E731
    assert [sorted(r, key=key) for r in np.round(vals, 4)] == [sorted(r, key=key) for r in np.round(wn, 4)]
    if lc.float64 in device.backend.dtypes:
        a64 = lc.asarray(a_np[0], dtype=lc.float64, device=device)
        if lc.complex128 in device.backend.dtypes:
            assert linalg.eigvals(a64).dtype is lc.complex128
        else:  # MLX: no complex128, and float64 must not come back as complex64
            with pytest.raises(TypeError, match="complex128"):
                linalg.eigvals(a64)
    with pytest.raises(ValueError, match="square"):
        linalg.eig(lc.ones((2, 3), device=device))


def _eig_case(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A real 4x4 matrix with a complex pair and two real eigenvalues, well apart; loss weights."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((4, 4))
    a[0, 1] += 3
    a[1, 0] -= 3
    return a, rng.standard_normal(4), rng.standard_normal(4), np.arange(16.0).reshape(4, 4)


def _eig_loss(x, cr, ci, w):
    """A loss of eigenvalues and of phase-invariant |eigenvector entries|^2."""
    lam, v = linalg.eig(x)
    d = x.device
    return (lc.sum(real(lam) * lc.asarray(cr, device=d)) + lc.sum(imag(lam) * lc.asarray(ci, device=d))
            + lc.sum(lc.abs(v) ** 2 * lc.asarray(w, device=d)))  # fmt: skip


def test_eig_and_eigvals_gradients_match_finite_differences(lin):
    if lc.complex128 not in lin.backend.dtypes:
        pytest.skip(f"{lin.backend.name} has no complex128 (its solve has no complex matrices either)")
    a, cr, ci, w = _eig_case()
    x = lc.asarray(a, device=lin).requires_grad_()
    assert lc.gradcheck(lambda t: _eig_loss(t, cr, ci, w), [x], atol=1e-6, rtol=1e-5)
    vals = lambda t: lc.sum(real(linalg.eigvals(t)) * lc.asarray(cr, device=lin))  # noqa: E731
    assert lc.gradcheck(vals, [x], atol=1e-6, rtol=1e-5)
    # second order through eigvals (its backward runs eig in Lucid ops)
    (g,) = lc.grad(vals(x), [x], create_graph=True)
    (h,) = lc.grad(lc.sum(g * g), [x])

    def gg(an):
        t = lc.asarray(an, device=lin).requires_grad_()
        (gt,) = lc.grad(vals(t), [t])
        return lc.sum(gt * gt).item()

    num = np.zeros_like(a)
    for i, j in np.ndindex(*a.shape):
        e = np.zeros_like(a)
        e[i, j] = 1e-5
        num[i, j] = (gg(a + e) - gg(a - e)) / 2e-5
    np.testing.assert_allclose(h.numpy(), num, atol=1e-6)


def test_eig_gradient_of_a_complex_matrix_uses_the_conjugate_convention(lin):
    if lc.complex128 not in lin.backend.dtypes:
        pytest.skip(f"{lin.backend.name} has no complex128")
    a, cr, ci, w = _eig_case(1)
    z = a + 1j * np.random.default_rng(2).standard_normal((4, 4))
    x = lc.asarray(z, device=lin).requires_grad_()
    _eig_loss(x, cr, ci, w).backward()
    num = np.zeros_like(z)
    loss = lambda zn: _eig_loss(lc.asarray(zn, device=lin), cr, ci, w).item()  # noqa: E731
    for i, j in np.ndindex(*z.shape):
        for unit in (1, 1j):  # dL/dRe + i dL/dIm, as PyTorch
            e = np.zeros_like(z)
            e[i, j] = 1e-6 * unit
            num[i, j] += (loss(z + e) - loss(z - e)) / 2e-6 * unit
    np.testing.assert_allclose(x.grad.numpy(), num, atol=1e-6)


def test_eig_gradient_of_a_phase_dependent_loss_raises(lin):
    if lc.complex128 not in lin.backend.dtypes:
        pytest.skip(f"{lin.backend.name} has no complex128")
    x = lc.asarray(_eig_case()[0], device=lin).requires_grad_()
    with pytest.raises(ValueError, match="phase"):
        lc.sum(real(linalg.eig(x).eigenvectors)).backward()


# -- fft ------------------------------------------------------------------------------------------


COMPLEX_IN = {
    "fft": lambda z, norm: fft.fft(z, n=5, norm=norm),
    "ifft": lambda z, norm: fft.ifft(z, norm=norm),
    "fftn": lambda z, norm: fft.fftn(z, s=(2, 3), norm=norm),
    "ifftn": lambda z, norm: fft.ifftn(z, norm=norm),
    "irfft": lambda z, norm: fft.irfft(z, norm=norm),
    "irfft_odd": lambda z, norm: fft.irfft(z, n=5, norm=norm),
    "irfftn": lambda z, norm: fft.irfftn(z, norm=norm),
    "hfft": lambda z, norm: fft.hfft(z, norm=norm),
}
REAL_IN = {
    "fft_real": lambda x, norm: fft.fft(x, axis=0, norm=norm),
    "rfft": lambda x, norm: fft.rfft(x, norm=norm),
    "rfft_n": lambda x, norm: fft.rfft(x, n=6, norm=norm),
    "rfftn": lambda x, norm: fft.rfftn(x, norm=norm),
    "ihfft": lambda x, norm: fft.ihfft(x, norm=norm),
    "fftshift": lambda x, norm: fft.fftshift(x),
    "ifftshift": lambda x, norm: fft.ifftshift(x, axes=1),
}
NORMS = st.sampled_from(["backward", "ortho", "forward"])


def _f64(device):
    if lc.float64 not in device.backend.dtypes or lc.complex128 not in device.backend.dtypes:
        pytest.skip("gradient checks need float64 and complex128")


@pytest.mark.parametrize("name", sorted(COMPLEX_IN))
@FEW
@given(data=st.data(), norm=NORMS)
def test_fft_gradients_complex_input(ffts, name, data, norm):
    _f64(ffts)
    a, b = (
        data.draw(xps.arrays(dtype=lc.float64, shape=(2, 4), elements={"min_value": -2, "max_value": 2}))
        for _ in range(2)
    )
    fn = COMPLEX_IN[name]
    assert lc.gradcheck(lambda p, q: parts(fn(Complex.apply(p, q), norm)), [_leaf(a, ffts), _leaf(b, ffts)])


@pytest.mark.parametrize("name", sorted(REAL_IN))
@FEW
@given(data=st.data(), norm=NORMS)
def test_fft_gradients_real_input(ffts, name, data, norm):
    _f64(ffts)
    x = data.draw(xps.arrays(dtype=lc.float64, shape=(3, 4), elements={"min_value": -2, "max_value": 2}))
    assert lc.gradcheck(lambda p: parts(REAL_IN[name](p, norm)), [_leaf(x, ffts)])


def test_fft_values_match_numpy(ffts):
    rng = np.random.default_rng(0)
    z = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(np.complex64)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    for name in ("fft", "ifft", "fftn", "ifftn", "irfft", "irfftn", "hfft"):
        for norm in ("backward", "ortho", "forward"):
            got = getattr(fft, name)(lc.asarray(z, device=ffts), norm=norm).numpy()
            np.testing.assert_allclose(got, getattr(np.fft, name)(z, norm=norm), rtol=1e-4, atol=1e-5, err_msg=name)
    for name in ("rfft", "rfftn", "ihfft", "fftshift", "ifftshift"):
        got = getattr(fft, name)(lc.asarray(x, device=ffts)).numpy()
        np.testing.assert_allclose(got, getattr(np.fft, name)(x), rtol=1e-4, atol=1e-5, err_msg=name)
    np.testing.assert_allclose(fft.fftfreq(5, d=0.1, device=ffts).numpy(), np.fft.fftfreq(5, d=0.1), rtol=1e-6)
    np.testing.assert_allclose(fft.rfftfreq(6, device=ffts).numpy(), np.fft.rfftfreq(6), rtol=1e-6)
    assert fft.fft(lc.asarray(z, device=ffts)).dtype is lc.complex64


def test_fft_errors(device):
    with pytest.raises(ValueError, match="norm must be"):
        fft.fft(lc.ones(4, device=device), norm="unitary")
    with pytest.raises(TypeError, match="real floating-point"):
        fft.rfft(lc.asarray([1j, 2j], device=device))
    with pytest.raises(ValueError, match="positive int"):
        fft.fftfreq(0)
