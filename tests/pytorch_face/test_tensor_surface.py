"""The rest of the ``Tensor`` surface (lucid/_tensor_surface.py): values against PyTorch's, and behaviour.

Values: every case of ``fixtures/tensor_surface_cases.py`` against ``fixtures/tensor_surface.npz`` (written once
by ``generate_tensor_surface.py`` with PyTorch 2.13). Behaviour: in-place forms write into the tensor and its
base, method forms equal the functions, queries, gradients, and errors.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import lucid
from lucid_core import gradcheck
from tests.pytorch_face.fixtures import tensor_surface_cases as cases

with np.load(Path(__file__).parent / "fixtures" / "tensor_surface.npz") as _f:
    TORCH = {k: _f[k] for k in _f.files}


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_matches_pytorch(name):
    got = cases.run(name, lucid)
    want = [TORCH[f"{name}:{i}"] for i in range(sum(1 for k in TORCH if k.startswith(f"{name}:")))]
    assert len(got) == len(want), f"{name}: {len(got)} results, PyTorch gave {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if name == "new_constructors" and i in (0, 2):  # shapes of uninitialised tensors
            assert g.tolist() == w.tolist(), f"{name}[{i}]"
            continue
        assert g.shape == w.shape, f"{name}[{i}]: shape {g.shape} != PyTorch's {w.shape}"
        assert g.dtype == w.dtype, f"{name}[{i}]: dtype {g.dtype} != PyTorch's {w.dtype}"
        tol = 1e-5 if w.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"{name}[{i}]")


# -- method forms ------------------------------------------------------------------------------------------------
def test_methods_equal_the_free_functions():
    x = lucid.tensor(cases.M)
    assert lucid.equal(x.hardshrink(0.3), lucid.hardshrink(x, 0.3))
    assert lucid.equal(x.narrow_copy(0, 1, 2), lucid.narrow_copy(x, 0, 1, 2))
    a, b = lucid.tensor([6, 10]), lucid.tensor([4, 15])
    assert lucid.equal(a.gcd(b), lucid.gcd(a, b)) and lucid.equal(a.lcm(b), lucid.lcm(a, b))


def test_inplace_method_writes_through_a_view_into_its_base():
    base = lucid.tensor([[12, 18], [7, 9]])
    row = base[0]
    assert row.gcd_(lucid.tensor([8, 12])) is row
    assert base.tolist() == [[4, 6], [7, 9]]


def test_inplace_method_on_leaf_requiring_grad_raises():
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        x.nextafter_(lucid.tensor(3.0))


def test_inplace_gcd_on_float_raises_like_pytorch():
    with pytest.raises(TypeError, match="integer"):
        lucid.tensor([1.0]).gcd_(lucid.tensor([2.0]))


def test_narrow_copy_is_not_a_view():
    x = lucid.tensor(cases.M)
    y = x.narrow_copy(1, 0, 2)
    y.zero_()
    assert float(x.abs().sum()) > 0


def test_select_scatter_method_gradient_matches_finite_differences():
    src = lucid.tensor(np.arange(4.0), requires_grad=True)
    x = lucid.tensor(cases.M, requires_grad=True)
    assert gradcheck(lambda a, s: a.select_scatter(s, 0, 1), (x, src))


def test_mode_values_carry_gradient_to_their_positions():
    x = lucid.tensor([[1.0, 2.0, 2.0], [3.0, 3.0, 1.0]], requires_grad=True)
    x.mode(1).values.sum().backward()
    assert x.grad.tolist() == [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]


# -- queries and layout ------------------------------------------------------------------------------------------
def test_queries_answer_as_for_a_dense_cpu_tensor():
    x = lucid.ones(2, 3)
    assert x.is_nested is False and x.is_pinned() is False and x.is_distributed() is False
    assert lucid.is_distributed(x) is False
    assert x.name is None
    assert x.to_dense() is x and x.to_dense(lucid.float64).dtype is lucid.float64
    assert x.const_data_ptr() == x.data_ptr()


def test_volatile_is_false_with_pytorchs_warning():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert lucid.ones(1).volatile is False
    assert any("volatile was removed" in str(m.message) for m in w)


def test_output_nr_names_the_output_of_a_multi_output_op():
    x = lucid.tensor([3.0, 1.0, 2.0], requires_grad=True)
    values, _indices = x.sort()
    assert x.output_nr == 0 and values.output_nr == 0
    parts = lucid.tensor(cases.M, requires_grad=True).split(1)
    assert [p.output_nr for p in parts] == [0, 1, 2]  # as PyTorch


def test_pin_memory_raises_as_pytorch_without_an_accelerator():
    with pytest.raises(RuntimeError, match="accelerator"):
        lucid.ones(2).pin_memory()


def test_new_keeps_dtype_and_device():
    x = lucid.zeros(2, dtype=lucid.int32)
    y = x.new([1.7, 2.2])
    assert y.dtype is lucid.int32 and y.device == x.device


# -- errors ------------------------------------------------------------------------------------------------------
def test_bad_inputs_raise_clear_errors():
    with pytest.raises(RuntimeError, match="size"):
        lucid.nonzero_static(lucid.ones(3), size=-1)
    with pytest.raises(RuntimeError, match="range"):
        lucid.unravel_index(lucid.tensor([12]), (3, 4))
    with pytest.raises(TypeError, match="integer"):
        lucid.unravel_index(lucid.tensor([1.0]), (3, 4))
    with pytest.raises(RuntimeError, match="floating"):
        lucid.histogram(lucid.tensor([1, 2]), bins=2)
    with pytest.raises(RuntimeError, match="mode=0"):
        lucid.hash_tensor(lucid.ones(2), mode=1)
    with pytest.raises(IndexError, match="non-empty"):
        lucid.mode(lucid.ones(2, 0), 1)
    with pytest.raises(IndexError, match="out of range"):
        lucid.unique(lucid.ones(2, 2), dim=2)


# -- random methods and in-place helpers ---------------------------------------------------------------------
def test_bernoulli_and_multinomial_methods_draw_valid_samples():
    lucid.manual_seed(0)
    p = lucid.full((1000,), 0.3)
    draws = p.bernoulli()
    assert set(draws.tolist()) <= {0.0, 1.0} and 0.2 < float(draws.mean()) < 0.4
    picks = lucid.tensor([0.0, 1.0, 0.0, 3.0]).multinomial(2)
    assert sorted(picks.tolist()) == [1, 3]


def test_fill_diagonal_writes_through_a_view_and_refuses_ragged_shapes():
    base = lucid.zeros(2, 3, 3)
    base[1].fill_diagonal_(5.0)
    assert base[1].diagonal().tolist() == [5.0, 5.0, 5.0] and float(base[0].abs().sum()) == 0.0
    with pytest.raises(RuntimeError, match="equal length"):
        lucid.zeros(2, 3, 2).fill_diagonal_(1.0)
    with pytest.raises(RuntimeError, match="larger than 1"):
        lucid.zeros(3).fill_diagonal_(1.0)


def test_module_load_without_assign_copies_into_self():
    target = lucid.zeros(2)
    out = target.module_load(lucid.ones(2))
    assert target.tolist() == [1.0, 1.0] and not out.requires_grad


# -- in-place layout ops ---------------------------------------------------------------------------------------
def test_inplace_layout_op_returns_self_and_counts_a_write():
    x = lucid.tensor(cases.M)
    before = x._version
    assert x.t_() is x and x.shape == (4, 3) and x._version == before + 1


def test_resize_grows_with_the_old_elements_first():
    x = lucid.tensor([1.0, 2.0, 3.0])
    x.resize_(2, 2)
    assert x.shape == (2, 2) and x.reshape(-1)[:3].tolist() == [1.0, 2.0, 3.0]


def test_inplace_layout_ops_refuse_as_pytorch_on_leaf_requiring_grad():
    x = lucid.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.t_()
    with pytest.raises(RuntimeError, match="require grad"):
        x.resize_(6)


def test_inplace_layout_op_on_a_tensor_with_views_raises_rather_than_desync():
    base = lucid.ones(2, 3)
    row = base[0]
    with pytest.raises(RuntimeError, match="shares its storage with views"):
        base.squeeze_()
    with pytest.raises(RuntimeError, match="shares its storage with views"):
        row.unsqueeze_(0)
    assert base.shape == (2, 3) and row.shape == (3,)


def test_deprecated_resize_warns_shares_data_and_refuses_another_numel():
    x = lucid.arange(6.0)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        r = x.resize(2, 3)
    r[0, 0] = 9.0
    assert float(x[0]) == 9.0
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="preserving the number of elements"):
        x.resize(2, 2)


def test_storage_type_names_the_dtypes_storage_class():
    assert lucid.ones(2).storage_type() is lucid.FloatStorage
    assert lucid.ones(2, dtype=lucid.int64).storage_type() is lucid.LongStorage


def test_orgqr_gradient_matches_finite_differences():
    packed, tau = lucid.geqrf(lucid.tensor(np.random.default_rng(7).normal(size=(4, 3))))
    packed.requires_grad_(True)
    tau.requires_grad_(True)
    assert gradcheck(lucid.orgqr, (packed, tau))


def test_ormqr_refuses_mismatched_sides():
    packed, tau = lucid.geqrf(lucid.ones(4, 3, dtype=lucid.float64))
    with pytest.raises(RuntimeError, match="must equal other.shape"):
        lucid.ormqr(packed, tau, lucid.ones(3, 2, dtype=lucid.float64))
