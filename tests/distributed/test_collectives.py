"""Every collective, reduction op and dtype, on real processes (world sizes 2 and 3), on every backend."""

from __future__ import annotations

import pytest

from ._launch import ok_lines, run_job


@pytest.mark.parametrize("world", [2, 3])
def test_every_collective_op_and_dtype_over_mpi(backend: str, world: int) -> None:
    lines = ok_lines(run_job(world, "collectives.py", "mpi", backend))
    assert [ln.split()[1] for ln in lines] == [str(r) for r in range(world)]
    checks = {ln.split()[2] for ln in lines}
    assert len(checks) == 1 and int(checks.pop()) > 200  # every rank ran every check


@pytest.mark.parametrize("world", [2, 3])
def test_every_collective_op_and_dtype_over_mx_distributed(backend: str, world: int) -> None:
    if backend != "mlx":
        pytest.skip("mx.distributed moves MLX tensors only (the numpy backend is covered over MPI)")
    lines = ok_lines(run_job(world, "collectives.py", "mlx", "mlx", kind="mlx"))
    assert [ln.split()[1] for ln in lines] == [str(r) for r in range(world)]
