"""The distributed example under mpiexec and lucid-run; lucid-run's command lines; lazy imports; docstrings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lucid_distributed import run as lucid_run
from tests.integration.test_docstrings import public_objects

from ._launch import clean_env, launcher

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "train_digits_distributed.py"


def test_the_example_trains_on_two_processes_each_with_half_of_the_data(tmp_path):
    pytest.importorskip("sklearn")
    cmd = [launcher("mpi"), "-n", "2", sys.executable, str(EXAMPLE), "--model", "mlp", "--limit", "200",
           "--epochs", "2", "--no-progress", "--out", str(tmp_path)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=clean_env(MPLBACKEND="Agg"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "rank 0 of 2: 80 of 160 training images per epoch" in proc.stdout
    assert "rank 1 of 2: 80 of 160 training images per epoch" in proc.stdout
    assert proc.stdout.count("epoch 2: train loss") == 1  # rank 0 alone reports and writes
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["epoch_001.safetensors",
                                                                            "epoch_002.safetensors"]  # fmt: skip
    assert (tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_lucid_run_starts_mpiexec_with_the_script_and_one_thread_each(tmp_path):
    script = tmp_path / "hello.py"
    script.write_text(
        "import os, lucid_distributed as d\nd.init_process_group()\n"
        "print(f'rank {d.get_rank()} of {d.get_world_size()} via {d.get_backend()} "
        'threads {os.environ["OMP_NUM_THREADS"]}\', flush=True)\n'
    )
    env = clean_env()
    env.pop("OMP_NUM_THREADS")
    proc = subprocess.run(
        [sys.executable, "-m", "lucid_distributed.run", "--nproc-per-node", "2", str(script)],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "rank 0 of 2 via mpi threads 1" in proc.stdout and "rank 1 of 2 via mpi threads 1" in proc.stdout


def test_lucid_run_command_lines(tmp_path, capsys):
    hosts = tmp_path / "hosts"
    hosts.write_text("# two machines\nnode-a\nnode-b:4\n")
    assert lucid_run.main(["--dry-run", "--nproc-per-node", "2", "--hostfile", str(hosts), "t.py", "--x", "1"]) == 0
    line = capsys.readouterr().out.split()
    assert line[1:6] == ["-n", "4", "-f", str(hosts), "-ppn"] and line[-3:] == ["t.py", "--x", "1"]
    lucid_run.main(["--dry-run", "--backend", "mlx", "--nproc-per-node", "3", "t.py"])
    line = capsys.readouterr().out.split()
    assert line[0].endswith("mlx.launch") and line[1:5] == ["--backend", "ring", "-n", "3"]
    with pytest.raises(SystemExit, match="at least 1"):
        lucid_run.main(["--nproc-per-node", "0", "t.py"])


def test_importing_lucid_distributed_and_listing_communicators_imports_no_transport():
    code = (
        "import sys, lucid_distributed, lucid_core\n"
        "names = sorted(lucid_core.communicators())\n"
        "print(names, [m for m in ('numpy', 'mlx', 'mpi4py') if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=clean_env())
    assert out.stdout.strip() == "['local', 'mlx', 'mpi'] []", out.stderr


@pytest.mark.parametrize("module_name", ["lucid_distributed", "lucid_distributed.run"])
def test_public_names_have_docstrings(module_name):
    import inspect

    missing = sorted({q for q, obj in public_objects(module_name) if not (inspect.getdoc(obj) or "").strip()})
    assert not missing, missing
