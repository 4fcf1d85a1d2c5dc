"""DistributedDataParallel on real processes equals one process training on the whole batch."""

from __future__ import annotations

import pytest

from ._launch import ok_lines, run_job


def _diffs(line: str) -> dict[str, float]:
    return eval(line.split(" ", 3)[3])  # the worker prints a dict of float literals


@pytest.mark.parametrize("world", [2, 3])
def test_ddp_matches_one_process_over_mpi(backend: str, world: int) -> None:
    if world == 3 and backend != "numpy":
        pytest.skip("world size 3 runs once, on numpy (MLX over MPI is the same code path as world size 2)")
    lines = ok_lines(run_job(world, "ddp.py", backend))
    assert len(lines) == world
    for line in lines:
        diffs = _diffs(line)
        assert set(diffs) == {
            "sgd",
            "adam",
            "accumulate",
            "unused",
            "view_sgd",
            "fused_sgd",
            "fused_adam_view",
            "fused_accumulate",
            "fused_unused",
        }
        assert max(diffs.values()) < 1e-12


def test_ddp_matches_one_process_over_mx_distributed(backend: str) -> None:
    if backend != "mlx":
        pytest.skip("mx.distributed moves MLX tensors only")
    lines = ok_lines(run_job(2, "ddp.py", "mlx", kind="mlx"))
    assert len(lines) == 2 and all(max(_diffs(ln).values()) < 1e-12 for ln in lines)


def test_a_script_started_without_a_launcher_is_a_group_of_one() -> None:
    lines = ok_lines(run_job(0, "ddp.py", "numpy"))
    assert lines and lines[0].startswith("ok 0 1 ")  # rank 0 of world size 1


@pytest.mark.parametrize("world", [0, 2])
def test_bucket_views_and_the_optimizer_update_inside_backward(backend: str, world: int) -> None:
    lines = ok_lines(run_job(world, "ddp_features.py", backend))
    assert len(lines) == max(world, 1)
    # NumPy under MPI aliases .grad to the bucket buffers; MLX (immutable) and the one-process group copy
    assert all(ln.endswith(str(backend == "numpy" and world > 1)) for ln in lines), lines
