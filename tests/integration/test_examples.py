"""The examples run as a newcomer runs them (a subprocess, on a tiny setting) and leave what they promise:
a loadable safetensors checkpoint, a PNG, sampled text, the seeds' printed numbers; a resumed run ends with
exactly the weights of an uninterrupted one.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import lucid_core as lc
import lucid_nn as nn

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _need_example_deps() -> None:
    """The examples' own dependencies (examples/requirements.txt): required in CI, a skip elsewhere."""
    for module in ("sklearn", "matplotlib", "tqdm"):
        if importlib.util.find_spec(module) is None:
            if os.environ.get("CI"):
                pytest.fail(f"{module} is missing: pip install -r examples/requirements.txt")
            pytest.skip(f"{module} is not installed (pip install -r examples/requirements.txt)")


def run_example(script: str, *args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MPLBACKEND": "Agg", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if check:
        assert proc.returncode == 0, f"{script} {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def load_example_module(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def weights(path: Path) -> dict[str, np.ndarray]:
    return {k: v.numpy() for k, v in nn.load(path).items()}


# -- train_digits.py ------------------------------------------------------------------------------------------
def test_train_digits_writes_a_loadable_checkpoint_and_a_png(tmp_path: Path, backend: str) -> None:
    _need_example_deps()
    out = tmp_path / "run"
    proc = run_example("train_digits.py", "--epochs", "1", "--limit", "64", "--device", backend,
                       "--out", str(out), "--no-progress", cwd=tmp_path)  # fmt: skip
    assert "test accuracy" in proc.stdout
    ckpt = out / "checkpoints" / "epoch_001.safetensors"
    model = load_example_module("train_digits").make_model("cnn")
    model.load_state_dict(nn.load(ckpt))  # strict: every key of the CNN, nothing else
    assert set(nn.load(ckpt)) == set(model.state_dict())
    assert nn.load_metadata(ckpt)["epoch"] == "1"
    state = nn.load(out / "checkpoints" / "epoch_001.train-state.safetensors")
    assert any(k.endswith(".exp_avg") for k in state)  # AdamW's moments are stored as tensors
    png = (out / "curves.png").read_bytes()
    assert png.startswith(PNG_SIGNATURE) and len(png) > 1000


def test_train_digits_mlp_shows_a_progress_bar(tmp_path: Path) -> None:
    _need_example_deps()
    proc = run_example("train_digits.py", "--model", "mlp", "--epochs", "1", "--limit", "64",
                       "--out", str(tmp_path / "mlp"), cwd=tmp_path)  # fmt: skip
    assert "epoch 1/1" in proc.stdout and "loss=" in proc.stdout and "acc=" in proc.stdout
    assert (tmp_path / "mlp" / "checkpoints" / "epoch_001.safetensors").exists()


def test_train_digits_resumed_run_equals_an_uninterrupted_one(tmp_path: Path) -> None:
    _need_example_deps()
    common = ["--epochs", "2", "--limit", "96", "--no-progress"]
    run_example("train_digits.py", *common, "--out", str(tmp_path / "straight"), cwd=tmp_path)
    run_example("train_digits.py", *common, "--stop-after", "1", "--out", str(tmp_path / "resumed"), cwd=tmp_path)
    assert not (tmp_path / "resumed" / "checkpoints" / "epoch_002.safetensors").exists()
    proc = run_example("train_digits.py", "--resume", "--no-progress", "--out", str(tmp_path / "resumed"),
                       cwd=tmp_path)  # fmt: skip
    assert "resumed from" in proc.stdout and "epoch 2:" in proc.stdout and "epoch 1:" not in proc.stdout

    for name in ("epoch_002.safetensors", "epoch_002.train-state.safetensors"):
        straight = weights(tmp_path / "straight" / "checkpoints" / name)
        resumed = weights(tmp_path / "resumed" / "checkpoints" / name)
        assert straight.keys() == resumed.keys()
        for key in straight:
            np.testing.assert_array_equal(resumed[key], straight[key], err_msg=f"{name}: {key}")
    # a different run (another seed) does differ, so the comparison above could fail
    run_example("train_digits.py", *common, "--seed", "1", "--out", str(tmp_path / "other"), cwd=tmp_path)
    other = weights(tmp_path / "other" / "checkpoints" / "epoch_002.safetensors")
    straight = weights(tmp_path / "straight" / "checkpoints" / "epoch_002.safetensors")
    assert any(not np.array_equal(other[k], straight[k]) for k in straight)


# Ctrl-C, delivered as a real SIGINT in the middle of the N-th cross_entropy call (training batches and the
# one evaluation batch per epoch all call it); the script runs as `python train_digits.py ...` would run it
CTRL_C_AT = """
import os, runpy, signal, sys
import lucid_nn.functional as F

calls, real = [0], F.cross_entropy


def cross_entropy(*args, **kwargs):
    calls[0] += 1
    for _ in range({presses} if calls[0] == {at} else 0):
        os.kill(os.getpid(), signal.SIGINT)
    return real(*args, **kwargs)


F.cross_entropy = cross_entropy
sys.argv = [{script!r}, *{args!r}]
runpy.run_path({script!r}, run_name="__main__")
"""


def run_with_ctrl_c(at: int, args: list[str], cwd: Path, presses: int = 1) -> subprocess.CompletedProcess[str]:
    script = str(EXAMPLES / "train_digits.py")
    code = CTRL_C_AT.format(at=at, presses=presses, script=script, args=args)
    env = {**os.environ, "MPLBACKEND": "Agg", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


# 77 training images in batches of 16: 5 batches an epoch, then 1 evaluation batch
CTRL_C_SETTINGS = ["--epochs", "2", "--limit", "96", "--batch-size", "16", "--no-progress"]


@pytest.fixture(scope="module")
def straight_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The uninterrupted run the interrupted ones must equal (with --keep 1, whose deletion its log names)."""
    _need_example_deps()
    cwd = tmp_path_factory.mktemp("straight")
    proc = run_example("train_digits.py", *CTRL_C_SETTINGS, "--keep", "1", "--out", str(cwd / "out"), cwd=cwd)
    assert "--keep 1: deleted older checkpoints epoch_001\n" in proc.stdout
    assert sorted(p.name for p in (cwd / "out" / "checkpoints").iterdir()) == [
        "epoch_002.safetensors", "epoch_002.train-state.safetensors"
    ]  # fmt: skip
    return cwd / "out"


@pytest.mark.parametrize(("at", "saved"), [(3, "epoch_000_step_0003"), (9, "epoch_001_step_0003")])
def test_train_digits_ctrl_c_saves_mid_epoch_and_resume_continues_exactly(
    tmp_path: Path, straight_run: Path, at: int, saved: str
) -> None:
    out = tmp_path / "interrupted"
    proc = run_with_ctrl_c(at, [*CTRL_C_SETTINGS, "--out", str(out)], cwd=tmp_path)
    assert proc.returncode == 130, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    epoch, batch = (1, 3) if at == 3 else (2, 3)
    where = f"(epoch {epoch}, after batch {batch} of 5)"
    assert f"interrupted: saved {out / 'checkpoints' / saved}.safetensors {where}" in proc.stdout
    assert f"continue with: python {EXAMPLES / 'train_digits.py'} --resume --out {out}" in proc.stdout
    assert (out / "checkpoints" / f"{saved}.safetensors").exists()

    proc = run_example("train_digits.py", "--resume", "--no-progress", "--out", str(out), cwd=tmp_path)
    assert f"(epoch {epoch - 1} and {batch} batches of 2)" in proc.stdout
    assert f"--keep 2: deleted older checkpoints {saved}" in proc.stdout  # the next epoch supersedes it
    assert not (out / "checkpoints" / f"{saved}.safetensors").exists()
    for name in ("epoch_002.safetensors", "epoch_002.train-state.safetensors"):
        straight = weights(straight_run / "checkpoints" / name)
        resumed = weights(out / "checkpoints" / name)
        assert straight.keys() == resumed.keys()
        for key in straight:
            np.testing.assert_array_equal(resumed[key], straight[key], err_msg=f"{name}: {key}")
    state = [nn.load_metadata(d / "checkpoints" / "epoch_002.train-state.safetensors") for d in (straight_run, out)]
    history = [json.loads(meta["lucid_train_state"])["history"] for meta in state]
    assert history[0] == history[1]  # the interrupted epoch's loss and accuracy count every batch once


def test_train_digits_second_ctrl_c_quits_without_a_traceback(tmp_path: Path) -> None:
    _need_example_deps()
    args = ["--epochs", "1", "--limit", "96", "--batch-size", "16", "--no-progress", "--out", str(tmp_path / "r")]
    proc = run_with_ctrl_c(2, args, cwd=tmp_path, presses=2)
    assert proc.returncode == 130 and "Traceback" not in proc.stderr
    assert "stopped without saving" in proc.stderr
    assert not (tmp_path / "r" / "checkpoints").exists()


def test_train_digits_resume_without_a_checkpoint_says_what_to_do(tmp_path: Path) -> None:
    _need_example_deps()
    proc = run_example("train_digits.py", "--resume", "--out", str(tmp_path / "empty"), cwd=tmp_path, check=False)
    assert proc.returncode != 0
    assert "no checkpoint" in proc.stderr and "without --resume" in proc.stderr


def test_training_state_json_round_trips_tuples_and_big_ints() -> None:
    _need_example_deps()
    td = load_example_module("train_digits")
    lc.manual_seed(3)
    lc.randn(2)  # load the default backend so its generator is part of the state
    state = {"rng": lc.get_rng_state(), "betas": (0.9, 0.999), "groups": [{"params": [0, 1]}]}

    assert td._from_json(json.loads(json.dumps(td._to_json(state)))) == state


# -- char_lm.py -------------------------------------------------------------------------------------------------
def test_char_lm_trains_saves_and_samples(tmp_path: Path) -> None:
    _need_example_deps()
    out = tmp_path / "lm"
    proc = run_example("char_lm.py", "--epochs", "1", "--limit", "64", "--hidden", "32", "--sample-length", "30",
                       "--prompt", "Shall I", "--out", str(out), "--no-progress", cwd=tmp_path)  # fmt: skip
    sample = proc.stdout.split("--- sample ---\n", 1)[1].split("\n---", 1)[0]
    assert sample.startswith("Shall I") and len(sample) == len("Shall I") + 30
    ckpt = out / "char_lm.safetensors"

    vocab = json.loads(nn.load_metadata(ckpt)["vocab"])
    text = (EXAMPLES / "data" / "sonnets.txt").read_text(encoding="utf-8")[:64]
    assert vocab == "".join(sorted(set(text)))
    settings = json.loads(nn.load_metadata(ckpt)["settings"])
    assert settings["hidden"] == 32
    model = load_example_module("char_lm").CharLSTM(len(vocab), hidden=32, layers=settings["layers"])
    model.load_state_dict(nn.load(ckpt))
    assert set(sample[len("Shall I") :]) <= set(vocab)


def test_bundled_text_is_small_plain_text() -> None:
    text = (EXAMPLES / "data" / "sonnets.txt").read_text(encoding="utf-8")
    assert 10_000 < len(text.encode()) < 400_000
    assert "Shall I compare thee to a summer's day?" in text


# -- the seeds' examples ----------------------------------------------------------------------------------------
def test_seed_003_dezero_prints_the_seeds_gradient(tmp_path: Path) -> None:
    proc = run_example("seeds/seed_003_dezero_steps_6_9.py", cwd=tmp_path)
    lines = proc.stdout.splitlines()
    assert lines.count("3.297442541400256") == 6
    assert lines[-1] == "Tensor 0 Tensor lucid_core.float64"
