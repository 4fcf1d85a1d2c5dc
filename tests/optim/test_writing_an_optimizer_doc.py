"""The "Writing an optimizer" example in docs/api/lucid_optim.md runs and its assertions hold."""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "api" / "lucid_optim.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8").split("## Writing an optimizer")[-1], re.S)


def test_the_writing_an_optimizer_example_runs() -> None:
    assert len(BLOCKS) == 1
    namespace: dict[str, object] = {"__name__": "doc_example"}
    exec(compile(BLOCKS[0], str(PAGE), "exec"), namespace)
    assert "HeavyBall" in namespace
