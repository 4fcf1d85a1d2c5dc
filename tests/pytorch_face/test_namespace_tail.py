"""The rest of the ``torch`` namespace (lucid/_namespace_tail.py): values against PyTorch's, and behaviour.

Values: every case of ``fixtures/namespace_tail_cases.py`` against ``fixtures/namespace_tail.npz`` (written
once by ``generate_namespace_tail.py`` with PyTorch 2.13). Behaviour: copies are not views, complex views write
through, typed tensor classes, memory formats, switches.
"""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest

import lucid
from tests.pytorch_face.fixtures import namespace_tail_cases as cases

with np.load(Path(__file__).parent / "fixtures" / "namespace_tail.npz") as _f:
    TORCH = {k: _f[k] for k in _f.files}


# -- values against PyTorch ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_matches_pytorch(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lucid.range's deprecation
        got = cases.run(name, lucid)
    want = [TORCH[f"{name}:{i}"] for i in range(sum(1 for k in TORCH if k.startswith(f"{name}:")))]
    assert len(got) == len(want), f"{name}: {len(got)} results, PyTorch gave {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, f"{name}[{i}]: shape {g.shape} != PyTorch's {w.shape}"
        if w.dtype.kind in "US":
            assert g.tolist() == w.tolist(), f"{name}[{i}]"
            continue
        assert g.dtype.kind == w.dtype.kind, f"{name}[{i}]: dtype {g.dtype} != PyTorch's {w.dtype}"
        tol = 1e-5 if w.dtype in (np.float32, np.complex64) else 1e-9
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"{name}[{i}]")


# -- 1. nn ops: behaviour ----------------------------------------------------------------------------------------
def test_dropout_family_is_identity_unless_training():
    x = lucid.randn(4, 3, 5)
    for fn in (lucid.dropout, lucid.alpha_dropout, lucid.feature_dropout, lucid.feature_alpha_dropout):
        assert lucid.equal(fn(x, 0.5, False), x), fn.__name__
    out, mask = lucid.native_dropout(x, 0.5, False)
    assert lucid.equal(out, x) and bool(mask.all())


def test_dropout_train_is_positional_and_scales_kept_elements():
    lucid.manual_seed(0)
    x = lucid.ones(200, 10)
    y = lucid.dropout(x, 0.25, True)
    kept = y != 0
    assert 0.6 < float(kept.float().mean()) < 0.9
    np.testing.assert_allclose(y[kept].numpy(), 1 / 0.75, rtol=1e-6)


def test_native_dropout_mask_says_which_elements_were_kept():
    lucid.manual_seed(1)
    x = lucid.randn(50, 8) + 3.0
    out, mask = lucid.native_dropout(x, 0.4, True)
    assert mask.dtype is lucid.bool
    np.testing.assert_allclose(out.numpy(), np.where(mask.numpy(), x.numpy() / 0.6, 0.0), rtol=1e-6)


def test_feature_dropout_drops_whole_channels():
    lucid.manual_seed(2)
    y = lucid.feature_dropout(lucid.ones(8, 6, 3, 3), 0.5, True).numpy()
    per_channel = y.reshape(8, 6, 9)
    assert np.all((per_channel == 0).all(axis=2) | (per_channel == 2.0).all(axis=2))
    assert 0 < (per_channel == 0).all(axis=2).sum() < 48


def test_in_place_dropouts_write_into_the_input():
    lucid.manual_seed(3)
    x = lucid.ones(10, 4, 3)
    same = lucid.feature_dropout_(x, 0.5, True)
    assert same is x and set(np.unique(x.numpy())) <= {0.0, 2.0}
    y = lucid.ones(6, 4)
    lucid.dropout_(y, 0.5, True)
    assert set(np.unique(y.numpy())) <= {0.0, 2.0} and len(np.unique(y.numpy())) == 2
    z = lucid.ones(3, 3)
    assert lucid.alpha_dropout_(z, 0.5, False) is z and bool((z == 1).all())


def test_torch_level_functions_keep_atens_argument_order():
    w, idx = lucid.randn(5, 2), lucid.tensor([4, 0])
    assert lucid.equal(lucid.embedding(w, idx), w[idx])  # weight first, unlike F.embedding
    with pytest.raises(ValueError, match="reduction must be 0"):
        lucid.hinge_embedding_loss(w, w, 1.0, "average")
    with pytest.raises(NotImplementedError, match="scale_grad_by_freq"):
        lucid.embedding(w, idx, -1, True)


def test_gradients_reach_torch_level_nn_ops():
    x = lucid.randn(2, 3, 4, dtype=lucid.float64, requires_grad=True)
    out, mean, rstd = lucid.native_layer_norm(x, [4], None, None, 1e-5)
    (out * lucid.arange(4, dtype=lucid.float64)).sum().backward()
    assert x.grad is not None and float(x.grad.abs().sum()) > 0
    assert mean.shape == rstd.shape == (2, 3, 1) and mean.requires_grad


# -- 2. copies, scatters, complex views --------------------------------------------------------------------------
COPIES = {
    "diagonal_copy": (lambda x: lucid.diagonal_copy(x), lambda x: x.diagonal()),
    "select_copy": (lambda x: lucid.select_copy(x, 1, 2), lambda x: x.select(1, 2)),
    "slice_copy": (lambda x: lucid.slice_copy(x, 1, 1, 4, 2), lambda x: x[:, 1:4:2]),
    "t_copy": (lambda x: lucid.t_copy(x), lambda x: x.t()),
    "expand_copy": (lambda x: lucid.expand_copy(x[:1], [2, 4]), lambda x: x[:1].expand(2, 4)),
    "view_copy": (lambda x: lucid.view_copy(x, (8,)), lambda x: x.view(8)),
    "alias_copy": (lambda x: lucid.alias_copy(x), lambda x: x),
    "unfold_copy": (lambda x: lucid.unfold_copy(x, 1, 2, 2), lambda x: x.unfold(1, 2, 2)),
}


@pytest.mark.parametrize("name", sorted(COPIES))
def test_copies_equal_the_view_but_do_not_share_it(name, device):
    copy, view = COPIES[name]
    x = lucid.arange(8, dtype=lucid.float32, device=device).reshape(2, 4)
    c = copy(x)
    assert lucid.equal(c, view(x))
    c.fill_(-1.0)
    assert lucid.equal(x, lucid.arange(8, dtype=lucid.float32, device=device).reshape(2, 4))
    assert not c._is_view()


def test_copies_carry_gradients():
    x = lucid.randn(3, 3, dtype=lucid.float64, requires_grad=True)
    (lucid.diagonal_copy(x) * lucid.tensor([1.0, 2.0, 3.0], dtype=lucid.float64)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.diag([1.0, 2.0, 3.0]))


def test_scatters_leave_the_input_alone():
    x = lucid.zeros(3, 3)
    out = lucid.diagonal_scatter(x, lucid.ones(3))
    assert lucid.equal(x, lucid.zeros(3, 3)) and lucid.equal(out, lucid.eye(3))
    with pytest.raises(ValueError, match="src has shape"):
        lucid.select_scatter(x, lucid.ones(2), 0, 0)


def test_unsafe_split_pieces_may_be_written_in_grad_mode_where_split_pieces_may_not():
    base = lucid.randn(6, requires_grad=True) * 1.0
    with pytest.raises(RuntimeError, match="Split"):
        base.split(3)[0].mul_(2.0)
    base = lucid.randn(6, requires_grad=True)
    y = base * 1.0
    piece = lucid.unsafe_split(y, 3)[1]
    piece.mul_(2.0)
    y.sum().backward()
    np.testing.assert_array_equal(base.grad.numpy(), [1, 1, 1, 2, 2, 2])


def test_split_with_sizes_gives_views_and_checks_the_sizes():
    x = lucid.zeros(5)
    a, b = lucid.split_with_sizes(x, [2, 3])
    b.fill_(1.0)
    assert a._is_view() and b._is_view()
    assert x.tolist() == [0, 0, 1, 1, 1]
    with pytest.raises(ValueError, match="sum to 5"):
        lucid.split_with_sizes(x, [2, 2])


def test_writes_through_view_as_real_land_in_the_complex_tensor(device):
    z = lucid.tensor([1 + 2j, 3 - 1j], dtype=lucid.complex64, device=device)
    r = lucid.view_as_real(z)
    assert r._is_view() and r.stride() == (2, 1)
    r[1, 1] = 7.0
    r[0].mul_(2.0)
    np.testing.assert_allclose(z.numpy(), [2 + 4j, 3 + 7j])
    z.add_(1.0)
    np.testing.assert_allclose(r.numpy(), [[3, 4], [4, 7]])


def test_writes_through_view_as_complex_land_in_the_real_tensor(device):
    x = lucid.zeros(3, 2, device=device)
    c = lucid.view_as_complex(x)
    c[1] = 2 - 5j
    np.testing.assert_array_equal(x.numpy(), [[0, 0], [2, -5], [0, 0]])
    assert lucid.view_as_real(c)._base is x


def test_view_as_complex_refuses_layouts_it_cannot_view():
    with pytest.raises(ValueError, match="last dimension of size 2"):
        lucid.view_as_complex(lucid.zeros(3, 3))
    with pytest.raises(ValueError, match="stride 1"):
        lucid.view_as_complex(lucid.zeros(2, 3).t())
    with pytest.raises(TypeError, match="complex tensors"):
        lucid.view_as_real(lucid.zeros(2))


def test_detach_fill_and_zero():
    x = lucid.ones(3, requires_grad=True)
    d = lucid.detach(x)
    assert not d.requires_grad and d.data_ptr() == x.data_ptr()
    y = x * 2
    assert lucid.detach_(y) is y and y.grad_fn is None
    v = lucid.tensor(4.0, requires_grad=True)
    filled = lucid.fill(lucid.zeros(2, 2), v)
    filled.sum().backward()
    assert float(v.grad) == 4.0
    z = lucid.ones(2)
    assert lucid.fill_(z, 3.0) is z and z.tolist() == [3, 3]
    assert lucid.zero_(z) is z and z.tolist() == [0, 0]


# -- 3. typed tensor and storage classes -------------------------------------------------------------------------
def test_typed_tensor_constructors():
    a = lucid.FloatTensor(2, 3)
    assert a.shape == (2, 3) and a.dtype is lucid.float32
    assert lucid.LongTensor([1, 2]).tolist() == [1, 2] and lucid.LongTensor([1, 2]).dtype is lucid.int64
    assert lucid.DoubleTensor(lucid.Size([4])).shape == (4,)
    assert lucid.ByteTensor().shape == (0,)
    assert lucid.BoolTensor([True, False]).dtype is lucid.bool


def test_isinstance_with_a_typed_class_checks_dtype_and_cpu(device):
    x = lucid.zeros(2, device=device)
    is_cpu = x.device.type == "cpu"
    assert isinstance(x, lucid.FloatTensor) is is_cpu
    assert not isinstance(x, lucid.DoubleTensor)
    assert isinstance(lucid.zeros(2, dtype=lucid.int64), lucid.LongTensor)
    assert not isinstance(np.zeros(2), lucid.FloatTensor)


def test_tensor_type_names_and_casts():
    x = lucid.zeros(2)
    assert x.type() == "lucid.FloatTensor"
    assert x.type(lucid.DoubleTensor).dtype is lucid.float64
    assert x.type("torch.IntTensor").dtype is lucid.int32
    assert x.type(lucid.FloatTensor) is x
    with pytest.raises(ValueError, match="invalid type"):
        x.type("torch.cuda.FloatTensor")


def test_set_default_tensor_type():
    try:
        lucid.set_default_tensor_type(lucid.DoubleTensor)
        assert lucid.zeros(1).dtype is lucid.float64
        lucid.set_default_tensor_type("torch.FloatTensor")
        assert lucid.zeros(1).dtype is lucid.float32
        with pytest.raises(TypeError, match="floating"):
            lucid.set_default_tensor_type(lucid.LongTensor)
    finally:
        lucid.set_default_dtype(lucid.float32)


def test_storages():
    s = lucid.FloatStorage([1, 2, 3])
    assert isinstance(s, lucid.FloatStorage) and isinstance(s, lucid.TypedStorage)
    assert not isinstance(s, lucid.DoubleStorage)
    assert (s.size(), len(s), s.element_size(), s.nbytes(), s.tolist()) == (3, 3, 4, 12, [1.0, 2.0, 3.0])
    assert lucid.LongStorage(5).size() == 5 and lucid.LongStorage(5).element_size() == 8
    assert lucid.is_storage(s) and s.data_ptr() != lucid.FloatStorage(3).data_ptr()
    u = lucid.UntypedStorage(10)
    assert u.nbytes() == 10 and isinstance(lucid.zeros(2).untyped_storage(), lucid.UntypedStorage)


# -- 4. memory formats -------------------------------------------------------------------------------------------
def test_channels_last_holds_nhwc_order_and_the_same_numbers(device):
    x = lucid.randn(2, 3, 4, 5, device=device)
    y = x.contiguous(memory_format=lucid.channels_last)
    assert y.stride() == (60, 1, 15, 3)  # PyTorch's strides of a channels-last tensor
    assert y.is_contiguous(memory_format=lucid.channels_last) and not y.is_contiguous()
    assert not x.is_contiguous(memory_format=lucid.channels_last) and x.is_contiguous()
    assert lucid.equal(y, x)
    assert y.contiguous().stride() == (60, 20, 5, 1)
    assert y.contiguous(memory_format=lucid.channels_last) is y
    assert x.to(memory_format=lucid.channels_last).stride() == (60, 1, 15, 3)


def test_channels_last_3d_and_wrong_ranks():
    x = lucid.randn(1, 2, 3, 4, 5)
    assert x.contiguous(memory_format=lucid.channels_last_3d).stride() == (120, 1, 40, 10, 2)
    with pytest.raises(ValueError, match="4 dimensions"):
        x.contiguous(memory_format=lucid.channels_last)
    with pytest.raises(ValueError, match="preserve"):
        x.contiguous(memory_format=lucid.preserve_format)
    with pytest.raises(TypeError, match="memory_format"):
        x.contiguous(memory_format="channels_last")


def test_like_creators_preserve_or_set_the_format():
    x = lucid.randn(2, 3, 4, 5).contiguous(memory_format=lucid.channels_last)
    assert lucid.empty_like(x).stride() == (60, 1, 15, 3)
    assert lucid.zeros_like(x, memory_format=lucid.contiguous_format).stride() == (60, 20, 5, 1)
    assert lucid.ones_like(lucid.zeros(2, 3, 4, 5), memory_format=lucid.channels_last).stride() == (60, 1, 15, 3)
    assert float(lucid.full_like(x, 2.0).sum()) == 240.0


def test_gradients_flow_through_a_format_change():
    x = lucid.randn(1, 2, 2, 2, dtype=lucid.float64, requires_grad=True)
    (x.contiguous(memory_format=lucid.channels_last) * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((1, 2, 2, 2), 3.0))


def test_module_to_accepts_a_memory_format_and_keeps_the_numbers():
    conv = lucid.nn.Conv2d(3, 4, 3)
    before = conv.weight.detach().clone()
    assert conv.to(memory_format=lucid.channels_last) is conv
    assert lucid.equal(conv.weight, before)
    assert conv.weight.is_contiguous(memory_format=lucid.channels_last) is False  # the layout actually held
    assert repr(lucid.channels_last) == "lucid.channels_last"
    assert pickle.loads(pickle.dumps(lucid.channels_last)) is lucid.channels_last


# -- 5. switches and queries -------------------------------------------------------------------------------------
def test_float32_matmul_precision_is_recorded():
    try:
        lucid.set_float32_matmul_precision("medium")
        assert lucid.get_float32_matmul_precision() == "medium"
        with pytest.raises(ValueError, match="highest"):
            lucid.set_float32_matmul_precision("low")
    finally:
        lucid.set_float32_matmul_precision("highest")


def test_switches_answer_honestly():
    assert lucid.set_flush_denormal(True) is False
    assert lucid.compiled_with_cxx11_abi() is False
    assert lucid.get_num_interop_threads() >= 1
    assert lucid.init_num_threads() is None
    try:
        lucid.set_deterministic_debug_mode("warn")
        assert lucid.get_deterministic_debug_mode() == 1 and lucid.are_deterministic_algorithms_enabled()
        lucid.set_deterministic_debug_mode(2)
        assert lucid.get_deterministic_debug_mode() == 2
        with pytest.raises(ValueError):
            lucid.set_deterministic_debug_mode(3)
    finally:
        lucid.set_deterministic_debug_mode(0)
    assert not lucid.are_deterministic_algorithms_enabled()


def test_set_warn_always_shows_repeated_warnings():
    from lucid import _namespace_tail as tail

    try:
        lucid.set_warn_always(True)
        assert lucid.is_warn_always_enabled()
        assert tail._WARN_ALWAYS_FILTER in warnings.filters
    finally:
        lucid.set_warn_always(False)
    assert not lucid.is_warn_always_enabled() and tail._WARN_ALWAYS_FILTER not in warnings.filters


def test_range_warns_that_it_is_deprecated():
    with pytest.warns(UserWarning, match="deprecated"):
        assert lucid.range(0, 2).tolist() == [0.0, 1.0, 2.0]


def test_from_file_reads_elements(tmp_path):
    path = tmp_path / "data.bin"
    np.arange(6, dtype=np.float32).tofile(path)
    assert lucid.from_file(str(path), size=4, dtype=lucid.float32).tolist() == [0, 1, 2, 3]
    with pytest.raises(RuntimeError, match="bytes"):
        lucid.from_file(str(path), size=7, dtype=lucid.float32)
    with pytest.raises(NotImplementedError, match="shared"):
        lucid.from_file(str(path), shared=True, size=1)


def test_to_dlpack_round_trips():
    x = lucid.arange(4, dtype=lucid.float32)
    np.testing.assert_array_equal(np.from_dlpack(_Capsule(lucid.to_dlpack(x))), [0, 1, 2, 3])


class _Capsule:
    """A DLPack capsule wrapped for ``np.from_dlpack`` (which wants an object with ``__dlpack__``)."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


def test_fork_returns_a_completed_future():
    fut = lucid.fork(lambda a, b=0: a * 10 + b, 4, b=2)
    assert isinstance(fut, lucid.Future) and fut.done()
    assert lucid.wait(fut) == 42 and fut.value() == 42
    assert fut.then(lambda f: f.wait() + 1).wait() == 43
    with pytest.raises(ZeroDivisionError):
        lucid.fork(lambda: 1 / 0)


def test_symbolic_classes_and_tags():
    assert not isinstance(3, lucid.SymInt) and not isinstance(3.0, lucid.SymFloat)
    assert not isinstance(True, lucid.SymBool)
    with pytest.raises(TypeError, match="symbolic"):
        lucid.SymInt(3)
    assert lucid.Tag.pointwise.name == "pointwise" and len(lucid.Tag) == 20
