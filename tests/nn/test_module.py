"""The Module base: registration, traversal, modes, to(), state dicts, hooks, repr."""

from __future__ import annotations

import json
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

import lucid_core as lc
import lucid_nn as nn

FIX = json.loads((Path(__file__).parent / "fixtures" / "nn_a.json").read_text())


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.scale = nn.Parameter(lc.ones((4,)))
        self.register_buffer("steps", lc.zeros((), dtype=lc.int64))
        self.register_buffer("cache", lc.zeros((2,)), persistent=False)
        self.plain = 5

    def forward(self, x: lc.Tensor) -> lc.Tensor:
        return self.fc(x) * self.scale


def torch_model() -> nn.Module:
    return nn.Sequential(
        OrderedDict(
            enc=nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.1)),
            act=nn.GELU(approximate="tanh"),
            heads=nn.ModuleList([nn.Linear(8, 2, bias=False), nn.Linear(8, 2, bias=False), nn.LayerNorm(2)]),
            emb=nn.Embedding(10, 3, padding_idx=0),
        )
    )


def test_attribute_assignment_registers_parameters_buffers_and_modules():
    m = Net()
    assert [n for n, _ in m.named_parameters()] == ["scale", "fc.weight", "fc.bias"]
    assert [n for n, _ in m.named_buffers()] == ["steps", "cache"]
    assert [n for n, _ in m.named_children()] == ["fc"]
    assert m.plain == 5 and "plain" not in m._parameters
    assert isinstance(m.fc, nn.Linear)


def test_named_parameters_prefix_and_no_recurse():
    m = Net()
    assert [n for n, _ in m.named_parameters(prefix="net")] == ["net.scale", "net.fc.weight", "net.fc.bias"]
    assert [n for n, _ in m.named_parameters(recurse=False)] == ["scale"]
    assert len(list(m.parameters())) == 3


def test_shared_parameters_are_listed_once():
    lin = nn.Linear(2, 2)
    m = nn.Sequential(lin, nn.ReLU(), lin)
    assert len(list(m.parameters())) == 2
    assert list(m.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_traversal_names_match_torch():
    m = torch_model()
    assert [n for n, _ in m.named_parameters()] == FIX["repr"]["params"]
    assert [n for n, _ in m.named_modules()] == FIX["repr"]["modules"]
    assert list(m.state_dict()) == FIX["repr"]["keys"]


def test_repr_matches_torch_exactly():
    assert repr(torch_model()) == FIX["repr"]["model"]


def test_layer_reprs_match_torch():
    layers = [
        nn.LeakyReLU(0.2), nn.Softplus(beta=2.0), nn.ELU(alpha=0.5), nn.PReLU(3), nn.Softmax(dim=1), nn.Flatten(),
        nn.Unflatten(1, (2, 3)), nn.GroupNorm(2, 4), nn.RMSNorm(4), nn.InstanceNorm2d(3), nn.Bilinear(2, 3, 4),
        nn.Hardtanh(-2.0, 2.0), nn.Dropout2d(0.3), nn.Identity(), nn.GLU(), nn.Tanh(), nn.LayerNorm([2, 3]),
    ]  # fmt: skip
    assert [repr(m) for m in layers] == FIX["repr"]["layers"]


def test_assigning_a_tensor_to_a_parameter_slot_raises():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'weight'"):
        m.weight = lc.ones((2, 2))
    m.bias = None
    assert m.bias is None and "bias" not in m.state_dict()


def test_assigning_before_init_raises():
    class Bad(nn.Module):
        def __init__(self) -> None:
            self.w = nn.Parameter(lc.ones((1,)))

    with pytest.raises(AttributeError, match=r"before Module.__init__\(\) call"):
        Bad()


def test_register_buffer_validates_names():
    m = nn.Module()
    with pytest.raises(KeyError, match="contain"):
        m.register_buffer("a.b", lc.ones((1,)))
    with pytest.raises(TypeError, match="Tensor or None required"):
        m.register_buffer("x", 3)


def test_getattr_error_names_the_class_and_attribute():
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'nope'"):
        _ = nn.Linear(1, 1).nope


def test_delattr_and_dir():
    m = Net()
    assert "fc" in dir(m) and "scale" in dir(m) and "steps" in dir(m)
    del m.scale
    assert "scale" not in dict(m.named_parameters())
    del m.fc
    assert list(m.children()) == []


def test_get_submodule_and_parameter():
    m = torch_model()
    assert isinstance(m.get_submodule("enc.1"), nn.BatchNorm1d)
    assert m.get_parameter("heads.2.weight").shape == (2,)
    with pytest.raises(AttributeError, match="has no submodule `zzz`"):
        m.get_submodule("enc.zzz")
    with pytest.raises(AttributeError, match="has no parameter `bias`"):
        m.get_parameter("heads.0.bias")


def test_train_eval_propagate_and_apply_visits_every_module():
    m = torch_model()
    assert m.training and m.enc[1].training
    assert m.eval() is m
    assert not any(sub.training for sub in m.modules())
    m.train()
    assert all(sub.training for sub in m.modules())
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen[-1] == "Sequential" and seen.count("Linear") == 3


def test_requires_grad_and_zero_grad(device):
    m = nn.Linear(3, 2).to(device)
    m(lc.ones((1, 3), device=device)).sum().backward()
    assert m.weight.grad is not None
    m.zero_grad(set_to_none=False)
    assert m.weight.grad.tolist() == [[0.0] * 3] * 2
    m.zero_grad()
    assert m.weight.grad is None
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


def test_to_dtype_keeps_parameter_objects_and_moves_grads(device):
    m = Net().to(device)
    w = m.fc.weight
    m(lc.ones((2, 3), device=device)).sum().backward()
    out = m.double()
    assert out is m and m.fc.weight is w
    assert w.dtype == lc.float64 and w.grad.dtype == lc.float64
    assert m.steps.dtype == lc.int64  # integer buffers keep their dtype
    assert m.cache.dtype == lc.float64
    assert m.float().fc.weight.dtype == lc.float32


def test_to_device_moves_in_place(device):
    m = Net()
    p = m.scale
    m.to(device)
    assert m.scale is p and p.device == device and m.steps.device == device
    assert m(lc.ones((1, 3), device=device)).device == device


def test_to_rejects_integer_dtype():
    with pytest.raises(TypeError, match="floating point or complex"):
        nn.Linear(1, 1).to(lc.int32)


def test_state_dict_excludes_non_persistent_buffers_and_detaches():
    sd = Net().state_dict()
    assert list(sd) == ["scale", "steps", "fc.weight", "fc.bias"]
    assert not sd["scale"].requires_grad
    assert Net().state_dict(keep_vars=True)["scale"].requires_grad
    assert list(Net().state_dict(prefix="m.")) == ["m.scale", "m.steps", "m.fc.weight", "m.fc.bias"]


def test_load_state_dict_round_trip_keeps_parameter_objects(device):
    a, b = Net().to(device), Net().to(device)
    w = b.fc.weight
    res = b.load_state_dict(a.state_dict())
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert b.fc.weight is w
    np.testing.assert_array_equal(w.detach().numpy(), a.fc.weight.detach().numpy())


def test_load_state_dict_casts_to_parameter_dtype(device):
    m = Net().to(device)
    sd = {k: v.astype(lc.float64) if v.dtype == lc.float32 else v for k, v in Net().state_dict().items()}
    m.load_state_dict(sd)
    assert m.fc.weight.dtype == lc.float32 and m.fc.weight.device == device


def test_load_state_dict_reports_every_problem():
    sd = Net().state_dict()
    del sd["scale"]
    sd["extra"] = lc.ones((1,))
    sd["fc.weight"] = lc.ones((5, 3))
    with pytest.raises(RuntimeError) as info:
        Net().load_state_dict(sd)
    msg = str(info.value)
    assert 'Missing key(s) in state_dict: "scale"' in msg
    assert 'Unexpected key(s) in state_dict: "extra"' in msg
    assert "size mismatch for fc.weight: copying a param with shape (5, 3)" in msg


def test_load_state_dict_non_strict_returns_keys():
    sd = Net().state_dict()
    del sd["scale"]
    sd["extra"] = lc.ones((1,))
    res = Net().load_state_dict(sd, strict=False)
    assert res.missing_keys == ["scale"] and res.unexpected_keys == ["extra"]


def test_forward_hooks_modify_and_remove():
    m = nn.Identity()
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append(out.item()) or out + 1)
    x = lc.asarray(3.0)
    assert m(x).item() == 7.0 and calls == [6.0]
    h1.remove()
    h2.remove()
    assert m(x).item() == 3.0 and calls == [6.0]


def test_missing_forward_raises():
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(1)
