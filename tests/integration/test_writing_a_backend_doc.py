"""docs/writing-a-backend.md, followed literally: its files are written and its commands run.

The steps run in a fresh virtual environment (see ``conftest.py``) holding what the page asks for: Lucid's
core (and the NumPy backend, which the conformance kit compares against) built from this checkout, NumPy,
array-api-compat and pytest; the walk-through's own ``pip install -e`` then installs into that venv only.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from .conftest import FreshVenv

DOC = Path(__file__).resolve().parents[2] / "docs" / "writing-a-backend.md"
BLOCK = re.compile(r"(?:File: `(?P<path>[^`]+)`\s*\n\s*\n)?```(?P<lang>\w+)\n(?P<body>.*?)```", re.S)


def steps() -> list[tuple[str, str | None, str]]:
    """(language, file path or None, body) for every code block, in order."""
    return [(m["lang"], m["path"], m["body"]) for m in BLOCK.finditer(DOC.read_text())]


def test_the_walk_through_has_files_and_commands():
    kinds = [(lang, path is not None) for lang, path, _ in steps()]
    assert ("toml", True) in kinds and ("python", True) in kinds
    assert ("bash", False) in kinds and ("python", False) in kinds


@pytest.mark.slow
def test_following_the_walk_through_gives_a_working_tested_plugin(
    tmp_path: Path, fresh_venv: FreshVenv, lucid_wheels: dict[str, Path]
) -> None:
    core, numpy_backend = lucid_wheels["lucid_core"], lucid_wheels["lucid_backend_numpy"]
    fresh_venv.pip(str(core), str(numpy_backend), "pytest", "array-api-compat")
    bindir, env = fresh_venv.bindir, fresh_venv.env
    work = tmp_path / "work"
    work.mkdir()
    outputs = []
    for lang, path, body in steps():
        if path is not None:
            target = work / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(body)
            continue
        if lang == "bash":
            cmd = ["bash", "-euo", "pipefail", "-c", body]
        elif lang == "python":
            cmd = [str(bindir / "python"), "-c", body]
        else:
            continue
        out = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, (
            f"step failed:\n{body}\n--- stdout\n{out.stdout[-3000:]}\n--- stderr\n{out.stderr[-3000:]}"
        )
        outputs.append(out.stdout)
    joined = "\n".join(outputs)
    assert "('mine', 'ok')" in joined
    assert "mine:cpu" in joined
    assert re.search(r"\d+ passed", joined) and " failed" not in joined
