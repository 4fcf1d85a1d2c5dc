"""Generate the PyTorch fixtures for tests/pytorch_face (run once, by hand; PyTorch is not a test dependency).

    pip install torch==2.13.0
    python tests/pytorch_face/make_torch_fixtures.py

For each program in ``programs/`` (PyTorch spelling): build the model under ``torch.manual_seed(0)`` in
float64, run it on generated data, and store the initial weights (``w:``), the data (``d:``) and every
output (``o:``) in ``fixtures/<program>.npz``. The face functions' cases are stored in ``fixtures/functions.npz``
by ``face_cases.py``.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"


def program(name: str) -> types.ModuleType:
    """A program from ``programs/``, run as written (PyTorch)."""
    module = types.ModuleType(f"torch_program_{name}")
    code = (HERE / "programs" / f"{name}.py").read_text(encoding="utf-8")
    exec(compile(code, str(HERE / "programs" / f"{name}.py"), "exec"), module.__dict__)
    return module


def program_data(name: str) -> dict[str, np.ndarray]:
    """The inputs each program runs on (generated, small)."""
    rng = np.random.default_rng(0)
    if name == "gpt":
        idx = rng.integers(0, 23, (2, 8))
        return {"idx": idx, "targets": np.roll(idx, -1, axis=1)}
    if name == "cnn":
        y = rng.integers(0, 3, 24)
        x = rng.normal(0, 1, (24, 1, 8, 8)) + y[:, None, None, None] * np.eye(8)[None, None]
        return {"x": x, "y": y}
    if name == "lstm_lm":
        return {"tokens": rng.integers(0, 17, (3, 16))}
    if name == "vae":
        return {"x": rng.uniform(0, 1, (6, 12)), "eps": rng.normal(0, 1, (4, 6, 3))}
    raise ValueError(name)


PROGRAMS = ("gpt", "cnn", "lstm_lm", "vae")


def main() -> None:
    FIXTURES.mkdir(exist_ok=True)
    for name in PROGRAMS:
        mod = program(name)
        torch.manual_seed(0)
        model = mod.build().double()
        data = program_data(name)
        store = {f"w:{k}": v.detach().numpy().copy() for k, v in model.state_dict().items()}
        store.update({f"d:{k}": v for k, v in data.items()})
        outputs = mod.run(model, data)
        store.update({f"o:{k}": np.asarray(v) for k, v in outputs.items()})
        np.savez_compressed(FIXTURES / f"{name}.npz", **store)
        print(f"{name}: {len(outputs)} outputs")
    spec = importlib.util.spec_from_file_location("face_cases", HERE / "face_cases.py")
    cases = importlib.util.module_from_spec(spec)
    sys.modules["face_cases"] = cases
    spec.loader.exec_module(cases)
    results = cases.run_all(torch)
    np.savez_compressed(FIXTURES / "functions.npz", **results)
    print(f"functions: {len(results)} results")


if __name__ == "__main__":
    main()
