"""Writes land, and are differentiable or refused, never silently wrong (issue 13).

``x[key] = value`` is an op with a gradient; every ``*_`` method and in-place operator writes into
the tensor it is called on (recorded in the graph for non-leaves, as PyTorch does); a write into a
tensor that backward still needs is caught by the version counter; ``detach()`` views (and so
``state_dict()``) write through to their owner; boolean masks reach the backend as the standard
allows. Gradients are checked against finite differences in float64.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import lucid_core as lc
from lucid_core.testing import BackendConformance, WritesConformance

MODIFIED = "modified by an in-place operation"


def f64(device, values, requires_grad=True):
    return lc.asarray(values, dtype=lc.float64, device=device, requires_grad=requires_grad)


# -- setitem is differentiable ----------------------------------------------------------------------


def test_setitem_of_a_value_in_the_graph_reaches_it(device):
    # the reproduction: PyTorch gives [3, 3]; the old code gave [1, 1] and z had no grad
    x = lc.asarray([1.0, 2.0], device=device, requires_grad=True)
    z = lc.zeros(3, device=device)
    z[1:] = x * 2.0
    assert z.requires_grad and not z.is_leaf and type(z.grad_fn).__name__ == "SetItem"
    assert z.tolist() == [0.0, 2.0, 4.0]
    (z.sum() + x.sum()).backward()
    assert x.grad.tolist() == [3.0, 3.0]


def _int_key(device):
    return (lc.asarray([2, 0], device=device),)


def _mask_key(device):
    return (lc.asarray([[True, False, True], [False, True, False], [True, True, False]], device=device),)


@pytest.mark.parametrize(
    "key, value_shape",
    [
        ((slice(1, None),), (2, 3)),  # basic slice, full value
        ((1,), (3,)),  # an int
        ((slice(None), 2), ()),  # a column from a 0-d value (broadcast)
        ((slice(0, 2), slice(None)), (1, 3)),  # broadcast along rows
        ("int", (2, 3)),  # integer-array key
        ("mask", (5,)),  # boolean mask, value per selected element
        ("mask", ()),  # boolean mask, one value broadcast
    ],
)
def test_setitem_gradients_match_finite_differences(device, key, value_shape):
    if key == "int":
        key = _int_key(device)
    elif key == "mask":
        key = _mask_key(device)
    rng = np.random.default_rng(1)
    base = f64(device, rng.standard_normal((3, 3)))
    value = f64(device, rng.standard_normal(value_shape))

    def fn(b, v):
        z = b * 1.5  # a non-leaf: its earlier contents get gradient where not overwritten
        z[key] = v * v
        return z * b

    assert lc.gradcheck(fn, [base, value])


def test_setitem_of_a_number_zeroes_the_gradient_there(device):
    x = f64(device, [1.0, 2.0, 3.0])
    y = x * 2.0
    y[1] = 7.0
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 0.0, 2.0]
    assert y.tolist() == [2.0, 7.0, 6.0]


def test_setitem_into_a_plain_tensor_with_a_mask_value_in_the_graph(device):
    x = f64(device, [1.0, -2.0, 3.0])
    out = lc.zeros(3, dtype=lc.float64, device=device)
    out[x > 0] = x[x > 0] ** 2
    out.sum().backward()
    assert out.tolist() == [1.0, 0.0, 9.0]
    assert x.grad.tolist() == [2.0, 0.0, 6.0]


def test_setitem_value_of_another_dtype_is_cast_and_still_differentiable(device):
    x = lc.asarray([1.0, 2.0], dtype=lc.float32, device=device, requires_grad=True)
    z = lc.zeros(2, dtype=lc.float64, device=device)
    z[:] = x * 3.0
    assert z.dtype is lc.float64
    z.sum().backward()
    assert x.grad.dtype is lc.float32 and x.grad.tolist() == [3.0, 3.0]


# -- array-api-extra on tensors that require grad -----------------------------------------------------


@pytest.fixture
def xpx():
    pytest.importorskip("array_api_compat")
    return pytest.importorskip("array_api_extra")


@pytest.mark.parametrize("method", ["set", "add", "multiply", "min", "max"])
def test_array_api_extra_at_carries_gradients(device, xpx, method):
    x0 = f64(device, [[0.3, -1.2, 2.0], [1.1, 0.4, -0.7]])
    v0 = f64(device, [0.5, -0.25])

    def on_a_copy(x, v):  # a leaf that requires grad is written only through a copy (as in PyTorch)
        return getattr(xpx.at(x)[:, 1], method)(v, copy=True)

    def in_place(x, v):  # a non-leaf is written in place, recorded in the graph
        return getattr(xpx.at(x * 1.0)[:, 1], method)(v)

    if method in ("min", "max"):
        # ``x[idx] = minimum(x[idx], y)`` saves the view x[idx] and then writes x: PyTorch refuses its backward too
        for f in (on_a_copy, in_place):
            with pytest.raises(RuntimeError, match="modified by an in-place operation"):
                f(x0, v0).sum().backward()
    else:
        assert lc.gradcheck(on_a_copy, [x0, v0])
        assert lc.gradcheck(in_place, [x0, v0])
    with pytest.raises(RuntimeError, match="a leaf tensor that requires grad cannot be modified in place"):
        xpx.at(x0)[:, 1].set(v0)


def test_array_api_extra_create_diagonal_pad_apply_where_carry_gradients(device, xpx):
    x0 = f64(device, [0.3, -1.2, 2.0])
    assert lc.gradcheck(lambda x: xpx.create_diagonal(x) * 2.0, [x0])
    assert lc.gradcheck(lambda x: xpx.pad(x, 2, constant_values=1.5), [x0])
    assert lc.gradcheck(lambda x: xpx.apply_where(x > 0, x, lc.exp, fill_value=0.5), [x0])
    assert lc.gradcheck(lambda x: xpx.apply_where(x > 0, x, lc.exp, lambda v: v * v), [x0])
    x = f64(device, [0.3, -1.2, 2.0])
    xpx.create_diagonal(x).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]


# -- the version counter -----------------------------------------------------------------------------


def test_every_kind_of_write_bumps_the_version(device):
    t = lc.zeros(3, device=device)
    versions = [t._version]
    t[0] = 1.0
    versions.append(t._version)
    t += 1.0
    versions.append(t._version)
    t.add_(lc.ones(3, device=device))
    versions.append(t._version)
    t.copy_(lc.ones(3, device=device))
    versions.append(t._version)
    t.clamp_(0.0, 0.5)
    versions.append(t._version)
    t.zero_()
    versions.append(t._version)
    t.detach().fill_(2.0)  # through a view: the version is shared
    versions.append(t._version)
    assert versions == list(range(8))
    assert t.tolist() == [2.0, 2.0, 2.0]


def test_a_saved_input_written_in_place_raises_at_backward(device):
    a = f64(device, [1.0, 2.0])
    y = a * 2.0
    w = y * y  # saves y
    y.add_(1.0)
    with pytest.raises(RuntimeError, match=f"{MODIFIED}.*is at version 1; expected version 0"):
        w.sum().backward()


def test_an_optimizer_style_write_to_a_saved_parameter_raises(device):
    w = f64(device, [1.0, 2.0])
    x = f64(device, [3.0, 4.0], requires_grad=False)
    loss = (w * x * w).sum()
    with lc.no_grad():
        w.sub_(0.1 * w)
    with pytest.raises(RuntimeError, match=MODIFIED):
        loss.backward()


@pytest.mark.parametrize(
    "write",
    [
        lambda t: t.mul_(2.0),
        lambda t: t.__iadd__(1.0),
        lambda t: t.copy_(t * 0.0),
        lambda t: t.__setitem__(0, 5.0),
        lambda t: t.detach().zero_(),
        lambda t: t.data.add_(1.0),
    ],
    ids=["mul_", "+=", "copy_", "setitem", "detached view", "data"],
)
def test_any_write_outside_the_graph_to_a_saved_tensor_raises(device, write):
    x = f64(device, [0.5, 1.5])
    y = lc.exp(x)  # exp saves its output
    z = lc.sin(y)  # sin saves its input
    with lc.no_grad():
        write(y)
    with pytest.raises(RuntimeError, match=MODIFIED):
        z.sum().backward()


def test_a_saved_output_written_outside_the_graph_raises(device):
    x = f64(device, [0.5, 1.5])
    y = lc.exp(x)
    with lc.no_grad():
        y.add_(1.0)
    with pytest.raises(RuntimeError, match="output 0 of Exp.*version 1; expected version 0"):
        y.sum().backward()


def test_a_custom_function_checks_what_it_saved(device):
    class Cube(lc.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, gy):
            (x,) = ctx.saved_tensors
            return gy * 3 * x**2

    a = f64(device, [1.0, 2.0])
    x = a * 1.0
    y = Cube.apply(x)
    with lc.no_grad():
        x.mul_(10.0)
    with pytest.raises(RuntimeError, match=MODIFIED):
        y.sum().backward()


def test_writes_to_tensors_only_routed_through_are_fine(device):
    # add does not save its inputs, so writing y afterwards is harmless (PyTorch agrees): the old
    # edge keeps pointing at y's history before the write
    a = f64(device, [1.0, 2.0])
    y = a * 2.0
    z = y + 1.0
    y.mul_(3.0)
    (z.sum() + y.sum()).backward()
    assert a.grad.tolist() == [8.0, 8.0]  # 2 through z, 6 through y


def test_version_check_costs_nothing_without_writes(device):
    a = f64(device, [1.0, 2.0])
    y = (a * a).sum()
    y.backward()
    assert a._version == 0 and a.grad.tolist() == [2.0, 4.0]


# -- in-place methods on non-leaves write into the tensor -------------------------------------------


INPLACE = {
    "add_": lambda y, o: y.add_(o, alpha=2.0),
    "sub_": lambda y, o: y.sub_(o),
    "mul_": lambda y, o: y.mul_(o),
    "div_": lambda y, o: y.div_(o + 3.0),
    "clamp_": lambda y, o: y.clamp_(-0.5, 0.8),
    "copy_": lambda y, o: y.copy_(o * o),
    "fill_": lambda y, o: y.fill_(0.25),
    "zero_": lambda y, o: y.zero_(),
    "+=": lambda y, o: y.__iadd__(o),
    "-=": lambda y, o: y.__isub__(o),
    "*=": lambda y, o: y.__imul__(o),
    "/=": lambda y, o: y.__itruediv__(o + 3.0),
    "**=": lambda y, o: y.__ipow__(2.0),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_in_place_on_a_non_leaf_writes_into_it_with_correct_gradients(device, name):
    op = INPLACE[name]

    def fn(a, o):
        y = a * 1.5
        before = y.grad_fn
        assert op(y, o) is y  # written into y, not a copy
        assert y.requires_grad and y.grad_fn is not before
        return y * a + o

    assert lc.gradcheck(fn, [f64(device, [0.3, -0.6, 1.1]), f64(device, [0.7, 0.2, -0.4])])
    a = f64(device, [0.3, -0.6, 1.1])
    o = f64(device, [0.7, 0.2, -0.4], requires_grad=False)
    y = a * 1.5
    op(y, o)
    with lc.no_grad():
        want = op(a.detach() * 1.5, o)
    np.testing.assert_allclose(y.detach().numpy(), want.numpy())


def test_add_on_a_non_leaf_changes_it_and_becomes_its_grad_fn(device):
    # the reproduction: the old code returned a new tensor and left y unchanged
    a = lc.asarray([1.0, 2.0], device=device, requires_grad=True)
    y = a * 2
    y.add_(1)
    assert y.tolist() == [3.0, 5.0]
    assert type(y.grad_fn).__name__ == "Add"
    (y * y).sum().backward()
    assert a.grad.tolist() == [12.0, 20.0]


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_in_place_on_a_leaf_that_requires_grad_raises(device, name):
    a = f64(device, [0.3, -0.6, 1.1])
    with pytest.raises(RuntimeError, match="a leaf tensor that requires grad cannot be modified in place"):
        INPLACE[name](a, f64(device, [1.0, 1.0, 1.0], requires_grad=False))
    assert a.tolist() == [0.3, -0.6, 1.1]


def test_in_place_with_a_graph_operand_makes_a_plain_tensor_part_of_the_graph(device):
    x = f64(device, [1.0, 2.0])
    acc = lc.zeros(2, dtype=lc.float64, device=device)
    acc += x * x
    acc.mul_(x)
    assert acc.requires_grad and acc.tolist() == [1.0, 8.0]
    acc.sum().backward()
    assert x.grad.tolist() == [3.0, 12.0]


def test_a_chain_of_writes_keeps_every_earlier_use_correct(device):
    x = f64(device, [0.5, -1.0])

    def fn(x):
        y = x * 1.0
        first = y + 0.0  # routed only
        y.mul_(x)
        second = y - 1.0  # routed only, too (a product would save y and raise)
        y[0] = x[1] * 3.0
        y.add_(second)
        return first + second + y

    assert lc.gradcheck(fn, [x])


def test_a_tensor_written_in_the_graph_every_step_keeps_a_short_history(device):
    w = f64(device, [1.5])
    buf = lc.zeros(1, dtype=lc.float64, device=device)
    for _ in range(100):
        buf[:] = w * 2.0
        buf.sum().backward()
        buf.detach_()  # as with an RNN's state: the next step must not backward into this one
    assert w.grad.tolist() == [200.0]
    assert len(buf._box.ghosts) < 20  # the freed steps' entries were merged


def test_a_write_without_gradient_into_a_tensor_that_requires_grad_raises(device):
    y = f64(device, [1.5, 2.5]) * 2.0
    with pytest.raises(RuntimeError, match="//=: the result has no gradient"):
        y //= 2.0
    with lc.no_grad():
        y //= 2.0
    assert y.tolist() == [1.0, 2.0]


def test_writes_through_views_land_in_their_base_and_saved_tensors_are_guarded(device):
    # slices and reshapes are views, as in PyTorch: writes through them land in the base, and a graph that
    # saved the base refuses to run backward on the changed values
    want = np.arange(6.0).reshape(2, 3)
    a = f64(device, want)
    y = a * 1.0
    r = y.reshape(6)
    s = y[0]
    z = (y * y).sum()  # saves y
    with lc.no_grad():
        r.add_(1.0)
        s[0] = 9.0
        r.mul_(2.0)
        s.copy_(s * 0.0)
        s += 1.0
    expect = (want + 1.0) * 2.0
    expect[0] = 1.0
    assert y.tolist() == expect.tolist() and y._version == 5 and r._version == 5
    assert r.tolist() == expect.reshape(6).tolist() and s.tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        z.backward()


def test_a_write_never_lands_in_a_tensor_that_is_not_a_view(device):
    # NumPy's flip, and some reshapes, are views of the same memory; in PyTorch they are copies, and so here
    want = np.arange(6.0).reshape(2, 3)
    y = f64(device, want).detach()
    others = [y.flip(0), y.clone(), y[[0, 1]], y * 1.0, y.T.reshape(6), y[y > -1.0]]
    before = [o.tolist() for o in others]
    y.add_(1.0)
    y[0, 0] = 7.0
    assert [o.tolist() for o in others] == before and all(o._version == 0 for o in others)


# -- detached views and state dicts write through ------------------------------------------------------


def test_detach_shares_the_data_both_ways(device):
    p = lc.asarray([1.0, 2.0], device=device)
    v = p.detach()
    v.copy_(lc.asarray([5.0, 6.0], device=device))
    assert p.tolist() == [5.0, 6.0]
    v[0] = 9.0
    v += 1.0
    assert p.tolist() == [10.0, 7.0]
    p.mul_(2.0)
    assert v.tolist() == [20.0, 14.0]
    w = p.detach().detach()
    w.zero_()
    assert p.tolist() == [0.0, 0.0] and v.tolist() == [0.0, 0.0]


@pytest.mark.parametrize(
    "write",
    [
        lambda t, w: t.copy_(w),
        lambda t, w: t.__setitem__(slice(None), w),
        lambda t, w: t.zero_().add_(w),
        lambda t, w: t.mul_(0.0).__iadd__(w),
    ],
    ids=["copy_", "setitem", "zero_+add_", "mul_+iadd"],
)
def test_state_dict_tensors_write_into_the_model(device, write):
    nn = pytest.importorskip("lucid_nn")
    model = nn.Sequential(nn.Linear(3, 2), nn.LayerNorm(2)).to(device)
    sd = model.state_dict()
    new = {
        k: lc.asarray(np.full(v.shape, i + 0.5, dtype=np.float32), device=device) for i, (k, v) in enumerate(sd.items())
    }
    with lc.no_grad():  # nanoGPT's from_pretrained
        for k in sd:
            write(sd[k], new[k])
    for k, v in model.state_dict(keep_vars=True).items():
        np.testing.assert_array_equal(v.detach().numpy(), new[k].numpy(), err_msg=k)
    assert model[0].weight.requires_grad and model[0].weight.is_leaf


def test_from_pretrained_pattern_copies_one_model_into_another(device):
    nn = pytest.importorskip("lucid_nn")
    lc.manual_seed(0)
    src = nn.Linear(4, 3).to(device)
    lc.manual_seed(1)
    dst = nn.Linear(4, 3).to(device)
    x = lc.randn(2, 4, device=device)
    sd, sd_src = dst.state_dict(), src.state_dict()
    for k in sd:
        with lc.no_grad():
            sd[k].copy_(sd_src[k])
    np.testing.assert_array_equal(dst(x).detach().numpy(), src(x).detach().numpy())


def test_optimizer_state_dict_stays_a_snapshot(device):
    optim = pytest.importorskip("lucid_optim")
    w = lc.Parameter(lc.asarray([1.0, 2.0], device=device))
    opt = optim.SGD([w], lr=0.1, momentum=0.9)
    (w * w).sum().backward()
    opt.step()
    snap = opt.state_dict()
    buf = snap["state"][0]["momentum_buffer"].tolist()
    (w * w).sum().backward()
    opt.step()
    assert snap["state"][0]["momentum_buffer"].tolist() == buf


# -- masks and backends that follow the standard strictly ---------------------------------------------


def test_a_mask_is_the_sole_index_the_backend_sees(device):
    x = lc.asarray([[1.0, -2.0], [3.0, -4.0]], device=device)
    seen = []
    kernels = device.backend.kernels
    prev = kernels.get("getitem")

    def spy(arr, key):
        seen.append(key)
        return prev(arr, key) if prev is not None else arr[key]

    kernels["getitem"] = spy
    try:
        assert x[x > 0].tolist() == [1.0, 3.0]
        assert x[lc.asarray([True, False], device=device), ...].tolist() == [[1.0, -2.0]]
        assert x[:, lc.asarray([False, True], device=device)].tolist() == [[-2.0], [-4.0]]
    finally:
        if prev is None:
            del kernels["getitem"]
        else:
            kernels["getitem"] = prev
    assert len(seen[0]) == 1 and len(seen[1]) == 1  # the mask alone, no `...` appended
    mask_dtype = seen[0][0].dtype
    assert not any(hasattr(k, "dtype") and k.dtype == mask_dtype for k in seen[2])  # spelled as integers


@pytest.fixture
def strict():
    """The example ``lucid-backend-strict`` plugin, registered in-process."""
    pytest.importorskip("array_api_strict")
    src = Path(__file__).resolve().parents[2] / "examples" / "lucid-backend-strict" / "src"
    sys.path.insert(0, str(src))
    try:
        from lucid_backend_strict import StrictBackend
    finally:
        sys.path.remove(str(src))
    backend = StrictBackend()
    backend.name = "strict-writes"
    lc.register_backend(backend)
    try:
        yield backend.default_device
    finally:
        lc.unregister_backend("strict-writes")


def test_masks_and_writes_work_on_the_strict_backend(strict):
    x = lc.asarray([[1.0, -2.0], [3.0, -4.0]], device=strict, requires_grad=True)
    assert x[x > 0].tolist() == [1.0, 3.0]
    assert x[lc.asarray([True, False], device=strict)].tolist() == [[1.0, -2.0]]
    assert x[:, lc.asarray([False, True], device=strict)].tolist() == [[-2.0], [-4.0]]
    (x[x > 0] * 2.0).sum().backward()
    assert x.grad.tolist() == [[2.0, 0.0], [2.0, 0.0]]
    z = lc.zeros(2, 2, device=strict)
    z[x.detach() < 0] = x[x < 0] * 3.0
    z.sum().backward()
    assert z.tolist() == [[0.0, -6.0], [0.0, -12.0]]
    assert x.grad.tolist() == [[2.0, 3.0], [2.0, 3.0]]
    v = z.detach()
    v[0] = 1.0
    assert z.tolist()[0] == [1.0, 1.0]
    y = x * 1.0
    y[lc.asarray([1, 0], device=strict)] = lc.asarray([[5.0], [-1.0]], device=strict)  # integer arrays
    assert y.tolist() == [[-1.0, -1.0], [5.0, 5.0]]
    with pytest.raises(IndexError, match="cannot choose between values assigned twice"):
        y[lc.asarray([1, 1], device=strict)] = lc.asarray([[6.0], [7.0]], device=strict)
    assert y.tolist() == [[-1.0, -1.0], [5.0, 5.0]]  # nothing was written
    assert lc.gradcheck(
        lambda a, v: _int_set(a * 1.0, lc.asarray([2, 0], device=strict), v * v),
        [f64(strict, [[0.5, 1.0], [2.0, -1.0], [0.3, 0.1]]), f64(strict, [[1.0, 2.0], [3.0, 4.0]])],
    )


def _int_set(z, idx, v):
    z[idx] = v
    return z * z


def test_setitem_on_immutable_arrays_names_the_kernel_hook():
    from lucid_core.ops.indexing import write_native

    frozen = SimpleNamespace(backend=SimpleNamespace(name="frozen", kernels={}))
    with pytest.raises(TypeError, match=r"backend 'frozen' cannot assign.*kernels\['setitem'\]\(array, key, value\)"):
        write_native(frozen, (1.0, 2.0), 0, 5.0)
    frozen.backend.kernels["setitem"] = lambda a, k, v: ("new", a, k, v)
    assert write_native(frozen, (1.0, 2.0), 0, 5.0) == ("new", (1.0, 2.0), 0, 5.0)


class TestWritesKitOnStrict(WritesConformance):
    """The conformance kit's write checks on the strict example backend (whose ``__setitem__`` takes no
    integer arrays: the core's scatter fallback writes those)."""

    backend = "strict-writes"
    device_type = None
    device = BackendConformance.device
    has_float64 = BackendConformance.has_float64
    t = BackendConformance.t
    _gradcheck = BackendConformance._gradcheck

    @pytest.fixture(autouse=True)
    def _registered(self, strict):
        lc.manual_seed(0)


def test_load_state_dict_writes_into_the_parameters_so_earlier_views_follow(device):
    import lucid_nn as nn

    model = nn.Linear(3, 2, device=device)
    sd = model.state_dict()
    weight = model.weight
    new = {k: lc.full(v.shape, 0.5, device=device) for k, v in sd.items()}
    model.load_state_dict(new)
    assert model.weight is weight  # the same Parameter, written in place
    assert sd["weight"].tolist() == [[0.5] * 3] * 2  # a view taken before the load sees it
    assert sd["bias"].tolist() == [0.5, 0.5]


def test_a_write_to_an_input_only_a_constant_partner_needed_is_allowed(device):
    """PyTorch saves each factor of a product only for the other's gradient (#32): x * c and m @ x read x
    only for c's and m's gradients, so writing x after is harmless when c and m need none; writing c is not."""
    w = lc.ones((3,), device=device, requires_grad=True)
    c = lc.asarray([1.0, 2.0, 3.0], device=device)
    m = lc.reshape(lc.arange(9.0, device=device), (3, 3))
    x = w * 2.0
    y = lc.sum(x * c) + lc.sum(m @ x)
    x.add_(1.0)
    y.backward()
    np.testing.assert_allclose(w.grad.numpy(), 2.0 * (c.numpy() + m.numpy().sum(axis=0)))
    x = w * 2.0
    y = lc.sum(x * c)
    c.add_(1.0)  # x's gradient reads c
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()
    x = w * 2.0
    cg = lc.asarray([1.0, 2.0, 3.0], device=device, requires_grad=True)
    y = lc.sum(x * cg)
    x.add_(1.0)  # now cg's gradient reads x
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()
