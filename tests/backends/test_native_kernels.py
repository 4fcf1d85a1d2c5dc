"""A backend's native kernels agree with the generic compositions they replace."""

from __future__ import annotations

import numpy as np
import pytest

import lucid_core as lc
import lucid_nn.functional as F


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [lc.float32, lc.float64])
def test_softmax_kernels_match_the_numpy_reference(device, name, dtype):
    if dtype not in device.backend.dtypes:
        pytest.skip(f"{device} has no {dtype.name}")
    x = lc.asarray(np.random.default_rng(0).standard_normal((5, 7)) * 4, dtype=dtype)
    fn = getattr(F, name)
    got = fn(x.to(device), dim=1).to("numpy").numpy()
    ref = fn(x, dim=1).numpy()
    tol = 1e-6 if dtype is lc.float32 else 1e-13
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)
    if dtype is lc.float64:
        xg = lc.asarray(np.linspace(-2, 2, 12).reshape(3, 4), dtype=lc.float64, device=device, requires_grad=True)
        assert lc.gradcheck(lambda t: fn(t, dim=1), [xg])
