"""Activation checkpointing: the same numbers as the plain call, activations not kept, recomputed in backward."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import lucid_core as lc
import lucid_nn as nn
from lucid_nn.utils.checkpoint import checkpoint, checkpoint_sequential


def _block(device):
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.4), nn.Linear(8, 3)).to(device, lc.float64)


def _grads(model, *tensors):
    return [p.grad.numpy().copy() for p in model.parameters()] + [t.grad.numpy().copy() for t in tensors]


def _run(model, x, use_checkpoint, seed=7):
    model.zero_grad()
    x.grad = None
    lc.manual_seed(seed)
    y = checkpoint(model, x) if use_checkpoint else model(x)
    (y * y).sum().backward()
    after = lc.rand(3, device=x.device).numpy()  # the random stream after backward
    return y.detach().numpy(), _grads(model, x), after


def test_gradients_with_dropout_equal_the_plain_run_and_the_stream_is_unchanged(device):
    model = _block(device)
    x = lc.randn(5, 4, dtype=lc.float64, device=device, requires_grad=True)
    y0, g0, r0 = _run(model, x, False)
    y1, g1, r1 = _run(model, x, True)
    np.testing.assert_array_equal(y1, y0)
    for a, b in zip(g1, g0):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(r1, r0)  # backward's recomputation did not advance the caller's stream
    assert not np.allclose(y0, _run(model, x, False, seed=8)[0])  # dropout really draws


def test_without_preserving_rng_state_dropout_masks_differ(device):
    model = _block(device)
    x = lc.randn(5, 4, dtype=lc.float64, device=device, requires_grad=True)
    _, g0, _ = _run(model, x, False)
    lc.manual_seed(7)
    y = checkpoint(model, x, preserve_rng_state=False)
    (y * y).sum().backward()
    assert not all(np.allclose(a, b) for a, b in zip(_grads(model, x), g0))


def test_function_runs_again_in_backward_and_intermediates_are_not_kept(device):
    calls = []
    inner = []
    w = lc.randn(4, 4, dtype=lc.float64, device=device, requires_grad=True)

    def fn(a):
        h = lc.tanh(a @ w)
        inner.append(weakref.ref(h))
        calls.append(1)
        return (h * h).sum(axis=1)

    x = lc.randn(3, 4, dtype=lc.float64, device=device, requires_grad=True)
    y = checkpoint(fn, x)
    gc.collect()
    assert len(calls) == 1 and inner[0]() is None  # the activation died with the forward
    y.sum().backward()
    gc.collect()
    assert len(calls) == 2 and inner[1]() is None  # recomputed, used, freed
    plain = fn(x)
    assert inner[2]() is not None  # without checkpointing the graph keeps it: the check above can fail
    gx = x.grad.numpy().copy()
    x.grad, w.grad = None, None
    plain.sum().backward()
    np.testing.assert_allclose(gx, x.grad.numpy(), rtol=1e-13, atol=1e-14)


def test_parameters_get_gradients_when_no_input_requires_grad(device):
    model = _block(device).eval()
    x = lc.randn(5, 4, dtype=lc.float64, device=device)
    y = checkpoint(model, x)
    assert y.requires_grad
    y.sum().backward()
    got = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    model(x).sum().backward()
    for a, b in zip(got, (p.grad.numpy() for p in model.parameters())):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-14)


def test_works_with_grad_and_double_backward(device):
    w = lc.asarray([0.5, -1.5, 2.0], dtype=lc.float64, device=device, requires_grad=True)
    x = lc.asarray([1.0, 2.0, -0.5], dtype=lc.float64, device=device, requires_grad=True)

    def fn(a):
        return lc.sin(a * w) * a

    for f in (fn, lambda a: checkpoint(fn, a)):
        (gx, gw) = lc.grad(f(x).sum(), [x, w], create_graph=True)
        (ggw,) = lc.grad((gx * gx).sum(), [w])
        if f is fn:
            want = (gx.detach().numpy(), gw.detach().numpy(), ggw.numpy())
        else:
            for a, b in zip((gx.detach().numpy(), gw.detach().numpy(), ggw.numpy()), want):
                np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-14)
    assert x.grad is None and w.grad is None


def test_tuple_outputs_kwargs_and_closure_tensors(device):
    x = lc.asarray([1.0, 2.0], dtype=lc.float64, device=device, requires_grad=True)
    s = lc.asarray([3.0, -1.0], dtype=lc.float64, device=device, requires_grad=True)
    h = x * 2  # made before the segment and used inside it through the closure

    def fn(a, scale=None):
        return a * scale * h, "tag", lc.argmax(a)

    def loss(out):
        return (out[0] ** 2).sum() + (h * s).sum()

    out = checkpoint(fn, x, scale=s)
    assert out[1] == "tag" and int(out[2].item()) == 1 and not out[2].requires_grad
    loss(out).backward()
    got = (x.grad.numpy().copy(), s.grad.numpy().copy())
    x.grad = s.grad = None
    h = x * 2
    loss(fn(x, scale=s)).backward()
    np.testing.assert_allclose(got[0], x.grad.numpy(), rtol=1e-13)
    np.testing.assert_allclose(got[1], s.grad.numpy(), rtol=1e-13)


def test_under_no_grad_the_function_is_just_called(device):
    calls = []
    x = lc.ones((2,), device=device, requires_grad=True)
    with lc.no_grad():
        y = checkpoint(lambda a: calls.append(1) or a * 2, x)
    assert not y.requires_grad and calls == [1]


def test_errors_name_the_problem(device):
    with pytest.raises(TypeError, match="expected a callable"):
        checkpoint(3, lc.ones((1,), device=device))
    with pytest.raises(TypeError, match="must return a Tensor or a tuple/list, got dict"):
        checkpoint(lambda a: {"a": a}, lc.ones((1,), device=device, requires_grad=True))
    with pytest.raises(ValueError, match="segments must be an int from 1 to the number of functions"):
        checkpoint_sequential(nn.Sequential(nn.Tanh()), 2, lc.ones((1,), device=device))


@pytest.mark.parametrize("segments", [1, 2, 3])
def test_checkpoint_sequential_equals_the_plain_run(segments, device):
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Dropout(0.3), nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 2)).to(
        device, lc.float64
    )
    x = lc.randn(3, 4, dtype=lc.float64, device=device, requires_grad=True)
    results = []
    for use in (False, True):
        model.zero_grad()
        x.grad = None
        lc.manual_seed(3)
        y = checkpoint_sequential(model, segments, x) if use else model(x)
        (y * y).sum().backward()
        results.append((y.detach().numpy(), _grads(model, x)))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_array_equal(a, b)
