"""First-order backward on native arrays (``Function.backward_raw``) against the same op's ``backward``.

Backward without ``create_graph`` runs an op's ``backward_raw`` where it has one: the gradient formula on
the backend's arrays, with no Tensor or graph node per gradient op. It must give the numbers of the op's
``backward`` (written in Lucid ops, which higher-order gradients use) bit for bit: these tests run each op
both ways (``_raw_enabled`` switched off makes the engine call ``backward`` on wrapped Tensors) and compare
the arrays exactly, in float64 and float32, with broadcasting, scalars and repeated indices. A new
``backward_raw`` without a case here fails ``test_every_raw_backward_has_a_case``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

import lucid_core as lc
from lucid_core import _autograd

Case = tuple[Callable[..., Any], list[tuple[int, ...]], str]  # op, input shapes, value domain

# each case: the op on its tensor inputs, the inputs' shapes, and where their values lie
CASES: dict[str, list[Case]] = {
    "Add": [
        (lambda a, b: a + b, [(3, 4), (3, 4)], "real"),
        (lambda a, b: a + b, [(3, 1), (1, 4)], "real"),
        (lambda a: a + 2.0, [(3, 4)], "real"),
        (lambda a, b: a + b, [(2, 3, 4), (4,)], "real"),
    ],
    "Subtract": [
        (lambda a, b: a - b, [(3, 4), (3, 4)], "real"),
        (lambda a, b: a - b, [(3, 1), (1, 4)], "real"),
        (lambda a: 2.0 - a, [(5,)], "real"),
        (lambda a: a - 1, [(5,)], "real"),
    ],
    "Multiply": [
        (lambda a, b: a * b, [(3, 4), (3, 4)], "real"),
        (lambda a, b: a * b, [(2, 3, 1), (3, 4)], "real"),
        (lambda a: a * 3.0, [(4,)], "real"),
        (lambda a: a * a, [(4,)], "real"),
    ],
    "Divide": [
        (lambda a, b: a / b, [(3, 4), (3, 4)], "positive"),
        (lambda a, b: a / b, [(3, 1), (4,)], "positive"),
        (lambda a: 2.0 / a, [(5,)], "positive"),
        (lambda a: a / 3.0, [(5,)], "real"),
    ],
    "Negative": [(lambda a: -a, [(3, 4)], "real")],
    "Exp": [(lc.exp, [(3, 4)], "real")],
    "Expm1": [(lc.expm1, [(3, 4)], "real")],
    "Log": [(lc.log, [(3, 4)], "positive")],
    "Log1p": [(lc.log1p, [(3, 4)], "positive")],
    "Sqrt": [(lc.sqrt, [(3, 4)], "positive")],
    "Square": [(lc.square, [(3, 4)], "real")],
    "Tan": [(lc.tan, [(3, 4)], "unit")],
    "Atan": [(lc.atan, [(3, 4)], "real")],
    "Tanh": [(lc.tanh, [(3, 4)], "real")],
    "Atanh": [(lc.atanh, [(3, 4)], "unit")],
    "Sigmoid": [(lc.sigmoid, [(3, 4)], "real")],
    "Relu": [(lc.relu, [(3, 4)], "real")],
    "Sum": [
        (lambda a: lc.sum(a), [(3, 4)], "real"),
        (lambda a: lc.sum(a, axis=0), [(3, 4)], "real"),
        (lambda a: lc.sum(a, axis=(0, 2), keepdims=True), [(2, 3, 4)], "real"),
        (lambda a: lc.mean(a, axis=-1), [(2, 3, 4)], "real"),
    ],
    "Reshape": [(lambda a: lc.reshape(a, (4, 3)), [(3, 4)], "real"), (lambda a: a.reshape(-1), [(2, 3, 2)], "real")],
    "PermuteDims": [(lambda a: lc.permute_dims(a, (2, 0, 1)), [(2, 3, 4)], "real")],
    "BroadcastTo": [
        (lambda a: lc.broadcast_to(a, (2, 3, 4)), [(3, 1)], "real"),
        (lambda a: lc.broadcast_to(a, (5, 4)), [(4,)], "real"),
    ],
    "Matmul": [
        (lambda a, b: a @ b, [(3, 4), (4, 5)], "real"),
        (lambda a, b: a @ b, [(2, 3, 4), (4, 5)], "real"),
        (lambda a, b: a @ b, [(2, 1, 3, 4), (5, 4, 2)], "real"),
        (lambda a, b: a @ b, [(3, 4), (4,)], "real"),
    ],
    "GetItem": [
        (lambda a: a[1:, ::2], [(3, 4)], "real"),
        (lambda a: a[lc.asarray([0, 2, 0], device=a.device)], [(3, 4)], "real"),
        (lambda a: a[..., 1], [(2, 3, 4)], "real"),
    ],
    "Split": [
        (lambda a: a.split([1, 2, 1], dim=1)[1], [(3, 4)], "real"),  # pieces without a gradient
        (lambda a: lc.concat([p * (i + 1) for i, p in enumerate(a.split(2, dim=0))], axis=0), [(3, 4)], "real"),
        (lambda a: a.split(5, dim=-1)[0], [(2, 5)], "real"),  # one piece: its gradient is x's
    ],
}


def _walk(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _walk(sub)


@contextmanager
def _raw(enabled: bool) -> Iterator[None]:
    prev = _autograd._raw_enabled[0]
    _autograd._raw_enabled[0] = enabled
    try:
        yield
    finally:
        _autograd._raw_enabled[0] = prev


def _values(shape: tuple[int, ...], domain: str, dtype: Any, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if domain == "positive":
        x = np.abs(x) + 0.5
    elif domain == "unit":
        x = np.tanh(x) * 0.9
    return x.astype(dtype)


def _grads(case: Case, device: Any, dtype: Any, seed: int, raw: bool) -> list[np.ndarray]:
    fn, shapes, domain = case
    xs = [lc.asarray(_values(s, domain, dtype, seed + i), device=device) for i, s in enumerate(shapes)]
    for x in xs:
        x.requires_grad = True
    with _raw(raw):
        y = fn(*xs)
        gy = lc.asarray(_values(tuple(y.shape), "real", dtype, seed + 99), device=device)
        y.backward(gy)
    return [np.asarray(lc.to_device(x.grad, "numpy") if x.device.backend != "numpy" else x.grad._data) for x in xs]


def test_every_raw_backward_has_a_case() -> None:
    with_raw = {
        c.__name__ for c in _walk(lc.Function) if c.backward_raw is not None and "lucid_core" in c.__module__
        and c.__name__ != "CompiledBackward"  # not an op: the node of a compiled forward (tests/core/test_compile.py)
    }  # fmt: skip
    assert with_raw, "no op has a backward_raw: the engine's fast path is never taken"
    assert with_raw <= set(CASES), f"ops with backward_raw but no case here: {sorted(with_raw - set(CASES))}"


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_raw_backward_matches_backward_bit_for_bit(name: str, dtype: str, device: Any) -> None:
    if dtype == "float64" and not lc.__array_namespace_info__().dtypes(device=device).get("float64"):
        pytest.skip(f"{device} has no float64")
    for case in CASES[name]:
        for seed in (0, 1):
            fast = _grads(case, device, dtype, seed, raw=True)
            slow = _grads(case, device, dtype, seed, raw=False)
            for i, (f, s) in enumerate(zip(fast, slow)):
                assert f.dtype == s.dtype and f.shape == s.shape, (name, i, f.dtype, s.dtype, f.shape, s.shape)
                np.testing.assert_array_equal(f, s, err_msg=f"{name} input {i}, seed {seed}")


def test_the_raw_path_is_taken() -> None:
    """The comparison above is not vacuous: with raw on, backward calls backward_raw and not backward."""
    calls: list[str] = []
    Exp = type(lc.exp(lc.ones(1, requires_grad=True)).grad_fn)
    orig_raw, orig = Exp.backward_raw, Exp.backward

    def spy_raw(ctx: Any, gy: Any) -> Any:
        calls.append("raw")
        return orig_raw(ctx, gy)

    def spy(ctx: Any, gy: Any) -> Any:
        calls.append("lucid")
        return orig(ctx, gy)

    Exp.backward_raw, Exp.backward = staticmethod(spy_raw), staticmethod(spy)
    try:
        x = lc.ones(3, requires_grad=True)
        lc.exp(x).sum().backward()
        lc.exp(x).sum().backward(create_graph=True)
    finally:
        Exp.backward_raw, Exp.backward = staticmethod(orig_raw), staticmethod(orig)
    assert calls == ["raw", "lucid"]


def test_complex_gradients_fall_back_to_backward() -> None:
    """A complex gradient makes the raw backward decline; the result is backward's, conjugates and all."""
    a = lc.asarray(np.array([1 + 2j, -0.5 + 1j], np.complex128), requires_grad=True)
    b = lc.asarray(np.array([0.3 - 1j, 2 + 0.5j], np.complex128), requires_grad=True)
    (a * b / (a + 1.0)).sum().backward()
    fast = a.grad._data.copy(), b.grad._data.copy()
    a.grad = b.grad = None
    with _raw(False):
        (a * b / (a + 1.0)).sum().backward()
    np.testing.assert_array_equal(fast[0], a.grad._data)
    np.testing.assert_array_equal(fast[1], b.grad._data)


def test_mixed_dtypes_fall_back_to_backward() -> None:
    """float32 * float64 promotes; the raw path leaves it to backward, whose cast back keeps each dtype."""
    a = lc.ones(3, dtype=lc.float32, requires_grad=True)
    b = lc.full((3,), 2.0, dtype=lc.float64, requires_grad=True)
    (a * b).sum().backward()
    assert a.grad.dtype == lc.float32 and b.grad.dtype == lc.float64
    np.testing.assert_array_equal(a.grad._data, np.full(3, 2.0, np.float32))


def test_a_leaf_used_many_times_gets_the_sum_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Raw backward sums a leaf's gradients first and adds the sum to an existing .grad (PyTorch's
    AccumulateGrad order): 2**53 + (1 + 1 + 2), not ((2**53 + 1) + 1) + 2, which rounds to 2**53 + 2."""
    monkeypatch.setattr(_autograd, "_post_hooks", {})  # a post-accumulate hook elsewhere adds edge by edge
    x = lc.asarray(np.array([0.5]), requires_grad=True)
    x.grad = lc.asarray(np.array([2.0**53]))
    (x * 1.0 + x * 1.0 + x * 2.0).sum().backward()
    assert x.grad._data[0] == 2.0**53 + 4


def test_hooks_and_retain_grad_see_tensors_on_the_raw_path() -> None:
    x = lc.asarray(np.array([1.0, 2.0]), requires_grad=True)
    y = lc.exp(x)
    y.retain_grad()
    seen: list[Any] = []
    y.register_hook(lambda g: seen.append(g) or g * 2.0)
    x.register_hook(lambda g: seen.append(g))
    (y * 3.0).sum().backward()
    assert all(isinstance(g, lc.Tensor) for g in seen) and len(seen) == 2
    np.testing.assert_array_equal(y.grad._data, np.array([6.0, 6.0]))
    np.testing.assert_array_equal(x.grad._data, 6.0 * np.exp(np.array([1.0, 2.0])))


def test_a_custom_backward_returning_a_non_tensor_is_refused_by_name() -> None:
    class Bad(lc.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, gy):
            return 1.0

    x = lc.ones(3, requires_grad=True)
    with pytest.raises(TypeError, match="Bad.backward returned a float for input 0; expected a Tensor or None"):
        Bad.apply(x).sum().backward()


def test_a_raw_gradient_of_the_wrong_shape_for_its_leaf_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    """The leaf sums check each gradient's shape (an op whose backward forgot to reduce a broadcast)."""
    Exp = type(lc.exp(lc.ones(1, requires_grad=True)).grad_fn)
    monkeypatch.setattr(Exp, "backward_raw", staticmethod(lambda ctx, gy: np.ones((2, 3))))
    monkeypatch.setattr(_autograd, "_post_hooks", {})
    x = lc.ones(3, dtype=lc.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"gradient of shape \(2, 3\) reached a leaf of shape \(3,\)"):
        lc.exp(x).sum().backward()
