"""torch-level names of lucid/_torch_surface.py: values and gradients against PyTorch's, draws, errors.

Values: every case of ``fixtures/torch_surface_cases.py`` against ``fixtures/torch_surface.npz`` (written once by
``casebook.py`` with PyTorch 2.13). poisson and binomial draw from Lucid's own samplers, so they
are checked by their moments; the rest by behaviour and errors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import lucid
from tests.pytorch_face.fixtures import casebook
from tests.pytorch_face.fixtures import torch_surface_cases as cases

TORCH = casebook.load("torch_surface")


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_matches_pytorch(name):
    casebook.assert_matches_pytorch(cases, TORCH, name)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: lucid.rsub(x, x * x, alpha=0.5),
        lambda x: lucid.frobenius_norm(x, (0, 1)),
        lambda x: lucid.nuclear_norm(x),
    ],
    ids=["rsub", "frobenius_norm", "nuclear_norm"],
)
def test_gradients_match_finite_differences(fn):
    x = lucid.tensor(cases.M, dtype=lucid.float64, requires_grad=True)
    assert lucid.autograd.gradcheck(fn, (x,))


def test_grad_scaler_is_the_amp_one():
    assert lucid.GradScaler is lucid.amp.GradScaler


def _moments_within(draws: np.ndarray, mean: float, var: float) -> None:
    n = draws.size
    # the sample mean's standard error is sqrt(var / n); the sample variance's about var * sqrt(2 / n)
    assert abs(draws.mean() - mean) < 5 * math.sqrt(var / n), (draws.mean(), mean)
    assert abs(draws.var() - var) < 5 * var * math.sqrt(2 / n) + 1e-12, (draws.var(), var)


@pytest.mark.parametrize("rate", [0.5, 4.0, 30.0])
def test_poisson_moments(rate):
    lucid.manual_seed(0)
    out = lucid.poisson(lucid.full((20000,), rate))
    assert out.dtype is lucid.float32
    draws = out.numpy()
    assert np.all(draws == np.round(draws)) and draws.min() >= 0
    _moments_within(draws, rate, rate)


def test_poisson_of_zero_rate_is_zero_and_generator_repeats():
    assert lucid.poisson(lucid.zeros(5)).tolist() == [0.0] * 5
    a = lucid.poisson(lucid.full((50,), 3.0), generator=lucid.Generator().manual_seed(3))
    b = lucid.poisson(lucid.full((50,), 3.0), generator=lucid.Generator().manual_seed(3))
    assert lucid.equal(a, b)


@pytest.mark.parametrize(("count", "prob"), [(10.0, 0.3), (50.0, 0.9)])
def test_binomial_moments(count, prob):
    lucid.manual_seed(1)
    out = lucid.binomial(lucid.full((20000,), count), lucid.full((20000,), prob))
    assert out.dtype is lucid.float32
    draws = out.numpy()
    assert draws.min() >= 0 and draws.max() <= count
    _moments_within(draws, count * prob, count * prob * (1 - prob))


def test_poisson_and_binomial_reject_bad_input():
    with pytest.raises(RuntimeError, match="non-negative"):
        lucid.poisson(lucid.tensor([1.0, -1.0]))
    with pytest.raises(NotImplementedError, match="int64"):
        lucid.poisson(lucid.tensor([1, 2]))
    with pytest.raises(ValueError, match="floating-point dtypes for count, got: int64"):
        lucid.binomial(lucid.tensor([10]), lucid.tensor([0.5]))


def test_frobenius_norm_rejects_three_dims():
    with pytest.raises(RuntimeError, match="at most 2 dimensions, but got 3"):
        lucid.frobenius_norm(lucid.ones(2, 3, 4), (0, 1, 2))


def test_cond_and_while_loop_reject_bad_predicates_and_carries():
    with pytest.raises(RuntimeError, match="one element"):
        lucid.cond(lucid.tensor([True, False]), lambda: 1, lambda: 2)
    with pytest.raises(RuntimeError, match="tuple or list"):
        lucid.while_loop(lambda a: a < 3, lambda a: a + 1, lucid.tensor(0))
    with pytest.raises(RuntimeError, match="returned 1 values, expected 2"):
        lucid.while_loop(lambda i, a: i < 3, lambda i, a: i + 1, (lucid.tensor(0), lucid.tensor(1.0)))


def test_cond_with_python_bool_runs_the_branch():
    assert lucid.cond(False, lambda: "t", lambda: "f") == "f"


def test_anomaly_detection_is_reported_off_and_cannot_be_turned_on():
    assert lucid.is_anomaly_enabled() is False
    assert lucid.is_anomaly_check_nan_enabled() is True
    lucid.set_anomaly_enabled(False)
    with pytest.raises(NotImplementedError, match="no anomaly detection"):
        lucid.set_anomaly_enabled(True)
    assert lucid.is_anomaly_enabled() is False


def test_get_device_module():
    assert lucid.get_device_module("cpu") is lucid.cpu
    assert lucid.get_device_module(lucid.device("cpu")) is lucid.cpu
    assert lucid.get_device_module("cuda:0") is lucid.cuda
    with pytest.raises(RuntimeError, match="corresponding module"):
        lucid.get_device_module("nosuchdevice")


def test_jagged_is_a_layout_distinct_from_strided():
    import pickle

    assert isinstance(lucid.jagged, lucid.layout) and lucid.jagged is not lucid.strided
    assert repr(lucid.jagged) == "lucid.jagged"  # torch.jagged's repr, in Lucid's namespace
    assert pickle.loads(pickle.dumps(lucid.jagged)) is lucid.jagged
