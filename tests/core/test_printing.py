"""Printing tensors: PyTorch's layout, without NumPy, from fixtures PyTorch wrote
(``fixtures/generate_print_reference.py``).

What is compared: the whole text of ``repr``. The fixture's ``expected`` is PyTorch's own code laying out
PyTorch's text of the values with Lucid's suffixes. Lucid always shows ``dtype=`` and ``device=`` (PyTorch
omits its default dtype and the CPU device) and spells them ``float32`` and ``numpy:cpu`` (PyTorch:
``torch.float32``, ``device='cuda:0'``); the values, their widths, the summary and the wrapping are PyTorch's.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

import lucid_core as lc
from lucid_core import _format
from tests.core.fixtures.print_cases import wave_values

REFERENCE = json.loads((Path(__file__).parent / "fixtures" / "print_reference.json").read_text())
CASES = {case["name"]: case for case in REFERENCE["cases"]}


def _value(v: Any) -> Any:
    if isinstance(v, list):
        return [_value(x) for x in v]
    if isinstance(v, dict):
        return complex(_value(v["re"]), _value(v["im"]))
    if isinstance(v, str):
        return float(v)  # "nan", "inf", "-inf"
    return v


def build(case: dict[str, Any], device: lc.Device) -> lc.Tensor:
    dtype = getattr(lc, case["dtype"])
    shape = tuple(case["shape"])
    if dtype not in device.backend.dtypes:
        pytest.skip(f"{device} has no {dtype.name}")
    if math.prod(shape) == 0:
        t = lc.zeros(shape, dtype=dtype, device=device)
    elif case["values"] == "wave":
        t = lc.reshape(lc.asarray(wave_values(math.prod(shape)), dtype=dtype, device=device), shape)
    else:
        t = lc.asarray(_value(case["values"]), dtype=dtype, device=device)
    assert t.shape == shape
    if case["autograd"]:
        t.requires_grad = True
        if case["autograd"] == "op":
            t = t * 1.0
    return t


@pytest.mark.parametrize("name", sorted(CASES))
def test_repr_matches_pytorchs_layout(name: str, device: lc.Device) -> None:
    case = CASES[name]
    if str(device) not in case["expected"]:
        pytest.skip(f"the fixture has no layout for a device named {device}")
    t = build(case, device)
    assert repr(t) == case["expected"][str(device)]
    assert str(t) == repr(t)


def test_parameter_prints_as_pytorch_does(device: lc.Device) -> None:
    ref = REFERENCE["parameter"]
    p = lc.Parameter(lc.asarray(ref["values"], device=device))
    assert repr(p) == ref["expected"][str(device)] and str(p) == repr(p)
    assert ref["torch_repr"].startswith("Parameter containing:\ntensor([[ 1.0000, -2.5000],\n")


@pytest.mark.parametrize("make", [lambda d: lc.randn(8, 4, device=d), lambda d: lc.randn(40, 30, device=d)])
def test_dtype_and_device_appear_once_however_the_values_wrap(make: Any, device: lc.Device) -> None:
    for t in (make(device), lc.Parameter(make(device))):
        text = repr(t)
        assert text.count("dtype=") == 1 and text.count("device=") == 1
        assert text.endswith(f"device={device})") or text.endswith("requires_grad=True)")


def test_a_long_int_vector_is_summarised(device: lc.Device) -> None:
    text = repr(lc.zeros(2000, dtype=lc.int32, device=device))
    assert text == f"tensor([0, 0, 0,  ..., 0, 0, 0], dtype=int32, device={device})"
    assert "shape=" not in text


def test_a_summary_transfers_only_the_edges(device: lc.Device) -> None:
    # (1000, 1000) elements: the summary reads 6 rows of 6 values, not a million Python floats
    calls: list[int] = []
    backend = device.backend
    original = backend.to_list

    def counting(array: Any) -> Any:
        out = original(array)
        calls.append(len(out) if isinstance(out, list) else 1)
        return out

    t = lc.ones((1000, 1000), device=device)
    backend.to_list = counting
    try:
        text = repr(t)
    finally:
        del backend.to_list
    assert sum(calls) == 36
    assert text.startswith("tensor([[1., 1., 1.,  ..., 1., 1., 1.],")


# -- without NumPy -----------------------------------------------------------------------------------------
def _no_numpy(*args: Any) -> Any:
    raise ModuleNotFoundError("No module named 'numpy'", name="numpy")


def test_printing_uses_the_arrays_own_api_when_the_host_transfer_needs_numpy(
    device: lc.Device, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = lc.asarray([[1.5, -2.0], [0.25, 4.0]], device=device)
    expected = repr(t)
    monkeypatch.setattr(device.backend, "to_list", _no_numpy)
    assert repr(t) == expected


class _BareArray:
    """An array with only what the Array API promises: shape, integer indexing, float()."""

    def __init__(self, values: Any) -> None:
        self.values = values
        self.shape = (len(values),) if isinstance(values, list) else ()

    def __getitem__(self, i: int) -> _BareArray:
        return _BareArray(self.values[i])

    def __float__(self) -> float:
        return float(self.values)


class _BackendNeedingNumpy:
    to_list = staticmethod(_no_numpy)


def test_printing_reads_a_bare_array_api_array_element_by_element() -> None:
    values = _format.host_values(_BackendNeedingNumpy(), _BareArray([1.0, 2.5]), (2,), "f", summarize=False)
    assert values == [1.0, 2.5]
    assert _format.format_values(values, 1, "f", 7) == "[1.0000, 2.5000]"


def test_numpy_without_numpy_says_to_install_it(device: lc.Device, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device.backend, "to_numpy", _no_numpy)
    with pytest.raises(ModuleNotFoundError, match=r"NumPy is not installed; install it with `pip install numpy`"):
        lc.asarray([1.0], device=device).numpy()
