"""Autograd hooks as PyTorch has them: Tensor.register_hook, retain_grad, Module forward and backward hooks.

The scenarios in ``fixtures/hook_cases.py`` run here on Lucid and were run once on PyTorch
(``fixtures/generate_nn_c.py``); the event logs (which hook ran, in what order, with what gradients)
must match.
"""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import lucid_core as lc
import lucid_nn as nn
from tests.nn.fixtures import hook_cases as scenarios

HERE = Path(__file__).parent / "fixtures"
LOGS = json.loads((HERE / "nn_c.json").read_text())["hooks"]


@pytest.fixture
def on_device(device):
    prev = lc.get_default_device()
    lc.set_default_device(device)
    yield device
    lc.set_default_device(prev)


def _same(got, want, where):
    if isinstance(want, dict):
        assert isinstance(got, dict) and "tensor" in got, f"{where}: expected a tensor, got {got!r}"
        np.testing.assert_allclose(np.asarray(got["tensor"]), np.asarray(want["tensor"]), rtol=1e-12, atol=1e-12)
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {got!r} != {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{where}[{i}]")
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


@pytest.mark.parametrize("name", sorted(scenarios.SCENARIOS))
def test_hook_scenario_matches_torch(name, on_device):
    rec = scenarios.Recorder(lambda v: isinstance(v, lc.Tensor))
    api = SimpleNamespace(
        nn=nn,
        T=lambda v, grad: lc.asarray(v, dtype=lc.float64, requires_grad=grad),
        grad=lc.grad,
        no_grad=lc.no_grad,
        log=rec,
    )
    scenarios.SCENARIOS[name](api)
    want = LOGS[name]
    assert [e[0] for e in rec.events] == [e[0] for e in want]  # the same hooks, in the same order
    _same(rec.events, want, name)


# -- documented behaviours beyond the scenarios ------------------------------------------------------


def test_register_hook_needs_a_tensor_that_requires_grad_and_a_callable(device):
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        lc.ones((2,), device=device).register_hook(lambda g: g)
    with pytest.raises(TypeError, match="expected a callable"):
        lc.ones((2,), device=device, requires_grad=True).register_hook(3)
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        lc.ones((2,), device=device).retain_grad()


def test_hook_returning_a_wrong_shape_or_type_raises(device):
    x = lc.ones((2,), device=device, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g[:1])
    with pytest.raises(RuntimeError, match=r"changed the gradient from shape \(2,\)"):
        y.sum().backward()
    x = lc.ones((2,), device=device, requires_grad=True)
    x.register_hook(lambda g: 3.0)
    with pytest.raises(TypeError, match="returned a float"):
        (x * 2).sum().backward()


def test_hook_handle_removes_as_context_manager_and_hooks_do_not_keep_the_tensor_alive(device):
    calls = []
    x = lc.ones((2,), device=device, requires_grad=True)
    with x.register_hook(lambda g: calls.append(1)):
        (x * 2).sum().backward()
    (x * 2).sum().backward()
    assert calls == [1]
    ref = weakref.ref(x)
    del x
    gc.collect()
    assert ref() is None


def test_a_hook_that_refers_to_its_own_tensor_does_not_leak_it(device):
    x = lc.ones((2,), device=device, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g * y.detach())  # the hook keeps y; y's graph keeps the hook: a collectable cycle
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 4.0])
    leaf = lc.ones((2,), device=device, requires_grad=True)
    leaf.register_hook(lambda g: None)
    refs = [weakref.ref(y), weakref.ref(leaf)]
    y = leaf = None
    gc.collect()
    assert [r() for r in refs] == [None, None]


def test_hooks_see_gradients_of_create_graph_backward(device):
    x = lc.asarray([1.0, 2.0], device=device, requires_grad=True)
    seen = []
    y = x**3
    y.register_hook(lambda g: seen.append(g.requires_grad) or g * 2)
    (gx,) = lc.grad(y.sum(), [x], create_graph=True)
    np.testing.assert_allclose(gx.detach().numpy(), [6.0, 24.0])
    (ggx,) = lc.grad(gx.sum(), [x])  # d/dx of 2 * 3x^2
    np.testing.assert_allclose(ggx.numpy(), [12.0, 24.0])
    assert seen == [False]  # the seed gradient is a constant


def test_retain_grad_accumulates_like_a_leaf_and_never_aliases_another_grad(device):
    x = lc.asarray([1.0, 2.0], device=device, requires_grad=True)
    y = x * 3
    y.retain_grad()
    z = (y * y).sum()
    z.backward(retain_graph=True)
    z.backward()
    np.testing.assert_allclose(y.grad.numpy(), [12.0, 24.0])
    np.testing.assert_allclose(x.grad.numpy(), [36.0, 72.0])
    a = lc.asarray([1.0, 2.0], device=device, requires_grad=True)
    b = a + 0.0  # add's backward hands the same gradient to a
    b.retain_grad()
    b.sum().backward()
    b.grad.mul_(0.0)
    np.testing.assert_allclose(a.grad.numpy(), [1.0, 1.0])


def test_grad_returns_a_non_leaf_inputs_gradient_after_its_hooks(device):
    # documented difference: PyTorch returns y's gradient before the hook here (but after it for grad(z, [y]))
    x = lc.asarray([0.5, -1.0], device=device, requires_grad=True)
    y = lc.exp(x)
    y.register_hook(lambda g: -g)
    gx, gy = lc.grad((y * x).sum(), [x, y])
    np.testing.assert_allclose(gy.numpy(), [-0.5, 1.0])
    np.testing.assert_allclose(gx.numpy(), np.exp([0.5, -1.0]) * (1 - np.array([0.5, -1.0])))


def test_forward_pre_hook_with_kwargs_must_return_args_and_kwargs(device):
    m = nn.Identity()
    m.register_forward_pre_hook(lambda mod, args, kwargs: args, with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"tuple of \(new_args, new_kwargs\)"):
        m(lc.ones((1,), device=device))


def test_always_call_hook_errors_are_silenced_with_a_warning_when_forward_failed(device):
    class Boom(nn.Module):
        def forward(self, x):
            raise KeyError("forward failed")

    m = Boom()
    m.register_forward_hook(lambda mod, args, out: 1 / 0, always_call=True)
    with pytest.warns(UserWarning, match="always_call=True"), pytest.raises(KeyError, match="forward failed"):
        m(lc.ones((1,), device=device))


def test_removing_a_forward_hook_drops_its_flags_and_prepend_orders(device):
    m = nn.Identity()
    order = []
    h = m.register_forward_hook(lambda mod, a, k, o: order.append("kw"), with_kwargs=True, always_call=True)
    m.register_forward_hook(lambda mod, a, o: order.append("first"), prepend=True)
    m(lc.ones((1,), device=device))
    assert order == ["first", "kw"]
    h.remove()
    assert not m._forward_hooks_with_kwargs and not m._forward_hooks_always_called
    order.clear()
    m(lc.ones((1,), device=device))
    assert order == ["first"]


def test_backward_hook_wrong_number_of_grads_raises(device):
    lin = nn.Linear(2, 2).to(device)
    lin.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="invalid number of grad_input, got 2, but expected 1"):
        lin(lc.ones((1, 2), device=device, requires_grad=True)).sum().backward()
    lin = nn.Linear(2, 2).to(device)
    lin.register_full_backward_pre_hook(lambda m, go: (go[0][:, :1],))
    with pytest.raises(RuntimeError, match="grad_output of shape"):
        lin(lc.ones((1, 2), device=device, requires_grad=True)).sum().backward()


def test_backward_hooks_leave_integer_inputs_alone_and_do_not_run_under_no_grad(device):
    emb = nn.Embedding(5, 3).to(device)
    seen = []
    emb.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go[0].shape)))
    idx = lc.asarray([1, 3], device=device)
    out = emb(idx)
    assert out.requires_grad and not idx.requires_grad
    out.sum().backward()
    assert seen == [((None,), (2, 3))]
    with lc.no_grad():
        emb(idx)
    assert len(seen) == 1


def test_backward_hooks_warn_when_the_output_is_not_a_tensor_or_tuple(device):
    class Dict(nn.Module):
        def forward(self, x):
            return {"y": x * 2}

    m = Dict()
    calls = []
    m.register_full_backward_hook(lambda mod, gi, go: calls.append(1))
    x = lc.ones((2,), device=device, requires_grad=True)
    with pytest.warns(UserWarning, match="module output should be a Tensor or a tuple of Tensors"):
        out = m(x)
    out["y"].sum().backward()
    assert calls == [] and x.grad.tolist() == [2.0, 2.0]
