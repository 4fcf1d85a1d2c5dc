"""Start real multi-process jobs for the tests: ``mpiexec`` (from the MPI wheel) or ``mlx.launch``."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from lucid_distributed.run import find_tool

WORKERS = Path(__file__).parent / "workers"


def launcher(kind: str) -> str:
    """The launcher next to this Python; missing is a failure (requirements-test.txt installs it), not a skip."""
    name = "mpiexec" if kind == "mpi" else "mlx.launch"
    path = find_tool(name)
    assert path is not None, f"{name} is missing: pip install -r requirements-test.txt (mpi4py, mpich, mlx)"
    return path


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any launcher's variables (a test may itself run under one), one thread each."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "OMPI_", "PMIX_", "MLX_", "HYDRA_"))}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", **extra)
    return env


def run_job(
    n: int, worker: str, *args: str, kind: str = "mpi", timeout: float = 120, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run ``workers/<worker>`` on ``n`` processes (n=0: plain python, no launcher); never hangs the suite."""
    script = [sys.executable, "-u", str(WORKERS / worker), *args]
    if n == 0:
        cmd = script
    elif kind == "mpi":
        cmd = [launcher("mpi"), "-n", str(n), *script]
    else:  # the ring on ports of its own: a job just before may still hold mlx.launch's default ones
        cmd = [launcher("mlx"), "-n", str(n), "--backend", "ring", "--starting-port", str(_free_ports(n)), *script]
    with tempfile.TemporaryDirectory() as out:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, env=clean_env(LUCID_TEST_OUT=out, **env)
        )
        # each rank's verdict comes in its own file: a launcher may interleave the ranks' stdout
        proc.reports = sorted(p.read_text().strip() for p in Path(out).glob("rank*.txt"))  # type: ignore[attr-defined]
    return proc


def _free_ports(n: int) -> int:
    """The first of ``n`` consecutive TCP ports on localhost that nothing listens on now."""
    rng = random.Random()
    for _ in range(100):
        base = rng.randrange(20000, 30000)
        socks = []
        try:
            for p in range(base, base + n):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free range of TCP ports for mlx.launch's ring")


def ok_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    """The ``ok ...`` lines the workers reported, one per rank; the job's output on failure."""
    assert proc.returncode == 0, f"job failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr[-4000:]}"
    assert proc.reports, f"the job ended without a report from any rank:\n{proc.stdout}\n{proc.stderr[-4000:]}"  # type: ignore[attr-defined]
    return [ln for ln in proc.reports if ln.startswith("ok ")]  # type: ignore[attr-defined]
