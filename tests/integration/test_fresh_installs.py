"""The README's partial installs, each in a fresh virtual environment: MLX only (no NumPy anywhere) and
the core alone. Lucid's distributions are wheels built from this checkout; pluggy and MLX come from pip.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from .conftest import FreshVenv

MLX_ONLY = """
import importlib.util
import lucid_core as lc

assert importlib.util.find_spec("numpy") is None, "numpy is installed"
x = lc.asarray([[1.5, -2.0], [0.25, 4.0]])
print(x)
w = lc.Parameter(lc.ones((1, 3)))
print(w)
print(lc.arange(2000, dtype=lc.int32) * 1)
print(x.tolist(), x.sum().item())
try:
    x.numpy()
except ModuleNotFoundError as exc:
    print("numpy() ->", exc)
"""


@pytest.mark.slow
def test_mlx_only_prints_and_computes_without_numpy(fresh_venv: FreshVenv, lucid_wheels: dict[str, Path]) -> None:
    fresh_venv.pip(str(lucid_wheels["lucid_core"]), str(lucid_wheels["lucid_backend_mlx"]))
    out = fresh_venv.run(textwrap.dedent(MLX_ONLY))
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines() == [
        "tensor([[ 1.5000, -2.0000],",
        "        [ 0.2500,  4.0000]], dtype=float32, device=mlx:cpu)",
        "Parameter containing:",
        "tensor([[1., 1., 1.]], dtype=float32, device=mlx:cpu, requires_grad=True)",
        "tensor([   0,    1,    2,  ..., 1997, 1998, 1999], dtype=int32, device=mlx:cpu)",
        "[[1.5, -2.0], [0.25, 4.0]] 3.75",
        "numpy() -> numpy(): NumPy is not installed; install it with `pip install numpy` "
        "(tolist() and printing work without it)",
    ]


CORE_ONLY = """
import lucid_core as lc

for spec in (None, "mlx"):
    try:
        lc.zeros(2, device=spec)
    except Exception as exc:
        print(spec, "->", type(exc).__name__, exc)
"""


@pytest.mark.slow
def test_the_core_alone_says_which_backend_to_install(fresh_venv: FreshVenv, lucid_wheels: dict[str, Path]) -> None:
    fresh_venv.pip(str(lucid_wheels["lucid_core"]))
    out = fresh_venv.run(textwrap.dedent(CORE_ONLY))
    assert out.returncode == 0, out.stdout + out.stderr
    default, mlx = out.stdout.splitlines()
    assert default.startswith(
        "None -> RuntimeError no installed backend offers a 'cpu' device; available devices: none; install a backend: "
        "`pip install lucid-backend-numpy` (NumPy, on the CPU) or `pip install lucid-backend-mlx`"
    )
    assert default.endswith("(from a checkout of Lucid: `pip install ./lucid_backend_numpy`)")
    assert mlx.startswith("mlx -> ValueError unknown device 'mlx': no backend named 'mlx'; installed backends: none")
    assert "`pip install lucid-backend-mlx` (from a checkout of Lucid: `pip install ./lucid_backend_mlx`)" in mlx
