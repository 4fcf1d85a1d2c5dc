"""lucid_nn's ops with a ``backward_raw`` give their Lucid-op ``backward``'s numbers bit for bit (as
tests/core/test_backward_raw.py does for the core's ops)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import lucid_core as lc
import lucid_nn.functional as F
from lucid_core import _autograd
from lucid_nn.functional import _misc


def _walk(cls: type) -> Any:
    for sub in cls.__subclasses__():
        yield sub
        yield from _walk(sub)


COVERED = {"_Linear"}


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
