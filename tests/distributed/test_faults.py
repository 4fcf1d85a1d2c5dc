"""A rank that raises, dies or stops answering ends the whole job with a clear error, never a hang."""

from __future__ import annotations

import time

from ._launch import run_job


def _run(mode: str, **env: str) -> tuple[int, str, float]:
    start = time.monotonic()
    proc = run_job(2, "faults.py", mode, timeout=60, **env)
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start


def test_a_rank_that_raises_aborts_the_others() -> None:
    rc, out, took = _run("raise")
    assert rc != 0 and took < 30
    assert "boom on rank 1" in out
    assert "rank 1 of 2 failed with RuntimeError; aborting the job" in out
    assert "should not have" not in out


def test_a_rank_that_dies_ends_the_job() -> None:
    rc, out, took = _run("die")
    assert rc != 0 and took < 30
    assert "Killed" in out or "signal 9" in out
    assert "should not have" not in out


def test_a_rank_that_stops_answering_times_out_the_others() -> None:
    rc, out, took = _run("hang")
    assert rc != 0 and took < 30  # the 60 s sleeper is killed by the abort, not waited for
    assert "all_reduce did not complete within 3 s" in out
    assert "rank 0 of 2 failed with CommunicatorTimeoutError" in out


def test_an_abort_that_stalls_still_ends_the_job() -> None:
    rc, out, took = _run("abort_stalls", LUCID_DIST_ABORT_BACKSTOP="1")
    assert rc == 3 and took < 30, out  # the aborting rank exits by itself; the launcher then stops the other


def test_mismatched_models_raise_at_construction_on_every_rank() -> None:
    rc, out, _ = _run("mismatch")
    assert rc == 0, out
    assert out.count("ValueError: DistributedDataParallel: the ranks hold different models") == 2  # both ranks
    assert "rank 0 has parameter 'weight' of shape (4, 3) float32, rank 1 has parameter 'weight' of shape (5, 3)" in out
