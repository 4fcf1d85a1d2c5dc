"""Random numbers: seeded runs repeat exactly, distributions are roughly right, dtypes, bounds, state."""

from __future__ import annotations

import numpy as np
import pytest

import lucid_core as lc

N = 4000  # enough samples for generous moment checks, still fast with the portable generators


def _draws(device):
    return [
        lc.randn(3, 2, device=device),
        lc.rand(4, device=device),
        lc.randint(0, 10, (5,), device=device),
        lc.normal(1.0, 2.0, (3,), device=device),
        lc.uniform(-1.0, 1.0, (3,), device=device),
        lc.bernoulli(0.5, (6,), device=device),
        lc.permutation(7, device=device),
    ]


def test_manual_seed_repeats_exactly(device):
    lc.manual_seed(123)
    first = [t.tolist() for t in _draws(device)]
    host_first = lc.host_rng().random()
    lc.manual_seed(123)
    second = [t.tolist() for t in _draws(device)]
    assert first == second
    assert lc.host_rng().random() == host_first
    assert lc.initial_seed() == 123


def test_different_seeds_differ(device):
    lc.manual_seed(1)
    a = lc.randn(16, device=device).tolist()
    lc.manual_seed(2)
    b = lc.randn(16, device=device).tolist()
    assert a != b
    c = lc.randn(16, device=device).tolist()
    assert c != b  # the stream advances


def test_manual_seed_rejects_non_int():
    with pytest.raises(TypeError, match="manual_seed: seed must be an int, got float"):
        lc.manual_seed(1.5)
    with pytest.raises(TypeError, match="manual_seed: seed must be an int, got bool"):
        lc.manual_seed(True)


def test_rng_state_round_trip(device):
    lc.manual_seed(7)
    lc.randn(3, device=device)
    state = lc.get_rng_state()
    a = lc.randn(5, device=device).tolist()
    h = lc.host_rng().random()
    lc.randn(50, device=device)
    lc.set_rng_state(state)
    assert lc.randn(5, device=device).tolist() == a
    assert lc.host_rng().random() == h
    with pytest.raises(ValueError, match="set_rng_state: expected a dict made by lucid_core.get_rng_state"):
        lc.set_rng_state([1, 2])


def test_randn_distribution_and_dtype(device):
    x = lc.randn(N, device=device)
    assert x.dtype is lc.float32 and x.shape == (N,) and x.device == device
    v = x.numpy()
    assert abs(v.mean()) < 0.1
    assert 0.9 < v.std() < 1.1
    assert lc.randn(2, 3, device=device).shape == (2, 3)
    assert lc.randn((2, 3), device=device).shape == (2, 3)
    assert lc.randn(device=device).shape == ()
    if lc.float64 in device.backend.dtypes:
        assert lc.randn(2, dtype=lc.float64, device=device).dtype is lc.float64
    r = lc.randn(2, device=device, requires_grad=True)
    assert r.requires_grad and r.is_leaf


def test_rand_distribution(device):
    v = lc.rand(N, device=device).numpy()
    assert v.dtype == np.float32
    assert v.min() >= 0.0 and v.max() < 1.0
    assert abs(v.mean() - 0.5) < 0.05
    assert abs(v.std() - (1 / 12) ** 0.5) < 0.03


def test_float_dtype_required(device):
    with pytest.raises(TypeError, match="randn: dtype must be a real floating-point dtype, got int64"):
        lc.randn(2, dtype=lc.int64, device=device)
    with pytest.raises(TypeError, match="rand: dtype must be a real floating-point dtype, got bool"):
        lc.rand(2, dtype=lc.bool, device=device)


def test_normal_and_uniform(device):
    n = lc.normal(3.0, 0.5, (N,), device=device).numpy()
    assert abs(n.mean() - 3.0) < 0.05 and 0.45 < n.std() < 0.55
    u = lc.uniform(-2.0, 4.0, N, device=device).numpy()
    assert u.min() >= -2.0 and u.max() < 4.0 and abs(u.mean() - 1.0) < 0.2
    mean = lc.asarray([0.0, 100.0], device=device)
    m = lc.normal(mean, 1.0)
    assert m.shape == (2,) and m.device == device
    assert abs(m.tolist()[1] - 100.0) < 6
    with pytest.raises(ValueError, match="normal: give size= when mean and std are numbers"):
        lc.normal(0.0, 1.0)
    with pytest.raises(ValueError, match="normal: std must be non-negative, got -1.0"):
        lc.normal(0.0, -1.0, (2,), device=device)


def test_randint_bounds(device):
    x = lc.randint(-3, 4, (N,), device=device)
    assert x.dtype is lc.int64
    v = x.numpy()
    assert v.min() == -3 and v.max() == 3
    assert abs(v.mean()) < 0.2
    y = lc.randint(5, size=(3, 2), device=device)
    assert y.shape == (3, 2) and 0 <= y.numpy().min() and y.numpy().max() < 5
    assert lc.randint(0, 2, 4, dtype=lc.int32, device=device).dtype is lc.int32
    with pytest.raises(ValueError, match=r"randint: high \(2\) must be greater than low \(2\)"):
        lc.randint(2, 2, (3,), device=device)
    with pytest.raises(TypeError, match="randint: dtype must be an integer dtype, got float32"):
        lc.randint(0, 2, (3,), dtype=lc.float32, device=device)


def test_bernoulli_mean(device):
    b = lc.bernoulli(0.3, (N,), device=device)
    assert b.dtype is lc.float32
    v = b.numpy()
    assert set(np.unique(v)) <= {0.0, 1.0}
    assert abs(v.mean() - 0.3) < 0.04
    p = lc.asarray([0.0, 1.0, 0.0, 1.0], device=device)
    assert lc.bernoulli(p).tolist() == [0.0, 1.0, 0.0, 1.0]
    with pytest.raises(ValueError, match=r"bernoulli: p must be in \[0, 1\], got 1.5"):
        lc.bernoulli(1.5, (2,), device=device)


def test_permutation_is_a_permutation(device):
    for n in (0, 1, 10, 50):
        p = lc.permutation(n, device=device)
        assert p.dtype is lc.int64
        assert sorted(p.tolist()) == list(range(n))
    assert lc.randperm(20, device=device).tolist() != list(range(20))
    x = lc.arange(10, device=device) * 10
    shuffled = lc.permutation(x)
    assert sorted(shuffled.tolist()) == list(range(0, 100, 10))
    with pytest.raises(ValueError, match="permutation: n must be non-negative, got -1"):
        lc.permutation(-1, device=device)


def test_seeded_run_repeats_with_host_rng():
    lc.manual_seed(5)
    a = [lc.host_rng().randrange(100) for _ in range(5)]
    lc.manual_seed(5)
    b = [lc.host_rng().randrange(100) for _ in range(5)]
    assert a == b
