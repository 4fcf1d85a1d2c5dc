"""PyTorch's in-place random fills beyond ``uniform_``/``normal_``: ``exponential_``, ``geometric_``,
``log_normal_``, ``cauchy_``, ``random_``, ``bernoulli_`` — their distributions (moments within five standard
errors of 200 000 draws, from a fixed seed), their bounds, their errors, writes through views, ``generator=``."""

from __future__ import annotations

import math

import numpy as np
import pytest

import lucid_core as lc

N = 200_000


def _draws(device, fill):
    lc.manual_seed(1234)
    return np.asarray(fill(lc.empty(N, dtype=lc.float32, device=device)).numpy(), dtype=np.float64)


def _close(sample: np.ndarray, mean: float, var: float) -> None:
    assert abs(sample.mean() - mean) < 5 * math.sqrt(var / N), (sample.mean(), mean)


def test_exponential(device):
    x = _draws(device, lambda t: t.exponential_(2.0))
    assert x.min() >= 0
    _close(x, 0.5, 0.25)


def test_geometric(device):
    x = _draws(device, lambda t: t.geometric_(0.25))
    assert x.min() == 1 and np.all(x == np.round(x))
    _close(x, 4.0, 0.75 / 0.25**2)


def test_log_normal(device):
    x = _draws(device, lambda t: t.log_normal_(0.0, 0.5))
    _close(np.log(x), 0.0, 0.25)


def test_cauchy_median_and_quartiles(device):
    x = _draws(device, lambda t: t.cauchy_(1.0, 2.0))
    q1, med, q3 = np.quantile(x, [0.25, 0.5, 0.75])  # Cauchy(1, 2): quartiles at 1 -+ 2
    assert abs(med - 1.0) < 0.05 and abs(q1 + 1.0) < 0.06 and abs(q3 - 3.0) < 0.06


def test_bernoulli_with_a_number_and_with_a_tensor(device):
    _close(_draws(device, lambda t: t.bernoulli_(0.3)), 0.3, 0.21)
    p = lc.asarray([0.0, 1.0, 0.0], device=device)
    assert lc.zeros(2, 3, device=device).bernoulli_(p).tolist() == [[0, 1, 0], [0, 1, 0]]


def test_random_bounds(device):
    lc.manual_seed(0)
    x = lc.empty(5000, device=device).random_(3, 7).numpy()
    assert set(np.unique(x)) == {3.0, 4.0, 5.0, 6.0}
    y = lc.zeros(5000, dtype=lc.int64, device=device).random_(10).numpy()
    assert set(np.unique(y)) == set(range(10))
    z = lc.zeros(2000, dtype=lc.float32, device=device).random_().numpy()
    assert z.min() >= 0 and z.max() <= 2**24 and np.all(z == np.round(z))
    assert set(lc.zeros(200, dtype=lc.bool, device=device).random_().tolist()) == {False, True}


def test_fills_write_through_views_and_take_a_generator(device):
    w = lc.zeros(3, 4, device=device)
    w[:, 1].bernoulli_(1.0)
    w[0].exponential_()
    assert w[1:, 1].tolist() == [1.0, 1.0] and bool((w[0] > 0).all().item())
    g = lc.Generator().manual_seed(7)
    a = lc.empty(6, device=device).cauchy_(generator=g)
    g.manual_seed(7)
    assert a.tolist() == lc.empty(6, device=device).cauchy_(generator=g).tolist()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda t: t.exponential_(0.0), "exponential_ expects lambda > 0.0"),
        (lambda t: t.geometric_(1.0), r"geometric_ expects p to be in \(0, 1\)"),
        (lambda t: t.log_normal_(0.0, -1.0), "log_normal_ expects std > 0.0"),
        (lambda t: t.cauchy_(0.0, 0.0), "cauchy_ expects sigma > 0.0"),
        (lambda t: t.bernoulli_(1.5), r"bernoulli_ expects p to be in \[0, 1\]"),
        (lambda t: t.random_(5, 5), "random_ expects 'from' to be less than 'to'"),
    ],
)
def test_bad_parameters_raise(call, message, device):
    with pytest.raises((ValueError, RuntimeError), match=message):
        call(lc.empty(3, device=device))


def test_float_only_fills_refuse_integer_tensors(device):
    with pytest.raises(TypeError, match="exponential_ expects a floating point tensor, got int64"):
        lc.zeros(3, dtype=lc.int64, device=device).exponential_()
