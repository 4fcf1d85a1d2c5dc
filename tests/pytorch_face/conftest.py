"""Helpers of the PyTorch-face tests: the rule (scripts/torch_to_lucid.py) and the checked-in fixtures."""

from __future__ import annotations

import importlib.util
import types
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _load(path: Path, name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


rule = _load(ROOT / "scripts" / "torch_to_lucid.py", "torch_to_lucid")


def translated_program(name: str) -> types.ModuleType:
    """A program from ``programs/`` (PyTorch spelling) after the rule, executed as a module."""
    path = HERE / "programs" / f"{name}.py"
    module = types.ModuleType(f"lucid_program_{name}")
    code = rule.translate(path.read_text(encoding="utf-8"))
    exec(compile(code, f"{path} (torch -> lucid)", "exec"), module.__dict__)
    return module


def fixture(name: str) -> dict[str, dict[str, np.ndarray]]:
    """``fixtures/<name>.npz`` split into weights (``w``), data (``d``) and PyTorch's outputs (``o``)."""
    with np.load(HERE / "fixtures" / f"{name}.npz") as f:
        parts: dict[str, dict[str, np.ndarray]] = {"w": {}, "d": {}, "o": {}}
        for key in f.files:
            kind, _, rest = key.partition(":")
            parts[kind][rest] = f[key]
    return parts
