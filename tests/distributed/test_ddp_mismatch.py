"""DDP refuses, at construction, ranks whose models differ (shapes, requires_grad, count, names), and a
buffer replaced on one rank afterwards, naming the first difference and the ranks, on every rank."""

from __future__ import annotations

import json

from ._launch import ok_lines, run_job

HEAD = "DistributedDataParallel: the ranks hold different models ("


def test_every_rank_names_the_first_differing_parameter() -> None:
    lines = ok_lines(run_job(2, "ddp_mismatch.py", timeout=90))
    assert len(lines) == 2
    for messages in (json.loads(ln.split(" ", 2)[2]) for ln in lines):
        assert all(m.startswith(HEAD) for m in messages.values()), messages
        assert (
            "rank 0 has parameter 'weight' of shape (4, 3) float32, rank 1 has parameter 'weight' of shape (5, 3)"
            in messages["shape"]
        )
        assert (
            "rank 0 has parameter 'bias' of shape (4,) float32 with requires_grad=True, rank 1 has parameter 'bias' "
            "of shape (4,) float32 with requires_grad=False" in messages["requires_grad"]
        )
        assert (
            "rank 0 has 2 parameters and buffers, rank 1 has 4; first difference: rank 1 has parameter '1.weight' "
            "of shape (4, 4) float32 that rank 0 does not have" in messages["count"]
        )
        assert (
            "rank 0 has parameter 'fc.weight' of shape (2, 2) float32, rank 1 has parameter 'head.weight'"
            in (messages["name"])
        )
        assert (
            "rank 0 has buffer '1.running_mean' of shape (4,) float32, rank 1 has buffer '1.running_mean' of shape "
            "(5,) float32" in messages["buffer replaced after construction"]
        )


def test_three_ranks_name_every_rank_that_differs() -> None:
    lines = ok_lines(run_job(3, "ddp_mismatch.py", timeout=90))
    shape = [json.loads(ln.split(" ", 2)[2])["shape"] for ln in lines]
    assert len(set(shape)) == 1 and "rank 2 has parameter 'weight' of shape (5, 3)" in shape[0]
