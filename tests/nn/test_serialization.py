"""Checkpoints: safetensors round trips, atomic writes, corrupt files, loading PyTorch's checkpoints."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import lucid_core as lc
import lucid_nn as nn
from lucid_nn import serialization

HERE = Path(__file__).parent / "fixtures"
FIX = json.loads((HERE / "nn_a.json").read_text())


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3), nn.LayerNorm(3))


def test_torch_checkpoint_loads_and_gives_torch_outputs(device):
    sd = nn.load(HERE / "mlp_torch.safetensors", device=device)
    assert set(sd) == set(FIX["checkpoint"]["keys"])
    assert sd["1.num_batches_tracked"].dtype == lc.int64 and sd["0.weight"].device == device
    m = mlp().to(device)
    m.load_state_dict(sd)
    m.eval()
    y = m(lc.asarray(FIX["checkpoint"]["x"], device=device))
    np.testing.assert_allclose(y.detach().numpy(), FIX["checkpoint"]["y"], rtol=1e-5, atol=1e-5)
    assert list(m.state_dict()) == FIX["checkpoint"]["keys"]


def test_round_trip_preserves_values_dtypes_and_metadata(device, tmp_path):
    tensors = {
        "f32": lc.randn(3, 2, device=device),
        "f64t": lc.randn(2, 3, dtype=lc.float64, device=device).T if lc.float64 in device.backend.dtypes else
        lc.randn(3, 2, device=device),
        "i64": lc.arange(5, device=device),
        "flag": lc.asarray([True, False], device=device),
        "scalar": lc.asarray(2.5, device=device),
        "empty": lc.zeros((0, 4), device=device),
    }  # fmt: skip
    path = tmp_path / "t.safetensors"
    nn.save(tensors, path, metadata={"epoch": "3"})
    back = nn.load(path, device=device)
    assert set(back) == set(tensors)
    for k, v in tensors.items():
        assert back[k].dtype == v.dtype and back[k].shape == v.shape, k
        np.testing.assert_array_equal(back[k].numpy(), v.numpy())
    assert nn.load_metadata(path) == {"epoch": "3"}


def test_save_module_then_load_into_a_fresh_one(device, tmp_path):
    a, b = mlp().to(device), mlp().to(device)
    a(lc.randn(4, 4, device=device))  # moves the running statistics
    nn.save(a, tmp_path / "m.safetensors")
    b.load_state_dict(nn.load(tmp_path / "m.safetensors", device=device))
    a.eval()
    b.eval()
    x = lc.randn(2, 4, device=device)
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())


def test_failed_save_leaves_the_old_file_and_no_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.safetensors"
    nn.save({"w": lc.ones((2,))}, path)
    before = path.read_bytes()
    # a value that fails midway through conversion
    with pytest.raises(TypeError, match=r"cannot store a builtins.object at obj\['bad'\]"):
        nn.save({"w": lc.zeros((2,)), "bad": object()}, path)
    assert path.read_bytes() == before
    # a crash while the bytes are being written
    real_fsync = os.fsync

    def boom(fd):
        raise OSError("disk full")

    monkeypatch.setattr(serialization.os, "fsync", boom)
    with pytest.raises(OSError, match="disk full"):
        nn.save({"w": lc.zeros((2,))}, path)
    monkeypatch.setattr(serialization.os, "fsync", real_fsync)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.safetensors"]
    assert nn.load(path)["w"].tolist() == [1.0, 1.0]


def test_truncated_or_corrupt_file_raises_naming_the_file(tmp_path):
    good = tmp_path / "good.safetensors"
    shutil.copy(HERE / "mlp_torch.safetensors", good)
    data = good.read_bytes()
    bad = tmp_path / "truncated.safetensors"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="truncated.safetensors is not a valid safetensors file"):
        nn.load(bad)
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"not a checkpoint at all")
    with pytest.raises(ValueError, match="junk.safetensors"):
        nn.load(junk)
    with pytest.raises(FileNotFoundError):
        nn.load(tmp_path / "missing.safetensors")


def test_save_rejects_bad_input(tmp_path):
    with pytest.raises(TypeError, match="cannot store a builtins.set at obj; checkpoints are safetensors"):
        nn.save({lc.ones((1,))}, tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="metadata must map strings to strings"):
        nn.save({"a": lc.ones((1,))}, tmp_path / "x.safetensors", metadata={"epoch": 3})
    assert list(tmp_path.iterdir()) == []
