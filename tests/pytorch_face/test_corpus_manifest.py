"""The public corpus harness (scripts/corpus): its manifest is well-formed, and its logic (the rule, patches, the
recorder, the comparison) works on one tiny in-repo program, programs/corpus_tiny.py, whose torch run was
recorded once by ``fixtures/generate_corpus_tiny.py``. The real corpus run needs the mirrors of the public
repositories and PyTorch: it is marked ``corpus`` and runs only with ``LUCID_CORPUS=1``
(``LUCID_CORPUS=1 python -m pytest -m corpus tests/pytorch_face/test_corpus_manifest.py``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .conftest import HERE, ROOT

CORPUS = ROOT / "scripts" / "corpus"


def _load(name: str):
    """A module of scripts/corpus by its own name (they import each other as ``harness``, ``restore``)."""
    if name in sys.modules and getattr(sys.modules[name], "__file__", "") == str(CORPUS / f"{name}.py"):
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, CORPUS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(CORPUS))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(CORPUS))
    return module


harness = _load("harness")


def _entry(**changes):
    entry = {
        "name": "x",
        "kind": "vision",
        "repo": "pytorch/examples",
        "commit": "0" * 40,
        "files": ["mnist/main.py"],
        "root": "mnist",
        "entry": "main.py",
    }
    entry.update(changes)
    return entry


def test_the_manifest_has_thirty_varied_programs_pinned_to_commits() -> None:
    programs = harness.load_manifest()
    assert len(programs) >= 30
    assert len({p.name for p in programs}) == len(programs)
    assert len({p.kind for p in programs}) >= 6
    assert len({p.repo for p in programs}) >= 5
    for p in programs:
        assert len(p.commit) == 40 and p.files and p.entry, p.name
        for path, old, _new in p.patches:
            assert old and (path in p.files or path == p.entry or p.root + "/" + path in p.files), p.name


def test_a_well_formed_entry_has_no_problems() -> None:
    assert harness.validate(_entry()) == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"commit": "77f55b9"}, "commit must be 40 hex digits"),
        ({"kind": "audio"}, "kind 'audio'"),
        ({"repo": "examples"}, "repo must be owner/name"),
        ({"stepz": 3}, "unknown key `stepz`"),
        ({"steps": "3"}, "`steps` must be a int"),
        ({"files": ["vae/main.py"]}, "outside root mnist"),
        ({"data": ["imagenet"]}, "data maker 'imagenet'"),
        ({"patches": [["main.py", "x"]]}, "a patch is [file, old, new]"),
    ],
)
def test_a_malformed_entry_is_named_with_its_problem(change, problem) -> None:
    problems = harness.validate(_entry(**change))
    assert any(problem in p for p in problems), problems


def test_patches_replace_text_and_refuse_text_that_is_not_there() -> None:
    files = {"main.py": "for i in count(1):\n"}
    assert harness.apply_patches(files, [["main.py", "count(1)", "range(3)"]]) == {"main.py": "for i in range(3):\n"}
    with pytest.raises(ValueError, match="not found"):
        harness.apply_patches(files, [["main.py", "count(2)", "range(3)"]])
    with pytest.raises(KeyError, match="other.py"):
        harness.apply_patches(files, [["other.py", "a", "b"]])


def test_the_lucid_copy_renames_python_files_only() -> None:
    out = harness.translate_files({"a.py": "import torch\nimport torchvision\n", "input.txt": "torch"})
    assert out == {"a.py": "import lucid\nimport torchvision\n", "input.txt": "torch"}


def test_printed_numbers_agree_within_one_unit_of_their_last_digit() -> None:
    ignore = harness.Program.stdout_ignore
    assert harness.compare_stdout("loss 0.123456\n", "loss 0.123457\n", ignore, 1e-9)[1] == ""
    ratio, first = harness.compare_stdout("loss 0.123456\n", "loss 0.123470\n", ignore, 1e-9)
    assert ratio > 1 and first == "stdout line 1: 0.123470 vs torch 0.123456"
    assert harness.compare_stdout("a 1 2\n", "a 1\n", ignore, 1e-4)[1] == "printed 1 numbers, torch printed 2"
    assert harness.compare_stdout("took 3.2 ms\nloss 1.0\n", "took 9.9 ms\nloss 1.0\n", ignore, 1e-4)[1] == ""


def test_records_compare_by_relative_difference_and_name_the_first_step_that_differs() -> None:
    g = np.array([1.0, -2.0, 4.0], dtype=np.float32)
    theirs = {"o0/init/0": g, "o0/s0/g/0": g, "o0/s1/g/0": g, "o0/s10/g/0": g}
    same = harness.compare_records(theirs, dict(theirs), 1e-4)
    assert same.max_diff == 0 and same.first == "" and same.compared == 4
    off = dict(theirs, **{"o0/s1/g/0": g * 1.01, "o0/s10/g/0": g * 2})
    result = harness.compare_records(theirs, off, 1e-4)
    assert result.first.startswith("o0/s1/g/0: rel diff 1.00e-02") and result.max_diff == pytest.approx(1.0)
    assert harness.compare_records(theirs, {k: v for k, v in theirs.items() if "s1/" not in k}, 1e-4).first == (
        "o0/s1/g/0 missing in the lucid run"
    )


def test_own_initialisation_is_reported_not_compared() -> None:
    w = np.ones(3, dtype=np.float32)
    ours = {"o0/init/0": w, "o0/own_init/0": w * 3}
    result = harness.compare_records({"o0/init/0": w}, ours, 1e-4)
    assert result.first == "" and result.seed_init_equal is False
    assert harness.compare_records({"o0/init/0": w}, {"o0/init/0": w, "o0/own_init/0": w}, 1e-4).seed_init_equal


def _run_tiny_with_lucid(tmp_path: Path, patches: list[list[str]]) -> tuple[dict[str, np.ndarray], str]:
    source = (HERE / "programs" / "corpus_tiny.py").read_text(encoding="utf-8")
    files = harness.translate_files(harness.apply_patches({"corpus_tiny.py": source}, patches))
    (tmp_path / "corpus_tiny.py").write_text(files["corpus_tiny.py"], encoding="utf-8")
    shutil.copy(HERE / "fixtures" / "corpus_tiny.npz", tmp_path / "torch.npz")
    env = {**os.environ, "PYTHONPATH": str(harness.SHIM)}
    env.pop("LUCID_DEVICE", None)
    cmd = [sys.executable, "-m", "_corpus_runner", "--framework", "lucid", "--record", "record.npz"]
    cmd += ["--steps", "3", "--dropout-off", "--init-from", "torch.npz", "corpus_tiny.py"]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert '"error": null' in (tmp_path / "record.json").read_text(encoding="utf-8")
    return dict(np.load(tmp_path / "record.npz")), done.stdout


def test_the_tiny_program_renamed_gives_pytorchs_recorded_steps(tmp_path) -> None:
    ours, stdout = _run_tiny_with_lucid(tmp_path, [])
    theirs = dict(np.load(HERE / "fixtures" / "corpus_tiny.npz"))
    result = harness.compare_records(theirs, ours, 1e-4)
    assert result.first == "" and result.compared == len([k for k in theirs if "own_init" not in k]) > 12
    torch_stdout = (HERE / "fixtures" / "corpus_tiny_stdout.txt").read_text(encoding="utf-8")
    assert harness.compare_stdout(torch_stdout, stdout, harness.Program.stdout_ignore, 1e-4)[1] == ""


def test_a_changed_program_is_caught_by_the_comparison(tmp_path) -> None:
    ours, stdout = _run_tiny_with_lucid(tmp_path, [["corpus_tiny.py", "default=0.1", "default=0.12"]])
    theirs = dict(np.load(HERE / "fixtures" / "corpus_tiny.npz"))
    # the loss of step 0 is printed before the step, from equal weights; the first step's update differs
    assert harness.compare_records(theirs, ours, 1e-4).first.startswith("o0/s0/p/")
    assert stdout.splitlines()[0] == "step 0 loss 0.745446"


def _corpus_ready() -> str:
    if os.environ.get("LUCID_CORPUS") != "1":
        return "the real corpus run is opt-in: LUCID_CORPUS=1"
    restore = _load("restore")
    absent = restore.missing(harness.load_manifest())
    if absent:
        return f"mirrors missing ({', '.join(absent)}): fetch them first"
    torch_python = os.environ.get("LUCID_CORPUS_TORCH_PYTHON", "/work/torchvenv/bin/python")
    if not Path(torch_python).exists():
        return f"no PyTorch interpreter at {torch_python}"
    return ""


@pytest.mark.corpus
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("name", [p.name for p in harness.load_manifest()])
def test_corpus_program_passes(name: str, tmp_path) -> None:
    reason = _corpus_ready()
    if reason:
        pytest.skip(reason)
    run_corpus = _load("run_corpus")
    program = next(p for p in harness.load_manifest() if p.name == name)
    row = run_corpus.run_program(program, tmp_path)
    assert row["status"] == "pass", row["detail"]
