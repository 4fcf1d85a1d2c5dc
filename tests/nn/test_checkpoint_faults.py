"""Checkpoint faults: damaged files raise one CheckpointError naming the file and the fault; saves are atomic
under SIGKILL and clean up after killed processes; saving and loading hold the checkpoint about once."""

from __future__ import annotations

import json
import os
import pickle
import signal
import struct
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import lucid_core as lc
import lucid_nn as nn
from lucid_nn import CheckpointError, serialization


def _split(data: bytes) -> tuple[dict, bytes]:
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + n]), data[8 + n :]


def _join(header: dict, payload: bytes) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + payload


@pytest.fixture
def good(tmp_path: Path) -> bytes:
    path = tmp_path / "good.safetensors"
    nn.save({"w": lc.arange(6, dtype=lc.float32).reshape(2, 3), "b": lc.ones((3,), dtype=lc.int64)}, path)
    return path.read_bytes()


@pytest.fixture
def nested(tmp_path: Path) -> bytes:
    path = tmp_path / "nested.safetensors"
    nn.save({"model": {"w": lc.ones((2,))}, "epoch": 3}, path)
    return path.read_bytes()


def _edit_header(data: bytes, edit) -> bytes:
    header, payload = _split(data)
    edit(header)
    return _join(header, payload)


def _edit_tree(data: bytes, edit) -> bytes:
    def go(header):
        info = json.loads(header["__metadata__"]["lucid"])
        edit(info)
        header["__metadata__"]["lucid"] = json.dumps(info)

    return _edit_header(data, go)


def _set(header, key, field, value):
    header[key][field] = value


# (name, how to damage the good flat file, what the message must say)
FLAT_DAMAGE = [
    ("bad_json", lambda d: d[:8] + b"{not json" + d[17:], "JSON header is damaged"),
    ("header_not_object", lambda d: _join([1, 2], b""), "JSON header is a list"),
    ("header_length_huge", lambda d: struct.pack("<Q", 2**60) + d[8:], "header length field says"),
    ("header_past_end", lambda d: struct.pack("<Q", len(d)) + d[8:], "truncated: the header needs"),
    ("short", lambda d: d[:5], "shorter than the 8-byte header length"),
    ("truncated_data", lambda d: d[:-7], "truncated: tensor"),
    ("wrong_dtype", lambda d: _edit_header(d, lambda h: _set(h, "w", "dtype", "F33")), "dtype 'F33'; expected one of"),
    ("dtype_not_string", lambda d: _edit_header(d, lambda h: _set(h, "w", "dtype", 4)), "dtype 4"),
    (
        "offsets_outside",
        lambda d: _edit_header(d, lambda h: _set(h, "w", "data_offsets", [0, 10**9])),
        "needs 24 bytes",
    ),
    ("offsets_negative", lambda d: _edit_header(d, lambda h: _set(h, "w", "data_offsets", [-24, 0])), "0 <= begin"),
    (
        "offsets_beyond_data",
        lambda d: _edit_header(d, lambda h: _set(h, "w", "data_offsets", [1000, 1024])),
        "holds only",
    ),
    ("offsets_malformed", lambda d: _edit_header(d, lambda h: _set(h, "w", "data_offsets", "0-24")), "data_offsets"),
    ("shape_wrong", lambda d: _edit_header(d, lambda h: _set(h, "w", "shape", [2, 4])), "needs 32 bytes"),
    ("shape_negative", lambda d: _edit_header(d, lambda h: _set(h, "w", "shape", [-2, -3])), "non-negative"),
    ("entry_not_object", lambda d: _edit_header(d, lambda h: h.__setitem__("w", [1])), "expected an object"),
    (
        "metadata_not_strings",
        lambda d: _edit_header(d, lambda h: h.__setitem__("__metadata__", {"a": 1})),
        "__metadata__",
    ),
    ("empty", lambda d: b"", "is empty (0 bytes)"),
    ("npy", lambda d: b"\x93NUMPY\x01\x00" + d, "NumPy .npy file"),
    ("plain_pickle", lambda d: pickle.dumps({"w": [1.0, 2.0]}, protocol=2), "not a PyTorch checkpoint"),
]


@pytest.mark.parametrize(("case", "damage", "says"), FLAT_DAMAGE, ids=[c[0] for c in FLAT_DAMAGE])
def test_a_damaged_file_raises_one_error_naming_the_file_and_the_fault(tmp_path, good, case, damage, says):
    path = tmp_path / f"{case}.safetensors"
    path.write_bytes(damage(good))
    with pytest.raises(CheckpointError, match=f"{case}.safetensors") as info:
        nn.load(path)
    assert says in str(info.value)
    assert isinstance(info.value, ValueError) and type(info.value).__name__.endswith("CheckpointError")


NESTED_DAMAGE = [
    ("missing_tensor", lambda i: i["tree"]["d"][0][1]["d"][0][1].update(t="nope"), "names tensor 'nope', which is not"),
    ("unknown_node", lambda i: i["tree"]["d"].append(["x", {"q": 1}]), "at obj['x'] is {'q': 1}"),
    ("bad_item", lambda i: i["tree"]["d"].append(["x"]), "has the item ['x']"),
    ("unhashable_key", lambda i: i["tree"]["d"].append([[1], 2]), "has the item [[1], 2]"),
    ("devices_malformed", lambda i: i.update(devices=[1]), "malformed"),
]


@pytest.mark.parametrize(("case", "damage", "says"), NESTED_DAMAGE, ids=[c[0] for c in NESTED_DAMAGE])
def test_a_damaged_structure_entry_raises_naming_where_it_is(tmp_path, nested, case, damage, says):
    path = tmp_path / f"{case}.safetensors"
    path.write_bytes(_edit_tree(nested, damage))
    with pytest.raises(CheckpointError, match=f"{case}.safetensors is damaged") as info:
        nn.load(path)
    assert says in str(info.value)


def test_structure_metadata_that_is_not_json_raises(tmp_path, nested):
    path = tmp_path / "meta.safetensors"
    path.write_bytes(_edit_header(nested, lambda h: h["__metadata__"].update(lucid="{oops")))
    with pytest.raises(CheckpointError, match="meta.safetensors is damaged: its 'lucid' structure entry is not JSON"):
        nn.load(path)


def test_a_directory_and_load_metadata_of_a_damaged_file_raise_checkpoint_errors(tmp_path, good):
    (tmp_path / "model" / "x").mkdir(parents=True)
    (tmp_path / "model" / "model.safetensors").write_bytes(good)
    with pytest.raises(CheckpointError, match=r"model is a directory, not a checkpoint file.*model.safetensors"):
        nn.load(tmp_path / "model")
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(good[:-3])
    with pytest.raises(CheckpointError, match="bad.safetensors is not a valid safetensors file: truncated"):
        nn.load_metadata(bad)
    with pytest.raises(FileNotFoundError):
        nn.load(tmp_path / "missing.safetensors")


def test_a_damaged_file_object_is_named_too(good):
    import io

    buf = io.BytesIO(good[:-3])
    buf.name = "in-memory.safetensors"
    with pytest.raises(CheckpointError, match="in-memory.safetensors is not a valid safetensors file: truncated"):
        nn.load(buf)


def test_loading_keeps_the_saved_order_and_reads_files_other_tools_wrote(tmp_path):
    """A guard for the streamed writer and the format sniffing (it passes on the earlier code too)."""
    import safetensors

    # a header of 640 bytes: its length field starts 80 02, as a pickle does; it is still safetensors
    header = json.dumps({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode().ljust(640)
    (tmp_path / "h.safetensors").write_bytes(struct.pack("<Q", 640) + header + np.float32(2.5).tobytes())
    assert nn.load(tmp_path / "h.safetensors")["w"].tolist() == [2.5]

    sd = {
        "z": lc.ones((2,), dtype=lc.float16),
        "a": lc.zeros((3,), dtype=lc.float64),
        "m": lc.ones((1,), dtype=lc.bool),
    }
    nn.save(sd, tmp_path / "o.safetensors")
    assert list(nn.load(tmp_path / "o.safetensors")) == ["z", "a", "m"]
    # the safetensors library reads what we wrote, byte for byte the same values
    items = dict(safetensors.deserialize((tmp_path / "o.safetensors").read_bytes()))
    assert bytes(items["a"]["data"]) == np.zeros(3).tobytes() and items["z"]["dtype"] in ("F16", "float16")


# -- saving: missing directories, atomicity under SIGKILL, stale temporaries ---------------------------------
def test_saving_into_a_missing_directory_names_that_directory(tmp_path):
    missing = tmp_path / "no" / "such"
    with pytest.raises(FileNotFoundError) as info:
        nn.save({"w": lc.ones((2,))}, missing / "ckpt.safetensors")
    assert info.value.filename == str(missing)
    assert f"the directory {missing} does not exist" in str(info.value)
    assert "tmp" not in str(info.value).replace(str(tmp_path), "")
    with pytest.raises(IsADirectoryError, match="is a directory"):
        nn.save({"w": lc.ones((2,))}, tmp_path)


CHILD = textwrap.dedent(
    """
    import sys, time
    import lucid_core as lc, lucid_nn as nn
    from lucid_nn import serialization

    real = serialization._tensor_chunks
    written = [0]

    def slow_disk(t):  # stalls the save after a few pieces, so the parent can kill it mid-write
        for piece in real(t):
            yield piece
            written[0] += 1
            if written[0] == 3:
                print("midway", flush=True)
                time.sleep(120)

    serialization._tensor_chunks = slow_disk
    nn.save({f"w{i}": lc.full((1024, 1024), float(i)) for i in range(6)}, sys.argv[1])
    """
)


def _temporaries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if ".lucid-tmp-" in p.name)


def test_a_save_killed_mid_write_leaves_the_old_file_and_the_next_save_removes_its_temporary(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    nn.save({"w": lc.arange(4, dtype=lc.float32)}, path)
    before = path.read_bytes()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    guard = threading.Timer(120, child.kill)  # never hang the suite if the child stalls before "midway"
    guard.start()
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "midway"
        (tmp,) = _temporaries(tmp_path)
        assert tmp.startswith(".ckpt.safetensors.lucid-tmp-") and (tmp_path / tmp).stat().st_size > 4 << 20
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        guard.cancel()
        if child.poll() is None:
            child.kill()
            child.wait()
    assert path.read_bytes() == before
    assert nn.load(path)["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert _temporaries(tmp_path) == [tmp]  # the killed process could not clean up ...
    nn.save({"v": lc.ones((1,))}, tmp_path / "other.safetensors")
    assert _temporaries(tmp_path) == []  # ... the next save into the directory did
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.safetensors", "other.safetensors"]


def test_only_temporaries_of_dead_processes_are_removed(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    host = serialization._host()
    names = {
        "dead": f".a.safetensors.lucid-tmp-{host}-{dead_pid}-0123abcd",
        "alive": f".b.safetensors.lucid-tmp-{host}-{os.getpid()}-0123abcd",
        "other_host_fresh": f".c.safetensors.lucid-tmp-elsewhere-{dead_pid}-0123abcd",
        "other_host_old": f".d.safetensors.lucid-tmp-elsewhere-{dead_pid}-0123abcd",
        "not_ours": f".e.safetensors.tmp-{dead_pid}",
    }
    for name in names.values():
        (tmp_path / name).write_bytes(b"partial")
    old = time.time() - 2 * 3600
    os.utime(tmp_path / names["other_host_old"], (old, old))
    nn.save({"w": lc.ones((1,))}, tmp_path / "x.safetensors")
    left = {p.name for p in tmp_path.iterdir()}
    assert left == {"x.safetensors", names["alive"], names["other_host_fresh"], names["not_ours"]}


# -- memory: saving and loading an N-byte checkpoint hold about N more, not 4 N -------------------------------
MEASURE = textwrap.dedent(
    """
    import gc, json, sys
    import lucid_core as lc, lucid_nn as nn

    def status(field):
        for line in open("/proc/self/status"):
            if line.startswith(field):
                return int(line.split()[1]) * 1024

    def peak_increase(fn):
        gc.collect()
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak RSS (VmHWM) to the current RSS
        start = status("VmRSS:")
        result = fn()
        return status("VmHWM:") - start, result

    mode, layout, path, device = sys.argv[1:5]
    lc.ones((1,)) + 1  # the backend is imported and warm before measuring
    if mode == "save":
        shapes = [(4096, 4096)] if layout == "one" else [(1024, 1024)] * 16
        sd = {f"t{i}": lc.full(s, float(i + 1)) for i, s in enumerate(shapes)}
        lc.eval(*sd.values())  # lazy backends: the tensors exist before the save is measured
        extra, _ = peak_increase(lambda: nn.save(sd, path))
    else:
        extra, sd = peak_increase(lambda: nn.load(path, map_location=device))
        assert float(sd["t0"][0, 0].item()) == 1.0 and sd["t0"].device.backend.name == device
    print(json.dumps({"extra": extra}))
    """
)


def _extra_rss(mode: str, layout: str, path: Path, device: str = "numpy") -> int:
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, mode, layout, str(path), device], capture_output=True, text=True, check=True,
        env={**os.environ, "LUCID_DEVICE": device},
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])["extra"]


@pytest.mark.skipif(not os.access("/proc/self/clear_refs", os.W_OK), reason="needs Linux's resettable peak RSS")
@pytest.mark.parametrize("layout", ["one", "many"])
def test_saving_and_loading_a_64_mb_checkpoint_raise_peak_rss_by_at_most_1_25_n(tmp_path, layout):
    path = tmp_path / "big.safetensors"
    n = 64 << 20
    saved = _extra_rss("save", layout, path)
    assert path.stat().st_size > n
    loaded = _extra_rss("load", layout, path)
    slack = 8 << 20  # interpreter and allocator noise
    assert saved <= 1.25 * n + slack, f"save raised peak RSS by {saved / n:.2f} N"
    assert loaded <= 1.25 * n + slack, f"load raised peak RSS by {loaded / n:.2f} N"


@pytest.mark.skipif(not os.access("/proc/self/clear_refs", os.W_OK), reason="needs Linux's resettable peak RSS")
def test_loading_a_64_mb_tensor_reads_into_the_backends_memory_once(tmp_path, backend):
    # NumPy reads into the array's own buffer; MLX arrays are written through the buffer protocol as the
    # file is read (it held a host copy beside them before: 2.1 N)
    path = tmp_path / "big.safetensors"
    n = 64 << 20
    _extra_rss("save", "one", path)
    loaded = _extra_rss("load", "one", path, device=backend)
    assert loaded <= 1.25 * n + (8 << 20), f"load onto {backend} raised peak RSS by {loaded / n:.2f} N"
