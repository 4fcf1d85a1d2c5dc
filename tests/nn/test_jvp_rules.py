"""Explicit forward-mode rules of the fused layer-norm and attention nodes (issue 34's JVP cost).

Each rule is checked three ways: against the rule derived from the node's backward (``jvp_from_vjp``, the one
these nodes used before), against central finite differences in float64, and nested (a second derivative via
``jvp`` of ``jvp``, and reverse mode through a tangent), since the rules recompute their statistics in Lucid ops
so that both must still hold.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lucid_core as lc
from lucid_core import func
from lucid_core._forward_ad import jvp_from_vjp
from lucid_nn import functional as F
from lucid_nn.functional import _attention, _misc


def _f64(device: Any) -> Any:
    if "mlx" in str(device):
        pytest.skip("float64 finite differences: checked on NumPy (MLX runs the same Lucid-op rules)")
    return lc.float64


def _derived(monkeypatch: pytest.MonkeyPatch) -> None:
    for cls in (_misc._LayerNorm, _attention._Attention, _attention._PackedAttention):
        monkeypatch.setattr(cls, "jvp", staticmethod(jvp_from_vjp))


def _layer_norm(with_affine: bool) -> Any:
    def f(x: Any, w: Any, b: Any) -> Any:
        return F.layer_norm(x, (x.shape[-1],), w if with_affine else None, b if with_affine else None)

    return f


def _sdpa(causal: bool) -> Any:
    def f(q: Any, k: Any, v: Any) -> Any:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    return f


def _mha(q: Any, w_in: Any, w_out: Any) -> Any:
    # self-attention from one packed projection: the _PackedAttention node (L, N, E) = (5, 2, 8), 2 heads
    out, _ = F.multi_head_attention_forward(
        q, q, q, 8, 2, w_in, None, None, None, False, 0.0, w_out, None, training=False, need_weights=False
    )
    return out


CASES = {
    "layer_norm": (_layer_norm(True), [(3, 4, 6), (6,), (6,)]),
    "layer_norm_no_affine": (_layer_norm(False), [(3, 4, 6), (6,), (6,)]),
    "attention": (_sdpa(False), [(2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 3)]),
    "attention_causal": (_sdpa(True), [(2, 2, 5, 4), (2, 2, 5, 4), (2, 2, 5, 3)]),
    "packed_attention": (_mha, [(5, 2, 8), (24, 8), (8, 8)]),
}


def _inputs(shapes: list[tuple[int, ...]], dtype: Any, device: Any) -> list[Any]:
    return [lc.randn(*s, dtype=dtype, device=device) for s in shapes]


def _which(n: int) -> list[tuple[bool, ...]]:
    """Every non-empty subset of the inputs to carry tangents."""
    return [tuple(bool(m >> i & 1) for i in range(n)) for m in range(1, 2**n)]


def _jvp(fn: Any, primals: list[Any], tangents: list[Any], mask: tuple[bool, ...]) -> Any:
    fixed = [p for p, m in zip(primals, mask) if not m]

    def g(*moving: Any) -> Any:
        it, rest = iter(moving), iter(fixed)
        return fn(*(next(it) if m else next(rest) for m in mask))

    moving = [p for p, m in zip(primals, mask) if m]
    return func.jvp(g, tuple(moving), tuple(t for t, m in zip(tangents, mask) if m))[1]


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_equals_the_rule_derived_from_backward(name: str, device: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    fn, shapes = CASES[name]
    dtype = lc.float32 if "mlx" in str(device) else lc.float64
    primals, tangents = _inputs(shapes, dtype, device), _inputs(shapes, dtype, device)
    explicit = [_jvp(fn, primals, tangents, m).numpy() for m in _which(len(shapes))]
    _derived(monkeypatch)
    derived = [_jvp(fn, primals, tangents, m).detach().numpy() for m in _which(len(shapes))]
    tol = 1e-4 if dtype is lc.float32 else 1e-10
    for mask, a, b in zip(_which(len(shapes)), explicit, derived):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=f"{name}, tangents on {mask}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_matches_finite_differences(name: str, device: Any) -> None:
    fn, shapes = CASES[name]
    dtype = _f64(device)
    primals, tangents = _inputs(shapes, dtype, device), _inputs(shapes, dtype, device)
    got = _jvp(fn, primals, tangents, (True,) * len(shapes)).numpy()
    h = 1e-6
    plus = fn(*(p + h * t for p, t in zip(primals, tangents))).numpy()
    minus = fn(*(p - h * t for p, t in zip(primals, tangents))).numpy()
    np.testing.assert_allclose(got, (plus - minus) / (2 * h), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(CASES))
def test_nested_jvp_and_reverse_through_a_tangent_match_the_derived_rule(
    name: str, device: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    fn, shapes = CASES[name]
    dtype = _f64(device)
    primals, t1, t2 = (_inputs(shapes, dtype, device) for _ in range(3))

    def second(fn_: Any) -> np.ndarray:
        # d/ds of (J(p + s t2) t1) at s = 0: the second derivative along t1 and t2
        def inner(*p: Any) -> Any:
            return func.jvp(fn_, p, tuple(t1))[1]

        return func.jvp(inner, tuple(primals), tuple(t2))[1].detach().numpy()

    def reverse(fn_: Any) -> list[np.ndarray]:
        ps = [p.detach().requires_grad_() for p in primals]
        tangent = func.jvp(fn_, tuple(ps), tuple(t1))[1]
        grads = lc.grad((tangent * tangent).sum(), ps, allow_unused=True)
        return [np.zeros(p.shape) if g is None else g.detach().numpy() for g, p in zip(grads, ps)]

    explicit_second, explicit_reverse = second(fn), reverse(fn)
    _derived(monkeypatch)
    np.testing.assert_allclose(explicit_second, second(fn), rtol=1e-9, atol=1e-10)
    for a, b in zip(explicit_reverse, reverse(fn)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


def test_the_w5_block_takes_no_derived_rule(device: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import lucid_nn as nn

    calls: list[str] = []

    def counting(ctx: Any, *tangents: Any) -> Any:
        calls.append(type(ctx).__name__)
        return jvp_from_vjp(ctx, *tangents)

    for cls in _all_functions(lc.Function):
        if cls.__dict__.get("jvp") is not None and cls.__dict__["jvp"].__func__ is jvp_from_vjp:
            monkeypatch.setattr(cls, "jvp", staticmethod(counting))
    block = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True).to(device)
    x = lc.randn(2, 5, 16, device=device)
    func.jvp(block, (x,), (lc.randn(2, 5, 16, device=device),))
    assert calls == []


def _all_functions(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out.append(sub)
        out.extend(_all_functions(sub))
    return out
