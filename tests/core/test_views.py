"""Views alias their base as PyTorch's do, on every backend: the (view op x in-place op) table against PyTorch's
results (fixtures/views.json, written by fixtures/generate_view_fixtures.py), random chains of views and writes
against a NumPy model of aliasing, gradients through written views (PyTorch's CopySlices) against PyTorch and
finite differences, and the errors PyTorch raises."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lucid
import lucid_core as lc
from tests.core.fixtures.view_cases import (
    GRAD_WRITES,
    OVERLAPPING,
    VIEWS,
    WRITES,
    base,
    grad_case,
    layout,
)

TORCH = json.loads((Path(__file__).parent / "fixtures" / "views.json").read_text())
COPIES = {"reshape_copy", "contiguous_copy", "flip_copy", "advanced_copy", "mask_copy"}
NEEDS_MASKS = {"mask_copy"}


def _skip_unsupported(device, vname):
    if vname in NEEDS_MASKS and not device.backend.capabilities.get("data_dependent_shapes", True):
        pytest.skip("the backend has no data-dependent shapes (boolean masks)")


@pytest.mark.parametrize("case", sorted(TORCH["writes"]))
def test_a_write_through_a_view_matches_pytorch(device, case):
    vname, wname = case.split("|")
    _skip_unsupported(device, vname)
    x = base(lucid, device)
    v = VIEWS[vname](x)
    WRITES[wname](lucid, v)
    want = TORCH["writes"][case]
    assert x.tolist() == want["base"]
    assert v.tolist() == want["view"]
    assert x._version == want["version"]  # PyTorch counts one write per op; none when the view is a copy


@pytest.mark.parametrize("vname", sorted(VIEWS))
def test_a_write_to_the_base_is_seen_through_its_views(device, vname):
    _skip_unsupported(device, vname)
    x = base(lucid, device)
    v = VIEWS[vname](x)
    x.add_(100.0)
    assert v.tolist() == TORCH["base_writes"][vname]


@pytest.mark.parametrize("vname", sorted(VIEWS))
def test_a_view_reports_pytorchs_layout(device, vname):
    _skip_unsupported(device, vname)
    assert layout(VIEWS[vname](base(lucid, device))) == TORCH["layouts"][vname]


@pytest.mark.parametrize("vname", sorted(OVERLAPPING))
def test_writing_a_view_whose_elements_share_a_place_raises_as_in_pytorch(device, vname):
    x = base(lucid, device)
    v = OVERLAPPING[vname](x)
    with pytest.raises(RuntimeError, match=TORCH["overlapping"][vname]):
        v.add_(1.0)
    with pytest.raises(RuntimeError, match="more than one element"):
        v[0] = 1.0
    assert x.tolist() == base(lucid, device).tolist()


@pytest.mark.parametrize("case", sorted(TORCH["grads"]))
def test_gradients_through_a_written_view_match_pytorch(device, case):
    if not device.backend.capabilities.get("float64", True):
        pytest.skip("float64")
    vname, wname = case.split("|")
    want = TORCH["grads"][case]
    a = base(lucid, device).requires_grad_()
    if "error" in want:
        with pytest.raises(RuntimeError, match=want["error"]):
            grad_case(lucid, vname, wname, a, TORCH["w_values"])
        return
    loss, w = grad_case(lucid, vname, wname, a, TORCH["w_values"])
    loss.backward()
    np.testing.assert_allclose(loss.item(), want["loss"], rtol=1e-12)
    np.testing.assert_allclose(np.array(a.grad.tolist()), np.array(want["a"]), rtol=1e-12, atol=1e-12)
    if want["w"] is None:
        assert w.grad is None
    else:
        np.testing.assert_allclose(np.array(w.grad.tolist()), np.array(want["w"]), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("vname", ["slice_both", "transpose", "diagonal", "unfold", "view_of_view_of_view"])
@pytest.mark.parametrize("wname", ["mul_w", "setitem_w", "clamp_"])
def test_gradients_through_a_written_view_match_finite_differences(device, vname, wname):
    if not device.backend.capabilities.get("float64", True):
        pytest.skip("float64")

    def f(a, w):
        y = a * 1.5 + 0.25
        v = VIEWS[vname](y)
        GRAD_WRITES[wname](v, w.reshape(v.shape))
        return (y * y).sum() + v.sum()

    a0 = base(lucid, device) / 7.0
    n = VIEWS[vname](a0).numel()
    w0 = lucid.linspace(-1.3, 2.1, n, dtype=lucid.float64, device=device)
    assert lc.gradcheck(f, [a0.requires_grad_(), w0.requires_grad_()])
    assert lc.gradgradcheck(f, [a0, w0])


# -- random chains of views and writes against a NumPy model ---------------------------------------------------
# The model applies the same ops to an array of flat positions: a NumPy view of it says where each element
# of the Lucid view lives in the base; ops that PyTorch copies are copies there too.
_OPS = st.one_of(
    st.tuples(st.just("int"), st.integers(0, 3), st.integers(-3, 3)),
    st.tuples(st.just("slice"), st.integers(0, 3), st.integers(-4, 4), st.integers(-4, 4), st.integers(1, 3)),
    st.tuples(st.just("transpose"), st.integers(0, 3), st.integers(0, 3)),
    st.tuples(st.just("unsqueeze"), st.integers(0, 3)),
    st.tuples(st.just("squeeze")),
    st.tuples(st.just("flatten")),
    st.tuples(st.just("reshape")),
    st.tuples(st.just("diagonal")),
    st.tuples(st.just("detach")),
    st.tuples(st.just("flip")),
)
_WRITES = st.sampled_from(["fill", "add", "setitem0", "copy", "mul"])


def _step(t, pos, op):
    """Apply ``op`` to the Lucid tensor ``t`` and to the positions ``pos``; None when it does not apply."""
    kind, *args = op
    nd = t.ndim
    if kind in ("int", "slice", "transpose", "unsqueeze") and nd == 0:
        return None
    if kind == "int":
        d, i = args[0] % nd, args[1]
        if not -t.shape[d] <= i < t.shape[d]:
            return None
        key = (slice(None),) * d + (i, Ellipsis)  # a 0-d NumPy view, not a scalar, when every axis is picked
        return t[key], pos[key]
    if kind == "slice":
        d, a, b, s = args[0] % nd, *args[1:]
        n = t.shape[d]  # bounds within the axis: array-api-strict refuses out-of-range slices
        a, b = max(-n, min(a, n)), max(-n, min(b, n))
        key = (slice(None),) * d + (slice(a, b, s),)
        return t[key], pos[key]
    if kind == "transpose":
        a, b = args[0] % nd, args[1] % nd
        return t.transpose(a, b), np.swapaxes(pos, a, b)
    if kind == "unsqueeze":
        d = args[0] % (nd + 1)
        return t.unsqueeze(d), np.expand_dims(pos, d)
    if kind == "squeeze":
        return t.squeeze(), np.squeeze(pos)
    if kind == "flatten":
        out = pos.reshape(-1)
        return t.flatten(), out
    if kind == "reshape":  # the last axis split in two where it has an even length
        if nd == 0 or t.shape[-1] % 2:
            return None
        shape = (*t.shape[:-1], 2, t.shape[-1] // 2)
        return t.reshape(shape), pos.reshape(shape)
    if kind == "diagonal":
        if nd < 2:
            return None
        return t.diagonal(0, 0, 1), np.diagonal(pos, 0, 0, 1)
    if kind == "detach":
        return t.detach(), pos
    if kind == "flip":
        return (t.flip(0), np.flip(pos, 0).copy()) if nd else None
    raise AssertionError(kind)


@given(ops=st.lists(_OPS, min_size=1, max_size=5), write=_WRITES)
def test_random_chains_of_views_then_a_write_alias_as_numpy_says(device, ops, write):
    x = base(lucid, device)
    root = np.arange(24).reshape(2, 3, 4)
    t, pos = x, root
    for op in ops:
        r = _step(t, pos, op)
        if r is not None:
            t, pos = r
    expect = np.arange(24.0)
    values = np.array(t.tolist(), dtype=np.float64)
    assert values.tolist() == expect[pos].tolist()  # the view reads the base's elements
    if write == "fill":
        t.fill_(-7.0)
        new = np.full(pos.shape, -7.0)
    elif write == "add":
        t.add_(0.5)
        new = values + 0.5
    elif write == "mul":
        t.mul_(t)
        new = values * values
    elif write == "copy":
        t.copy_(lucid.ones_like(t) * 3.0)
        new = np.full(pos.shape, 3.0)
    else:
        if t.ndim == 0 or t.shape[0] == 0:
            return
        t[0] = 9.0
        new = values.copy()
        new[0] = 9.0
    if np.shares_memory(pos, root):  # a view: every element it holds is the base's
        expect[pos.reshape(-1)] = new.reshape(-1)
    assert np.array(t.tolist()).tolist() == new.tolist()
    assert np.array(x.tolist()).reshape(-1).tolist() == expect.tolist()


# -- PyTorch's idioms and errors --------------------------------------------------------------------------------
def test_the_issue_idioms_land(device):
    x = lucid.zeros(2, 3, device=device)
    x[:, 0].fill_(7.0)
    assert x.tolist() == [[7.0, 0.0, 0.0], [7.0, 0.0, 0.0]]
    x[0].add_(1.0)
    x.unbind(0)[1].fill_(4.0)
    v = x.view(-1)
    v[4] = 2.0
    assert x.tolist() == [[8.0, 1.0, 1.0], [4.0, 2.0, 4.0]]
    emb = lucid.nn.Embedding(5, 3).to(device)
    with lucid.no_grad():
        emb.weight[0].zero_()
    assert emb.weight[0].tolist() == [0.0, 0.0, 0.0] and emb.weight.abs().sum().item() > 0
    h = 4
    lstm = lucid.nn.LSTM(3, h).to(device)
    with lucid.no_grad():
        lstm.bias_ih_l0[h : 2 * h].fill_(1.0)
    assert lstm.bias_ih_l0.tolist()[h : 2 * h] == [1.0] * h
    w = lucid.nn.Linear(4, 4).to(device).weight
    lucid.nn.init.zeros_(w[1])
    lucid.nn.init.ones_(w[:, 2])
    assert w[1, 0].item() == 0.0 and w[:, 2].tolist() == [1.0] * 4
    p = lucid.nn.Parameter(lucid.zeros(3, device=device))
    p.data[0] = 5.0
    p.data[1:].fill_(2.0)
    assert p.tolist() == [5.0, 2.0, 2.0]


def test_narrow_copy_and_a_kv_cache_write(device):
    cache = lucid.zeros(2, 5, 3, device=device)
    for pos in range(5):
        cache[:, pos].copy_(lucid.full((2, 3), float(pos), device=device))
        cache.narrow(1, pos, 1).add_(0.5)
    assert cache[1, :, 0].tolist() == [0.5, 1.5, 2.5, 3.5, 4.5]


def test_base_and_views_share_one_version_and_storage(device):
    z = lucid.zeros(2, 3, device=device)
    a, b = z[0], z.t()
    a.add_(1.0)
    assert z._version == a._version == b._version == z.detach()._version == 1
    assert a._base is z and b._base is z and z[0][1]._base is z and z._base is None
    assert a._is_view() and not z._is_view() and not z.detach()._is_view()
    assert z.detach()[0]._base is not None
    s = z.untyped_storage()
    assert (
        s.data_ptr() == b.untyped_storage().data_ptr() != lucid.zeros(2, 3, device=device).untyped_storage().data_ptr()
    )
    assert z[1].data_ptr() - z.data_ptr() == 3 * z.element_size() and s.nbytes() == 24
    assert z.clone().untyped_storage().data_ptr() != s.data_ptr()


def test_a_view_of_a_leaf_that_requires_grad_cannot_be_written_in_the_graph(device):
    w = lucid.ones(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        w[0:2].mul_(2.0)
    with lucid.no_grad():
        v = w[0:2]
        v.mul_(2.0)
    assert w.tolist() == [2.0, 2.0, 1.0]
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        v.fill_(1.0)
    assert v.requires_grad and v.is_leaf  # PyTorch's answer for a no-grad view of such a leaf


def test_pieces_of_split_and_unbind_cannot_be_written_in_the_graph(device):
    y = lucid.ones(4, 2, device=device, requires_grad=True) * 2.0
    for piece in (y.split(2)[1], y.chunk(2)[0], y.unbind(1)[0]):
        with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
            piece.mul_(3.0)
    with lucid.no_grad():
        y.unbind(1)[0].mul_(3.0)
    assert y[:, 0].tolist() == [6.0] * 4


def test_a_saved_tensor_written_through_a_view_makes_backward_raise(device):
    a = lucid.ones(3, device=device, requires_grad=True)
    b = a * 2.0
    s = b[0:2]
    p = s * s
    b.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        p.sum().backward()
    c = a * 2.0
    q = c.exp()  # saves its output
    c[1:].mul_(0.5)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        q.sum().backward()


def test_a_written_base_gives_its_views_its_new_history(device):
    a = lucid.tensor([1.0, 2.0, 3.0, 4.0], device=device, requires_grad=True)
    b = a * 1.0
    v = b[1:3]
    b.mul_(2.0)
    assert v.tolist() == [4.0, 6.0] and v._version == 1
    v.sum().backward()
    assert a.grad.tolist() == [0.0, 2.0, 2.0, 0.0]


def test_view_refuses_what_strides_cannot_express_and_reshape_copies(device):
    t = lucid.zeros(2, 3, device=device).t()
    with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's size and stride"):
        t.view(6)
    r = t.reshape(6)
    assert not r._is_view()
    r.fill_(1.0)
    assert t.sum().item() == 0.0
    assert t.contiguous()._base is None and t.contiguous().is_contiguous() and not t.is_contiguous()
    assert t.T.view(6)._is_view()


def test_grad_assignment_checks_shape_dtype_and_type(device):
    p = lucid.zeros(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"attempting to assign a gradient of size '\[2\]' to a tensor of size"):
        p.grad = lucid.ones(2, device=device)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient with dtype"):
        p.grad = lucid.ones(3, dtype=lucid.int64, device=device)
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None"):
        p.grad = 3
    p.grad = lucid.ones(3, device=device)
    p.grad = None
    assert p.grad is None


def test_complex_parts_are_views(device):
    if not device.backend.capabilities.get("complex", True):
        pytest.skip("complex")
    c = lucid.tensor([1 + 2j, 3 + 4j], device=device)
    c.real.fill_(0.0)
    c.imag.mul_(2.0)
    assert c.tolist() == [4j, 8j]
    assert c.imag.stride() == (2,) and c.imag.storage_offset() == 1


def _outputs(x):
    """Every tensor that one call of a namespace function or a method makes from ``x`` (those that take it)."""
    import warnings

    made = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in sorted(dir(lc)):
            f = getattr(lc, name)
            if name.startswith("_") or isinstance(f, type) or not callable(f):
                continue
            for args in ((x,), (x, x), (x, 1)):
                try:
                    out = f(*args)
                except Exception:  # noqa: BLE001 - only the calls that work are of interest
                    continue
                made.append((f"lucid_core.{name}", out))
                break
        for name in sorted(dir(lucid.Tensor)):
            if name.startswith("_") or name.endswith("_") or name in ("backward", "register_hook"):
                continue
            try:
                f = getattr(x, name)
            except Exception:  # noqa: BLE001
                continue
            if not callable(f):
                continue
            for args in ((), (1,), (x,), (0, 1)):
                try:
                    out = f(*args)
                except Exception:  # noqa: BLE001
                    continue
                made.append((f"Tensor.{name}", out))
                break
    return [
        (n, o)
        for n, out in made
        for o in (out if isinstance(out, (tuple, list)) else [out])
        if isinstance(o, lc.Tensor)
    ]


def test_only_views_see_a_write_to_their_base(device):
    # every op's result either shares the base's storage (a view, or the tensor itself) or is left alone by a
    # write to it: NumPy returns views from flip, clip(x) and more, which PyTorch's copies must not follow
    x = lucid.arange(1.0, 25.0, dtype=lucid.float32, device=device).reshape(2, 3, 4)
    made = [(n, o, o.tolist()) for n, o in _outputs(x) if o is not x and o._box is not x._box]
    assert len(made) > 100
    with lucid.no_grad():
        x.add_(1000.0)
        x[0, 0, 0] = -1.0
    changed = [n for n, o, before in made if repr(o.tolist()) != repr(before)]  # repr: NaN equals NaN
    assert changed == []


@pytest.mark.parametrize("overwrite_first", [False, True])
def test_views_used_before_an_augmented_write_through_a_view_keep_their_gradients(device, overwrite_first):
    # `c[..., -1] += eps` writes through a view, then writes that view back into the base; the views taken
    # before (`c[..., 1:]`, `c[..., :-1]`) are used by nodes older than both writes, which run after the
    # write's nodes in backward (karpathy/pytorch-normalizing-flows' spline searchsorted raised here)
    w = lc.ones((4, 3), dtype=lc.float32, device=device, requires_grad=True)
    c = 2 * w + 1
    if overwrite_first:
        c[..., 0] = -1.0
    d = c[..., 1:] - c[..., :-1]
    c[..., -1] += 1e-6
    g = c * 3
    (d.sum() + g.sum()).backward()
    first = 0.0 if overwrite_first else 4.0
    assert w.grad.tolist() == [[first, 6.0, 8.0]] * 4


def test_an_old_graph_through_views_outlives_the_written_base(device):
    # nothing but the old graph refers to the views' history before the write: deleting the base and
    # everything made after the write must not take it away
    w = lc.ones((2, 3), dtype=lc.float32, device=device, requires_grad=True)
    c = w * 2
    d = c[:, 1:] - c[:, :-1] - c[:, :-1]  # saves nothing the write changes
    c[:, -1] += 1.0
    del c
    d.sum().backward()
    assert w.grad.tolist() == [[-4.0, -2.0, 2.0]] * 2


def test_as_strided_without_an_offset_starts_where_the_tensor_does(device):
    x = lc.arange(8.0, device=device)
    assert x.as_strided((2, 2), (1, 2)).tolist() == [[0.0, 2.0], [1.0, 3.0]]  # PyTorch's numbers
    tail = x[2:]
    assert tail.as_strided((2,), (3,)).tolist() == [2.0, 5.0]  # from tail's own offset (2), as PyTorch
    assert tail.as_strided((2,), (3,), 0).tolist() == [0.0, 3.0]
