"""``lucid.cdist``'s gradients where distances tie or vanish equal PyTorch's (fixtures: cdist_ties.json)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import lucid

DATA = json.loads((Path(__file__).parent / "fixtures" / "cdist_ties.json").read_text())


@pytest.mark.parametrize("case", DATA["cases"], ids=lambda c: f"p={c['p']}")
def test_cdist_gradients_at_ties_and_zero_distance(case, device):
    if not device.backend.capabilities.get("float64", True):
        pytest.skip(f"{device} has no float64")
    p = math.inf if case["p"] == "inf" else case["p"]
    a = lucid.tensor(DATA["x1"], dtype=lucid.float64, device=device, requires_grad=True)
    b = lucid.tensor(DATA["x2"], dtype=lucid.float64, device=device, requires_grad=True)
    d = lucid.cdist(a, b, p=p)
    np.testing.assert_allclose(d.detach().numpy(), case["d"], rtol=1e-12)
    g = lucid.arange(1, d.numel() + 1, dtype=lucid.float64, device=device).reshape(d.shape)
    ga, gb = lucid.autograd.grad(d, (a, b), g)
    np.testing.assert_allclose(ga.numpy(), case["ga"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gb.numpy(), case["gb"], rtol=1e-12, atol=1e-12)
