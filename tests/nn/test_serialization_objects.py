"""``lucid.save``/``lucid.load`` of whole Python objects, as ``torch.save``/``torch.load`` (PyTorch 2.13) do them.

Modules, optimizers and arbitrary objects are pickled with their tensors stored beside the pickle as raw
bytes; ``weights_only=True`` (the default) refuses globals outside the allow-list with PyTorch's message;
``lucid.serialization.safe_globals`` and friends extend it; saving stays atomic under SIGKILL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import lucid
import lucid.nn as nn
import lucid_core as lc
import lucid_nn
from lucid_nn import CheckpointError, UnsafeCheckpointError


@dataclass
class Run:
    """An arbitrary user class stored in a checkpoint."""

    name: str
    steps: int


def small_model() -> nn.Module:
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.LSTM(4, 5))


MODEL_GLOBALS = [nn.Sequential, nn.Linear, nn.ReLU, nn.LSTM]


@pytest.fixture(autouse=True)
def _no_safe_globals():
    lucid.serialization.clear_safe_globals()
    yield
    lucid.serialization.clear_safe_globals()


def test_a_whole_module_round_trips_with_its_type_parameters_and_outputs(tmp_path):
    model = small_model()
    path = tmp_path / "model.pt"
    lucid.save(model, path)
    back = lucid.load(path, weights_only=False)
    assert type(back) is nn.Sequential and type(back[2]) is nn.LSTM
    assert type(back[0].weight) is nn.Parameter and back[0].weight.requires_grad
    assert back[0].weight is not model[0].weight
    x = lucid.randn(2, 2, 3)
    np.testing.assert_array_equal(back(x)[0].detach().numpy(), model(x)[0].detach().numpy())
    assert back.state_dict().keys() == model.state_dict().keys()


def test_load_is_weights_only_by_default_and_names_the_refused_global(tmp_path):
    path = tmp_path / "model.pt"
    lucid.save(small_model(), path)
    with pytest.raises(UnsafeCheckpointError) as info:
        lucid.load(path)
    message = str(info.value)
    assert "Weights only load failed" in message and "weights_only` set to `False`" in message
    assert "Unsupported global: GLOBAL lucid_nn.containers.Sequential was not an allowed global by default" in message
    assert "lucid.serialization.safe_globals([lucid_nn.containers.Sequential])" in message
    assert isinstance(info.value, __import__("pickle").UnpicklingError)


def test_safe_globals_allows_what_it_names_only_inside_the_block(tmp_path):
    path = tmp_path / "model.pt"
    lucid.save(small_model(), path)
    with pytest.raises(UnsafeCheckpointError, match=r"GLOBAL lucid_nn.layers.recurrent.LSTM was not"):
        with lucid.serialization.safe_globals(MODEL_GLOBALS[:3]):
            lucid.load(path)
    with lucid.serialization.safe_globals(MODEL_GLOBALS):
        assert lucid.serialization.get_safe_globals() == MODEL_GLOBALS
        model = lucid.load(path)
    assert type(model[2]) is nn.LSTM
    assert lucid.serialization.get_safe_globals() == []
    with pytest.raises(UnsafeCheckpointError):
        lucid.load(path)


def test_add_get_and_clear_safe_globals(tmp_path):
    path = tmp_path / "model.pt"
    lucid.save(small_model(), path)
    assert lucid.serialization.get_unsafe_globals_in_checkpoint(path) == [
        "lucid_nn.containers.Sequential", "lucid_nn.layers.linear.Linear", "lucid_nn.layers.activation.ReLU",
        "lucid_nn.layers.recurrent.LSTM",
    ]  # fmt: skip
    lucid.serialization.add_safe_globals(MODEL_GLOBALS)
    assert lucid.serialization.get_safe_globals() == MODEL_GLOBALS
    assert lucid.serialization.get_unsafe_globals_in_checkpoint(path) == []
    assert type(lucid.load(path)) is nn.Sequential
    lucid.serialization.clear_safe_globals()
    assert lucid.serialization.get_safe_globals() == []
    with pytest.raises(UnsafeCheckpointError):
        lucid.load(path)
    with pytest.raises(TypeError, match="expected classes or functions"):
        lucid.serialization.add_safe_globals([3])


def test_a_refused_global_is_never_imported(tmp_path, monkeypatch):
    (tmp_path / "evil_ckpt_module.py").write_text("class Payload:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import evil_ckpt_module

    lucid.save({"x": evil_ckpt_module.Payload()}, tmp_path / "p.pt")
    del sys.modules["evil_ckpt_module"]
    with pytest.raises(UnsafeCheckpointError, match="GLOBAL evil_ckpt_module.Payload was not an allowed global"):
        lucid.load(tmp_path / "p.pt")
    assert "evil_ckpt_module" not in sys.modules
    assert type(lucid.load(tmp_path / "p.pt", weights_only=False)["x"]).__name__ == "Payload"


def test_an_optimizer_and_arbitrary_objects_round_trip_sharing_their_tensors(tmp_path):
    model = nn.Linear(3, 2)
    opt = lucid.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(lucid.randn(4, 3)).sum().backward()
    opt.step()
    run = Run("baseline", 7)
    obj = {"model": model, "opt": opt, "run": run, "tags": {"a", "b"}, "dtype": lucid.float64,
           "device": lucid.device("cpu"), "order": OrderedDict(w=model.weight)}  # fmt: skip
    lucid.save(obj, tmp_path / "all.pt")
    back = lucid.load(tmp_path / "all.pt", weights_only=False)
    assert back["run"] == run and back["tags"] == {"a", "b"}
    assert back["dtype"] is lucid.float64 and back["device"] == lucid.device("cpu")
    # one tensor stored once: the optimizer, the model and the OrderedDict hold the same Parameter again
    assert back["opt"].param_groups[0]["params"][0] is back["model"].weight
    assert back["order"]["w"] is back["model"].weight
    buf = back["opt"].state[back["model"].weight]["momentum_buffer"]
    np.testing.assert_array_equal(buf.numpy(), opt.state[model.weight]["momentum_buffer"].numpy())
    np.testing.assert_array_equal(back["model"].weight.detach().numpy(), model.weight.detach().numpy())


def test_tensors_are_kept_out_of_the_pickle_as_raw_bytes(tmp_path):
    model = nn.Linear(64, 64)
    lucid.save(model, tmp_path / "m.pt")
    raw = lucid_nn.serialization.read_pickle(tmp_path / "m.pt")
    assert raw is not None and len(raw) < 2000  # the 16 KiB of weights are not in it
    assert b"numpy" not in raw and b"ndarray" not in raw
    # the weights are ordinary entries of the safetensors file (the pickle is one more, of bytes)
    import safetensors.numpy

    entries = safetensors.numpy.load_file(str(tmp_path / "m.pt"))
    weights = [v for k, v in entries.items() if v.shape == (64, 64)]
    np.testing.assert_array_equal(weights[0], model.weight.detach().numpy())


def test_numpy_arrays_are_refused_weights_only_as_in_pytorch_and_load_when_allowed(tmp_path):
    data = np.sin(np.arange(12.0)).reshape(3, 4)
    lucid.save(data, tmp_path / "traindata.pt")
    with pytest.raises(UnsafeCheckpointError, match=r"GLOBAL numpy\._core\.multiarray\._reconstruct was not"):
        lucid.load(tmp_path / "traindata.pt")
    np.testing.assert_array_equal(lucid.load(tmp_path / "traindata.pt", weights_only=False), data)
    allowed = [np._core.multiarray._reconstruct, np.ndarray, np.dtype, type(np.dtype(np.float64))]
    with lucid.serialization.safe_globals(allowed):
        np.testing.assert_array_equal(lucid.load(tmp_path / "traindata.pt"), data)


def test_state_dicts_stay_safetensors_without_a_pickle(tmp_path):
    model = small_model()
    lucid.save(model.state_dict(), tmp_path / "sd.pt")
    lucid.save({"model": model.state_dict(), "epoch": 3}, tmp_path / "ckpt.pt")
    assert lucid_nn.serialization.read_pickle(tmp_path / "sd.pt") is None
    assert lucid_nn.serialization.read_pickle(tmp_path / "ckpt.pt") is None
    assert lucid.load(tmp_path / "ckpt.pt")["epoch"] == 3  # weights_only needs no allow-list here
    # lucid_nn.save keeps its no-pickle contract: a Module gives its state dict, an object is refused
    lucid_nn.save(model, tmp_path / "plain.safetensors")
    assert set(lucid_nn.load(tmp_path / "plain.safetensors")) == set(model.state_dict())
    with pytest.raises(TypeError, match="cannot store a builtins.object"):
        lucid_nn.save({"bad": object()}, tmp_path / "bad.safetensors")


def test_a_file_saved_on_numpy_loads_on_mlx(tmp_path):
    if "mlx" not in [b.name for b in lc.backends() if b.status == "ok"]:
        pytest.skip("the MLX backend is not installed")
    model = small_model()
    lucid.save(model, tmp_path / "m.pt")
    back = lucid.load(tmp_path / "m.pt", map_location="mlx", weights_only=False)
    assert str(back[0].weight.device).startswith("mlx")
    np.testing.assert_array_equal(np.asarray(back[0].weight.detach().numpy()), model[0].weight.detach().numpy())
    x = lucid.randn(2, 2, 3)
    np.testing.assert_allclose(
        np.asarray(back(x.to("mlx"))[0].detach().numpy()), model(x)[0].detach().numpy(), rtol=1e-5, atol=1e-6
    )


def test_a_damaged_pickle_entry_raises_naming_the_file(tmp_path):
    path = tmp_path / "m.pt"
    lucid.save(Run("x", 1), path)
    raw = lucid_nn.serialization.read_pickle(path)
    data = path.read_bytes()
    path.write_bytes(data.replace(raw, raw[:5] + b"\x00" * (len(raw) - 5)))
    with pytest.raises(CheckpointError, match="m.pt is damaged: unpickling its object failed") as info:
        lucid.load(path, weights_only=False)
    assert not isinstance(info.value, UnsafeCheckpointError)
    missing = tmp_path / "missing.pt"
    renamed = data.replace(b'\\"pickle\\": \\"__lucid_pickle__\\"', b'\\"pickle\\": \\"__lucid_pickle_x\\"')
    assert renamed != data
    missing.write_bytes(renamed)
    with pytest.raises(CheckpointError, match="missing.pt is damaged: its pickle entry"):
        lucid.load(missing, weights_only=False)


CHILD = textwrap.dedent(
    """
    import sys, time
    import lucid, lucid.nn as nn
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
    lucid.save(nn.Sequential(*[nn.Linear(1024, 1024) for _ in range(4)]), sys.argv[1])
    """
)


def test_saving_a_module_killed_mid_write_leaves_the_old_file(tmp_path):
    path = tmp_path / "model.pt"
    lucid.save(nn.Linear(2, 2), path)
    before = path.read_bytes()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    guard = threading.Timer(120, child.kill)
    guard.start()
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "midway"
        temporaries = [p for p in Path(tmp_path).iterdir() if ".lucid-tmp-" in p.name]
        assert len(temporaries) == 1 and temporaries[0].stat().st_size > 4 << 20
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    finally:
        guard.cancel()
        if child.poll() is None:
            child.kill()
            child.wait()
    assert path.read_bytes() == before
    assert type(lucid.load(path, weights_only=False)) is nn.Linear


def test_pickle_module_other_than_pickle_is_refused(tmp_path):
    with pytest.raises(ValueError, match="pickle_module must be the standard pickle module"):
        lucid.save(nn.Linear(1, 1), tmp_path / "x.pt", pickle_module=object())


def test_a_transformer_loads_weights_only_with_pytorchs_module_paths_allowed(tmp_path):
    """word_language_model's allow-list, by PyTorch's paths (``nn.modules.linear.NonDynamicallyQuantizableLinear``)."""
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
    model = nn.TransformerEncoder(layer, 2)
    assert isinstance(model.layers[0].self_attn.out_proj, nn.modules.linear.NonDynamicallyQuantizableLinear)
    assert issubclass(nn.modules.linear.NonDynamicallyQuantizableLinear, nn.modules.linear.Linear)
    lucid.save(model, tmp_path / "model.pt")
    allowed = [
        lucid.nn.functional.relu, nn.modules.activation.MultiheadAttention, nn.modules.container.ModuleList,
        nn.modules.dropout.Dropout, nn.modules.linear.Linear, nn.modules.linear.NonDynamicallyQuantizableLinear,
        nn.modules.normalization.LayerNorm, nn.modules.transformer.TransformerEncoder,
        nn.modules.transformer.TransformerEncoderLayer,
    ]  # fmt: skip
    with lucid.serialization.safe_globals(allowed):
        back = lucid.load(tmp_path / "model.pt")
    model.eval()
    back.eval()
    x = lucid.randn(5, 3, 8)
    np.testing.assert_array_equal(back(x).detach().numpy(), model(x).detach().numpy())
