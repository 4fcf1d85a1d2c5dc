"""docs/writing-a-backend.md, followed literally: its files are written and its commands run.

The steps run in a throwaway virtual environment that sees this environment's packages, so the
``pip install -e`` of the walk-through installs into the venv only.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

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
def test_following_the_walk_through_gives_a_working_tested_plugin(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=300)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(venv)}
    env.pop("LUCID_TEST_BACKENDS", None)
    env.pop("PYTHONPATH", None)
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
