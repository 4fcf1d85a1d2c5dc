"""The API reference site (mkdocs + mkdocstrings, generated from the docstrings) builds without a warning."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_mkdocs_builds_the_api_reference_strictly(tmp_path: Path) -> None:
    for module in ("mkdocs", "mkdocstrings", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(module.split(".")[0]) is None:
            pytest.skip(f"{module} is not installed (pip install -r requirements-docs.txt)")
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    log = proc.stdout + proc.stderr
    warnings = [line for line in log.splitlines() if "WARNING" in line]
    assert proc.returncode == 0 and not warnings, "mkdocs build --strict failed:\n" + "\n".join(warnings or [log])
    for page in ("lucid_core", "lucid_nn", "lucid_optim", "lucid_data"):
        html = (site / "api" / page / "index.html").read_text(encoding="utf-8")
        assert 'id="' + page + '"' in html or f"{page}</code>" in html, f"{page}: no API content rendered"
    core = (site / "api" / "lucid_core" / "index.html").read_text(encoding="utf-8")
    assert "lucid_core.Tensor" in core and "lucid_core.permute_dims" in core
    assert "lucid_optim.AdamW" in (site / "api" / "lucid_optim" / "index.html").read_text(encoding="utf-8")
    assert "lucid_data.DataLoader" in (site / "api" / "lucid_data" / "index.html").read_text(encoding="utf-8")
