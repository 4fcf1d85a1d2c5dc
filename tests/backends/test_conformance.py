"""Lucid's own backends run the same conformance kit a third-party plugin author would."""

from __future__ import annotations

import pytest

import lucid_core as lc
from lucid_core.testing import BackendConformance

from ..conftest import BACKENDS


class TestNumpyConformance(BackendConformance):
    backend = "numpy"


@pytest.mark.skipif("mlx" not in BACKENDS, reason="the MLX backend is not installed")
class TestMlxConformance(BackendConformance):
    backend = "mlx"


def test_kit_lists_unknown_backends_clearly():
    class Ghost(BackendConformance):
        backend = "ghost"

    with pytest.raises(ValueError, match="no backend named 'ghost'"):
        Ghost().device
    assert "numpy" in {b.name for b in lc.backends()}
