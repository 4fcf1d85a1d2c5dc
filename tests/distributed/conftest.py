"""Jobs several tests share: one four-rank job checks ZeRO and writes the sharded checkpoint others resume."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._launch import ok_lines, run_job


@pytest.fixture(scope="session")
def zero_four_ranks(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], Path]:
    """``workers/zero.py`` on four ranks (numpy), which also saves ``ckpt.py``'s checkpoint: its ok lines and folder."""
    folder = tmp_path_factory.mktemp("sharded") / "ckpt"
    return ok_lines(run_job(4, "zero.py", "numpy", str(folder))), folder
