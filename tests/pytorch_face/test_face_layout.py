"""The face laid out as PyTorch: full module paths, and the corners issue 33 lists (default dtype,
``Generator``, ``__format__``, global module hooks, ``testing``, ``nn.utils``), against PyTorch's fixtures.

The cases are ``fixtures/layout_cases.py``; ``fixtures/layout.json`` holds what PyTorch 2.13 returned.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

import lucid
from tests.pytorch_face.fixtures import layout_cases

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "layout.json").read_text())
TORCH = FIXTURE["cases"]


def _json(value: Any) -> Any:
    return json.loads(json.dumps(value))


@pytest.mark.parametrize("name", sorted(layout_cases.CASES))
def test_case_gives_pytorchs_result(name: str) -> None:
    assert _json(layout_cases.CASES[name](lucid)) == TORCH[name]


# -- module paths --------------------------------------------------------------------------------------
REQUIRED = {
    "torch.utils.data": ["DataLoader", "DistributedSampler", "default_convert", "random_split", "Subset",
                         "ConcatDataset", "IterableDataset", "WeightedRandomSampler", "BatchSampler"],
    "torch.utils.data.dataloader": ["DataLoader", "default_collate", "get_worker_info", "default_convert"],
    "torch.utils.data.dataset": ["Dataset", "IterableDataset", "Subset", "ConcatDataset", "random_split"],
    "torch.utils.data.sampler": ["RandomSampler", "WeightedRandomSampler", "BatchSampler", "Sampler"],
    "torch.utils.data.distributed": ["DistributedSampler"],
    "torch.nn.utils.rnn": ["PackedSequence", "pad_sequence", "pack_padded_sequence", "pad_packed_sequence",
                           "pack_sequence", "unpack_sequence", "unpad_sequence", "invert_permutation"],
    "torch.nn.utils.parametrizations": ["weight_norm", "spectral_norm"],
    "torch.nn.utils.parametrize": ["register_parametrization", "is_parametrized", "remove_parametrizations",
                                   "cached", "ParametrizationList", "type_before_parametrizations"],
    "torch.nn.utils": ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters",
                       "weight_norm", "remove_weight_norm", "spectral_norm", "rnn", "parametrize", "parametrizations"],
    "torch.nn.parallel": ["DistributedDataParallel", "DataParallel"],
}  # fmt: skip


@pytest.mark.parametrize("path", sorted(REQUIRED))
def test_the_names_programs_import_are_there(path: str) -> None:
    assert set(REQUIRED[path]) <= set(FIXTURE["layout"]["paths"][path])  # the list itself is PyTorch's
    mod = importlib.import_module(path.replace("torch", "lucid", 1))
    assert [n for n in REQUIRED[path] if not hasattr(mod, n)] == []
    # and whatever else of PyTorch's list the parent package has is reachable here too
    parent = importlib.import_module(path.replace("torch", "lucid", 1).rsplit(".", 1)[0])
    names = FIXTURE["layout"]["paths"][path]
    assert [n for n in names if not hasattr(mod, n) and hasattr(parent, n)] == []


def test_nn_modules_table_is_pytorchs_layout() -> None:
    from lucid.nn.modules import LAYOUT

    torch_files = FIXTURE["layout"]["nn_modules"]
    for file, names in torch_files.items():
        if file in ("linear_cross_entropy", "linear_cross_entropy_options"):
            continue  # PyTorch's internal helpers of LinearCrossEntropyLoss (no public class)
        public = {n for n in names if not n.startswith("_")}
        assert public <= set(LAYOUT.get(file, ())), f"nn.modules.{file}: {sorted(public - set(LAYOUT.get(file, ())))}"
    for file, names in LAYOUT.items():
        assert set(names) <= set(torch_files[file]) | {"_ConvTransposeNd"}, file


def test_every_lucid_layer_is_reachable_under_its_pytorch_file() -> None:
    from lucid.nn.modules import LAYOUT

    for file, names in LAYOUT.items():
        mod = importlib.import_module(f"lucid.nn.modules.{file}")
        for n in names:
            if not n.startswith("_") and hasattr(lucid.nn, n):
                assert getattr(mod, n) is getattr(lucid.nn, n), f"lucid.nn.modules.{file}.{n}"


def test_private_bases_programs_subclass_are_there() -> None:
    from lucid.nn.modules.batchnorm import _BatchNorm, _NormBase
    from lucid.nn.modules.conv import _ConvNd
    from lucid.nn.modules.loss import _Loss, _WeightedLoss
    from lucid.nn.modules.module import Module
    from lucid.nn.modules.utils import _pair, _quadruple, _single, _triple

    assert issubclass(lucid.nn.BatchNorm2d, _BatchNorm) and issubclass(_BatchNorm, _NormBase)
    assert issubclass(lucid.nn.Conv2d, _ConvNd) and issubclass(lucid.nn.CrossEntropyLoss, _WeightedLoss)
    assert issubclass(_WeightedLoss, _Loss) and Module is lucid.nn.Module
    assert (_single(2), _pair(3), _triple((1, 2, 3)), _quadruple(0)) == ((2,), (3, 3), (1, 2, 3), (0, 0, 0, 0))


def test_consume_prefix_strips_ddp_keys() -> None:
    from lucid.nn.modules.utils import consume_prefix_in_state_dict_if_present

    sd = {"module.weight": 1, "module.bias": 2, "other": 3}
    consume_prefix_in_state_dict_if_present(sd, "module.")
    assert sd == {"weight": 1, "bias": 2, "other": 3}


def test_data_paths_hold_the_same_objects() -> None:
    from lucid.utils.data import (
        DataLoader,
        DistributedSampler,
        RandomSampler,
        dataloader,
        dataset,
        distributed,
        random_split,
        sampler,
    )

    assert (dataloader.DataLoader, distributed.DistributedSampler, sampler.RandomSampler, dataset.random_split) == (
        DataLoader,
        DistributedSampler,
        RandomSampler,
        random_split,
    )
    assert lucid.data.DataLoader is DataLoader


# -- small corners that need no PyTorch numbers ------------------------------------------------------------
def test_set_default_dtype_rejects_non_float_with_pytorchs_message() -> None:
    with pytest.raises(TypeError, match="only floating-point types are supported as the default type"):
        lucid.set_default_dtype(lucid.int32)
    assert lucid.get_default_dtype() is lucid.float32


def test_printoptions_change_precision_and_restore() -> None:
    try:
        lucid.set_printoptions(precision=2)
        assert "1.12" in repr(lucid.tensor([1.12345])) and "1.123" not in repr(lucid.tensor([1.12345]))
        lucid.set_printoptions(sci_mode=True)
        assert "e+00" in repr(lucid.tensor([1.5]))
    finally:
        lucid.set_printoptions(profile="default")
    assert "1.1235" in repr(lucid.tensor([1.12345]))


def test_runtime_switches() -> None:
    assert lucid.are_deterministic_algorithms_enabled() is False
    lucid.use_deterministic_algorithms(True)
    try:
        assert lucid.are_deterministic_algorithms_enabled() is True
    finally:
        lucid.use_deterministic_algorithms(False)
    assert lucid.typename(lucid.zeros(2)) == "lucid.FloatTensor"
    assert lucid.typename(lucid.nn.Linear(1, 1)) == "lucid_nn.layers.linear.Linear"
    assert lucid.is_storage(lucid.zeros(2).untyped_storage()) and not lucid.is_storage(lucid.zeros(2))
    assert lucid.is_grad_enabled() and isinstance(lucid.get_num_threads(), int)


def test_generator_set_state_rejects_other_objects() -> None:
    with pytest.raises(RuntimeError, match="expected the uint8 tensor made by Generator.get_state"):
        lucid.Generator().set_state(lucid.zeros(3))


def test_generator_streams_are_independent_on_every_backend(device: str) -> None:
    g1, g2 = lucid.Generator().manual_seed(3), lucid.Generator().manual_seed(3)
    lucid.manual_seed(0)
    a = lucid.rand(4, generator=g1, device=device)
    mid = lucid.rand(2, device=device)  # the global stream is not disturbed by g1
    b = lucid.rand(4, generator=g2, device=device)
    lucid.manual_seed(0)
    assert a.tolist() == b.tolist()
    assert lucid.rand(2, device=device).tolist() == mid.tolist()


def test_make_tensor_respects_bounds_and_dtype(device: str) -> None:
    from lucid.testing import make_tensor

    f = make_tensor(50, dtype=lucid.float32, device=device, low=-1, high=1)
    i = make_tensor((4, 5), dtype=lucid.int64, device=device, low=0, high=3, exclude_zero=True)
    assert f.dtype is lucid.float32 and bool((f >= -1).all()) and bool((f < 1).all())
    assert i.shape == (4, 5) and set(i.reshape(-1).tolist()) <= {1, 2}
    assert make_tensor(3, dtype=lucid.float32, device=device, requires_grad=True).requires_grad


def test_assert_close_checks_shape_device_and_dtype() -> None:
    from lucid.testing import assert_close

    with pytest.raises(
        AssertionError, match=r"attribute 'shape' do not match: lucid.Size\(\[2\]\) != lucid.Size\(\[3\]\)"
    ):
        assert_close(lucid.zeros(2), lucid.zeros(3))
    with pytest.raises(AssertionError, match="attribute 'dtype' do not match"):
        assert_close(lucid.zeros(2), lucid.zeros(2, dtype=lucid.float64))
    assert_close(lucid.zeros(2), lucid.zeros(2, dtype=lucid.float64), check_dtype=False)


def test_module_to_empty_keeps_parameter_objects(device: str) -> None:
    m = lucid.nn.Linear(3, 2)
    w = m.weight
    m.to_empty(device=device)
    assert m.weight is w and m.weight.device == device and m.weight.shape == (2, 3)


def test_parametrization_can_be_removed_keeping_its_value() -> None:
    from lucid.nn.utils import parametrize
    from lucid.nn.utils.parametrizations import weight_norm

    m = weight_norm(lucid.nn.Linear(3, 2))
    value = m.weight.detach().tolist()
    parametrize.remove_parametrizations(m, "weight")
    assert type(m) is lucid.nn.Linear and sorted(m.state_dict()) == ["bias", "weight"]
    assert m.weight.tolist() == value and isinstance(m.weight, lucid.nn.Parameter)


def test_assigning_a_parametrized_tensor_goes_through_right_inverse() -> None:
    from lucid.nn.utils.parametrizations import weight_norm

    m = weight_norm(lucid.nn.Linear(2, 2))
    m.weight = lucid.tensor([[3.0, 4.0], [0.0, 2.0]])
    assert m.parametrizations.weight.original0.reshape(-1).tolist() == [5.0, 2.0]
    assert m.weight.tolist() == [[3.0, 4.0], [0.0, 2.0]]


def test_old_weight_norm_is_removable() -> None:
    from lucid.nn.utils import remove_weight_norm, weight_norm

    m = weight_norm(lucid.nn.Linear(3, 2))
    x = lucid.ones(1, 3)
    y = m(x).tolist()
    remove_weight_norm(m)
    assert sorted(m.state_dict()) == ["bias", "weight"] and m(x).tolist() == y and not m._forward_pre_hooks


def test_global_forward_hook_always_call_runs_when_forward_raises() -> None:
    from lucid.nn.modules.module import register_module_forward_hook

    class Broken(lucid.nn.Module):
        def forward(self, x: lucid.Tensor) -> lucid.Tensor:
            raise ValueError("boom")

    seen: list[str] = []
    h = register_module_forward_hook(lambda m, a, o: seen.append(type(m).__name__), always_call=True)
    try:
        with pytest.raises(ValueError, match="boom"):
            Broken()(lucid.ones(1))
    finally:
        h.remove()
    Broken.forward = lambda self, x: x  # type: ignore[method-assign]
    Broken()(lucid.ones(1))
    assert seen == ["Broken"]


def test_format_of_a_0d_tensor_on_every_backend(device: str) -> None:
    loss = lucid.tensor(0.123456, device=device)
    assert f"{loss:.4f}" == "0.1235" and f"epoch {1}: {loss:.2f}" == "epoch 1: 0.12"


def test_default_dtype_float64_on_every_backend_that_has_it(device: str) -> None:
    if lucid.float64 not in lucid.get_backend(str(device).split(":")[0]).dtypes:
        pytest.skip("no float64 on this backend")
    lucid.set_default_dtype(lucid.float64)
    try:
        assert lucid.zeros(2, device=device).dtype is lucid.float64
        assert lucid.tensor([1.5], device=device).dtype is lucid.float64
    finally:
        lucid.set_default_dtype(lucid.float32)
    assert lucid.zeros(2, device=device).dtype is lucid.float32
