"""``lucid.func`` and ``lucid.autograd.functional`` against ``torch.func`` (fixtures in ``fixtures/func.npz``).

Every case of ``fixtures/func_cases.py`` runs through ``lucid`` in float64 and must give PyTorch's leaves to 1e-10
(numpy) or 1e-6 (MLX, whose transcendental kernels are less exact): each transform, composed and nested
transforms, ``functional_call`` with tied weights and buffers, ``stack_module_state`` and ``autograd.functional``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import lucid
from tests.pytorch_face.fixtures.func_cases import CASES, leaves

HERE = Path(__file__).resolve().parent
with np.load(HERE / "fixtures" / "func.npz") as _f:
    EXPECTED = {k: _f[k] for k in _f.files}


def _np(t: Any) -> np.ndarray:
    return np.asarray(t.detach().numpy())


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch_func(name: str, device: Any) -> None:
    fn, inputs = CASES[name]
    ts = [lucid.tensor(a, dtype=lucid.float64, device=device) for a in inputs]
    got = leaves(fn(lucid, *ts), _np)
    want = [EXPECTED[f"{name}/{i}"] for i in range(sum(k.startswith(name + "/") for k in EXPECTED))]
    assert len(got) == len(want), f"{name}: {len(got)} leaves, PyTorch gives {len(want)}"
    tol = 1e-10 if device.backend.name == "numpy" else 1e-6
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, f"{name} leaf {i}: shape {g.shape}, PyTorch {w.shape}"
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"{name} leaf {i}")


def test_grad_refuses_a_non_scalar_output() -> None:
    with pytest.raises(RuntimeError, match="scalar Tensor"):
        lucid.func.grad(lambda x: x * 2)(lucid.ones(3, dtype=lucid.float64))


def test_grad_refuses_argnums_out_of_range() -> None:
    with pytest.raises(RuntimeError, match="argnums"):
        lucid.func.grad(lambda x: x.sum(), argnums=1)(lucid.ones(3, dtype=lucid.float64))


def test_jvp_wants_primals_and_tangents_of_one_structure() -> None:
    x = lucid.ones(3, dtype=lucid.float64)
    with pytest.raises(RuntimeError, match="same python structure"):
        lucid.func.jvp(lambda x: x, (x,), (x, x))


def test_functional_call_strict_names_what_is_missing() -> None:
    m = lucid.nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match=r"missing key\(s\): \['bias'\]"):
        lucid.func.functional_call(m, {"weight": lucid.ones(2, 2)}, (lucid.ones(2),), strict=True)


def test_functional_call_puts_the_module_tensors_back() -> None:
    m = lucid.nn.Linear(2, 2)
    w = m.weight
    with pytest.raises(ValueError):
        lucid.func.functional_call(m, {"weight": lucid.ones(2, 2)}, (lucid.ones(3),))
    assert m.weight is w


def test_top_level_results_carry_no_graph() -> None:
    x = lucid.ones(3, dtype=lucid.float64)
    g = lucid.func.grad(lambda x: (x.sin() * x).sum())(x)
    h = lucid.func.hessian(lambda x: (x.sin() * x).sum())(x)
    assert not g.requires_grad and not h.requires_grad


def test_the_face_exposes_pytorchs_paths() -> None:
    import lucid.autograd.forward_ad as fwAD
    from lucid.autograd.functional import jacobian
    from lucid.nn.utils.stateless import functional_call

    assert functional_call is lucid.func.functional_call
    assert callable(jacobian) and callable(fwAD.make_dual)


JACOBIAN_CASES = [n for n in CASES if "jac" in n or "hessian" in n]


@pytest.mark.parametrize("name", JACOBIAN_CASES)
def test_jacobians_by_the_basis_loop_match_torch_func(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from lucid_core.func import _transforms

    monkeypatch.setattr(_transforms, "_use_vmap", [False])  # the loop jacrev/jacfwd fall back to without vmap
    fn, inputs = CASES[name]
    got = leaves(fn(lucid, *[lucid.tensor(a, dtype=lucid.float64) for a in inputs]), _np)
    for i, g in enumerate(got):
        np.testing.assert_allclose(g, EXPECTED[f"{name}/{i}"], rtol=1e-10, atol=1e-10, err_msg=f"{name} leaf {i}")
