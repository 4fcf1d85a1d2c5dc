"""The same computation on numpy and mlx gives the same values and gradients.

Hypothesis draws small programs (a few ops on one or two leaves, then a reduction) and input
values; both backends run them forward and backward. float64 must agree to round-off; float32
to a relative 1e-5 scaled by the op's conditioning (how much it magnifies input round-off).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

pytest.importorskip("mlx.core")

import lucid_core as lc

if {"numpy", "mlx"} - {b.name for b in lc.backends() if b.status == "ok"}:
    pytest.skip("needs both the numpy and the mlx backend", allow_module_level=True)

fixture_ok = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# name -> (function, input range, conditioning factor)
UNARY: dict[str, tuple[Callable[[Any], Any], tuple[float, float], float]] = {
    "exp": (lc.exp, (-3, 3), 4),
    "log": (lambda x: lc.log(lc.abs(x) + 0.5), (-3, 3), 4),
    "sin": (lc.sin, (-3, 3), 4),
    "cos": (lc.cos, (-3, 3), 4),
    "tanh": (lc.tanh, (-3, 3), 2),
    "sigmoid": (lc.sigmoid, (-4, 4), 2),
    "erf": (lc.erf, (-2, 2), 2),
    "sqrt": (lambda x: lc.sqrt(x * x + 0.25), (-3, 3), 2),
    "square": (lc.square, (-3, 3), 2),
    "softplus": (lambda x: lc.logaddexp(x, lc.zeros_like(x)), (-4, 4), 2),
    "relu": (lc.relu, (-3, 3), 1),
    "abs": (lc.abs, (-3, 3), 1),
    "atan": (lc.atan, (-3, 3), 2),
    "expm1": (lc.expm1, (-2, 2), 4),
    "log1p": (lambda x: lc.log1p(lc.abs(x)), (-3, 3), 4),
    "clip": (lambda x: lc.clip(x, -1.0, 1.0), (-3, 3), 1),
    "pow3": (lambda x: x**3, (-2, 2), 4),
    "scale": (lambda x: x * 1.5 - 0.25, (-3, 3), 2),
}

BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (lc.abs(b) + 1.0),
    "maximum": lc.maximum,
    "minimum": lc.minimum,
    "atan2": lambda a, b: lc.atan2(a, lc.abs(b) + 0.5),
    "hypot": lc.hypot,
    "where": lambda a, b: lc.where(a > b, a, b * 2.0),
}

REDUCE: dict[str, Callable[[Any], Any]] = {
    "sum": lambda y: y.sum(),
    "mean_axis": lambda y: (y.mean(axis=-1) ** 2).sum(),
    "logsumexp": lambda y: lc.logsumexp(y, axis=-1).sum(),
    "max": lambda y: lc.max(y, axis=0).sum(),
    "var": lambda y: y.var(axis=-1, correction=1).sum() if y.shape[-1] > 1 else y.sum(),
    "softmax_ce": lambda y: (lc.logsumexp(y, axis=-1) - y[..., 0]).sum(),
    "prod": lambda y: lc.prod(lc.tanh(y) * 0.5 + 1.0, axis=-1).sum(),
    "cumsum": lambda y: (lc.cumulative_sum(y, axis=-1) ** 2).sum(),
}

TOL = {"float32": 1e-5, "float64": 1e-12}


def _run(program: Callable[..., Any], values: list[np.ndarray], device: str, dtype: lc.DType) -> tuple[Any, list[Any]]:
    leaves = [lc.asarray(v, device=device).astype(dtype).requires_grad_() for v in values]
    out = program(*leaves)
    out.backward()
    lc.eval(out, *[t.grad for t in leaves])
    return np.asarray(out.detach().astype(lc.float64).numpy()), [
        np.asarray(t.grad.astype(lc.float64).numpy()) for t in leaves
    ]


def _agree(a: np.ndarray, b: np.ndarray, rtol: float, what: str) -> None:
    scale = max(1.0, float(np.max(np.abs(b)))) if b.size else 1.0
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale, err_msg=what)


def _check(program: Callable[..., Any], values: list[np.ndarray], cond: float, what: str) -> None:
    for name in ("float32", "float64"):
        dtype = getattr(lc, name)
        v_np, g_np = _run(program, values, "numpy", dtype)
        v_mx, g_mx = _run(program, values, "mlx:cpu", dtype)
        rtol = TOL[name] * cond
        _agree(v_mx, v_np, rtol, f"{what} value ({name})")
        for i, (gm, gn) in enumerate(zip(g_mx, g_np)):
            _agree(gm, gn, rtol, f"{what} gradient of input {i} ({name})")


def _values(lo: float, hi: float, shape: Any) -> Any:
    elems = st.floats(lo, hi, allow_nan=False, allow_infinity=False, width=32)
    return hnp.arrays(np.float64, shape, elements=elems)


SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


@fixture_ok
@given(data=st.data())
def test_unary_chains_agree(data):
    names = data.draw(st.lists(st.sampled_from(sorted(UNARY)), min_size=1, max_size=3), label="ops")
    reduce = data.draw(st.sampled_from(sorted(REDUCE)), label="reduce")
    shape = data.draw(SHAPES, label="shape")
    lo = max(UNARY[n][1][0] for n in names)
    hi = min(UNARY[n][1][1] for n in names)
    x = data.draw(_values(lo, hi, shape), label="x")
    cond = 1.0
    for n in names:
        cond *= UNARY[n][2]

    def program(t: Any) -> Any:
        for n in names:
            t = UNARY[n][0](t)
            t = lc.clip(t, -3.0, 3.0)  # keep the next op's input in its range
        return REDUCE[reduce](t)

    # clip's gradient jumps at +-3: a value within rounding of it (exp(log1p(2)) is 3 +- 1 ulp, depending on the
    # library) takes either side on either backend, so such draws say nothing about agreement
    t = lc.asarray(x, device="numpy")
    for n in names:
        t = UNARY[n][0](t)
        assume(not np.any(np.isclose(np.abs(np.asarray(t)), 3.0, rtol=0, atol=1e-9)))
        t = lc.clip(t, -3.0, 3.0)
    _check(program, [x], cond * 4, f"{names} then {reduce}")


@fixture_ok
@given(data=st.data())
def test_binary_ops_with_broadcasting_agree(data):
    name = data.draw(st.sampled_from(sorted(BINARY)), label="op")
    reduce = data.draw(st.sampled_from(sorted(REDUCE)), label="reduce")
    pairs = hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=3, max_side=4)
    sa, sb = data.draw(pairs.map(lambda b: b.input_shapes))
    a = data.draw(_values(-2, 2, sa), label="a")
    b = data.draw(_values(-2, 2, sb), label="b")
    # ties make max/min/where gradients jump: keep the operands apart
    b = np.where(np.abs(np.broadcast_to(a, np.broadcast_shapes(sa, sb)).max() - b) < 1e-3, b + 0.01, b)
    if name in ("maximum", "minimum", "where") and np.any(np.isclose(*np.broadcast_arrays(a, b), atol=1e-3)):
        return
    _check(lambda x, y: REDUCE[reduce](BINARY[name](x, y)), [a, b], 16, f"{name} then {reduce}")


@fixture_ok
@given(data=st.data())
def test_matmul_and_indexing_agree(data):
    n, k, m = (data.draw(st.integers(1, 4)) for _ in range(3))
    a = data.draw(_values(-2, 2, (n, k)), label="a")
    b = data.draw(_values(-2, 2, (k, m)), label="b")
    idx = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=5), label="idx")

    def program(x: Any, y: Any) -> Any:
        h = lc.tanh(x @ y)
        rows = h[lc.asarray(idx, device=h.device)]
        return (rows * rows).sum() + lc.einsum("ij,jk->", x, y)

    _check(program, [a, b], 8 * k, "matmul, gather, einsum")


def test_random_streams_differ_per_backend_but_each_repeats():
    lc.manual_seed(7)
    a1, b1 = lc.randn(4, device="numpy").tolist(), lc.randn(4, device="mlx:cpu").tolist()
    lc.manual_seed(7)
    a2, b2 = lc.randn(4, device="numpy").tolist(), lc.randn(4, device="mlx:cpu").tolist()
    assert a1 == a2 and b1 == b2
    assert a1 != b1


COMPLEX_PROGRAMS: dict[str, Callable[[Any, Any], Any]] = {
    "exp_mul": lambda z, w: lc.exp(z * 0.5) * w,
    "div_tanh": lambda z, w: lc.tanh(z) / (w + 3.0),
    "matmul_sin": lambda z, w: lc.sin(z @ w.mT),
    "log_sqrt_pow": lambda z, w: lc.log(z + 3.0) + lc.sqrt(w + 3.0) + z**2,
    "abs_conj_prod": lambda z, w: lc.abs(z) * lc.conj(w) + lc.prod(z, axis=-1, keepdims=True),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_PROGRAMS))
def test_complex64_gradients_agree(name):
    from lucid_core.ops.complex import imag, real

    rng = np.random.default_rng(5)
    z0, w0 = ((rng.uniform(-1, 1, (2, 3)) + 1j * rng.uniform(-1, 1, (2, 3))).astype(np.complex64) for _ in range(2))
    out = []
    for dev in ("numpy", "mlx:cpu"):
        z = lc.asarray(z0, device=dev).requires_grad_()
        w = lc.asarray(w0, device=dev).requires_grad_()
        y = COMPLEX_PROGRAMS[name](z, w)
        loss = lc.sum(real(y) * 0.7 - imag(y) * 1.3)
        out.append([np.asarray(t.detach().numpy()) for t in (y, *lc.grad(loss, [z, w]))])
    for got, want in zip(out[1], out[0]):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=name)
