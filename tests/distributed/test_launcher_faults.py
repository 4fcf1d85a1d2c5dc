"""lucid-run on real processes: a rank that exits 0 early, is killed with SIGKILL or raises makes the job
fail with a message naming that rank and what happened, and no other rank is left running."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ._launch import WORKERS, clean_env


def _lucid_run(mode: str, tmp_path: Path, grace: float = 2.0) -> tuple[int, str, float, list[int]]:
    cmd = [sys.executable, "-m", "lucid_distributed.run", "--nproc-per-node", "2", "--grace", str(grace),
           str(WORKERS / "launcher_faults.py"), mode]  # fmt: skip
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=clean_env(LUCID_TEST_OUT=str(tmp_path)))
    took = time.monotonic() - start
    pids = [int(p.read_text()) for p in sorted(tmp_path.glob("pid*"))]
    return proc.returncode, proc.stdout + proc.stderr, took, pids


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize(("mode", "what"), [
    ("exit0", "rank 1 (pid {pid}) exited (its interpreter shut down: sys.exit, the end of the script, or an exception) "
              "after 1 collective, but rank 0 has started collective #2 (all_reduce), which rank 1 will never join"),
    ("osexit0", "rank 1 (pid {pid}) died without shutting down (killed by a signal such as SIGKILL, a crash, or "
                "os._exit) after 1 collective"),
    ("kill", "rank 1 (pid {pid}) died without shutting down (killed by a signal such as SIGKILL"),
    ("raise", "rank 1 (pid {pid}) failed with RuntimeError: boom on rank 1"),
])  # fmt: skip
def test_a_rank_that_leaves_early_fails_the_job_and_the_others_are_stopped(mode: str, what: str, tmp_path) -> None:
    rc, out, took, pids = _lucid_run(mode, tmp_path)
    assert rc != 0, out
    assert len(pids) == 2, out
    assert "lucid-run: " + what.format(pid=pids[1]) in out, out
    assert "finished with" not in out  # rank 0 never completed the collective rank 1 skipped
    assert took < 30  # the ranks' own timeout is 120 s: lucid-run ended the job, not the timeout
    assert not any(_running(p) for p in pids), out


def test_a_rank_that_ignores_sigterm_is_still_stopped(tmp_path) -> None:
    rc, out, took, pids = _lucid_run("stubborn", tmp_path, grace=1.0)
    assert rc != 0
    assert f"lucid-run: rank 1 (pid {pids[1]}) exited" in out and "stopping ranks [0]" in out, out
    assert took < 30 and not any(_running(p) for p in pids)


IGNORE_TERM = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"
)


def test_stop_terminates_then_kills_after_the_grace_period(tmp_path, capsys) -> None:
    """The launcher and a rank that both ignore SIGTERM: SIGKILL after the grace period ends them."""
    from lucid_distributed._status import RankStatus
    from lucid_distributed.run import stop

    def start() -> subprocess.Popen[bytes]:
        p = subprocess.Popen([sys.executable, "-c", IGNORE_TERM], stdout=subprocess.PIPE, start_new_session=True)
        assert p.stdout is not None and p.stdout.readline() == b"up\n"  # its handler is in place
        return p

    launcher, rank = start(), start()
    record = RankStatus(str(tmp_path), 0, pid=rank.pid)  # the record names the stubborn process as rank 0
    begin = time.monotonic()
    stop(launcher, str(tmp_path), grace=1.0)
    took = time.monotonic() - begin
    rank.wait(timeout=10)
    del record
    assert launcher.returncode == -9 and rank.returncode == -9  # SIGKILL, after SIGTERM did nothing
    assert 1.0 <= took < 10
    assert f"rank processes [{rank.pid}] ignored SIGTERM for 1 s; killing them" in capsys.readouterr().err


def test_a_rank_working_on_after_the_last_collective_is_not_a_fault(tmp_path) -> None:
    rc, out, _, pids = _lucid_run("late", tmp_path)
    assert rc == 0, out
    assert "rank 0 finished with [4.0, 4.0, 4.0, 4.0]" in out and "rank 1 finished with" in out
    assert "lucid-run:" not in out and len(pids) == 2
