"""save/load with torch.save/torch.load's shape: nested checkpoints, optimizer state, map_location, atomicity."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest
import safetensors

import lucid_core as lc
import lucid_nn as nn
import lucid_optim as optim
from lucid_nn import serialization


def _assert_same(got, want, where="obj"):
    assert type(got) is type(want), f"{where}: {type(got).__name__} != {type(want).__name__}"
    if isinstance(want, lc.Tensor):
        assert got.dtype == want.dtype and got.shape == want.shape and got.device == want.device, where
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=where)
    elif isinstance(want, dict):
        assert list(got) == list(want), where  # same keys, same types, same order
        for k in want:
            _assert_same(got[k], want[k], f"{where}[{k!r}]")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            _assert_same(g, w, f"{where}[{i}]")
    elif isinstance(want, float) and math.isnan(want):
        assert math.isnan(got), where
    else:
        assert got == want, where


def test_nested_round_trip_keeps_structure_types_and_devices(device, tmp_path):
    obj = {
        "model": nn.Linear(3, 2).to(device).state_dict(),
        "step": 7,
        "loss": 0.125,
        "nan": float("nan"),
        "name": "run-1",
        "flags": (True, None, [1, 2.5, "x"]),
        1: [lc.arange(4, device=device), {"mask": lc.asarray([True, False], device=device)}],
        2.5: "float key",
        None: False,
        "empty": {"d": {}, "l": [], "t": ()},
        "scalar": lc.asarray(3.0, dtype=lc.float64, device=device),
    }
    nn.save(obj, tmp_path / "ckpt.safetensors")
    _assert_same(nn.load(tmp_path / "ckpt.safetensors"), obj)


def test_a_bare_tensor_or_list_round_trips(device, tmp_path):
    t = lc.randn(2, 3, device=device)
    nn.save(t, tmp_path / "t.safetensors")
    _assert_same(nn.load(tmp_path / "t.safetensors"), t)
    nn.save([t, 4], tmp_path / "l.safetensors")
    _assert_same(nn.load(tmp_path / "l.safetensors"), [t, 4])


def test_a_tensor_used_twice_is_stored_once_and_loads_as_one_object(device, tmp_path):
    t = lc.randn(2, 2, device=device)
    nn.save({"a": [t], "b": {"again": t}}, tmp_path / "s.safetensors")
    data = (tmp_path / "s.safetensors").read_bytes()
    assert [k for k, _ in safetensors.deserialize(data)] == ["a.0"]
    back = nn.load(tmp_path / "s.safetensors")
    assert back["a"][0] is back["b"]["again"]


def test_tensor_names_follow_the_path_and_collisions_get_a_suffix(device, tmp_path):
    t1, t2 = lc.zeros((1,), device=device), lc.ones((1,), device=device)
    nn.save({"a.b": t1, "a": {"b": t2}, "n": 3}, tmp_path / "c.safetensors")
    names = sorted(k for k, _ in safetensors.deserialize((tmp_path / "c.safetensors").read_bytes()))
    assert names == ["a.b", "a.b#1"]
    back = nn.load(tmp_path / "c.safetensors")
    assert back["a.b"].tolist() == [0.0] and back["a"]["b"].tolist() == [1.0]


def test_flat_state_dict_stays_a_plain_safetensors_file(device, tmp_path):
    sd = {"w": lc.ones((2, 3), device=device), "b": lc.zeros((3,), device=device)}
    nn.save(sd, tmp_path / "f.safetensors", metadata={"epoch": "2"})
    data = (tmp_path / "f.safetensors").read_bytes()
    assert sorted(k for k, _ in safetensors.deserialize(data)) == ["b", "w"]
    assert nn.load_metadata(tmp_path / "f.safetensors") == {"epoch": "2"}  # the structure entry is hidden
    assert set(nn.load(tmp_path / "f.safetensors")) == {"w", "b"}


def _train(model, opt, x, y, steps):
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()


@pytest.mark.parametrize("make_opt", [
    lambda ps: optim.AdamW(ps, lr=0.05, weight_decay=0.1),
    lambda ps: optim.SGD([{"params": ps[:1], "lr": 0.1}, {"params": ps[1:], "lr": 0.01}], momentum=0.9),
])  # fmt: skip
def test_optimizer_state_round_trip_resumes_training_exactly(make_opt, device, tmp_path):
    lc.manual_seed(0)
    x, y = lc.randn(8, 3, device=device), lc.randn(8, 2, device=device)
    model = nn.Linear(3, 2).to(device)
    opt = make_opt(list(model.parameters()))
    _train(model, opt, x, y, 3)
    nn.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}, tmp_path / "ck.safetensors")
    _train(model, opt, x, y, 4)
    want = [p.detach().numpy() for p in model.parameters()]

    model2 = nn.Linear(3, 2).to(device)
    opt2 = make_opt(list(model2.parameters()))
    ck = nn.load(tmp_path / "ck.safetensors")
    _assert_same(ck["optimizer"]["param_groups"], opt.state_dict()["param_groups"])
    assert all(isinstance(k, int) for k in ck["optimizer"]["state"]) and ck["epoch"] == 3
    model2.load_state_dict(ck["model"])
    opt2.load_state_dict(ck["optimizer"])
    _train(model2, opt2, x, y, 4)
    for a, b in zip((p.detach().numpy() for p in model2.parameters()), want):
        np.testing.assert_array_equal(a, b)


def test_map_location_device_dict_and_callable(device, tmp_path):
    path = tmp_path / "m.safetensors"
    nn.save({"w": lc.arange(3, device=device), "n": 1}, path)
    assert nn.load(path)["w"].device == device  # None: back where it was saved from
    other = lc.resolve_device("numpy") if device.backend.name != "numpy" else device
    assert nn.load(path, map_location="numpy")["w"].device == lc.resolve_device("numpy")
    assert nn.load(path, map_location={str(device): "numpy"})["w"].device == lc.resolve_device("numpy")
    assert nn.load(path, map_location={"elsewhere": "numpy"})["w"].device == device
    seen = []
    got = nn.load(path, map_location=lambda t, loc: seen.append(loc) or t.to(other))
    assert seen == [str(device)] and got["w"].device == other
    assert nn.load(path, device=other)["w"].device == other  # the earlier keyword still works
    with pytest.raises(TypeError, match="map_location or device, not both"):
        nn.load(path, map_location="numpy", device="numpy")
    assert nn.load(path, weights_only=False)["n"] == 1


def test_unknown_saved_device_falls_back_to_the_default_with_a_warning(tmp_path):
    path = tmp_path / "u.safetensors"
    nn.save({"w": lc.ones((1,)), "k": 0}, path)
    data = path.read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n])
    info = json.loads(header["__metadata__"]["lucid"])
    info["devices"] = {"nosuchbackend:gpu": info["devices"].popitem()[1]}
    header["__metadata__"]["lucid"] = json.dumps(info)
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + data[8 + n :])
    with pytest.warns(UserWarning, match="'nosuchbackend:gpu', which is not available here"):
        w = nn.load(path)["w"]
    assert w.device == lc.get_default_device() and w.tolist() == [1.0]


def test_file_objects_work_both_ways(device):
    buf = io.BytesIO()
    obj = {"t": lc.ones((2,), device=device), "meta": [1, "two"]}
    nn.save(obj, buf, metadata={"k": "v"})
    buf.seek(0)
    _assert_same(nn.load(buf), obj)
    buf.seek(0)
    assert nn.load_metadata(buf) == {"k": "v"}


def test_a_failure_while_saving_a_nested_object_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "ck.safetensors"
    nn.save({"epoch": 1, "w": [lc.ones((2,))]}, path)
    before = path.read_bytes()
    with pytest.raises(TypeError, match=r"cannot store a numpy.ndarray at obj\['w'\]\[1\]"):
        nn.save({"epoch": 2, "w": [lc.zeros((2,)), np.zeros(2)]}, path)

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(serialization.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        nn.save({"epoch": 3, "w": [lc.zeros((2,))]}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["ck.safetensors"]
    assert nn.load(path)["epoch"] == 1


def test_save_errors_name_the_type_and_what_is_supported(tmp_path):
    with pytest.raises(TypeError, match=r"dict key of type tuple at obj\['a'\]; keys must be str"):
        nn.save({"a": {(1, 2): lc.ones((1,))}}, tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="hold Tensors, dicts .*lists, tuples, int, float, bool, str and None"):
        nn.save({"m": nn.Linear(1, 1)}, tmp_path / "x.safetensors")
    with pytest.raises(ValueError, match="'lucid' is reserved"):
        nn.save({"a": lc.ones((1,))}, tmp_path / "x.safetensors", metadata={"lucid": "x"})
    assert list(tmp_path.iterdir()) == []
