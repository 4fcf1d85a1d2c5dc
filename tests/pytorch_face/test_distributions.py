"""``lucid.distributions`` against ``torch.distributions``: values from ``fixtures/distribution_cases.py`` run with
PyTorch in ``fixtures/generate_distributions.py`` (fixtures/distributions.npz), gradients against finite
differences, sample shapes and moments, validation errors, transforms and the KL registry."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import lucid
import lucid_core as lc
from lucid import distributions as D
from lucid.distributions import _special, constraints
from lucid.distributions import transforms as T
from tests.pytorch_face.fixtures import distribution_cases as cases

from .conftest import HERE

with np.load(HERE / "fixtures" / "distributions.npz") as _f:
    EXPECTED = {k: _f[k] for k in _f.files}

F64 = lc.float64


@pytest.fixture
def on_backend(device):
    """Make the backend under test the default device (the cases create tensors without naming one)."""
    previous = lc.get_default_device()
    lc.set_default_device(device)
    yield device
    lc.set_default_device(previous)


def _np(t: lc.Tensor) -> np.ndarray:
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def _t(values, device, dtype=F64, requires_grad: bool = False) -> lc.Tensor:
    t = lc.asarray(np.array(values).tolist(), dtype=dtype, device=device)
    return t.requires_grad_(True) if requires_grad else t


# PyTorch's Multinomial.entropy takes lgamma of an int64 tensor, which computes in float32 (6.5792513 for
# lgamma(7) instead of 6.5792512120): ours stays in float64, so that output is compared to float32's precision
LOOSER = {"multinomial.entropy": 1e-7}


def _compare(case: str, dtype, tol: float) -> None:
    ours = cases.CASES[case](lucid, dtype)
    keys = sorted(k.split(".", 1)[1] for k in EXPECTED if k.startswith(case + "."))
    assert keys == sorted(ours), f"{case}: outputs {sorted(ours)} vs fixture {keys}"
    for key in keys:
        got, expected = _np(ours[key]), EXPECTED[f"{case}.{key}"]
        assert got.shape == expected.shape, f"{case}.{key}: shape {got.shape} != {expected.shape}"
        t = max(tol, LOOSER.get(f"{case}.{key}", 0.0))
        np.testing.assert_allclose(got, expected, rtol=t, atol=t, equal_nan=True, err_msg=f"{case}.{key}")


# -- values against PyTorch -----------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(cases.CASES))
def test_values_match_pytorch_float64(case: str, on_backend) -> None:
    _compare(case, lucid.float64, 1e-10)


@pytest.mark.parametrize("case", sorted(cases.CASES))
def test_values_match_pytorch_float32(case: str, on_backend) -> None:
    _compare(case, lucid.float32, 5e-5)


def test_special_functions_match_pytorch(device) -> None:
    x, pos = _t(cases.SPECIAL_X, device), _t(cases.SPECIAL_POS, device)
    np.testing.assert_allclose(_np(_special.lgamma(x)), EXPECTED["special.lgamma"], rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(_np(_special.digamma(x)), EXPECTED["special.digamma"], rtol=1e-13, atol=1e-13)
    for n in (1, 2, 3):
        got = _np(_special.polygamma(n, pos))
        # PyTorch's trigamma is good to ~5e-10 only; the closed forms below pin ours to 1e-15
        np.testing.assert_allclose(got, EXPECTED[f"special.polygamma{n}"], rtol=1e-8, atol=0)
    closed = _special.polygamma(1, _t([1.0, 0.5], device)), _special.polygamma(2, _t([1.0], device))
    np.testing.assert_allclose(_np(closed[0]), [math.pi**2 / 6, math.pi**2 / 2], rtol=1e-15)
    np.testing.assert_allclose(_np(closed[1]), [-2 * 1.2020569031595942], rtol=1e-15)
    # erfinv's condition number near +-1 is large, so compare the round trip too
    e = _t(cases.ERFINV_X, device)
    np.testing.assert_allclose(_np(_special.erfinv(e)), EXPECTED["special.erfinv"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(_np(lc.erf(_special.erfinv(e))), cases.ERFINV_X, rtol=0, atol=1e-15)


def test_gamma_sample_gradient_matches_pytorch(device) -> None:
    # ours is the exact series (checked against scipy to 1e-9); PyTorch's approximation is good to ~5e-5
    alpha, x = _t(cases.GAMMA_GRAD_ALPHA, device), _t(cases.GAMMA_GRAD_X, device)
    got = _np(_special._gamma_sample_grad(alpha, x))
    np.testing.assert_allclose(got, EXPECTED["gamma_grad"], rtol=1e-4)


def test_special_gradients_match_finite_differences(device) -> None:
    x = _t([0.7, 3.2, 12.5, -0.4], device, requires_grad=True)
    assert lc.gradcheck(_special.lgamma, [x])
    assert lc.gradcheck(_special.digamma, [x])
    assert lc.gradgradcheck(_special.lgamma, [x])
    p = _t([0.7, 3.2, 12.5], device, requires_grad=True)
    assert lc.gradcheck(lambda v: _special.polygamma(2, v), [p])
    assert lc.gradcheck(_special.erfinv, [_t([-0.8, 0.1, 0.6], device, requires_grad=True)])
    a, x = _t([0.3, 2.0, 7.5], device, requires_grad=True), _t([0.2, 2.5, 30.0], device, requires_grad=True)
    assert lc.gradcheck(_special.gammainc, [a, x])


# -- gradients of log_prob, entropy, cdf and KL ----------------------------------------------------------


def _pos(device, *shape, lo=0.5, hi=2.0, seed=0):
    return _t(np.random.default_rng(seed).uniform(lo, hi, shape), device, requires_grad=True)


LOG_PROB_GRADS = {
    "normal": (lambda a, b: D.Normal(a, b), [(3,), (3,)], [0.3, -0.4, 1.2]),
    "gamma": (lambda a, b: D.Gamma(a, b), [(3,), (3,)], [0.4, 1.3, 2.2]),
    "beta": (lambda a, b: D.Beta(a, b), [(3,), (3,)], [0.2, 0.5, 0.9]),
    "student_t": (lambda df, s: D.StudentT(df, 0.3, s), [(3,), (3,)], [0.3, -2.0, 1.0]),
    "laplace": (lambda a, b: D.Laplace(a, b), [(3,), (3,)], [0.3, -0.4, 3.2]),
    "log_normal": (lambda a, b: D.LogNormal(a, b), [(3,), (3,)], [0.3, 1.4, 3.2]),
    "dirichlet": (lambda c: D.Dirichlet(c), [(3,)], [0.2, 0.3, 0.5]),
    "poisson": (lambda r: D.Poisson(r), [(3,)], [0.0, 2.0, 5.0]),
    "binomial": (lambda p: D.Binomial(6, probs=p / 3), [(3,)], [0.0, 2.0, 5.0]),
}


@pytest.mark.parametrize("name", sorted(LOG_PROB_GRADS))
def test_log_prob_gradients_match_finite_differences(name: str, device) -> None:
    make, shapes, value = LOG_PROB_GRADS[name]
    params = [_pos(device, *s, seed=i) for i, s in enumerate(shapes)]
    v = _t(value, device)
    assert lc.gradcheck(lambda *ps: make(*ps).log_prob(v), params)


def test_logits_gradients_match_finite_differences(device) -> None:
    logits = _t(np.random.default_rng(1).normal(size=(2, 4)), device, requires_grad=True)
    idx = lc.asarray([3, 0], device=device)
    assert lc.gradcheck(lambda z: D.Categorical(logits=z).log_prob(idx), [logits])
    assert lc.gradcheck(lambda z: D.Categorical(logits=z).entropy(), [logits])
    b = _t([1.0, 0.0, 1.0, 0.0], device)
    assert lc.gradcheck(lambda z: D.Bernoulli(logits=z[0]).log_prob(b), [logits])
    assert lc.gradcheck(lambda z: D.Bernoulli(logits=z[0]).entropy(), [logits])


def test_mvn_log_prob_gradient_matches_finite_differences(device) -> None:
    loc = _t([0.1, -0.3, 0.5], device, requires_grad=True)
    a = _t(cases.MVN_COV / 3, device, requires_grad=True)
    x = _t(cases.MVN_X[:, 0], device)

    def log_prob(m, c):
        return D.MultivariateNormal(m, covariance_matrix=(c + c.mT) / 2).log_prob(x)

    assert lc.gradcheck(log_prob, [loc, a])
    tril = _t(np.linalg.cholesky(cases.MVN_COV), device, requires_grad=True)
    assert lc.gradcheck(lambda m, l: D.MultivariateNormal(m, scale_tril=lc.tril(l)).entropy(), [loc, tril])


def test_entropy_and_kl_gradients_match_finite_differences(device) -> None:
    a, b = _pos(device, 3, seed=3), _pos(device, 3, seed=4)
    assert lc.gradcheck(lambda c, r: D.Gamma(c, r).entropy(), [a, b])
    assert lc.gradcheck(lambda c, r: D.kl_divergence(D.Gamma(c, r), D.Gamma(r, c)), [a, b])
    assert lc.gradcheck(lambda c, r: D.kl_divergence(D.Beta(c, r), D.Beta(r, c)), [a, b])
    assert lc.gradcheck(lambda m, s: D.kl_divergence(D.Normal(m, s), D.Normal(s, m)), [a, b])
    assert lc.gradcheck(lambda m, s: D.Normal(m, s).cdf(_t([0.1, 1.0, 2.0], device)), [a, b])


RSAMPLE_GRADS = {
    "normal": lambda a, b: D.Normal(a, b),
    "uniform": lambda a, b: D.Uniform(a, a + b),
    "laplace": lambda a, b: D.Laplace(a, b),
    "cauchy": lambda a, b: D.Cauchy(a, b),
    "exponential": lambda a, b: D.Exponential(a * b),
    "log_normal": lambda a, b: D.LogNormal(a, b),
    "gumbel": lambda a, b: D.Gumbel(a, b),
    "relaxed_bernoulli": lambda a, b: D.RelaxedBernoulli(b, probs=a / 3),
    "relaxed_one_hot": lambda a, b: D.RelaxedOneHotCategorical(b[0], logits=a),
    "transformed_tanh": lambda a, b: D.TransformedDistribution(
        D.Normal(a, b), [T.AffineTransform(0.5, 0.25), T.TanhTransform()]
    ),
    "independent": lambda a, b: D.Independent(D.Normal(a, b), 1),
}


@pytest.mark.parametrize("name", sorted(RSAMPLE_GRADS))
def test_rsample_loss_gradients_match_finite_differences(name: str, device) -> None:
    """With the seed fixed, a reparameterised sample is a smooth function of the parameters."""
    a, b = _pos(device, 3, seed=5), _pos(device, 3, seed=6)
    make = RSAMPLE_GRADS[name]

    def loss(p, q):
        lc.manual_seed(7)
        return lc.sum(make(p, q).rsample((4,)) ** 2, axis=0)

    assert lc.gradcheck(loss, [a, b])


def test_mvn_rsample_gradient_matches_finite_differences(device) -> None:
    loc = _t([0.1, -0.3, 0.5], device, requires_grad=True)
    tril = _t(np.linalg.cholesky(cases.MVN_COV), device, requires_grad=True)

    def loss(m, l):
        lc.manual_seed(3)
        return lc.sum(D.MultivariateNormal(m, scale_tril=lc.tril(l)).rsample((5,)) ** 2, axis=0)

    assert lc.gradcheck(loss, [loc, tril])


def test_gamma_rsample_gradient_is_unbiased(device) -> None:
    """d/dalpha E[x] = 1 / rate and d/dalpha E[x^2] = (2 alpha + 1) / rate^2, from implicit gradients."""
    n = 20000
    for alpha in (0.4, 3.0):
        conc = _t([alpha], device, requires_grad=True)
        x = D.Gamma(conc, 2.0).rsample((n,))
        (g1,) = lc.grad(lc.mean(x), [conc], retain_graph=True)
        (g2,) = lc.grad(lc.mean(x * x), [conc])
        # standard errors of the estimators from the draws themselves, 5 sigma
        assert abs(g1.item() - 0.5) < 0.03, (alpha, g1.item())
        assert abs(g2.item() - (2 * alpha + 1) / 4) < 0.1 * (2 * alpha + 1) / 4, (alpha, g2.item())


def test_dirichlet_and_beta_rsample_carry_gradients(device) -> None:
    conc = _t([0.5, 2.0, 4.0], device, requires_grad=True)
    x = D.Dirichlet(conc).rsample((20000,))
    # E[x_0] = c0 / sum(c): d/dc0 = (sum - c0) / sum^2
    (g,) = lc.grad(lc.mean(x[:, 0]), [conc])
    expected = np.array([6.0 / 6.5**2, -0.5 / 6.5**2, -0.5 / 6.5**2])
    np.testing.assert_allclose(_np(g), expected, atol=0.01)
    c1 = _t([2.0], device, requires_grad=True)
    (gb,) = lc.grad(lc.mean(D.Beta(c1, 3.0).rsample((20000,))), [c1])
    assert abs(gb.item() - 3.0 / 25.0) < 0.01


# -- shapes ------------------------------------------------------------------------------------------------


def _families(device):
    """(name, distribution, event_shape) with batch shape (2, 3) where the family allows."""
    r = np.random.default_rng(2)
    loc, scale = _t(r.normal(size=(2, 3)), device), _t(r.uniform(0.5, 2, (2, 3)), device)
    p = _t(r.uniform(0.1, 0.9, (2, 3)), device)
    logits = _t(r.normal(size=(2, 3, 4)), device)
    cov = _t(cases._spd(4, 2, 3), device)
    return [
        ("Normal", D.Normal(loc, scale), ()),
        ("Uniform", D.Uniform(loc, loc + scale), ()),
        ("Bernoulli", D.Bernoulli(p), ()),
        ("Categorical", D.Categorical(logits=logits), ()),
        ("OneHotCategorical", D.OneHotCategorical(logits=logits), (4,)),
        ("MultivariateNormal", D.MultivariateNormal(logits, covariance_matrix=cov), (4,)),
        ("Independent", D.Independent(D.Normal(logits, 1.0), 1), (4,)),
        ("Beta", D.Beta(scale, scale + 1), ()),
        ("Gamma", D.Gamma(scale, scale), ()),
        ("Chi2", D.Chi2(scale), ()),
        ("Dirichlet", D.Dirichlet(lc.exp(logits)), (4,)),
        ("Exponential", D.Exponential(scale), ()),
        ("Laplace", D.Laplace(loc, scale), ()),
        ("LogNormal", D.LogNormal(loc, scale), ()),
        ("HalfNormal", D.HalfNormal(scale), ()),
        ("Gumbel", D.Gumbel(loc, scale), ()),
        ("Poisson", D.Poisson(scale * 5), ()),
        ("Binomial", D.Binomial(5, probs=p), ()),
        ("Geometric", D.Geometric(p), ()),
        ("Cauchy", D.Cauchy(loc, scale), ()),
        ("StudentT", D.StudentT(scale + 1, loc, scale), ()),
        ("RelaxedBernoulli", D.RelaxedBernoulli(0.5, probs=p), ()),
        ("RelaxedOneHotCategorical", D.RelaxedOneHotCategorical(0.5, logits=logits), (4,)),
        ("MixtureSameFamily", D.MixtureSameFamily(D.Categorical(logits=logits), D.Normal(logits, 1.0)), ()),
        ("Multinomial", D.Multinomial(5, logits=logits), (4,)),
        ("NegativeBinomial", D.NegativeBinomial(scale * 3, probs=p), ()),
        ("Pareto", D.Pareto(scale, scale + 2), ()),
        ("Weibull", D.Weibull(scale, scale + 0.5), ()),
        ("HalfCauchy", D.HalfCauchy(scale), ()),
    ]


@pytest.mark.parametrize("sample_shape", [(), (5,), (2, 1)])
def test_sample_and_rsample_shapes(sample_shape, device) -> None:
    for name, d, event in _families(device):
        batch = (2, 3)
        assert tuple(d.batch_shape) == batch and tuple(d.event_shape) == event, name
        expected = (*sample_shape, *batch, *event)
        s = d.sample(sample_shape)
        assert tuple(s.shape) == expected, (name, s.shape)
        assert not s.requires_grad, name
        if d.has_rsample:
            assert tuple(d.rsample(sample_shape).shape) == expected, name
        assert tuple(d.log_prob(s).shape) == (*sample_shape, *batch), name
        assert bool(lc.all(d.support.check(s)).item()), name
        expanded = d.expand((4, *batch))
        assert tuple(expanded.batch_shape) == (4, *batch), name
        assert tuple(expanded.sample(sample_shape).shape) == (*sample_shape, 4, *batch, *event), name


def test_scalar_parameters_give_empty_batch_shape(device) -> None:
    d = D.Normal(0.0, 1.0)
    assert d.batch_shape == lucid.Size([]) and d.sample().shape == ()
    assert tuple(d.sample((3,)).shape) == (3,)
    assert D.Normal(_t([0.0, 1.0], device), 1.0).batch_shape == lucid.Size([2])


def test_categorical_sample_dtype_is_int64_and_bernoulli_floats(device) -> None:
    assert D.Categorical(probs=_t([0.2, 0.8], device)).sample((3,)).dtype == lc.int64
    assert D.Bernoulli(_t([0.2, 0.8], device)).sample().dtype == F64


def test_rsample_is_missing_where_pytorch_has_none(device) -> None:
    for d in (D.Bernoulli(0.3), D.Categorical(probs=_t([0.5, 0.5], device)), D.Poisson(2.0)):
        assert not d.has_rsample
        with pytest.raises(NotImplementedError):
            d.rsample()


def test_manual_seed_governs_sampling(device) -> None:
    d = D.Gamma(_t([0.5, 3.0], device), 1.0)
    lc.manual_seed(11)
    a = _np(d.sample((50,)))
    b = _np(d.sample((50,)))
    lc.manual_seed(11)
    np.testing.assert_array_equal(_np(d.sample((50,))), a)
    assert not np.array_equal(a, b)


# -- sample moments ------------------------------------------------------------------------------------------


MOMENT_CASES = {
    "normal": lambda dev: D.Normal(_t([-1.0, 2.0], dev), _t([0.5, 3.0], dev)),
    "uniform": lambda dev: D.Uniform(_t([-1.0, 2.0], dev), _t([0.5, 3.0], dev)),
    "bernoulli": lambda dev: D.Bernoulli(_t([0.1, 0.7], dev)),
    "exponential": lambda dev: D.Exponential(_t([0.5, 4.0], dev)),
    "laplace": lambda dev: D.Laplace(_t([0.0, 1.0], dev), _t([1.0, 0.2], dev)),
    "gamma": lambda dev: D.Gamma(_t([0.3, 1.0, 7.5, 150.0], dev), _t([1.0, 2.0, 0.5, 3.0], dev)),
    "beta": lambda dev: D.Beta(_t([0.5, 2.0], dev), _t([0.7, 5.0], dev)),
    "log_normal": lambda dev: D.LogNormal(_t([0.0, 0.5], dev), _t([0.3, 0.5], dev)),
    "poisson": lambda dev: D.Poisson(_t([0.5, 4.0, 9.5, 10.0, 60.0, 800.0], dev)),
    "binomial": lambda dev: D.Binomial(_t([3.0, 20.0, 60.0], dev), probs=_t([0.3, 0.9, 0.05], dev)),
    "geometric": lambda dev: D.Geometric(_t([0.2, 0.8], dev)),
    "student_t": lambda dev: D.StudentT(_t([5.0, 9.0], dev), _t([0.0, 2.0], dev), _t([1.0, 0.5], dev)),
    "chi2": lambda dev: D.Chi2(_t([1.0, 6.0], dev)),
    "half_normal": lambda dev: D.HalfNormal(_t([1.0, 2.0], dev)),
    "gumbel": lambda dev: D.Gumbel(_t([0.0, 1.0], dev), _t([1.0, 2.0], dev)),
    "dirichlet": lambda dev: D.Dirichlet(_t([0.3, 1.0, 4.0], dev)),
    "one_hot": lambda dev: D.OneHotCategorical(probs=_t([0.1, 0.6, 0.3], dev)),
    "multinomial": lambda dev: D.Multinomial(7, probs=_t([0.1, 0.6, 0.3], dev)),
    "negative_binomial": lambda dev: D.NegativeBinomial(_t([2.0, 15.0], dev), probs=_t([0.3, 0.6], dev)),
    "pareto": lambda dev: D.Pareto(_t([1.0, 2.0], dev), _t([9.0, 12.0], dev)),
    "weibull": lambda dev: D.Weibull(_t([1.0, 2.0], dev), _t([0.8, 3.0], dev)),
    "mixture": lambda dev: D.MixtureSameFamily(
        D.Categorical(probs=_t([0.3, 0.7], dev)), D.Normal(_t([-2.0, 1.0], dev), _t([0.5, 1.0], dev))
    ),
}


@pytest.mark.parametrize("name", sorted(MOMENT_CASES))
def test_sample_moments_agree_with_mean_and_variance(name: str, device) -> None:
    """Sample mean within 5 standard errors of ``mean``; sample variance within 5 of its own error."""
    d = MOMENT_CASES[name](device)
    n = 20000
    x = _np(d.sample((n,)))
    mean, var = _np(d.mean), _np(d.variance)
    se_mean = np.sqrt(var / n)
    assert np.all(np.abs(x.mean(0) - mean) < 5 * se_mean + 1e-12), (x.mean(0), mean)
    # the variance of the sample variance is (m4 - var^2) / n: use the sample's fourth central moment
    m4 = ((x - x.mean(0)) ** 4).mean(0)
    se_var = np.sqrt(np.maximum(m4 - var**2, 0) / n)
    assert np.all(np.abs(x.var(0) - var) < 5 * se_var + 1e-12), (x.var(0), var)


def test_categorical_frequencies_and_mvn_covariance(device) -> None:
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    x = _np(D.Categorical(probs=_t(probs * 3, device)).sample((20000,)))
    freq = np.stack([(x == k).mean(0) for k in range(3)], -1)
    assert np.all(np.abs(freq - probs) < 5 * np.sqrt(probs * (1 - probs) / 20000))
    cov = cases._spd(3)
    y = _np(D.MultivariateNormal(_t([1.0, -1.0, 0.0], device), covariance_matrix=_t(cov, device)).sample((40000,)))
    np.testing.assert_allclose(np.cov(y.T), cov, atol=5 * np.sqrt(2 * np.max(np.diag(cov)) ** 2 / 40000))
    np.testing.assert_allclose(y.mean(0), [1.0, -1.0, 0.0], atol=5 * np.sqrt(np.max(np.diag(cov)) / 40000))


def test_relaxed_samples_concentrate_at_low_temperature(device) -> None:
    x = _np(D.RelaxedBernoulli(_t(0.05, device), probs=_t([0.3], device)).sample((20000,)))
    hard = (x > 0.5).mean()
    assert abs(hard - 0.3) < 5 * math.sqrt(0.3 * 0.7 / 20000)
    y = _np(D.RelaxedOneHotCategorical(_t(0.05, device), probs=_t([0.2, 0.8], device)).sample((20000,)))
    assert abs((y.argmax(-1) == 1).mean() - 0.8) < 5 * math.sqrt(0.16 / 20000)
    np.testing.assert_allclose(y.sum(-1), 1.0, atol=1e-12)


# -- validation ---------------------------------------------------------------------------------------------


def test_bad_parameters_raise_pytorchs_value_error(device) -> None:
    with pytest.raises(ValueError, match=r"Expected parameter scale \(Tensor of shape \(2,\)\) of distribution Normal"):
        D.Normal(_t([0.0, 1.0], device), _t([1.0, -1.0], device))
    with pytest.raises(ValueError, match=r"to satisfy the constraint GreaterThan\(lower_bound=0.0\)"):
        D.Gamma(1.0, -2.0)
    with pytest.raises(ValueError, match=r"constraint Interval\(lower_bound=0.0, upper_bound=1.0\)"):
        D.Bernoulli(_t([1.5], device))
    with pytest.raises(ValueError, match="constraint Simplex"):
        D.Categorical(probs=_t([0.5, -0.5, 1.0], device))
    with pytest.raises(ValueError, match="Expected parameter low"):
        D.Uniform(2.0, 1.0)
    with pytest.raises(ValueError, match="PositiveDefinite"):
        D.MultivariateNormal(_t([0.0, 0.0], device), covariance_matrix=_t([[1.0, 2.0], [2.0, 1.0]], device))
    with pytest.raises(ValueError, match="to be positive but found invalid values"):
        D.Geometric(_t([0.0, 0.5], device))


def test_argument_combinations_raise_value_error(device) -> None:
    p = _t([0.3, 0.7], device)
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both."):
        D.Bernoulli(p, p)
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        D.Categorical()
    with pytest.raises(ValueError, match="`probs` parameter must be at least one-dimensional."):
        D.Categorical(probs=_t(0.5, device))
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or precision_matrix or scale_tril"):
        D.MultivariateNormal(p)
    with pytest.raises(ValueError, match="loc must be at least one-dimensional."):
        D.MultivariateNormal(_t(0.0, device), covariance_matrix=_t([[1.0]], device))
    with pytest.raises(ValueError, match=r"Expected reinterpreted_batch_ndims <= len\(base_distribution.batch_shape\)"):
        D.Independent(D.Normal(p, 1.0), 2)
    with pytest.raises(ValueError, match="does not equal `component_distribution.batch_shape"):
        D.MixtureSameFamily(D.Categorical(probs=p), D.Normal(_t([0.0, 1.0, 2.0], device), 1.0))


def test_values_outside_the_support_raise(device) -> None:
    expected = (
        r"Expected value argument \(Tensor of shape \(2,\)\) to be within the support "
        r"\(GreaterThanEq\(lower_bound=0.0\)\) of the distribution Exponential"
    )
    with pytest.raises(ValueError, match=expected):
        D.Exponential(_t([1.0, 2.0], device)).log_prob(_t([1.0, -1.0], device))
    with pytest.raises(ValueError, match=r"support \(Boolean\(\)\)"):
        D.Bernoulli(0.3).log_prob(_t([0.5], device))
    with pytest.raises(ValueError, match="IntegerInterval"):
        D.Categorical(probs=_t([0.5, 0.5], device)).log_prob(lc.asarray([2], device=device))
    with pytest.raises(ValueError, match="The right-most size of value must match event_shape"):
        D.MultivariateNormal(_t([0.0, 0.0], device), scale_tril=lc.eye(2, dtype=F64, device=device)).log_prob(
            _t([1.0, 2.0, 3.0], device)
        )
    with pytest.raises(ValueError, match="Value is not broadcastable with batch_shape"):
        D.Normal(_t([0.0, 1.0], device), 1.0).log_prob(_t([1.0, 2.0, 3.0], device))
    with pytest.raises(ValueError, match="The value argument to log_prob must be a Tensor"):
        D.Normal(0.0, 1.0).log_prob(0.5)


def test_validate_args_false_and_the_class_default(device, on_backend) -> None:
    d = D.Normal(0.0, -1.0, validate_args=False)  # accepted without checking
    assert math.isnan(d.log_prob(_t(0.0, device)).item())
    out = D.Uniform(0.0, 1.0, validate_args=False).log_prob(_t([2.0], device))
    assert out.item() == -math.inf
    D.Distribution.set_default_validate_args(False)
    try:
        D.Normal(0.0, -1.0)
        assert not D.Normal(0.0, 1.0)._validate_args
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


# -- constraints, transforms, KL, enumerate_support ---------------------------------------------------------------


def test_constraints_check_per_event(device) -> None:
    x = _t([[0.2, 0.8], [0.5, 0.6]], device)
    assert lc.all(constraints.simplex.check(x) == lc.asarray([True, False], device=device)).item()
    assert lc.all(constraints.positive.check(_t([1.0, 0.0], device)) == lc.asarray([True, False], device=device)).item()
    assert lc.all(
        constraints.unit_interval.check(_t([0.0, 1.0, 1.1], device)) == lc.asarray([True, True, False], device=device)
    ).item()
    assert lc.all(
        constraints.integer_interval(0, 3).check(_t([0.0, 3.0, 1.5, 4.0], device))
        == lc.asarray([True, True, False, False], device=device)
    ).item()
    assert constraints.independent(constraints.real, 1).check(x).shape == (2,)
    assert constraints.lower_cholesky.check(_t([[1.0, 0.0], [2.0, 3.0]], device)).item()
    assert not constraints.lower_cholesky.check(_t([[1.0, 1.0], [2.0, 3.0]], device)).item()
    assert constraints.boolean.is_discrete and not constraints.real.is_discrete
    assert (
        repr(constraints.real) == "Real()"
        and repr(constraints.interval(0, 1)) == "Interval(lower_bound=0, upper_bound=1)"
    )


TRANSFORMS = {
    "exp": (T.ExpTransform(), [-1.0, 0.2, 2.0]),
    "affine": (T.AffineTransform(0.5, -2.0), [-1.0, 0.2, 2.0]),
    "sigmoid": (T.SigmoidTransform(), [-3.0, 0.2, 2.0]),
    "tanh": (T.TanhTransform(), [-1.5, 0.2, 2.0]),
    "softplus": (T.SoftplusTransform(), [-1.5, 0.2, 2.0]),
    "power": (T.PowerTransform(3.0), [0.5, 1.2, 2.0]),
    "compose": (T.ComposeTransform([T.AffineTransform(0.5, 0.5), T.ExpTransform()]), [-1.0, 0.2, 2.0]),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transform_inverse_and_log_det_jacobian(name: str, device) -> None:
    t, values = TRANSFORMS[name]
    x = _t(values, device, requires_grad=True)
    y = t(x)
    np.testing.assert_allclose(_np(t.inv(y)), values, rtol=1e-12)
    (dydx,) = lc.grad(lc.sum(y), [x])
    np.testing.assert_allclose(_np(t.log_abs_det_jacobian(x, y)), np.log(np.abs(_np(dydx))), rtol=1e-10, atol=1e-12)
    inv = t.inv
    assert inv.inv is t and repr(inv.domain) == repr(t.codomain) and repr(inv.codomain) == repr(t.domain)
    assert t.bijective


def test_transform_cache_returns_the_input() -> None:
    t = T.TanhTransform(cache_size=1)
    x = lc.asarray([30.0], dtype=F64)  # tanh(30) rounds to 1: atanh would give inf without the cache
    assert t.inv(t(x)) is x


def test_kl_of_a_distribution_with_itself_is_zero(device) -> None:
    loc, scale = _t([0.1, -2.0], device), _t([0.5, 2.0], device)
    for p in (D.Normal(loc, scale), D.Gamma(scale, scale), D.Laplace(loc, scale), D.Beta(scale, scale + 1)):
        np.testing.assert_allclose(_np(D.kl_divergence(p, p)), 0.0, atol=1e-12)


def test_kl_registry_dispatch_and_missing_pairs(device) -> None:
    with pytest.raises(
        NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p type Normal and q type Gamma"
    ):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Gamma(1.0, 1.0))

    class MyNormal(D.Normal):
        pass

    # a subclass inherits the parent's rule until it registers its own
    p, q = MyNormal(0.0, 1.0), D.Normal(1.0, 2.0)
    assert abs(D.kl_divergence(p, q).item() - D.kl_divergence(D.Normal(0.0, 1.0), q).item()) < 1e-7

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return lc.zeros(p.batch_shape)

    assert D.kl_divergence(p, q).item() == 0.0
    with pytest.raises(TypeError):
        D.register_kl(int, D.Normal)


def test_enumerate_support(device) -> None:
    b = D.Bernoulli(_t([0.2, 0.7, 0.5], device))
    assert tuple(b.enumerate_support().shape) == (2, 3) and tuple(b.enumerate_support(False).shape) == (2, 1)
    c = D.Categorical(probs=_t(np.full((2, 4), 0.25), device))
    np.testing.assert_array_equal(_np(c.enumerate_support())[:, 0], [0, 1, 2, 3])
    total = lc.sum(lc.exp(c.log_prob(c.enumerate_support())), axis=0)
    np.testing.assert_allclose(_np(total), 1.0, rtol=1e-12)
    binom = D.Binomial(4, probs=_t([0.3, 0.6], device))
    np.testing.assert_allclose(_np(lc.sum(lc.exp(binom.log_prob(binom.enumerate_support())), axis=0)), 1.0)


def test_repr_and_namespace() -> None:
    assert repr(D.Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"
    assert repr(D.Normal(lc.zeros(2), 1.0)) == "Normal(loc: lucid.Size([2]), scale: lucid.Size([2]))"
    assert lucid.distributions is D and "distributions" in dir(lucid)
    assert D.Normal.arg_constraints["scale"] is constraints.positive


def test_import_imports_no_array_library() -> None:
    code = textwrap.dedent(
        """
        import sys
        import lucid.distributions as D
        bad = [m for m in ("numpy", "mlx", "torch") if m in sys.modules]
        assert not bad, bad
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_straight_through_rsample_passes_gradients_to_probs(device) -> None:
    logits = _t([0.2, -1.0, 0.5], device, requires_grad=True)
    w = _t([1.0, 2.0, 3.0], device)
    d = D.OneHotCategoricalStraightThrough(logits=logits)
    s = d.rsample((4,))
    np.testing.assert_array_equal(_np(lc.sum(s, axis=-1)), 1.0)  # still one-hot in value
    (g,) = lc.grad(lc.sum(s * w), [logits], retain_graph=True)  # probs (cached) is shared by both
    (expected,) = lc.grad(lc.sum(4 * d.probs * w), [logits])
    np.testing.assert_allclose(_np(g), _np(expected), rtol=1e-12)
