"""Every example on docs/coming-from-pytorch.md runs and its assertions hold (the page states no behaviour
that is not checked here or in the fixture comparisons beside this file)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "coming-from-pytorch.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


def test_the_page_has_examples() -> None:
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_page_example_runs(index: int, tmp_path: Path) -> None:
    script = tmp_path / f"example_{index}.py"
    script.write_text(BLOCKS[index], encoding="utf-8")
    env = {k: v for k, v in __import__("os").environ.items() if k != "LUCID_STRICT_DEVICE"}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, f"example {index} failed:\n{BLOCKS[index]}\n{proc.stderr}"


def test_strict_device_makes_gpu_without_a_gpu_an_error(tmp_path: Path) -> None:
    import lucid

    if lucid.accelerator.is_available():
        pytest.skip("this machine has a GPU")
    code = "import lucid\nlucid.randn(2).to('cuda')\n"
    env = {**__import__("os").environ, "LUCID_STRICT_DEVICE": "1"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode != 0 and "LUCID_STRICT_DEVICE is set" in proc.stderr


def test_save_and_load_are_safetensors(tmp_path: Path) -> None:
    import lucid
    import lucid.nn as nn

    model = nn.Linear(3, 2)
    path = tmp_path / "model.pt"
    lucid.save(model.state_dict(), path)
    assert path.read_bytes()[8:9] == b"{"  # a safetensors header (JSON after an 8-byte length), not a pickle
    state = lucid.load(path, map_location="cpu", weights_only=True)
    assert set(state) == {"weight", "bias"}
    assert lucid.equal(state["weight"], model.weight.detach())


def test_distributed_names_its_install_command() -> None:
    import importlib.util

    import lucid.distributed as dist

    if importlib.util.find_spec("lucid_distributed") is not None:
        pytest.skip("lucid_distributed is installed")
    assert dist.is_available() is False
    with pytest.raises(ImportError, match=r"pip install \./lucid_distributed"):
        dist.init_process_group
    import lucid.nn.parallel as parallel

    with pytest.raises(ImportError, match=r"pip install \./lucid_distributed"):
        parallel.DistributedDataParallel
