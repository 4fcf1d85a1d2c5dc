"""Each face function and method against PyTorch: ``fixtures/face_cases.py`` runs with ``lucid`` here and with
PyTorch in ``fixtures/generate_fixtures.py`` (fixtures/functions.npz), and the results agree."""

from __future__ import annotations

import numpy as np
import pytest

import lucid
import lucid_core
from tests.pytorch_face.fixtures import face_cases

from .conftest import HERE

with np.load(HERE / "fixtures" / "functions.npz") as _f:
    EXPECTED = {k: _f[k] for k in _f.files}


@pytest.fixture
def on_backend(device):
    """Make the backend under test the default device (the cases create tensors without naming one)."""
    previous = lucid_core.get_default_device()
    lucid_core.set_default_device(device)
    yield device
    lucid_core.set_default_device(previous)


@pytest.mark.parametrize("case", sorted(face_cases.CASES))
def test_case_matches_pytorch(case: str, on_backend) -> None:
    keys = sorted(k for k in EXPECTED if k == case or k.startswith(case + "."))
    assert keys, f"no fixture for {case}"
    ours = face_cases.run_all(lucid, only=case)
    assert keys == sorted(ours)
    for key in keys:
        got, expected = np.asarray(ours[key]), EXPECTED[key]
        assert got.shape == expected.shape, f"{key}: shape {got.shape} != {expected.shape}"
        if expected.dtype.kind in "fc":
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12, equal_nan=True, err_msg=key)
        else:
            np.testing.assert_array_equal(got, expected, err_msg=key)
