"""ZeroRedundancyOptimizer on real processes equals one process's optimizer; each rank holds ~1/N of the state."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._launch import ok_lines, run_job


def _results(line: str) -> dict:
    return eval(line.split(" ", 3)[3])  # the worker prints a dict of literals


def _check(lines: list[str], world: int) -> None:
    assert len(lines) == world
    for line in lines:
        r = _results(line)
        assert max(r[k] for k in ("sgd", "adam", "adam_bucket_view", "resumed")) < 1e-12, r
        assert r["state_share"] < 1.3 / world, r  # the fullest rank holds about 1/N of the optimizer state


def test_zero_with_ddp_on_two_ranks_matches_one_process_and_halves_the_state(backend: str) -> None:
    _check(ok_lines(run_job(2, "zero.py", backend)), 2)


def test_zero_with_ddp_on_four_ranks_matches_one_process(zero_four_ranks: tuple[list[str], Path]) -> None:
    _check(zero_four_ranks[0], 4)


def test_the_face_names_zero_redundancy_optimizer() -> None:
    import lucid
    import lucid.distributed.optim
    import lucid_distributed.optim

    assert lucid.distributed.optim.ZeroRedundancyOptimizer is lucid_distributed.optim.ZeroRedundancyOptimizer
    with pytest.raises(NotImplementedError, match="overlap_with_ddp"):
        params = [lucid.nn.Parameter(lucid.zeros(2))]
        lucid.distributed.optim.ZeroRedundancyOptimizer(params, lucid.optim.SGD, overlap_with_ddp=True, lr=0.1)
