"""Fresh virtual environments for the integration tests, independent of how this interpreter was made.

A test that needs "a newcomer's machine" gets a plain venv (no ``--system-site-packages``: inside a venv
that flag exposes the *base* interpreter's packages, not this one's) and installs into it explicitly:
Lucid's own distributions as wheels built once per session from this checkout (``--no-deps``, no build
isolation, so nothing of Lucid comes from an index), and third-party packages with ordinary pip (which
answers from its cache).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOCAL_DISTRIBUTIONS = ("lucid_core", "lucid_backend_numpy", "lucid_backend_mlx")


@dataclass
class FreshVenv:
    """A throwaway virtual environment: its interpreter, its bin folder and an environment that activates it."""

    python: Path
    bindir: Path
    env: dict[str, str]

    def pip(self, *args: str) -> None:
        """``pip install`` into this venv; fails the test with pip's output if pip fails."""
        proc = subprocess.run(
            [str(self.python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *args],
            env=self.env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert proc.returncode == 0, f"pip install {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"

    def run(self, code: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """Run ``python -c code`` in this venv."""
        return subprocess.run(
            [str(self.python), "-c", code], env=self.env, cwd=cwd, capture_output=True, text=True, timeout=600
        )


@pytest.fixture(scope="session")
def lucid_wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Wheels of the core and both backends, built offline from a copy of this checkout (no build/ left here)."""
    work = tmp_path_factory.mktemp("lucid-wheels")
    src = work / "src"
    for name in LOCAL_DISTRIBUTIONS:
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    out = work / "wheels"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out),
         *(str(src / name) for name in LOCAL_DISTRIBUTIONS)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, f"building Lucid's wheels failed:\n{proc.stdout}\n{proc.stderr}"
    wheels = {}
    for name in LOCAL_DISTRIBUTIONS:
        (wheel,) = out.glob(f"{name}-*.whl")
        wheels[name] = wheel
    return wheels


@pytest.fixture
def fresh_venv(tmp_path: Path) -> FreshVenv:
    """A new, empty venv (pip only) made with this interpreter, and an environment in which it is active."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(venv)}
    for name in ("LUCID_TEST_BACKENDS", "PYTHONPATH", "PYTHONHOME", "LUCID_DEVICE", "LUCID_LOAD_PLUGINS"):
        env.pop(name, None)
    return FreshVenv(bindir / "python", bindir, env)
