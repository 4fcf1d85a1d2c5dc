"""The framework of the current corpus run (``CORPUS_FRAMEWORK``: torch or lucid), for the stand-ins."""

from __future__ import annotations

import importlib
import os
from typing import Any

import numpy as np


def framework() -> Any:
    """The module ``torch`` or ``lucid``, as the runner chose."""
    return importlib.import_module(os.environ.get("CORPUS_FRAMEWORK", "torch"))


def float_type() -> Any:
    """The NumPy float type of the run's images: float32, or float64 for a program run in float64 (``dtype``)."""
    return np.float64 if os.environ.get("CORPUS_DTYPE") == "float64" else np.float32


def as_tensor(array: np.ndarray) -> Any:
    """``array`` as a tensor of the current framework (NumPy did the arithmetic, so both runs see equal bytes)."""
    return framework().tensor(np.ascontiguousarray(array))


def as_numpy(value: Any) -> np.ndarray:
    """A tensor of either framework, or an array, as NumPy."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "detach"):
        return np.asarray(value.detach().numpy())
    return np.asarray(value)
