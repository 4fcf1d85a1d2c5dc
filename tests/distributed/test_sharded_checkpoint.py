"""Sharded checkpoints: saved on 4 ranks, resumed on 2 and on 1; damaged or missing files name themselves."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._launch import ok_lines, run_job


def _results(line: str) -> dict:
    return eval(line.split(" ", 3)[3])  # the worker prints a dict of literals


def test_saved_on_four_ranks_resumes_on_two_and_on_one(zero_four_ranks: tuple[list[str], Path]) -> None:
    lines, folder = zero_four_ranks
    assert len(_results(lines[0])["saved"]) == 5  # four shard files and the metadata
    for world in (2, 0):  # 0: a process started alone (world size 1), which also damages copies
        lines = ok_lines(run_job(world, "ckpt.py", "numpy", "resume", str(folder)))
        assert len(lines) == max(world, 1)
        for line in lines:
            r = _results(line)
            assert r["model_reassembled"] < 1e-12 and r["resumed"] < 1e-12, r
    errors = _results(lines[0])["errors"]
    assert len(errors) == 6 and all(e.startswith("load: ") and "ckpt" in e for e in errors), errors


def test_the_face_saves_and_loads_through_pytorchs_names_in_one_process(tmp_path) -> None:
    import lucid
    import lucid.distributed.checkpoint as dcp

    w = lucid.arange(12.0).reshape(4, 3)
    dcp.save({"w": w, "rows": dcp.Shard.rows(w[1:3], (2, 3), 0), "step": 4},
             storage_writer=dcp.FileSystemWriter(tmp_path))  # fmt: skip
    target = {"w": lucid.zeros(4, 3), "rows": lucid.zeros(2, 3), "step": 0}
    dcp.load(target, storage_reader=dcp.FileSystemReader(tmp_path))
    assert target["w"].tolist() == w.tolist() and target["rows"].tolist() == w[1:3].tolist() and target["step"] == 4
    piece = dcp.Shard(lucid.zeros(4), (4, 3), offset=5)  # a flat range across row boundaries
    dcp.load({"w": piece}, checkpoint_id=tmp_path)
    assert piece.local.tolist() == [5.0, 6.0, 7.0, 8.0]
    with pytest.raises(KeyError, match="missing_entry"):
        dcp.load({"missing_entry": lucid.zeros(1)}, checkpoint_id=tmp_path)
    with pytest.raises(ValueError, match=r"shape \(4, 3\)"):
        dcp.load({"w": lucid.zeros(3, 4)}, checkpoint_id=tmp_path)
