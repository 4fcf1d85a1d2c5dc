"""Tensor.register_post_accumulate_grad_hook: PyTorch's semantics (DDP starts its all-reduces from it)."""

from __future__ import annotations

import pytest

import lucid_core as lc


def test_the_hook_runs_once_with_the_fully_accumulated_grad(device):
    w = lc.asarray([1.0, 2.0], device=device, requires_grad=True)
    seen = []
    w.register_post_accumulate_grad_hook(lambda t: seen.append((t is w, t.grad.tolist())))
    ((w * w).sum() + (w * 3.0).sum() + w.sum()).backward()  # three paths into w
    assert seen == [(True, [6.0, 8.0])]


def test_the_hook_sees_grad_accumulated_over_backward_calls(device):
    w = lc.asarray([1.0], device=device, requires_grad=True)
    seen = []
    w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    (w * 2.0).sum().backward()
    (w * 3.0).sum().backward()
    assert seen == [[2.0], [5.0]]


def test_hooks_run_while_backward_still_has_earlier_layers_to_do(device):
    w1 = lc.asarray([[1.0, 2.0]], device=device, requires_grad=True)
    w2 = lc.asarray([[3.0], [4.0]], device=device, requires_grad=True)
    x = lc.asarray([[1.0]], device=device)
    order = []
    w1.register_post_accumulate_grad_hook(lambda t: order.append(("w1", w2.grad is not None)))
    w2.register_post_accumulate_grad_hook(lambda t: order.append(("w2", w1.grad is not None)))
    lc.tanh(lc.tanh(x @ w1) @ w2).sum().backward()
    assert order == [("w2", False), ("w1", True)]  # w2's hook ran before w1's gradient existed


def test_several_hooks_run_in_registration_order_and_remove_unregisters(device):
    w = lc.asarray([1.0], device=device, requires_grad=True)
    calls = []
    h1 = w.register_post_accumulate_grad_hook(lambda t: calls.append(1))
    w.register_post_accumulate_grad_hook(lambda t: calls.append(2))
    (w * 2.0).sum().backward()
    h1.remove()
    h1.remove()  # twice is harmless
    (w * 2.0).sum().backward()
    assert calls == [1, 2, 2]


def test_no_hook_for_a_leaf_that_got_no_gradient(device):
    w = lc.asarray([1.0], device=device, requires_grad=True)
    v = lc.asarray([1.0], device=device, requires_grad=True)
    calls = []
    w.register_post_accumulate_grad_hook(lambda t: calls.append("w"))
    (v * 2.0).sum().backward()
    assert calls == []


def test_a_leaf_that_is_the_output_itself_runs_its_hook(device):
    w = lc.asarray(2.0, device=device, requires_grad=True)
    calls = []
    w.register_post_accumulate_grad_hook(lambda t: calls.append(t.grad.item()))
    w.backward()
    assert calls == [1.0]


def test_grad_does_not_run_post_accumulate_hooks(device):
    w = lc.asarray([1.0], device=device, requires_grad=True)
    calls = []
    w.register_post_accumulate_grad_hook(lambda t: calls.append(1))
    lc.grad((w * 2.0).sum(), w)
    assert calls == [] and w.grad is None


def test_registering_on_a_non_leaf_or_a_tensor_without_grad_raises(device):
    w = lc.asarray([1.0], device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="cannot be registered on non-leaf tensors"):
        (w * 2.0).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError, match="does not require grad"):
        lc.asarray([1.0], device=device).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(TypeError, match="hook must be callable"):
        w.register_post_accumulate_grad_hook(3)


def test_post_accumulate_hook_sees_the_gradient_a_tensor_hook_replaced(device):
    w = lc.asarray([1.0, 2.0], device=device, requires_grad=True)
    seen = []
    w.register_hook(lambda g: g * 10.0)
    w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()))
    (w * w).sum().backward()  # d/dw = 2w = [2, 4], times 10 by the tensor hook
    assert seen == [[20.0, 40.0]] and w.grad.tolist() == [20.0, 40.0]
