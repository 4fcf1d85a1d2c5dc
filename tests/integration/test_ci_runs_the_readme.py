"""`.ci/run` runs the README's two commands verbatim, each in a fresh virtual environment, so a green CI
means a newcomer's green run."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
CI = (ROOT / ".ci" / "run").read_text()


def readme_command(after: str) -> str:
    """The first bash block after the text ``after`` in the README."""
    return re.search(re.escape(after) + r".*?```bash\n(.*?)\n```", README, re.S)[1]


def test_ci_runs_the_quick_start_and_the_test_command_verbatim() -> None:
    quick_start = readme_command("## Quick start")
    tests = readme_command("The whole test suite")
    assert (
        quick_start == "pip install -r requirements.txt -r examples/requirements.txt && python examples/train_digits.py"
    )
    assert tests == "pip install -r requirements-test.txt && python -m pytest -q"
    lines = [line.strip() for line in CI.splitlines()]
    assert quick_start in lines and tests in lines
    # each after its own fresh venv, the suite with both backends required, the contracts last
    assert lines.index("fresh_venv quickstart") < lines.index(quick_start)
    assert lines.index(quick_start) < lines.index("fresh_venv tests") < lines.index(tests)
    assert 'export LUCID_TEST_BACKENDS="${LUCID_TEST_BACKENDS:-numpy,mlx}"' in lines
    assert [line for line in lines if line and not line.startswith("#")][-1] == "lint-imports"
