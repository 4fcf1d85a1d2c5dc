"""Forward-mode AD: every op's JVP rule against finite differences and against its VJP, transposed.

Driven by the OpInfo table (``tests/pytorch_face/opinfo.py``): each row that checks gradients checks its JVP too,
on the row's first sample (every float sample under ``-m opinfo_full``). Two properties per sample, in float64:
``J v`` equals the central difference ``(f(x + h v) - f(x - h v)) / 2h``, and ``<u, J v> == <J^T u, v>`` with the
VJP of reverse mode. Then the mechanism itself: levels, nesting, in-place writes, the missing-rule error and
the coverage of every differentiable op.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

import lucid
import lucid_core as lc
from lucid_core import Function, func
from lucid_core import _forward_ad as fwd
from lucid_core import forward_ad as fwAD
from tests.pytorch_face.opinfo import ROWS, OpInfo, Sample, convert, row_id

GRAD_ROWS = [r for r in ROWS if r.grad is not False]
GRAD_IDS = [row_id(r) for r in GRAD_ROWS]


def _tol(device: Any) -> dict[str, float]:
    return {"rtol": 1e-6, "atol": 1e-8} if device.backend.name == "numpy" else {"rtol": 1e-4, "atol": 1e-5}


def _float_positions(sample: Sample) -> list[int]:
    return [i for i, a in enumerate(sample.args) if isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.size]


def _fn(row: OpInfo, sample: Sample, where: list[int], device: Any) -> Any:
    tensor = lambda a: lucid.tensor(a, device=device)  # noqa: E731
    kwargs = {k: convert(v, tensor) for k, v in sample.kwargs.items()}

    def fn(*ts: Any) -> tuple[Any, ...]:
        args = [convert(a, tensor) for a in sample.args]
        for pos, t in zip(where, ts):
            args[pos] = t
        if row.call is not None:
            out = row.call(lucid, *args, **kwargs)
        elif row.function:
            out = getattr(lucid, row.name)(*args, **kwargs)
        else:
            out = getattr(args[0], row.name)(*args[1:], **kwargs)
        outs = tuple(out) if isinstance(out, (list, tuple)) else (out,)
        if type(row.grad) is int:
            outs = (outs[row.grad],)
        return tuple(o for o in outs if isinstance(o, lc.Tensor) and o.dtype.kind == "f")

    return fn


def _np(t: Any) -> np.ndarray:
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def _check_jvp(row: OpInfo, sample: Sample, device: Any) -> None:
    where = _float_positions(sample)
    fn = _fn(row, sample, where, device)
    rng = np.random.default_rng(7)
    xs = tuple(lucid.tensor(sample.args[p], dtype=lc.float64, device=device) for p in where)
    vs = tuple(lucid.tensor(rng.standard_normal(x.shape), dtype=lc.float64, device=device) for x in xs)
    outs, tans = func.jvp(fn, xs, vs)
    assert outs, f"{row_id(row)}: no float output to check"
    # 1. finite differences along v
    h = 1e-6
    plus = fn(*(x + h * v for x, v in zip(xs, vs)))
    minus = fn(*(x - h * v for x, v in zip(xs, vs)))
    for k, (t, p, m) in enumerate(zip(tans, plus, minus)):
        fd = (_np(p) - _np(m)) / (2 * h)
        np.testing.assert_allclose(_np(t), fd, rtol=1e-5, atol=1e-6, err_msg=f"{row_id(row)} output {k}: J v vs FD")
    # 2. the VJP transposed: <u, J v> == <J^T u, v>
    leaves = [x.detach().requires_grad_() for x in xs]
    with lc.enable_grad():
        ys = fn(*leaves)
    us = [lucid.tensor(rng.standard_normal(y.shape), dtype=lc.float64, device=device) for y in ys]
    pairs = [(y, u) for y, u in zip(ys, us) if y.requires_grad]
    gs = lc.grad([p[0] for p in pairs], leaves, [p[1] for p in pairs], allow_unused=True) if pairs else [None] * len(xs)
    lhs = sum(float(np.sum(_np(u) * _np(t))) for u, t in zip(us, tans))
    rhs = sum(float(np.sum(_np(g) * _np(v))) for g, v in zip(gs, vs) if g is not None)
    np.testing.assert_allclose(lhs, rhs, **_tol(device), err_msg=f"{row_id(row)}: <u, Jv> vs <J^T u, v>")


@pytest.mark.parametrize("row", GRAD_ROWS, ids=GRAD_IDS)
def test_jvp_matches_finite_differences_and_the_transposed_vjp(row: OpInfo, device: Any) -> None:
    _check_jvp(row, row.samples[0], device)


@pytest.mark.opinfo_full
@pytest.mark.parametrize("row", GRAD_ROWS, ids=GRAD_IDS)
def test_jvp_of_every_float_sample(row: OpInfo, device: Any, request: pytest.FixtureRequest) -> None:
    if "opinfo_full" not in (request.config.getoption("-m") or ""):
        pytest.skip("the full samples run with -m opinfo_full")
    for sample in row.samples:
        if _float_positions(sample):
            _check_jvp(row, sample, device)


# -- ops of lucid_core outside the OpInfo rows ------------------------------------------------------------------

EXTRA = {
    "matmul": lambda a, b: lc.matmul(a, b),
    "einsum": lambda a, b: lc.einsum("ij,jk->ik", a, b),
    "getitem": lambda a, b: a[1:, ::2] * b[0, 0],
    "concat": lambda a, b: lc.concat([a, b], axis=0),
    "where": lambda a, b: lc.where(a > 0, a, 2.0 * b),
    "clip": lambda a, b: lc.clip(a, -0.5, 0.5) + b,
    "inv": lambda a, b: lc.linalg.inv(a @ a.mT + lc.eye(3, dtype=lc.float64, device=a.device)),
    "det": lambda a, b: lc.linalg.det(a),
    "fft": lambda a, b: lc.real(lc.fft.fft(a)) + lc.imag(lc.fft.fft(b)),
    "sort": lambda a, b: lc.sort(a + b, axis=-1),
    "logsumexp": lambda a, b: lc.logsumexp(a * b, axis=1),
    "max": lambda a, b: lc.max(a + b, axis=0),
    "std": lambda a, b: lc.std(a, axis=1) * b[0],
    "cumprod": lambda a, b: lc.cumulative_prod(a, axis=1),
    "setitem": lambda a, b: _setitem(a, b),
}


def _setitem(a: Any, b: Any) -> Any:
    c = a * 1.0
    c[0] = b[1]
    return c


@pytest.mark.parametrize("name", sorted(EXTRA))
def test_jvp_of_core_ops_matches_finite_differences(name: str, device: Any) -> None:
    if name == "fft" and device.backend.name == "mlx":
        pytest.skip("MLX has no complex128: its fft refuses float64")
    rng = np.random.default_rng(3)
    a = lc.asarray(rng.uniform(-1, 1, (3, 3)), dtype=lc.float64, device=device)
    b = lc.asarray(rng.uniform(-1, 1, (3, 3)), dtype=lc.float64, device=device)
    va = lc.asarray(rng.standard_normal((3, 3)), dtype=lc.float64, device=device)
    vb = lc.asarray(rng.standard_normal((3, 3)), dtype=lc.float64, device=device)
    f = EXTRA[name]
    _, t = func.jvp(f, (a, b), (va, vb))
    h = 1e-6
    fd = (_np(f(a + h * va, b + h * vb)) - _np(f(a - h * va, b - h * vb))) / (2 * h)
    np.testing.assert_allclose(_np(t), fd, rtol=1e-5, atol=1e-6)


# -- the mechanism --------------------------------------------------------------------------------------------------


def test_make_dual_and_unpack_dual_round_trip(device: Any) -> None:
    x = lc.asarray([1.0, 2.0], dtype=lc.float64, device=device)
    v = lc.asarray([0.5, -1.0], dtype=lc.float64, device=device)
    with fwAD.dual_level():
        y = lc.exp(fwAD.make_dual(x, v))
        primal, tangent = fwAD.unpack_dual(y)
    np.testing.assert_allclose(_np(primal), np.exp([1.0, 2.0]))
    np.testing.assert_allclose(_np(tangent), np.exp([1.0, 2.0]) * [0.5, -1.0])


def test_unpack_dual_of_a_plain_tensor_has_no_tangent(device: Any) -> None:
    x = lc.asarray([1.0], dtype=lc.float64, device=device)
    with fwAD.dual_level():
        assert fwAD.unpack_dual(x * 2).tangent is None


def test_make_dual_outside_a_level_raises(device: Any) -> None:
    x = lc.asarray([1.0], dtype=lc.float64, device=device)
    with pytest.raises(RuntimeError, match="no forward-AD level is active"):
        fwAD.make_dual(x, x)


def test_make_dual_refuses_a_tangent_of_another_shape(device: Any) -> None:
    x = lc.asarray([1.0, 2.0], dtype=lc.float64, device=device)
    with fwAD.dual_level(), pytest.raises(ValueError, match="tangent has shape"):
        fwAD.make_dual(x, x[:1])


def test_tangents_of_a_closed_level_are_ignored(device: Any) -> None:
    x = lc.asarray([1.0, 2.0], dtype=lc.float64, device=device)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, lc.ones_like(x))
    with fwAD.dual_level():
        assert fwAD.unpack_dual(d * 3).tangent is None


def test_no_tangent_work_happens_without_a_level(device: Any) -> None:
    x = lc.asarray([1.0, 2.0], dtype=lc.float64, device=device)
    assert not fwd.levels
    y = lc.sin(x) * x
    assert getattr(y, "_tangents", None) is None


def test_nested_jvp_gives_the_second_derivative(device: Any) -> None:
    x = lc.asarray([0.3, 1.2], dtype=lc.float64, device=device)
    one = lc.ones_like(x)

    def df(x: Any) -> Any:
        return func.jvp(lambda y: lc.sin(y) * y, (x,), (one,))[1]

    _, d2 = func.jvp(df, (x,), (one,))
    xv = np.array([0.3, 1.2])
    np.testing.assert_allclose(_np(d2), 2 * np.cos(xv) - xv * np.sin(xv), rtol=1e-12)


def test_inplace_add_carries_the_tangent(device: Any) -> None:
    x = lc.asarray([1.0, 2.0], dtype=lc.float64, device=device)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, lc.asarray([1.0, 1.0], dtype=lc.float64, device=device))
        y = d * 2.0
        y.add_(d)
        y.mul_(d)
        t = fwAD.unpack_dual(y).tangent
    np.testing.assert_allclose(_np(t), 6.0 * np.array([1.0, 2.0]))  # d(3x^2) = 6x


def test_setitem_of_a_dual_value_carries_its_tangent(device: Any) -> None:
    x = lc.asarray([1.0, 2.0, 3.0], dtype=lc.float64, device=device)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, lc.asarray([1.0, 2.0, 3.0], dtype=lc.float64, device=device))
        z = lc.zeros(3, dtype=lc.float64, device=device)
        z[1] = d[2] * 2.0
        t = fwAD.unpack_dual(z).tangent
    np.testing.assert_allclose(_np(t), [0.0, 6.0, 0.0])


def test_inplace_write_through_a_view_of_a_dual_tensor_raises(device: Any) -> None:
    x = lc.asarray([1.0, 2.0, 3.0], dtype=lc.float64, device=device)
    with fwAD.dual_level():
        z = lc.zeros(3, dtype=lc.float64, device=device)
        d = fwAD.make_dual(x, lc.ones_like(x))
        with pytest.raises(RuntimeError, match="through a view"):
            z[1:].add_(d[1:])


def test_a_function_without_a_rule_raises_naming_it(device: Any) -> None:
    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            return x**3

        @staticmethod
        def backward(ctx, gy):
            return gy

    x = lc.asarray([1.0], dtype=lc.float64, device=device)
    with pytest.raises(RuntimeError, match=r"cube: no forward-mode \(jvp\) rule"):
        func.jvp(Cube.apply, (x,), (x,))


def test_a_custom_function_jvp_is_used(device: Any) -> None:
    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, gy):
            (x,) = ctx.saved_tensors
            return gy * 3 * x**2

        @staticmethod
        def jvp(ctx, tx):
            return tx * 3 * ctx.inputs[0] ** 2

    x = lc.asarray([2.0], dtype=lc.float64, device=device)
    _, t = func.jvp(Cube.apply, (x,), (lc.ones_like(x),))
    assert _np(t).tolist() == [12.0]


def _all_functions() -> list[type]:
    import lucid_core.fft
    import lucid_core.linalg
    import lucid_core.special  # noqa: F401

    seen, stack = [], list(Function.__subclasses__())
    while stack:
        c = stack.pop()
        seen.append(c)
        stack.extend(c.__subclasses__())
    return [c for c in seen if c.__module__.startswith("lucid_core.") and not inspect.isabstract(c)]


def test_every_differentiable_core_op_has_a_forward_rule() -> None:
    missing = sorted(
        c.__qualname__ for c in _all_functions() if c.differentiable and c.jvp is None and not c.linear
        and "backward" in {k for b in c.__mro__ if b is not Function for k in vars(b)}
        and c.__name__ != "CompiledBackward"  # a compiled forward's node (compiled functions run eagerly here)
    )  # fmt: skip
    assert not missing, f"differentiable ops without a jvp rule: {missing}"
