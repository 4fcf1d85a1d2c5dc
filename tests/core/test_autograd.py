"""The autograd engine: backward order, accumulation, graph freeing, higher order, custom Functions."""

from __future__ import annotations

import gc
import math
import tracemalloc
import weakref

import numpy as np
import pytest

import lucid_core as lc


def f64(device, values, requires_grad=True):
    return lc.asarray(values, dtype=lc.float64, device=device, requires_grad=requires_grad)


# -- the seed's DeZero examples (steps 6-9) ----------------------------------------------------------


def test_seed_square_exp_square_chain_at_half():
    x = lc.Tensor(np.array(0.5), requires_grad=True)
    y = lc.square(lc.exp(lc.square(x)))
    y.backward()
    assert x.grad.item() == pytest.approx(3.297442541400256, rel=1e-15)


def test_seed_creator_links_walk_back_to_the_input(device):
    x = f64(device, 0.5)
    a = lc.square(x)
    b = lc.exp(a)
    y = lc.square(b)
    assert y.grad_fn.inputs[0] is b
    assert b.grad_fn.inputs[0] is a
    assert a.grad_fn.inputs[0] is x
    assert x.grad_fn is None and x.is_leaf


def test_seed_backward_seeds_ones_of_the_output_dtype(device):
    x = lc.asarray(0.5, dtype=lc.float32, device=device, requires_grad=True)
    y = lc.square(lc.exp(lc.square(x)))
    y.backward()
    assert x.grad.dtype is lc.float32
    assert x.grad.item() == pytest.approx(3.297442541400256, rel=1e-6)


def test_seed_zero_dim_results_stay_tensors(device):
    x = f64(device, 1.0, requires_grad=False)
    y = x**2
    assert isinstance(y, lc.Tensor) and y.ndim == 0


def test_a_python_float_is_not_a_tensor_for_the_engine():
    with pytest.raises(TypeError, match="expected a Tensor"):
        lc.exp(1.0)


# -- structure of the backward pass ------------------------------------------------------------------


def test_each_node_runs_once_with_branches_and_reuse(device):
    calls = []

    class Spy(lc.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, gy):
            calls.append(1)
            return gy

    x = f64(device, [1.0, 2.0])
    s = Spy.apply(x)
    y = (s * s + s * 3.0 + lc.exp(s)).sum()  # s used four times
    y.backward()
    assert len(calls) == 1
    expected = 2 * np.array([1.0, 2.0]) + 3 + np.exp([1.0, 2.0])
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)


def test_gradients_accumulate_on_leaves_across_backward_calls(device):
    x = f64(device, [1.0, 2.0])
    (x * 2.0).sum().backward()
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 5.0])


def test_deep_graph_of_100k_ops_has_no_recursion_limit(device):
    x = lc.asarray(1.0, dtype=lc.float32, device=device, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y + 1.0
    y.backward()
    assert x.grad.item() == 1.0
    del y  # freeing a 100k-deep chain must not overflow the C stack either
    gc.collect()


def test_graph_is_freed_after_backward_and_a_second_backward_raises(device):
    x = f64(device, [1.0, 2.0])
    y = (lc.tanh(x) * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time.*retain_graph=True"):
        y.backward()


def test_retain_graph_allows_a_second_backward(device):
    x = f64(device, [1.0, 2.0])
    y = (lc.tanh(x) * x).sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first)


def test_backward_of_a_non_scalar_needs_a_gradient(device):
    x = f64(device, [1.0, 2.0])
    with pytest.raises(RuntimeError, match="only for a scalar output.*gradient="):
        (x * 2.0).backward()
    y = x * 2.0
    y.backward(lc.asarray([1.0, 10.0], dtype=lc.float64, device=device))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 20.0])


def test_backward_gradient_of_the_wrong_shape_raises(device):
    x = f64(device, [1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"gradient has shape \(3,\) but the output has shape \(2,\)"):
        (x * 2.0).backward(lc.ones(3, dtype=lc.float64, device=device))


def test_backward_on_a_tensor_without_graph_raises(device):
    x = f64(device, [1.0], requires_grad=False)
    with pytest.raises(RuntimeError, match="does not require grad"):
        (x * 2.0).sum().backward()


def test_no_grad_records_nothing_and_enable_grad_reenables(device):
    x = f64(device, [1.0])
    with lc.no_grad():
        y = x * 2.0
        assert not lc.is_grad_enabled()
        with lc.enable_grad():
            z = x * 2.0
    assert lc.is_grad_enabled()
    assert y.grad_fn is None and not y.requires_grad
    assert z.requires_grad


def test_no_grad_works_as_a_decorator(device):
    x = f64(device, [1.0])

    @lc.no_grad()
    def double(t):
        return t * 2.0

    assert not double(x).requires_grad


def test_set_grad_enabled(device):
    x = f64(device, [1.0])
    with lc.set_grad_enabled(False):
        assert not (x * 2.0).requires_grad
    assert (x * 2.0).requires_grad


def test_detach_cuts_the_graph(device):
    x = f64(device, [1.0, 2.0])
    y = (x * 2.0).detach()
    assert not y.requires_grad and y.is_leaf
    np.testing.assert_allclose(y.numpy(), [2.0, 4.0])


def test_retain_grad_keeps_an_intermediate_gradient(device):
    x = f64(device, [1.0, 2.0])
    h = x * 3.0
    h.retain_grad()
    (h * h).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), [6.0, 12.0])
    np.testing.assert_allclose(x.grad.numpy(), [18.0, 36.0])


def test_retains_grad_says_whether_a_non_leaf_keeps_its_grad(device):
    x = f64(device, [1.0, 2.0])
    h = x * 3.0
    assert not x.retains_grad and not h.retains_grad
    h.retain_grad()
    x.retain_grad()  # a no-op on leaves: PyTorch reports False there too
    assert h.retains_grad and not x.retains_grad
    assert not h.detach().retains_grad


def test_two_leaves_never_share_one_grad_object(device):
    a = f64(device, [1.0, 2.0])
    b = f64(device, [3.0, 4.0])
    (a + b).sum().backward()
    a.grad *= 0.0  # in-place on one gradient leaves the other alone
    np.testing.assert_allclose(b.grad.numpy(), [1.0, 1.0])


def test_broadcast_input_gradients_reduce_to_the_input_shape(device):
    a = f64(device, np.ones((3, 4)))
    b = f64(device, np.ones((4,)))
    c = f64(device, np.ones((3, 1)))
    (a * b + c).sum().backward()
    assert a.grad.shape == (3, 4) and b.grad.shape == (4,) and c.grad.shape == (3, 1)
    np.testing.assert_allclose(b.grad.numpy(), [3.0] * 4)
    np.testing.assert_allclose(c.grad.numpy(), [[4.0]] * 3)


def test_integer_and_bool_tensors_cannot_require_grad(device):
    with pytest.raises(RuntimeError, match="only floating-point.*int64"):
        lc.asarray([1, 2], device=device).requires_grad_()
    with pytest.raises(RuntimeError, match="only floating-point.*bool"):
        lc.asarray([True], device=device, requires_grad=True)


def test_in_place_on_a_leaf_that_requires_grad_raises(device):
    x = f64(device, [1.0])
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad cannot be modified in place"):
        x += 1.0
    with lc.no_grad():
        x += 1.0
    assert x.item() == 2.0


def test_in_place_outside_the_graph_modifies_the_tensor(device):
    x = lc.asarray([1.0, 2.0], device=device)
    alias = x
    x *= 3.0
    assert alias is x
    np.testing.assert_allclose(x.numpy(), [3.0, 6.0])


def test_in_place_dtype_change_is_refused(device):
    x = lc.asarray([1, 2], device=device)
    with pytest.raises(TypeError, match="float32 cannot be stored in place into a int64"):
        x *= 0.5


# -- lucid_core.grad and higher-order gradients ------------------------------------------------------


def test_grad_returns_gradients_without_touching_dot_grad(device):
    x = f64(device, [1.0, 2.0])
    y = (x**2).sum()
    (g,) = lc.grad(y, x)
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])
    assert x.grad is None


def test_grad_of_an_unused_input_raises_unless_allowed(device):
    x = f64(device, [1.0])
    z = f64(device, [1.0])
    y = (x * 2.0).sum()
    with pytest.raises(RuntimeError, match="not used.*allow_unused=True"):
        lc.grad(y, [x, z], retain_graph=True)
    gx, gz = lc.grad(y, [x, z], allow_unused=True)
    assert gz is None and gx.item() == 2.0


def test_grad_with_respect_to_an_intermediate(device):
    x = f64(device, [1.0, 2.0])
    h = x * 3.0
    y = (h * h).sum()
    (gh,) = lc.grad(y, h)
    np.testing.assert_allclose(gh.numpy(), [6.0, 12.0])


@pytest.mark.parametrize(
    ("fn", "second"),
    [
        (lc.tanh, lambda v: -2 * math.tanh(v) * (1 - math.tanh(v) ** 2)),
        (lambda t: t**3, lambda v: 6 * v),
        (lc.exp, math.exp),
        (lc.sin, lambda v: -math.sin(v)),
    ],
    ids=["tanh", "cube", "exp", "sin"],
)
def test_second_derivative_matches_closed_form(device, fn, second):
    for v in (-1.3, 0.2, 0.9):
        x = f64(device, v)
        (g,) = lc.grad(fn(x), x, create_graph=True)
        (gg,) = lc.grad(g, x)
        assert gg.item() == pytest.approx(second(v), rel=1e-10, abs=1e-12)


def test_third_derivative_of_cube_is_six(device):
    x = f64(device, 0.7)
    (g1,) = lc.grad(x**3, x, create_graph=True)
    (g2,) = lc.grad(g1, x, create_graph=True)
    (g3,) = lc.grad(g2, x)
    assert g3.item() == pytest.approx(6.0)


def test_second_derivative_of_matmul_and_sum(device):
    a = f64(device, np.arange(6.0).reshape(2, 3) / 10)
    b = f64(device, np.arange(12.0).reshape(3, 4) / 10)
    # y = sum((a @ b) ** 2); d2y / da2 contracted with ones: 2 * ones @ (b b^T)
    y = ((a @ b) ** 2).sum()
    (ga,) = lc.grad(y, a, create_graph=True)
    (gga,) = lc.grad(ga.sum(), a)
    bn = b.detach().numpy()
    np.testing.assert_allclose(gga.numpy(), 2 * np.ones((2, 3)) @ (bn @ bn.T), rtol=1e-10)
    x = f64(device, [1.0, 2.0, 3.0])
    (g,) = lc.grad(lc.sum(x * x), x, create_graph=True)
    (gg,) = lc.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), [2.0, 2.0, 2.0])


def test_backward_with_create_graph_gives_differentiable_grads(device):
    x = f64(device, 1.5)
    y = x**3
    y.backward(create_graph=True)
    assert x.grad.requires_grad
    (gg,) = lc.grad(x.grad, x)
    assert gg.item() == pytest.approx(9.0)


# -- custom Functions ----------------------------------------------------------------------------------


class Cube(lc.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, gy):
        (x,) = ctx.saved_tensors
        return gy * 3.0 * x * x


def test_custom_function_forward_and_backward(device):
    x = f64(device, [1.0, -2.0])
    y = Cube.apply(x)
    assert y.grad_fn.name == "Cube"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 12.0])
    assert lc.gradcheck(Cube.apply, [f64(device, [0.3, -0.7])])
    assert lc.gradgradcheck(Cube.apply, [f64(device, [0.3, -0.7])])


def test_custom_function_forward_sees_tensors_without_graph(device):
    seen = {}

    class Probe(lc.Function):
        @staticmethod
        def forward(ctx, x):
            seen["requires_grad"] = x.requires_grad
            seen["grad_enabled"] = lc.is_grad_enabled()
            return x * 2.0

        @staticmethod
        def backward(ctx, gy):
            return gy * 2.0

    Probe.apply(f64(device, [1.0]))
    assert seen == {"requires_grad": False, "grad_enabled": False}


def test_custom_function_with_two_outputs_and_a_constant(device):
    class SplitScale(lc.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            return x * k, x + k

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * ctx.k + g2, None

    x = f64(device, [1.0, 2.0])
    a, b = SplitScale.apply(x, 3.0)
    (a.sum() + 2.0 * b.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 5.0])


def test_custom_function_returning_the_wrong_number_of_grads_raises(device):
    class Bad(lc.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, gy):
            return gy, gy

    with pytest.raises(RuntimeError, match="returned 2 gradients for 1 inputs"):
        Bad.apply(f64(device, [1.0])).sum().backward()


def test_custom_function_forward_must_return_tensors(device):
    class Bad(lc.Function):
        @staticmethod
        def forward(ctx, x):
            return 3.0

    with pytest.raises(TypeError, match="must return Tensors"):
        Bad.apply(f64(device, [1.0]))


# -- memory --------------------------------------------------------------------------------------------


def test_graph_dies_with_its_output(device):
    x = f64(device, [1.0, 2.0])
    y = lc.tanh(x * 2.0)
    node = weakref.ref(y.grad_fn)
    del y
    gc.collect()
    assert node() is None


def test_memory_does_not_grow_over_3000_training_steps(device):
    w = lc.asarray(np.linspace(-1, 1, 8), dtype=lc.float32, device=device, requires_grad=True)
    x = lc.asarray(np.linspace(0, 1, 8), dtype=lc.float32, device=device)

    def step():
        loss = (lc.tanh(w * x) ** 2).sum()
        loss.backward()
        with lc.no_grad():
            w.sub_(w.grad * 0.01)
        w.grad = None

    for _ in range(200):
        step()
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for _ in range(3_000):
        step()
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert grown < 64 * 1024, f"memory grew by {grown} bytes over 3000 steps"  # < 22 bytes a step


def test_grad_mode_is_per_thread(device):
    import threading

    x = f64(device, [1.0])
    inside = threading.Event()
    release = threading.Event()
    seen = {}

    def worker():
        with lc.no_grad():
            inside.set()
            release.wait(10)
            seen["worker"] = lc.is_grad_enabled()

    t = threading.Thread(target=worker)
    t.start()
    inside.wait(10)
    y = x * 2.0  # the worker's no_grad must not leak into this thread
    release.set()
    t.join()
    assert y.requires_grad and seen == {"worker": False}
    with lc.no_grad():
        box = []
        th = threading.Thread(target=lambda: box.append(lc.is_grad_enabled()))
        th.start()
        th.join()
    assert box == [True]
