"""PyTorch checkpoints (``torch.save``, zip and legacy formats) load without PyTorch; malicious pickles are refused.

The ``.pt`` files were written once by ``fixtures/generate_torch_checkpoints.py``; the malicious ones are
built here by hand, without torch.
"""

from __future__ import annotations

import io
import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

import lucid
import lucid_core as lc
import lucid_nn as nn
from lucid_nn import CheckpointError, UnsafeCheckpointError

HERE = Path(__file__).parent / "fixtures"
EXPECTED = json.loads((HERE / "torch_checkpoints.json").read_text())


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3), nn.LayerNorm(3))


def _flatten(obj, path: str = "") -> dict:
    out = {}
    if isinstance(obj, lc.Tensor):
        return {path: obj}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(_flatten(v, f"{path}/{k}" if path else str(k)))
    if isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            out.update(_flatten(v, f"{path}/{i}" if path else str(i)))
    return out


def _assert_matches(loaded, expected: dict) -> None:
    flat = _flatten(loaded)
    assert sorted(flat) == sorted(expected)
    for key, want in expected.items():
        t = flat[key]
        assert t.dtype.name == want["dtype"], key
        assert list(t.shape) == want["shape"], key
        np.testing.assert_array_equal(np.asarray(t.tolist()).astype(want["dtype"]), np.asarray(want["values"]), key)


def test_a_torch_state_dict_loads_into_a_lucid_model_and_gives_torch_outputs(device):
    fix = EXPECTED["torch_mlp.pt"]
    sd = lucid.load(HERE / "torch_mlp.pt", map_location=device)
    assert list(sd) == fix["keys"]
    assert sd["1.num_batches_tracked"].dtype == lc.int64 and sd["0.weight"].device == device
    m = mlp().to(device)
    m.load_state_dict(sd)
    m.eval()
    y = m(lc.asarray(fix["x"], device=device))
    np.testing.assert_allclose(y.detach().numpy(), fix["y"], rtol=1e-5, atol=1e-6)


def test_every_storage_dtype_loads_with_its_values(device):
    try:
        lc.zeros((1,), dtype=lc.float16, device=device)
    except TypeError:  # a backend without float16 (array-api-strict) says so, naming the dtype
        with pytest.raises(TypeError, match="float16"):
            nn.load(HERE / "torch_dtypes.pt", map_location=device)
        return
    _assert_matches(nn.load(HERE / "torch_dtypes.pt", map_location=device), EXPECTED["torch_dtypes.pt"])


@pytest.mark.parametrize("name", ["torch_views.pt", "torch_views_legacy.pt"])
def test_strides_offsets_and_shared_storages_are_honoured(device, name):
    loaded = nn.load(HERE / name, map_location=device)
    _assert_matches(loaded, EXPECTED[name])
    assert loaded["nested"][1][1] == 2 and loaded["nested"][2] == {"k": 1.5}
    assert isinstance(loaded["nested"][1], tuple)
    # tensors that shared a storage in PyTorch are independent here: a write into one leaves the other
    loaded["shared_a"][3] = 100
    assert loaded["shared_b"].tolist()[0] == 3


def test_a_training_checkpoint_keeps_its_containers_numbers_and_parameters(device):
    ck = nn.load(HERE / "torch_training.pt", map_location=device)
    _assert_matches(ck, EXPECTED["torch_training.pt"])
    assert ck["epoch"] == 3 and ck["note"] == "after one step"
    assert sorted(ck["optimizer"]["state"]) == list(range(8))  # parameter indices stay ints
    (group,) = ck["optimizer"]["param_groups"]
    assert group["betas"] == (0.9, 0.999)  # a tuple, as PyTorch gives it
    assert [{**group, "betas": list(group["betas"])}] == EXPECTED["torch_training.pt/optimizer_param_groups"]
    assert all(isinstance(p, lc.Parameter) and p.requires_grad for p in ck["params"])


def test_a_file_object_and_a_map_location_dict_work_for_torch_files(device):
    buf = io.BytesIO((HERE / "torch_mlp.pt").read_bytes())
    sd = nn.load(buf, map_location={"cpu": device})
    assert sd["0.weight"].device == device and sd["0.weight"].shape == (8, 4)


def test_bfloat16_is_refused_naming_the_tensor_until_lucid_has_it():
    if getattr(lc, "bfloat16", None) is not None:
        assert nn.load(HERE / "torch_bfloat16.pt")["w"].tolist() == [1.0, 2.5]
        return
    with pytest.raises(
        CheckpointError, match=r"torch_bfloat16.pt: tensor obj\['w'\] has dtype bfloat16.*not support yet"
    ):
        nn.load(HERE / "torch_bfloat16.pt")


# -- malicious and damaged pickles ------------------------------------------------------------------------
def _zip_pt(tmp_path: Path, data_pkl: bytes, extra: dict[str, bytes] | None = None, name: str = "evil.pt") -> Path:
    path = tmp_path / name
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr("archive/data.pkl", data_pkl)
        for member, payload in ({"byteorder": b"little"} | (extra or {})).items():
            zf.writestr(f"archive/{member}", payload)
    return path


def _system_call(marker: Path, module: str = "os") -> bytes:
    # protocol-0 opcodes for ``os.system("touch <marker>")``, written by hand
    return f"c{module}\nsystem\n(S'touch {marker}'\ntR.".encode()


class _Reduces:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("module", ["os", "posix", "subprocess"])
def test_a_malicious_zip_pickle_is_refused_without_running_anything(tmp_path, module):
    marker = tmp_path / "pwned"
    path = _zip_pt(tmp_path, _system_call(marker, module))
    with pytest.raises(UnsafeCheckpointError, match=rf"evil.pt: refused to load: .*global {module}.system") as info:
        lucid.load(path)
    assert isinstance(info.value, pickle.UnpicklingError) and isinstance(info.value, CheckpointError)
    assert not marker.exists()


def test_a_malicious_global_inside_an_otherwise_valid_state_dict_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    payload = pickle.dumps({"w": [1.0], "b": _Reduces(marker)}, protocol=2)
    with pytest.raises(UnsafeCheckpointError, match=r"global (posix|os)\.system"):
        nn.load(_zip_pt(tmp_path, payload))
    legacy = tmp_path / "legacy_evil.pt"
    legacy.write_bytes(
        b"".join(pickle.dumps(x, protocol=2) for x in (0x1950A86A20F9469CFC6C, 1001, {}, _Reduces(marker)))
    )
    with pytest.raises(UnsafeCheckpointError, match=r"legacy_evil.pt: refused .*system"):
        nn.load(legacy)
    bare = tmp_path / "bare.pkl"
    bare.write_bytes(pickle.dumps(_Reduces(marker), protocol=4))
    with pytest.raises(UnsafeCheckpointError, match="bare.pkl"):
        nn.load(bare)
    for name in ("builtins\neval", "builtins\ngetattr", "torch\nload", "copyreg\n_reconstructor"):
        with pytest.raises(UnsafeCheckpointError, match=name.replace("\n", ".")):
            nn.load(_zip_pt(tmp_path, f"c{name}\n(S'1'\ntR.".encode(), name="g.pt"))
    assert not marker.exists()


def test_damaged_torch_files_raise_checkpoint_errors_naming_the_fault(tmp_path):
    good = (HERE / "torch_mlp.pt").read_bytes()
    (tmp_path / "cut.pt").write_bytes(good[: len(good) // 2])
    with pytest.raises(CheckpointError, match="cut.pt is a damaged or truncated zip archive"):
        nn.load(tmp_path / "cut.pt")
    with zipfile.ZipFile(HERE / "torch_mlp.pt") as zf:
        members = {i.filename: zf.read(i) for i in zf.infolist()}
    prefix = next(n for n in members if n.endswith("data.pkl"))[: -len("data.pkl")]
    pkl = members[f"{prefix}data.pkl"]
    # a storage member missing from the archive
    path = _zip_pt(
        tmp_path,
        pkl,
        {k[len(prefix) :]: v for k, v in members.items() if not k.endswith(("data.pkl", "data/0"))},
        "gone.pt",
    )
    with pytest.raises(CheckpointError, match="gone.pt is a damaged PyTorch checkpoint: .*storage '0'"):
        nn.load(path)
    # a storage member shorter than its tensor
    short = {
        k[len(prefix) :]: (v[:8] if k.endswith("data/0") else v)
        for k, v in members.items()
        if not k.endswith("data.pkl")
    }
    with pytest.raises(CheckpointError, match=r"short.pt: tensor obj\['0.weight'\] .*holds 8 bytes"):
        nn.load(_zip_pt(tmp_path, pkl, short, "short.pt"))
    # a pickle cut short
    rest = {k[len(prefix) :]: v for k, v in members.items() if not k.endswith("data.pkl")}
    with pytest.raises(CheckpointError, match="half.pt is a damaged PyTorch checkpoint: unpickling it failed"):
        nn.load(_zip_pt(tmp_path, pkl[: len(pkl) // 2], rest, "half.pt"))
    # a zip that is not a PyTorch checkpoint at all
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as zf:
        zf.writestr("readme.txt", "hello")
    with pytest.raises(CheckpointError, match="other.zip is a zip archive but not a PyTorch checkpoint"):
        nn.load(tmp_path / "other.zip")
    legacy = (HERE / "torch_views_legacy.pt").read_bytes()
    (tmp_path / "legacy_cut.pt").write_bytes(legacy[:-20])
    with pytest.raises(CheckpointError, match="legacy_cut.pt is a truncated PyTorch checkpoint"):
        nn.load(tmp_path / "legacy_cut.pt")


def test_a_whole_module_pickle_is_refused_with_what_to_save_instead(tmp_path):
    payload = b"\x80\x02(X\x06\x00\x00\x00moduleq\x00NNNtQ."  # persistent id ("module", None, None, None)
    with pytest.raises(CheckpointError, match=r"whole nn.Module object .*save model.state_dict\(\)"):
        nn.load(_zip_pt(tmp_path, payload, name="module.pt"))


def test_a_pickle_cannot_change_the_allowed_globals_for_later_loads(tmp_path):
    import collections

    # BUILD on what an allowed global names: Counter.__len__ = torch.Size, FloatStorage.name = "Bogus"
    counter = b"ccollections\nCounter\nN}S'__len__'\nctorch\nSize\ns\x86b."
    storage = b"ctorch\nFloatStorage\n}S'name'\nS'Bogus'\nsb."
    for i, payload in enumerate((counter, storage)):
        try:
            nn.load(_zip_pt(tmp_path, payload, name=f"poison{i}.pt"))
        except CheckpointError:
            pass  # refusing it is fine too; changing what the next load sees is not
    assert "__len__" not in vars(collections.Counter)
    assert list(nn.load(HERE / "torch_mlp.pt")) == EXPECTED["torch_mlp.pt"]["keys"]


def test_a_pickle_cannot_ask_for_a_huge_allocation(tmp_path):
    with pytest.raises(CheckpointError, match="bytearray"):
        nn.load(_zip_pt(tmp_path, b"cbuiltins\nbytearray\n(I1000000000000\ntR.", name="huge.pt"))
