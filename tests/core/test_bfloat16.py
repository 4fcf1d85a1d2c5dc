"""bfloat16 as a first-class dtype (issue 35): conversions' bits, promotion, ``finfo``, reductions accumulating in
float32, gradients, checkpoints and printing, on every backend, against PyTorch 2.13's numbers.

The cases are ``tests/pytorch_face/fixtures/amp_cases.py``; ``amp.json`` beside them holds PyTorch's results
(``python -m tests.pytorch_face.fixtures.generate_amp``).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import lucid
import lucid_core as lc
import lucid_nn
from lucid_core.backend import ArrayAPIBackend
from tests.pytorch_face.fixtures import amp_cases as cases

TORCH = json.loads((Path(__file__).parents[1] / "pytorch_face" / "fixtures" / "amp.json").read_text())


def _is_nan_bits(b: int) -> bool:
    return (b & 0x7F80) == 0x7F80 and (b & 0x007F) != 0


def _same_bits(mine: list[int], torch: list[int]) -> bool:
    """Equal bfloat16 patterns, any NaN matching any NaN (PyTorch's vectorised cast writes 0xFFFF for NaN, its
    scalar one 0x7FC0: NaN payloads carry no meaning)."""
    return len(mine) == len(torch) and all(a == b or (_is_nan_bits(a) and _is_nan_bits(b)) for a, b in zip(mine, torch))


def _ulps(a: int, b: int) -> int:
    """Distance in bfloat16 units in the last place between two patterns of the same sign."""
    assert (a & 0x8000) == (b & 0x8000), (hex(a), hex(b))
    return abs((a & 0x7FFF) - (b & 0x7FFF))


# -- the dtype ------------------------------------------------------------------------------------------------------
def test_bfloat16_is_a_floating_dtype_of_two_bytes():
    assert lc.bfloat16.is_floating_point and lc.bfloat16.itemsize == 2 and lc.bfloat16 is not lc.float16
    assert lc.isdtype(lc.bfloat16, "real floating") and lucid.bfloat16 is lc.bfloat16


def test_finfo_is_pytorchs():
    assert cases.finfo(lucid) == TORCH["finfo"]
    assert lc.finfo(lc.bfloat16).dtype is lc.bfloat16


def test_promotion_is_pytorchs(device):
    assert cases.promotion(lucid, str(device)) == TORCH["promotion"]


def test_bfloat16_is_not_listed_as_a_standard_dtype(device):
    assert "bfloat16" not in lc.__array_namespace_info__().dtypes(device=device)
    assert lc.bfloat16 in device.backend.dtypes


# -- conversions ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("source", ["from_float32", "from_float64", "from_float16", "from_int64"])
def test_conversion_bits_are_pytorchs(device, source):
    """Round to nearest even at halfway cases, subnormals, overflow to inf, NaN; float64 through float32 first."""
    mine = cases.conversions(lucid, str(device))
    assert _same_bits(mine[source], TORCH["conversions"][source]), (mine[source], TORCH["conversions"][source])


@pytest.mark.parametrize("key", ["to_float16", "to_int32", "tolist", "item"])
def test_casts_out_of_bfloat16_are_pytorchs(device, key):
    assert cases.conversions(lucid, str(device))[key] == TORCH["conversions"][key]


def test_casts_spelled_as_pytorchs(device):
    x = lucid.tensor([1.0, 2.0], device=device)
    for y in (x.bfloat16(), x.to(lucid.bfloat16), x.type(lucid.BFloat16Tensor), lucid.zeros(2, dtype=lucid.bfloat16)):
        assert y.dtype is lucid.bfloat16
    assert x.bfloat16().type() in ("lucid.BFloat16Tensor", "lucid.mlx.BFloat16Tensor", "lucid.cpu.BFloat16Tensor")


def test_a_library_without_bfloat16_refuses_it_by_name(registered_strict):
    with pytest.raises(TypeError, match=r"backend 'strict_bf16' does not support dtype bfloat16"):
        lc.zeros(2, dtype=lc.bfloat16, device="strict_bf16")


@pytest.fixture
def registered_strict() -> Any:
    strict = pytest.importorskip("array_api_strict")
    lc.register_backend(ArrayAPIBackend(strict, name="strict_bf16"))
    yield
    lc.unregister_backend("strict_bf16")


def test_printing_is_pytorchs(device):
    x = lucid.tensor([1e-3, 123456.0, 3.14159], device=device).bfloat16()
    assert repr(x).startswith("tensor([9.9945e-04, 1.2339e+05, 3.1406e+00], dtype=bfloat16")
    assert repr(lucid.tensor(3.14159).bfloat16()).startswith("tensor(3.1406, dtype=bfloat16")


# -- reductions: float32 accumulation, rounded once -----------------------------------------------------------------
#: reductions through exp/log or a product of many terms: PyTorch's vectorised float32 math (Sleef) and NumPy's
#: differ in float32's last bits, which the bfloat16 rounding shows now and then as one or two units; PyTorch's
#: bfloat16 log_softmax also rounds its exp terms to bfloat16 before summing them (Lucid's is the float32
#: log_softmax rounded once, nearer the exact value), which moves a value near 0 by up to ~3e-3
TRANSCENDENTAL = {"log_softmax", "logsumexp", "prod_dim1"}


def _values(bits: list[int]) -> np.ndarray:
    return (np.array(bits, dtype=np.uint32) << 16).view(np.float32)


@pytest.mark.parametrize("exact", [True, False], ids=["exact_sums", "random"])
@pytest.mark.parametrize("name", sorted(cases.REDUCTIONS))
def test_reductions_give_pytorchs_bits(device, name, exact):
    mine = cases.reductions(lucid, str(device), exact)[name]
    torch = TORCH["reductions_exact" if exact else "reductions_random"][name]
    assert mine["dtype"] == torch["dtype"] == "bfloat16"
    if name in TRANSCENDENTAL:
        np.testing.assert_allclose(_values(mine["bits"]), _values(torch["bits"]), rtol=2**-7, atol=4e-3)
    else:
        assert mine["bits"] == torch["bits"]


def test_a_long_sum_accumulates_in_float32(device):
    """4096 ones sum to 4096 (a bfloat16 running sum stops at 256, where its ulp outgrows 1)."""
    x = lc.ones(4096, dtype=lc.bfloat16, device=device)
    assert lc.sum(x).item() == 4096.0 and lc.mean(x).item() == 1.0
    assert lc.cumulative_sum(x)[-1].item() == 4096.0


# -- autograd -------------------------------------------------------------------------------------------------------
def test_gradients_through_bfloat16_ops_are_pytorchs(device):
    mine, torch = cases.bf16_grads(lucid, str(device)), TORCH["bf16_grads"]
    for key in ("y_dtype", "leaf_grad_dtype", "w32_grad_dtype"):
        assert mine[key] == torch[key]
    assert max(_ulps(a, b) for a, b in zip(mine["leaf_grad_bits"], torch["leaf_grad_bits"])) <= 2
    # the float32 gradient sums bfloat16 terms: within a few bfloat16 ulps of the values
    np.testing.assert_allclose(mine["w32_grad"], torch["w32_grad"], rtol=3e-2, atol=1e-2)


# -- checkpoints ----------------------------------------------------------------------------------------------------
def test_safetensors_keep_bfloat16_and_float16_bits(device, tmp_path):
    bits = np.array(cases.F32_BITS, dtype=np.uint32).view(np.float32)
    b = lucid.from_numpy(bits.copy()).to(device).bfloat16()
    h = lucid.from_numpy(bits.copy()).to(device).half()
    path = tmp_path / "mixed.safetensors"
    lucid_nn.save({"b": b, "h": h}, path)
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    assert header["b"]["dtype"] == "BF16" and header["h"]["dtype"] == "F16"  # the format's own dtype names
    back = lucid_nn.load(path)
    assert back["b"].dtype is lucid.bfloat16 and back["h"].dtype is lucid.float16
    assert cases.bf16_bits(lucid, back["b"]) == cases.bf16_bits(lucid, b)
    assert back["h"].numpy().view(np.uint16).tolist() == h.numpy().view(np.uint16).tolist()


def test_safetensors_bfloat16_files_are_readable_by_the_safetensors_library(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    path = tmp_path / "b.safetensors"
    lucid_nn.save({"b": lucid.tensor([1.0, -2.5, 3.14159]).bfloat16()}, path)
    arr = st.load_file(str(path))["b"]
    assert arr.dtype.name == "bfloat16" and arr.astype(np.float32).tolist() == [1.0, -2.5, 3.140625]


def test_moves_between_backends_keep_bfloat16(device):
    x = lucid.tensor([0.1, -7.0, 1e30], device=device).bfloat16()
    for target in ("cpu", "mlx:cpu"):
        y = x.to(target)
        assert y.dtype is lucid.bfloat16 and cases.bf16_bits(lucid, y) == cases.bf16_bits(lucid, x)
    assert x.numpy().dtype.name == "bfloat16"
