"""Ranks that disagree on a collective (shape, dtype, op, source, which collective) all raise an error
naming the ranks and what each passed, and no data moves; the check can be switched off; DDP skips it
where its own construction check already guarantees equal shapes."""

from __future__ import annotations

import json

import pytest

from ._launch import ok_lines, run_job


def _messages(lines: list[str]) -> list[dict[str, str]]:
    return [json.loads(ln.split(" ", 2)[2]) for ln in lines]


def _expected(world: int) -> dict[str, str]:
    odd, rest = f"rank {world - 1}", "rank 0" if world == 2 else f"ranks {', '.join(map(str, range(world - 1)))}"
    return {
        "all_reduce shape": f"all_reduce: {odd} passed float32 (4, 3), {rest} passed float32 (3, 3); ",
        "all_reduce dtype": f"all_reduce: {odd} passed int32 (3,), {rest} passed float32 (3,); ",
        "all_reduce op": f"all_reduce: {odd} passed float32 (3,) with op MAX, {rest} passed float32 (3,) with op SUM; ",
        "all_reduce async": f"all_reduce: {odd} passed float32 (2,), {rest} passed float32 (3,); ",
        "broadcast shape": f"broadcast: {odd} passed float32 (5,), {rest} passed float32 (2,); ",
        "broadcast src": f"broadcast: {odd} passed float32 (2,) with src=1, {rest} passed float32 (2,) with src=0; ",
        "all_gather shape": f"all_gather: {odd} passed float32 (2, 2), {rest} passed float32 (2, 1); ",
        "all_gather_into_tensor dtype": (
            f"all_gather_into_tensor: {odd} passed int32 (2,), {rest} passed float32 (2,); "
        ),
        "reduce_scatter_tensor shape": (
            f"reduce_scatter_tensor: {odd} passed float32 ({3 * world},), {rest} passed float32 ({2 * world},); "
        ),
        "different collectives": (
            f"the ranks called different collectives: {odd} called broadcast(src=0) with float32 (3,), "
            f"{rest} called all_reduce(SUM) with float32 (3,); "
        ),
        "barrier against all_reduce": (
            f"the ranks called different collectives: {odd} called barrier, {rest} called all_reduce(SUM) with "
            "float32 (3,); "
        ),
    }


def _check(lines: list[str], world: int) -> None:
    assert [ln.split()[1] for ln in lines] == [str(r) for r in range(world)]  # every rank got through
    expected = _expected(world)
    for messages in _messages(lines):
        assert set(messages) == set(expected)
        for case, start in expected.items():
            assert start in messages[case], (case, messages[case])
            assert "LUCID_DIST_CHECK=0" in messages[case]
    # every rank raised, with the same account of who passed what (the prefix names the rank's own call)
    tails = [{k: v.split(": ", 1)[1] for k, v in m.items()} for m in _messages(lines)]
    assert all(t == tails[0] for t in tails)


@pytest.mark.parametrize("world", [2, 3])
def test_mismatched_collectives_raise_on_every_rank_over_mpi(backend: str, world: int) -> None:
    _check(ok_lines(run_job(world, "mismatch.py", "mpi", backend, timeout=90)), world)


def test_mismatched_collectives_raise_on_every_rank_over_mx_distributed(backend: str) -> None:
    if backend != "mlx":
        pytest.skip("mx.distributed moves MLX tensors only")
    _check(ok_lines(run_job(2, "mismatch.py", "mlx", "mlx", kind="mlx", timeout=90)), 2)


@pytest.mark.parametrize(("mode", "env", "expected"), [
    ("default", {}, "3 1 3 0"),  # one exchange per all_reduce; DDP: construction, buffers per forward, none in backward
    ("init-off", {}, "0 0 0 0"),
    ("env-off", {"LUCID_DIST_CHECK": "0"}, "0 0 0 0"),
])  # fmt: skip
def test_the_check_costs_one_exchange_per_call_can_be_switched_off_and_ddp_skips_it(
    mode: str, env: dict[str, str], expected: str
) -> None:
    lines = ok_lines(run_job(2, "check_switch.py", mode, timeout=90, **env))
    assert [ln.split(" ", 2)[2] for ln in lines] == [expected, expected]
