"""Values and gradients at ops' singular points, and float16 reductions, against PyTorch's numbers.

The calls are in ``fixtures/edge_grad_cases.py`` and ``fixtures/float16_cases.py`` (run on ``lucid``, the PyTorch
face); PyTorch's results are in ``fixtures/edge_grads.json`` (``generate_edge_grads.py``). Every gradient case
runs twice: with the first-order fast path (``backward_raw``) and with ``backward`` in Lucid ops, which higher
order gradients use; both must give PyTorch's numbers, NaN and infinities in the same places.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import lucid
import lucid_core as lc
from lucid_core import _autograd
from tests.core.fixtures.edge_grad_cases import CASES, LOOSE_RTOL
from tests.core.fixtures.float16_cases import CASES as F16_CASES
from tests.core.fixtures.float16_cases import inputs as f16_inputs

DATA = json.loads((Path(__file__).parent / "fixtures" / "edge_grads.json").read_text())


@contextmanager
def _raw(enabled: bool) -> Iterator[None]:
    prev = _autograd._raw_enabled[0]
    _autograd._raw_enabled[0] = enabled
    try:
        yield
    finally:
        _autograd._raw_enabled[0] = prev


def _close(got: Any, want: Any, what: str, rtol: float, atol: float) -> None:
    g = np.asarray(got, dtype=np.float64)
    w = np.asarray(want, dtype=np.float64)
    assert g.shape == w.shape, f"{what}: shape {g.shape}, PyTorch's {w.shape}"
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=f"{what}: NaN in other places than PyTorch's")
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


@pytest.mark.parametrize("raw", [True, False], ids=["backward_raw", "backward"])
@pytest.mark.parametrize(("name", "fn"), [(n, f) for n, _, f in CASES], ids=[n for n, _, _ in CASES])
def test_gradient_at_singular_point_matches_pytorch(name: str, fn: Any, raw: bool, device: lc.Device) -> None:
    ref = DATA["grads"][name]
    xs = [lucid.tensor(v, dtype=lucid.float64, device=device, requires_grad=True) for v in ref["inputs"]]
    out = fn(lucid, *xs)
    _close(out.detach().numpy(), ref["out"], f"{name}: value", 1e-12, 1e-12)
    cot = lucid.tensor(ref["cot"], dtype=lucid.float64, device=device)
    with _raw(raw):
        if out.requires_grad:
            (out * cot).sum().backward()
    for i, (x, want) in enumerate(zip(xs, ref["grads"])):
        if want is None:
            assert x.grad is None or not np.any(x.grad.numpy()), f"{name}: input {i} got a gradient, PyTorch none"
            continue
        assert x.grad is not None, f"{name}: input {i} got no gradient; PyTorch's is {want}"
        _close(x.grad.numpy(), want, f"{name}: gradient of input {i}", LOOSE_RTOL.get(name, 1e-10), 1e-12)


@pytest.mark.parametrize(("name", "fn"), F16_CASES, ids=[n for n, _ in F16_CASES])
def test_float16_reduction_accumulates_in_float32(name: str, fn: Any, device: lc.Device) -> None:
    xs = [lucid.tensor(v, dtype=lucid.float16, device=device) for v in f16_inputs(name)]
    out = fn(lucid, *xs)
    assert out.dtype is lucid.float16, f"{name}: result is {out.dtype}, PyTorch's is float16"
    want = np.asarray(DATA["float16"][name]["out"], dtype=np.float16)
    got = out.numpy()
    assert got.dtype == np.float16
    # one float16 rounding of a float32 result: equal, or (summation order) one float16 ulp apart
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want), err_msg=f"{name}: overflow unlike PyTorch's")
    finite = np.isfinite(want)
    ulp = np.spacing(np.abs(want[finite])).astype(np.float64)
    err = np.abs(got[finite].astype(np.float64) - want[finite].astype(np.float64))
    assert np.all(err <= ulp), f"{name}: {np.count_nonzero(err > ulp)} elements differ from PyTorch's by over an ulp"


SMOOTH = {  # the ops whose gradient changed, at ordinary points: first and second derivatives still check out
    "std": lambda x: lc.std(x, axis=1, correction=1),
    "vector_norm_p3": lambda x: lc.linalg.vector_norm(x, axis=1, ord=3),
    "vector_norm_p1_5": lambda x: lc.linalg.vector_norm(x, axis=1, ord=1.5),
    "vector_norm_p0_5": lambda x: lc.linalg.vector_norm(x, axis=1, ord=0.5),
    "atan2": lambda x: lc.atan2(x[0], x[1]),
    "maximum": lambda x: lc.maximum(x[0], x[1]),
    "logaddexp": lambda x: lc.logaddexp(x[0], x[1]),
    "pow_tensor": lambda x: lc.pow(lc.abs(x[0]) + 0.5, x[1]),
    "det": lambda x: lc.linalg.det(x[:, :2]),
    "max_all": lambda x: lc.max(x),
}


@pytest.mark.parametrize("fn", SMOOTH.values(), ids=SMOOTH.keys())
def test_changed_gradients_pass_gradcheck_and_gradgradcheck(fn: Any, device: lc.Device) -> None:
    x = lc.asarray([[0.3, -1.2, 2.0], [1.1, 0.4, -0.7]], dtype=lc.float64, device=device).requires_grad_()
    assert lc.gradcheck(fn, [x])
    assert lc.gradgradcheck(fn, [x])
