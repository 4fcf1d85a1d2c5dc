"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict, Identity."""

from __future__ import annotations

from collections import OrderedDict

import pytest

import lucid_core as lc
import lucid_nn as nn


def test_sequential_runs_in_order_and_indexes(device):
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)).to(device)
    assert seq(lc.ones((4, 2), device=device)).shape == (4, 1)
    assert isinstance(seq[0], nn.Linear) and isinstance(seq[-1], nn.Linear) and len(seq) == 3
    with pytest.raises(IndexError, match="index 3 is out of range for length 3"):
        seq[3]


def test_sequential_slice_is_a_sequential_sharing_modules():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    head = seq[:2]
    assert isinstance(head, nn.Sequential) and len(head) == 2 and head[0] is seq[0]
    assert list(head.state_dict()) == ["0.weight", "0.bias"]


def test_sequential_append_insert_delete_and_ordered_dict():
    seq = nn.Sequential(nn.ReLU())
    seq.append(nn.Tanh())
    seq.insert(0, nn.Sigmoid())
    assert [type(m).__name__ for m in seq] == ["Sigmoid", "ReLU", "Tanh"]
    del seq[1]
    assert [type(m).__name__ for m in seq] == ["Sigmoid", "Tanh"]
    assert [n for n, _ in seq.named_children()] == ["0", "1"]
    named = nn.Sequential(OrderedDict(a=nn.ReLU(), b=nn.Tanh()))
    assert isinstance(named.b, nn.Tanh) and isinstance(named[1], nn.Tanh)


def test_sequential_setitem_replaces_module():
    seq = nn.Sequential(nn.ReLU(), nn.Tanh())
    seq[1] = nn.Sigmoid()
    assert isinstance(seq[1], nn.Sigmoid)


def test_module_list_registers_and_slices():
    ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    assert len(list(ml.parameters())) == 6 and len(ml) == 3
    ml.append(nn.ReLU())
    ml += [nn.Tanh()]
    assert isinstance(ml[-1], nn.Tanh) and len(ml[1:3]) == 2
    del ml[0]
    assert [n for n, _ in ml.named_children()] == ["0", "1", "2", "3"]
    with pytest.raises(TypeError, match="iterable of modules"):
        ml.extend(nn.ReLU())


def test_module_dict_behaves_like_a_dict():
    md = nn.ModuleDict({"a": nn.Linear(1, 2), "b": nn.ReLU()})
    md["c"] = nn.Tanh()
    assert list(md.keys()) == ["a", "b", "c"] and "b" in md and len(md) == 3
    assert list(md.state_dict()) == ["a.weight", "a.bias"]
    assert isinstance(md.pop("b"), nn.ReLU) and "b" not in md


def test_parameter_list_and_dict_register_parameters(device):
    pl = nn.ParameterList([lc.ones((2,), device=device), nn.Parameter(lc.zeros((3,), device=device))])
    assert all(isinstance(p, nn.Parameter) for p in pl)
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"]
    pl.append(lc.ones((1,), device=device))
    assert len(pl) == 3 and pl[-1].shape == (1,)
    pd = nn.ParameterDict({"w": lc.ones((2, 2), device=device)})
    pd["b"] = lc.zeros((2,), device=device)
    assert [n for n, _ in pd.named_parameters()] == ["w", "b"] and pd["w"].requires_grad
    with pytest.raises(TypeError, match="expected a Parameter or a Tensor"):
        pd["x"] = 3


def test_identity_passes_input_through(device):
    x = lc.ones((2,), device=device)
    assert nn.Identity(54, unused="x")(x) is x


def test_module_list_repr_groups_identical_layers():
    ml = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU()])
    assert repr(ml) == ("ModuleList(\n  (0-1): 2 x Linear(in_features=2, out_features=2, bias=True)\n  (2): ReLU()\n)")
