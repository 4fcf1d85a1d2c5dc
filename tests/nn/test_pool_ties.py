"""Max pooling routes each window's gradient to its first maximum, as PyTorch does (fixtures: pool_ties.json).

Windows with tied maxima (small integers, all zeros) and a NaN, on the tile path (stride == kernel: the
compiled float32 kernel and the composed one), overlapping windows, padding, dilation, ceil_mode, 1-D,
3-D and adaptive pooling. Sharing the gradient among ties gives the same sum but not PyTorch's numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import lucid_core as lc
from lucid_nn import functional as F

CASES = {c["name"]: c for c in json.loads((Path(__file__).parent / "fixtures" / "pool_ties.json").read_text())["cases"]}


def _kwargs(case: dict) -> dict:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in case["kwargs"].items()}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_max_pool_gradient_goes_to_the_first_maximum(name, dtype, device):
    if dtype == "float64" and not device.backend.capabilities.get("float64", True):
        pytest.skip(f"{device} has no float64")
    case = CASES[name]
    x = lc.asarray(case["x"], dtype=getattr(lc, dtype), device=device, requires_grad=True)
    y = getattr(F, case["fn"])(x, **_kwargs(case))
    np.testing.assert_array_equal(y.detach().numpy(), np.asarray(case["y"], dtype=dtype))
    g = lc.reshape(lc.arange(1, y.size + 1, dtype=y.dtype, device=device), y.shape)
    (gx,) = lc.grad(y, x, g)
    np.testing.assert_array_equal(gx.numpy(), np.asarray(case["grad"], dtype=dtype), err_msg=name)


@pytest.mark.parametrize("name", ["tiles 2x2", "tiles 2x3", "zeros 2x2", "3d tiles"])
def test_the_routing_is_differentiable_in_the_incoming_gradient(name, device):
    case = CASES[name]
    x = lc.asarray(case["x"], dtype=lc.float32, device=device)
    xr = lc.asarray(x, requires_grad=True)
    y = getattr(F, case["fn"])(xr, **_kwargs(case))
    g = lc.reshape(lc.arange(1, y.size + 1, dtype=lc.float32, device=device), y.shape)
    g.requires_grad = True
    (gx,) = lc.grad(y, xr, g, create_graph=True)
    v = lc.asarray(np.random.default_rng(0).random(tuple(x.shape)), dtype=lc.float32, device=device)
    (gg,) = lc.grad(lc.sum(gx * v), g)
    # each window's gradient lands on one element: d/dg of sum(gx * v) is v there
    want = np.asarray(case["grad"])
    flat_v = v.numpy().ravel()
    expected = np.array([flat_v[np.flatnonzero(want.ravel() == k)[0]] for k in range(1, y.size + 1)])
    np.testing.assert_allclose(gg.numpy().ravel(), expected, rtol=1e-6)
