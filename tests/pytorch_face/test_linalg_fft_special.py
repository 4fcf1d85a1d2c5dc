"""``lucid.linalg``, ``lucid.fft``, ``lucid.special`` and the main-namespace names, against PyTorch's results.

The cases are ``fixtures/linalg_fft_special_cases.py`` (shared with the generator that stored PyTorch's values);
gradients are checked against finite differences in float64, and the core's composed special-function
kernels (what a backend without SciPy runs) against the same PyTorch values.
"""

from __future__ import annotations

import json
import math
import types
from pathlib import Path

import numpy as np
import pytest

import lucid
import lucid_core as lc
from lucid_core.kernels import KERNELS
from tests.pytorch_face.fixtures import linalg_fft_special_cases as cases

HERE = Path(__file__).resolve().parent
META = json.loads((HERE / "fixtures" / "linalg_fft_special.json").read_text())
with np.load(HERE / "fixtures" / "linalg_fft_special.npz") as _f:
    EXPECTED = {k: _f[k] for k in _f.files}


def _maker(device):
    float64 = device.backend.name != "mlx"  # MLX: float32, as its GPU would run it

    def t(array):
        return lucid.tensor(np.asarray(array), dtype=lucid.float64 if float64 else lucid.float32, device=device)

    return t, float64


def _numpy(x):
    return np.asarray(x.detach().numpy())


def _outputs(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_values_match_pytorch(device, name):
    t, float64 = _maker(device)
    if not float64 and name in cases.NO_MLX:
        pytest.skip(f"{name}: needs a kernel only SciPy has (no composed default)")
    outs = _outputs(cases.CASES[name](lucid, t))
    assert len(outs) == META["cases"][name]
    rtol, atol = (1e-8, 1e-9) if name in cases.LOOSE else (1e-10, 1e-10)
    if name in cases.ROUGH:
        rtol, atol = 1e-5, 1e-6
    if not float64:
        rtol, atol = 2e-4, 2e-4
    for i, out in enumerate(outs):
        want = EXPECTED[f"{name}:{i}"]
        got = _numpy(out)
        assert got.shape == want.shape, f"{name} output {i}: shape {got.shape}, PyTorch {want.shape}"
        assert (got.dtype.kind == "c") == (want.dtype.kind == "c"), f"{name} output {i}: {got.dtype} vs {want.dtype}"
        if want.dtype in (np.float32, np.complex64):  # a float32 case: single precision on every backend
            rtol, atol = max(rtol, 2e-5), max(atol, 2e-5)
        if want.dtype.kind in "iub":
            np.testing.assert_array_equal(got, want, err_msg=f"{name} output {i}")
        else:
            scale = max(1.0, float(np.max(np.abs(want[np.isfinite(want)]), initial=0.0)))  # inf/NaN compare exactly
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale, err_msg=f"{name} output {i}")


@pytest.mark.parametrize("name", sorted(cases.FIELDS))
def test_result_field_names_are_pytorchs(backend, name):
    t, _ = _maker(lc.get_backend("numpy").default_device)
    result = cases.FIELDS[name](lucid, t)
    assert list(result._fields) == META["fields"][name]


@pytest.mark.parametrize("name", sorted(cases.ERRORS))
def test_errors_are_pytorchs_classes(device, name):
    t, _ = _maker(device)
    want = META["errors"][name]
    with pytest.raises(Exception) as info:
        cases.ERRORS[name](lucid, t)
    builtin = {"RuntimeError": RuntimeError, "ValueError": ValueError, "TypeError": TypeError}[want["builtin"]]
    assert isinstance(info.value, builtin), f"{name}: raised {type(info.value).__name__}, PyTorch {want['builtin']}"
    assert isinstance(info.value, lucid.linalg.LinAlgError) == want["linalg_error"]


def test_cholesky_ex_reports_the_failing_minor_instead_of_raising(device):
    t, _ = _maker(device)
    a = t(np.array([[4.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]]))
    res = lucid.linalg.cholesky_ex(a)
    assert int(res.info.item()) == 2
    with pytest.raises(lucid.linalg.LinAlgError, match="order 2"):
        lucid.linalg.cholesky_ex(a, check_errors=True)


def test_inv_ex_reports_a_singular_matrix(device):
    t, _ = _maker(device)
    res = lucid.linalg.inv_ex(t(cases.SINGULAR))
    assert int(res.info.item()) == 1


def test_out_writes_into_the_given_tensor(device):
    t, _ = _maker(device)
    a = t(cases.SQ)
    o = lucid.zeros_like(a)
    r = lucid.linalg.inv(a, out=o)
    assert r is o
    np.testing.assert_allclose(_numpy(o), _numpy(lucid.linalg.inv(a)), rtol=1e-6)
    s = lucid.zeros_like(a)
    assert lucid.special.erfc(a, out=s) is s
    with pytest.raises(ValueError, match="shape"):
        lucid.linalg.det(a, out=lucid.zeros(3, device=device))


def test_inplace_special_method_writes_through_a_view(device):
    t, _ = _maker(device)
    base = t(np.array([1.0, 2.0, 3.0, 4.0]))
    base[1:3].lgamma_()
    np.testing.assert_allclose(_numpy(base), [1.0, 0.0, math.log(2.0), 4.0], atol=1e-6)


def test_torch_submodules_are_the_faces():
    assert lucid.linalg.__name__ == "lucid.linalg"
    assert lucid.fft.__name__ == "lucid.fft"
    assert lucid.special.__name__ == "lucid.special"
    import lucid.special as sp

    assert sp is lucid.special


# -- gradients against finite differences (float64) --------------------------------------------------------


def _f64(device):
    if not device.backend.capabilities.get("float64", True):
        pytest.skip(f"{device} has no float64 for finite-difference checks")
    return lambda a: lucid.tensor(np.asarray(a, dtype=np.float64), device=device, requires_grad=True)


def _few(values):
    """Every fifth point: enough to check a formula, few enough for one backward pass per element."""
    return np.asarray(values)[::5]


GRADS = {
    "det": (lambda a: lucid.linalg.det(a), [cases.SQ]),
    "slogdet": (lambda a: lucid.linalg.slogdet(a).logabsdet, [cases.SQ]),
    "logdet": (lambda a: lucid.logdet(a), [cases.SPD]),
    "inv": (lambda a: lucid.linalg.inv(a), [cases.SQ]),
    "solve_left_right": (lambda a, b: lucid.linalg.solve(a, b, left=False), [cases.SQ, np.swapaxes(cases.RHS, -1, -2)]),
    "solve_triangular": (lambda a, b: lucid.linalg.solve_triangular(a, b, upper=True), [cases.SQ, cases.RHS]),
    "cholesky": (lambda a: lucid.linalg.cholesky(a + a.mT), [cases.SPD]),
    "lu": (lambda a: tuple(lucid.linalg.lu(a))[1:], [cases.SQ[1]]),
    "lu_factor": (lambda a: lucid.linalg.lu_factor(a).LU, [cases.SQ[0]]),
    "lu_solve": (lambda a, b: lucid.linalg.lu_solve(*lucid.linalg.lu_factor(a), b), [cases.SQ[0], cases.RHS[0]]),
    "lstsq": (lambda a, b: lucid.linalg.lstsq(a, b).solution, [cases.TALL, cases.RHS_TALL]),
    "matrix_exp": (lambda a: lucid.linalg.matrix_exp(a), [cases.SQ[0]]),
    "cond": (lambda a: lucid.linalg.cond(a), [cases.SQ]),
    "pinv_atol": (lambda a: lucid.linalg.pinv(a, atol=0.1), [cases.TALL]),
    "householder_product": (lambda a, tau: lucid.linalg.householder_product(a, tau), [cases.TALL, [1.2, 0.7, 1.5]]),
    "norm": (lambda a: lucid.linalg.norm(a, ord="nuc", dim=(0, 2)), [cases.SQ]),
    "vander": (lambda x: lucid.linalg.vander(x, N=4), [cases.VEC[:3]]),
    "multi_dot": (lambda a, b: lucid.linalg.multi_dot([a, b, b.mT]), [cases.TALL, cases.WIDE]),
    "tensorsolve": (lambda a, b: lucid.linalg.tensorsolve(a, b), [cases.SQ[0].reshape(4, 2, 2), cases.VEC[:4]]),
    "cholesky_solve": (
        lambda b, s: lucid.cholesky_solve(
            b, lucid.linalg.cholesky(s @ s.mT + 4 * lucid.eye(4, dtype=s.dtype, device=s.device))
        ),
        [cases.RHS, cases.SQ],
    ),
    "svd_old": (lambda a: lucid.svd(a).S, [cases.TALL]),
    "fft2": (lambda x: lucid.fft.fft2(x, norm="ortho").abs(), [cases.SIG2]),
    "rfftn_irfftn": (lambda x: lucid.fft.irfftn(lucid.fft.rfftn(x) * 1.5, s=(2, 6, 5)), [cases.SIG2]),
    "hfft2": (lambda x: lucid.fft.hfft2(lucid.fft.ihfft2(x) * 2.0, s=(6, 5)), [cases.SIG2]),
    "stft": (
        lambda x: lucid.stft(x, 8, hop_length=3, window=lucid.hann_window(8, dtype=x.dtype), return_complex=True).abs(),
        [cases.SPEECH[:, :20]],
    ),
    "istft": (lambda x: lucid.istft(lucid.stft(x, 8, return_complex=True) * 2.0, 8, length=20), [cases.SPEECH[:, :20]]),
    "gammaln": (lambda x: lucid.special.gammaln(x), [_few(cases.POS)]),
    "digamma": (lambda x: lucid.special.digamma(x), [_few(cases.POS)]),
    "polygamma": (lambda x: lucid.special.polygamma(2, x), [_few(cases.POS + 0.5)]),
    "multigammaln": (lambda x: lucid.special.multigammaln(x, 3), [_few(cases.POS + 2)]),
    "zeta_q": (lambda q: lucid.special.zeta(3.0, q), [_few(cases.POS + 0.5)]),
    "erfc": (lambda x: lucid.special.erfc(x), [_few(cases.X)]),
    "erfcx": (lambda x: lucid.special.erfcx(x), [_few(cases.X)]),
    "erfinv": (lambda x: lucid.special.erfinv(x), [_few(cases.UNIT * 0.95)]),
    "ndtr": (lambda x: lucid.special.ndtr(x), [_few(cases.X)]),
    "ndtri": (lambda p: lucid.special.ndtri(p), [_few(cases.PROB[2:-2])]),
    "log_ndtr": (lambda x: lucid.special.log_ndtr(x), [_few(cases.X * 5)]),
    "i0_i1": (lambda x: (lucid.special.i0(x), lucid.special.i1(x)), [_few(cases.X)]),
    "i0e_i1e": (lambda x: (lucid.special.i0e(x), lucid.special.i1e(x)), [_few(cases.X + 0.01)]),
    "xlogy": (lambda x, y: lucid.special.xlogy(x, y), [[-0.5, 1.5, 2.0], [2.0, 0.5, 3.0]]),
    "xlog1py": (lambda x, y: lucid.special.xlog1py(x, y), [[-0.5, 1.5, 2.0], [2.0, 0.5, 3.0]]),
    "entr": (lambda x: lucid.special.entr(x), [[0.5, 1.0, 2.0]]),
    "sinc": (lambda x: lucid.special.sinc(x), [_few(cases.X * 0.37)]),
    "logit": (lambda p: lucid.special.logit(p, eps=0.05), [_few(cases.PROB[1:-1])]),
    "gammainc_x": (lambda x: (lucid.special.gammainc(2.5, x), lucid.special.gammaincc(2.5, x)), [[0.5, 2.0, 6.0]]),
    "kaiser_is_i0": (lambda x: lucid.i0(x).sum(), [_few(cases.X)]),
}


FFT_GRADS = {"fft2", "rfftn_irfftn", "hfft2", "stft", "istft"}
#: on MLX only the linear algebra is rechecked (its own kernels); the special functions' gradients are the same
#: core formulas as on NumPy, and their composed MLX forwards are checked against PyTorch's values above
MLX_GRADS = {
    "det", "slogdet", "logdet", "inv", "solve_left_right", "solve_triangular", "cholesky", "lu", "lu_factor",
    "lstsq", "matrix_exp", "cond", "pinv_atol", "householder_product", "norm", "svd_old", "gammaln", "erfinv",
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_match_finite_differences(device, name):
    leaf = _f64(device)
    if device.backend.name == "mlx" and name in FFT_GRADS:
        pytest.skip("MLX has no complex128 for float64 transforms")
    if device.backend.name == "mlx" and name not in MLX_GRADS:
        pytest.skip("checked on NumPy: the same core gradient formula")
    fn, inputs = GRADS[name]
    assert lc.gradcheck(fn, [leaf(a) for a in inputs], eps=1e-6, atol=1e-6, rtol=1e-5)


def test_gammaln_second_derivative_is_trigamma(device):
    leaf = _f64(device)
    x = leaf(cases.POS)
    (g,) = lc.grad(lucid.special.gammaln(x).sum(), x, create_graph=True)
    (gg,) = lc.grad(g.sum(), x)
    np.testing.assert_allclose(_numpy(gg), EXPECTED["special_gamma_family:5"], rtol=1e-8)


def test_xlogy_gradient_at_zero_x_is_zero_as_in_pytorch(device):
    t, _ = _maker(device)
    x = lucid.tensor([0.0, 1.0], device=device, requires_grad=True)
    lucid.special.xlogy(x, t([0.0, 2.0])).sum().backward()
    np.testing.assert_allclose(_numpy(x.grad), [0.0, math.log(2.0)], rtol=1e-6)


def test_zeta_gradient_in_x_is_not_implemented_as_in_pytorch(device):
    leaf = _f64(device)
    x = leaf([3.0, 4.0])
    with pytest.raises(NotImplementedError, match="with respect to x"):
        lucid.special.zeta(x, 2.0).sum().backward()


# -- the composed kernels (a backend without SciPy, or MLX) against PyTorch, in float64 -----------------------


def _composed_device():
    """The NumPy namespace with no native kernels: every ``call`` takes the core's composed default."""
    real = lc.get_backend("numpy").default_device
    return types.SimpleNamespace(xp=real.xp, backend=types.SimpleNamespace(kernels={}, name="composed"))


COMPOSED = {
    "gammaln": (cases.POS, "special_gamma_family:0"),
    "digamma": (cases.POS, "special_gamma_family:2"),
    "erfc": (cases.X, "special_erf_family:1"),
    "erfcx": (cases.X, "special_erf_family:2"),
    "erfinv": (cases.UNIT, "special_erf_family:3"),
    "ndtri": (cases.PROB, "special_erf_family:5"),
    "log_ndtr": (cases.X * 5, "special_erf_family:6"),
    "i0": (cases.X * 4, "special_bessel_i:0"),
    "i0e": (cases.X * 4, "special_bessel_i:1"),
    "i1": (cases.X * 4, "special_bessel_i:2"),
    "i1e": (cases.X * 4, "special_bessel_i:3"),
}


@pytest.mark.parametrize("name", sorted(COMPOSED))
def test_composed_kernels_match_pytorch_in_float64(name):
    x, key = COMPOSED[name]
    got = KERNELS[f"special_{name}"].default(_composed_device(), np.asarray(x, dtype=np.float64))
    np.testing.assert_allclose(got, EXPECTED[key], rtol=1e-12, atol=1e-13)


def test_composed_gammaln_reflects_below_one_half():
    got = KERNELS["special_gammaln"].default(_composed_device(), cases.X + 0.25)
    np.testing.assert_allclose(got, EXPECTED["special_gamma_family:1"], rtol=1e-11, atol=1e-12)


def test_composed_polygamma_uses_the_hurwitz_zeta():
    dev = _composed_device()
    for n, key in ((1, "special_gamma_family:5"), (3, "special_gamma_family:6")):
        got = KERNELS["special_polygamma"].default(dev, n, cases.POS)
        np.testing.assert_allclose(got, EXPECTED[key], rtol=1e-8)  # PyTorch's trigamma is good to ~5e-10


def test_composed_incomplete_gamma_matches_pytorch():
    dev = _composed_device()
    a, x = cases.POS, cases.POS[::-1].copy()
    np.testing.assert_allclose(
        KERNELS["special_gammainc"].default(dev, a, x), EXPECTED["special_gammainc:0"], rtol=1e-11, atol=1e-14
    )
    np.testing.assert_allclose(
        KERNELS["special_gammaincc"].default(dev, a, x), EXPECTED["special_gammainc:1"], rtol=1e-11, atol=1e-14
    )


def test_kernels_without_a_composed_default_name_the_kernel():
    with pytest.raises(NotImplementedError, match="special_bessel_j0"):
        KERNELS["special_bessel_j0"].default(_composed_device(), np.ones(2))
