"""lucid_nn's ops with a ``backward_raw`` give their Lucid-op ``backward``'s numbers bit for bit (as
tests/core/test_backward_raw.py does for the core's ops)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lucid_core as lc
import lucid_nn.functional as F
from lucid_core import _autograd
from lucid_nn.functional import _attention, _misc


def _walk(cls: type) -> Any:
    for sub in cls.__subclasses__():
        yield sub
        yield from _walk(sub)


# each case: the op on its float inputs, their shapes (or (shape, False) for an input without a gradient)
CASES: dict[str, list[tuple[Any, list[Any]]]] = {
    "_LayerNorm": [
        (lambda x, w, b: F.layer_norm(x, (6,), w, b), [(4, 5, 6), (6,), (6,)]),
        (lambda x: F.layer_norm(x, (6,)), [(3, 6)]),
        (lambda x, w: F.layer_norm(x, (6,), w), [((3, 6), False), (6,)]),
    ],
    "_Gelu": [
        (lambda x: F.gelu(x), [(4, 37)]),
        (lambda x: F.gelu(x, approximate="tanh"), [(4, 37)]),
    ],
    "_Attention": [
        (lambda q, k, v: F.scaled_dot_product_attention(q, k, v), [(2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8)]),
        (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), [(2, 2, 16, 8)] * 3),
        (lambda q, k, v: F.scaled_dot_product_attention(q, k, v), [((2, 4, 8), False), (2, 6, 8), (2, 6, 8)]),
    ],
    "_PackedAttention": [  # what multi-head self-attention from one projection builds
        (lambda qkv: _attention._PackedAttention.apply(qkv, 0.25, True), [(3, 2, 2, 8, 16)]),
        (lambda qkv: _attention._PackedAttention.apply(qkv, 0.4, False), [(3, 2, 5, 6)]),
    ],
    "_IndexCrossEntropy": [
        (lambda x: F.cross_entropy(x, lc.asarray([1, 0, 3, -100, 2], device=x.device)), [(5, 4)]),
        (
            lambda x: F.cross_entropy(x, lc.asarray([1, 0, 3], device=x.device), reduction="sum", label_smoothing=0.1),
            [(3, 4)],
        ),
        (lambda x: F.cross_entropy(x, lc.asarray([1, 0, 3], device=x.device), reduction="none"), [(3, 4)]),
    ],
    "_Conv": [
        (lambda x, w: F.conv2d(x, w, padding=1), [(2, 3, 6, 5), (4, 3, 3, 3)]),
        (lambda x, w: F.conv2d(x, w, stride=2, groups=2), [((2, 4, 7, 7), False), (6, 2, 3, 3)]),
        (lambda x, w: F.conv1d(x, w, dilation=2), [(2, 3, 9), (2, 3, 2)]),
    ],
    "_ConvBias": [
        (lambda x, w, b: F.conv2d(x, w, b, padding=1), [(2, 3, 6, 5), (4, 3, 3, 3), (4,)]),
        (lambda x, w, b: F.conv2d(x, w, b), [((2, 3, 5, 5), False), (4, 3, 2, 2), (4,)]),
    ],
    "_TileMax": [
        (lambda x: F.max_pool2d(x, 2), [(2, 3, 6, 8)]),
        (lambda x: F.max_pool2d(lc.round(x * 2), 2), [(2, 2, 4, 4)]),  # ties share the gradient
    ],
}

COVERED = {"_Linear", *CASES}


def test_every_nn_raw_backward_has_a_case() -> None:
    with_raw = {c.__name__ for c in _walk(lc.Function) if c.backward_raw is not None and "lucid_nn" in c.__module__}
    assert with_raw <= COVERED, f"lucid_nn ops with backward_raw but no case here: {sorted(with_raw - COVERED)}"
    assert _misc._Linear.backward_raw is not None


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("x_grad", [True, False])
def test_linear_raw_backward_matches_backward_bit_for_bit(device: Any, dtype: str, bias: bool, x_grad: bool) -> None:
    if dtype == "float64" and not lc.__array_namespace_info__().dtypes(device=device).get("float64"):
        pytest.skip(f"{device} has no float64")
    rng = np.random.default_rng(0)
    arrays = {
        "x": rng.standard_normal((7, 5, 6)), "w": rng.standard_normal((4, 6)), "b": rng.standard_normal(4),
        "g": rng.standard_normal((7, 5, 4)),
    }  # fmt: skip

    def grads(raw: bool) -> list[np.ndarray]:
        x = lc.asarray(arrays["x"].astype(dtype), device=device, requires_grad=x_grad)
        w = lc.asarray(arrays["w"].astype(dtype), device=device, requires_grad=True)
        b = lc.asarray(arrays["b"].astype(dtype), device=device, requires_grad=True) if bias else None
        prev = _autograd._raw_enabled[0]
        _autograd._raw_enabled[0] = raw
        try:
            F.linear(x, w, b).backward(lc.asarray(arrays["g"].astype(dtype), device=device))
        finally:
            _autograd._raw_enabled[0] = prev
        return [
            np.asarray(lc.to_device(t.grad, "numpy")._data) for t in (x, w, b) if t is not None and t.grad is not None
        ]

    fast, slow = grads(True), grads(False)
    assert len(fast) == len(slow) == 1 + bias + x_grad
    for f, s in zip(fast, slow):
        assert f.dtype == s.dtype and f.shape == s.shape
        np.testing.assert_array_equal(f, s)


def _case_names() -> list[tuple[str, int]]:
    return [(name, i) for name, cases in CASES.items() for i in range(len(cases))]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("name", "index"), _case_names())
def test_nn_raw_backward_matches_backward_bit_for_bit(device: Any, dtype: str, name: str, index: int) -> None:
    if dtype == "float64" and not lc.__array_namespace_info__().dtypes(device=device).get("float64"):
        pytest.skip(f"{device} has no float64")
    fn, specs = CASES[name][index]

    def grads(raw: bool) -> list[np.ndarray]:
        xs = []
        for i, spec in enumerate(specs):
            shape, wants = (spec, True) if isinstance(spec[0], int) else spec
            values = np.random.default_rng(i).standard_normal(shape).astype(dtype)
            xs.append(lc.asarray(values, device=device, requires_grad=wants))
        prev = _autograd._raw_enabled[0]
        _autograd._raw_enabled[0] = raw
        try:
            y = fn(*xs)
            gy = np.random.default_rng(99).standard_normal(tuple(y.shape)).astype(dtype)
            y.backward(lc.asarray(gy, device=device))
        finally:
            _autograd._raw_enabled[0] = prev
        return [np.asarray(lc.to_device(x.grad, "numpy")._data) if x.grad is not None else None for x in xs]

    fast, slow = grads(True), grads(False)
    for spec, f, s in zip(specs, fast, slow):
        wants = isinstance(spec[0], int) or spec[1]
        assert (f is not None) == (s is not None) == wants
        if f is not None:
            assert f.dtype == s.dtype and f.shape == s.shape
            np.testing.assert_array_equal(f, s)


@pytest.mark.parametrize(("name", "index"), _case_names())
def test_nn_raw_backward_cases_reach_their_op(name: str, index: int) -> None:
    """Each case builds a graph holding the op it is named after (else it would test another op's path)."""
    fn, specs = CASES[name][index]
    xs = [lc.asarray(np.ones(spec if isinstance(spec[0], int) else spec[0]), requires_grad=True) for spec in specs]
    seen: set[str] = set()
    stack = [fn(*xs)._node]
    while stack:
        node = stack.pop()
        if node is None or type(node).__name__ in seen:
            continue
        seen.add(type(node).__name__)
        stack.extend(x._node for x in node.inputs if isinstance(x, lc.Tensor))
    assert name in seen, f"{name}: the case's graph holds {sorted(seen)}"
