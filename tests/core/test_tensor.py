"""The Tensor object: properties, conversions, Python protocols, Parameter."""

from __future__ import annotations

import numpy as np
import pytest

import lucid_core as lc


def test_basic_properties(device):
    t = lc.asarray([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=device)
    assert t.shape == (2, 3) and t.ndim == 2 and t.size == 6 and t.numel() == 6
    assert t.dtype is lc.float32
    assert t.device is device
    assert t.T.shape == (3, 2) and t.mT.shape == (3, 2)
    assert len(t) == 2
    assert [r.tolist() for r in t] == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def test_python_floats_default_to_float32_and_ints_to_int64(device):
    assert lc.asarray(1.5, device=device).dtype is lc.float32
    assert lc.asarray([1, 2], device=device).dtype is lc.int64
    assert lc.asarray([True], device=device).dtype is lc.bool
    assert lc.randn(2, device=device).dtype is lc.float32
    assert lc.zeros(2, device=device).dtype is lc.float32


def test_item_tolist_and_scalar_conversions(device):
    t = lc.asarray([[2.5]], device=device)
    assert t.item() == 2.5 and float(t) == 2.5 and int(t) == 2 and bool(t) is True
    assert lc.asarray([1, 2], device=device).tolist() == [1, 2]
    with pytest.raises(ValueError, match="only a one-element tensor converts.*shape \\(2,\\)"):
        lc.asarray([1.0, 2.0], device=device).item()
    with pytest.raises(ValueError, match="truth value of a tensor with 2 elements is ambiguous"):
        bool(lc.asarray([1.0, 2.0], device=device))


def test_len_and_iter_of_a_0d_tensor_raise(device):
    t = lc.asarray(1.0, device=device)
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(t)
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(t)


def test_index_protocol_only_for_integers(device):
    assert [10, 20, 30][lc.asarray(1, device=device)] == 20
    with pytest.raises(TypeError, match="only integer tensors can be used as an index"):
        [1, 2][lc.asarray(1.0, device=device)]


def test_numpy_round_trip_and_requires_grad_guard(device):
    t = lc.asarray([1.0, 2.0], device=device)
    np.testing.assert_array_equal(t.numpy(), np.array([1.0, 2.0], dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(t), np.array([1.0, 2.0], dtype=np.float32))
    r = lc.asarray([1.0], device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad; call .detach\\(\\).numpy\\(\\)"):
        r.numpy()


def test_repr_shows_values_dtype_device_and_grad_fn(device):
    t = lc.asarray([1.0, 2.0], device=device, requires_grad=True)
    assert repr(t) == f"tensor([1., 2.], dtype=float32, device={device}, requires_grad=True)"
    y = t * 2.0
    assert f"dtype=float32, device={device}, grad_fn=<MultiplyBackward>" in repr(y)


def test_array_namespace_is_lucid_core(device):
    t = lc.zeros(2, device=device)
    assert t.__array_namespace__() is lc
    compat = pytest.importorskip("array_api_compat")
    assert compat.array_namespace(t) is lc
    with pytest.raises(ValueError, match="implements Array API 2024.12"):
        t.__array_namespace__(api_version="1999.01")


def test_dlpack_shares_memory_with_numpy():
    t = lc.asarray([1.0, 2.0], device="numpy")
    n = np.from_dlpack(t)
    np.testing.assert_array_equal(n, [1.0, 2.0])
    back = lc.from_dlpack(np.arange(3.0))
    assert back.tolist() == [0.0, 1.0, 2.0] and back.dtype is lc.float64


def test_to_dtype_and_astype(device):
    t = lc.asarray([1.5, 2.5], device=device)
    assert t.to(lc.float64).dtype is lc.float64
    assert t.astype(lc.int32).tolist() == [1, 2]
    assert t.float().dtype is lc.float32 and t.long().dtype is lc.int64 and t.bool().dtype is lc.bool
    with pytest.raises(TypeError, match="expected a lucid_core dtype"):
        t.astype("float7")


def test_astype_to_integer_leaves_the_graph(device):
    t = lc.asarray([1.5], device=device, requires_grad=True)
    assert not t.astype(lc.int64).requires_grad
    assert t.astype(lc.float64).requires_grad


def test_requires_grad_cannot_be_turned_off_on_non_leaves(device):
    y = lc.asarray([1.0], device=device, requires_grad=True) * 2.0
    with pytest.raises(RuntimeError, match="cannot be turned off on a non-leaf"):
        y.requires_grad = False


def test_copy_zero_fill_in_place_helpers(device):
    t = lc.zeros(3, device=device)
    t.copy_(lc.asarray([1.0, 2.0, 3.0], device=device))
    assert t.tolist() == [1.0, 2.0, 3.0]
    t.add_(lc.ones(3, device=device), alpha=2.0)
    assert t.tolist() == [3.0, 4.0, 5.0]
    t.fill_(7.0)
    assert t.tolist() == [7.0, 7.0, 7.0]
    t.zero_()
    assert t.tolist() == [0.0, 0.0, 0.0]


def test_data_setter_swaps_values_keeping_identity(device):
    p = lc.Parameter(lc.zeros(2, device=device))
    p.data = lc.ones(2, device=device)
    assert p.tolist() == [1.0, 1.0] and p.requires_grad and isinstance(p, lc.Parameter)


def test_parameter_is_a_leaf_requiring_grad(device):
    p = lc.Parameter(lc.ones(2, device=device))
    assert p.requires_grad and p.is_leaf and isinstance(p, lc.Tensor)
    assert repr(p).startswith("Parameter containing:\ntensor([1., 1.]")
    frozen = lc.Parameter(lc.ones(2, device=device), requires_grad=False)
    assert not frozen.requires_grad
    with pytest.raises(RuntimeError, match="only floating-point data can require grad"):
        lc.Parameter([1, 2])


def test_tensors_refuse_to_be_pickled(device):
    import pickle

    with pytest.raises(TypeError, match="save them with lucid_nn.save"):
        pickle.dumps(lc.zeros(1, device=device))


def test_reflected_operators_with_scalars(device):
    t = lc.asarray([1.0, 2.0], device=device)
    assert (2.0 - t).tolist() == [1.0, 0.0]
    assert (2.0 / t).tolist() == [2.0, 1.0]
    assert (2.0**t).tolist() == [2.0, 4.0]
    assert (3 * t).tolist() == [3.0, 6.0]
    assert (1 + t).tolist() == [2.0, 3.0]


def test_numpy_arrays_on_the_left_defer_to_the_tensor():
    t = lc.asarray([1.0, 2.0], device="numpy")
    r = np.array([1.0, 1.0], dtype=np.float32) + t
    assert isinstance(r, lc.Tensor) and r.tolist() == [2.0, 3.0]


def test_eval_is_a_no_op_on_eager_backends(device):
    t = lc.ones(2, device=device) * 2.0
    assert t.eval() is t
    lc.eval(t, t)
    with pytest.raises(TypeError, match="eval: expected Tensors"):
        lc.eval([1.0])


@pytest.mark.parametrize("dtype", [lc.float32, lc.float64, lc.int64, lc.uint8, lc.bool])
def test_tobytes_frombuffer_round_trip(device, dtype):
    if dtype not in lc.get_backend(device.backend.name).dtypes:
        pytest.skip(f"{device} has no {dtype.name}")
    t = lc.asarray([[0, 1, 2], [3, 4, 5]], device=device).astype(dtype)
    raw = t.tobytes()
    assert len(raw) == 6 * dtype.itemsize
    assert raw == np.asarray(t.tolist(), dtype=dtype.name).astype(f"<{np.dtype(dtype.name).str[1:]}").tobytes()
    back = lc.frombuffer(raw, dtype=dtype, shape=(2, 3), device=device)
    assert back.dtype is dtype and back.tolist() == t.tolist()


def test_frombuffer_checks_the_byte_count(device):
    with pytest.raises(ValueError, match=r"shape \(2, 2\) of float32 needs 16 bytes, but the buffer holds 12"):
        lc.frombuffer(b"\0" * 12, dtype=lc.float32, shape=(2, 2), device=device)
    with pytest.raises(ValueError, match="not a multiple of float64's item size 8"):
        lc.frombuffer(b"\0" * 12, dtype=lc.float64, device=device)


def test_deepcopy_gives_an_independent_leaf_of_the_same_type(device):
    import copy

    p = lc.Parameter(lc.ones(2, device=device))
    p.grad = lc.ones(2, device=device)
    q = copy.deepcopy(p)
    assert type(q) is lc.Parameter and q.requires_grad and q.device is device
    with lc.no_grad():
        q += 1.0
    assert p.tolist() == [1.0, 1.0] and q.tolist() == [2.0, 2.0] and q.grad.tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="only leaf tensors can be deep-copied"):
        copy.deepcopy(p * 2.0)
