"""``apply_unary`` / ``apply_binary`` (the operators' and unary ops' hot path) record what ``Function.apply``
records: the same result, node type, inputs, generation, saved versions and requires_grad, in every case
the general path handles (leaves, non-leaves, numbers, no_grad, tensors written in place, other devices)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lucid_core as lc
from lucid_core._autograd import apply_binary, apply_unary
from lucid_core.ops import elementwise as E


def _record(t: lc.Tensor) -> tuple[Any, ...]:
    node = t._node
    summary = None
    if node is not None:
        summary = (type(node), node.generation, tuple(id(a) if isinstance(a, lc.Tensor) else a for a in node.inputs),
                   node._versions, len(node.outputs), node.outputs[0]() is t)  # fmt: skip
    return np.asarray(t._data).tobytes(), t.dtype, t._device, t.requires_grad, summary


def _inputs(device: Any) -> dict[str, Any]:
    leaf = lc.asarray([0.5, -1.0, 2.0], device=device, requires_grad=True)
    deep = lc.exp(lc.exp(leaf))  # a non-leaf two generations up
    plain = lc.asarray([1.5, 0.25, -3.0], device=device)
    written = lc.asarray([1.0, 2.0, 3.0], device=device)
    written += 1.0  # has a storage box at version 1
    graph_written = lc.exp(leaf)
    graph_written += 1.0  # a non-leaf written in the graph: a box at version 1, and a node
    return {"leaf": leaf, "deep": deep, "plain": plain, "written": written, "graph_written": graph_written}


@pytest.mark.parametrize("grad_mode", [True, False])
def test_apply_unary_records_what_apply_records(device: Any, grad_mode: bool) -> None:
    for name, x in _inputs(device).items():
        for cls in (E.exp.Function, E.tanh.Function, E.Negative):
            with lc.set_grad_enabled(grad_mode):
                fast, slow = apply_unary(cls, x), cls.apply(x)
            assert _record(fast) == _record(slow), (name, cls.__name__)


@pytest.mark.parametrize("grad_mode", [True, False])
def test_apply_binary_records_what_apply_records(device: Any, grad_mode: bool) -> None:
    xs = _inputs(device)
    for na, a in xs.items():
        for nb, b in [*xs.items(), ("float", 2.5), ("int", 3)]:
            for cls in (E.Add, E.Subtract, E.Multiply, E.Divide):
                with lc.set_grad_enabled(grad_mode):
                    fast, slow = apply_binary(cls, a, b), cls.apply(a, b)
                assert _record(fast) == _record(slow), (na, nb, cls.__name__)


def test_apply_binary_reports_mixed_devices_as_apply_does() -> None:
    names = [b.name for b in lc.backends() if b.status == "ok"]
    if len(names) < 2:
        pytest.skip("needs two backends")
    a = lc.ones(3, device=names[0])
    b = lc.ones(3, device=names[1])
    with pytest.raises(RuntimeError, match="different devices"):
        apply_binary(E.Add, a, b)


def test_operators_take_the_fast_path_and_backward_agrees() -> None:
    """``x * 2 + y`` and ``-exp(x)`` go through the fast paths and their gradients are right."""
    x = lc.asarray(np.array([0.1, 0.2]), requires_grad=True)
    y = lc.asarray(np.array([1.0, -1.0]), requires_grad=True)
    (x * 2.0 + y - lc.exp(x) / y).sum().backward()
    np.testing.assert_allclose(x.grad._data, 2.0 - np.exp([0.1, 0.2]) / np.array([1.0, -1.0]))
    np.testing.assert_allclose(y.grad._data, 1.0 + np.exp([0.1, 0.2]) / np.array([1.0, -1.0]) ** 2)
