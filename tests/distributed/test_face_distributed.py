"""``lucid.distributed`` (the PyTorch face) on real processes and alone: a renamed PyTorch DDP script."""

from __future__ import annotations

from ._launch import ok_lines, run_job


def test_a_renamed_pytorch_ddp_script_runs_on_two_ranks_over_mpi() -> None:
    lines = ok_lines(run_job(2, "face_ddp.py"))
    assert [ln.split()[1:3] for ln in lines] == [["0", "2"], ["1", "2"]]
    assert len({ln.split()[3] for ln in lines}) == 1  # both ranks ended with the same weights


def test_the_same_script_runs_alone_as_a_world_of_one() -> None:
    lines = ok_lines(run_job(0, "face_ddp.py"))
    assert [ln.split()[1:3] for ln in lines] == [["0", "1"]]
