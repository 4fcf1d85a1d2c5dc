"""PyTorch's free in-place functions (``lucid.abs_(x)``, ``lucid.sigmoid_(x)``...), generated from the op tables.

Each writes its result into its input and returns the input, as ``x.name_()`` does; its values are the
out-of-place function's (which the OpInfo table checks against PyTorch), so a write through a view lands
in the base and autograd refuses a leaf that requires grad, as PyTorch does.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import lucid
from lucid_core._op_table import TORCH_FREE_INPLACE, face_functions

HERE = Path(__file__).parent

#: the generated names and the extra arguments each needs (the input is drawn in (0.1, 0.9); acosh's is shifted)
EXTRA = {
    "clamp_": {"min": 0.3, "max": 0.6}, "clip_": {"min": 0.3, "max": 0.6}, "clamp_min_": (0.4,),
    "clamp_max_": (0.4,), "ldexp_": ("int",), "addmv_": ("mat", "vec"), "index_put_": ("index", "values"),
    "xlogy_": ("other",),
}  # fmt: skip
SHIFTED = {"acosh_", "arccosh_"}
GENERATED = sorted(n for n in face_functions() if n.endswith("_"))


def test_pytorchs_free_inplace_names_are_the_torch_surface_s():
    surface = json.loads((HERE / "fixtures" / "torch_api_surface.json").read_text())["groups"]["torch"]
    names = {entry["name"] for entry in surface["names"]}
    assert TORCH_FREE_INPLACE <= names
    assert {n for n in names if n.endswith("_") and not n.startswith("_")} == TORCH_FREE_INPLACE


def test_every_declared_inplace_op_that_pytorch_has_free_is_generated():
    assert len(GENERATED) >= 56
    for name in ("abs_", "sigmoid_", "relu_", "tanh_", "clamp_", "exp2_", "logit_", "sinc_", "erfc_", "i0_"):
        assert name in GENERATED
    for name in GENERATED:
        assert name in TORCH_FREE_INPLACE and callable(getattr(lucid, name))


def _args(name: str, x: lucid.Tensor) -> tuple[tuple, dict]:
    spec = EXTRA.get(name, ())
    if isinstance(spec, dict):
        return (), spec
    made = {
        "int": lucid.tensor([1, 2, 0, 3]),
        "mat": lucid.full((4, 3), 0.25),
        "vec": lucid.tensor([1.0, 2.0, 3.0]),
        "index": (lucid.tensor([0, 2]),),
        "values": lucid.tensor([7.0, 8.0]),
        "other": lucid.tensor([0.5, 1.5, 2.5, 3.5]),
    }
    return tuple(made.get(a, a) for a in spec), {}


@pytest.mark.parametrize("name", GENERATED)
def test_a_free_inplace_function_writes_its_input_as_the_method_does(name):
    base = lucid.tensor([0.15, 0.35, 0.55, 0.85])
    if name in SHIFTED:
        base = base + 1.0
    args, kwargs = _args(name, base)
    want = getattr(base.clone(), name)(*args, **kwargs)
    x = base.clone()
    out = getattr(lucid, name)(x, *args, **kwargs)
    assert out is x
    np.testing.assert_array_equal(x.numpy(), want.numpy())
    if name not in ("index_put_",):
        # the out-of-place function gives the same values (PyTorch's, per the OpInfo table)
        plain = getattr(lucid, name[:-1], None)
        if plain is not None:
            np.testing.assert_allclose(x.numpy(), plain(base, *args, **kwargs).numpy(), rtol=1e-6)


def test_a_write_through_a_view_lands_in_the_base_and_bumps_its_version():
    x = lucid.tensor([[-1.0, 2.0], [-3.0, 4.0]])
    before = x._version
    lucid.abs_(x[:, 0])
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert x._version > before
    lucid.sigmoid_(x[1])
    np.testing.assert_allclose(x.numpy()[1], 1 / (1 + np.exp(-np.array([3.0, 4.0]))), rtol=1e-6)


def test_a_leaf_that_requires_grad_is_refused_and_a_non_leaf_gets_the_gradient():
    w = lucid.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf tensor that requires grad cannot be modified in place"):
        lucid.exp_(w)
    y = w * 2.0
    lucid.tanh_(y)
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2.0 * (1 - np.tanh(2.0) ** 2) * np.ones(3), rtol=1e-6)


def test_a_non_tensor_input_is_refused_naming_the_function():
    with pytest.raises(TypeError, match=r"abs_\(\): argument 'input' must be Tensor, not list"):
        lucid.abs_([1.0, -2.0])
