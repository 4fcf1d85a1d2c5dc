"""8-bit float dtypes: casts give PyTorch's bits, finfo is PyTorch's, promotion refuses as PyTorch's does.

The bits are ``fixtures/low_precision_dtypes.npz``, written once by ``generate_low_precision_dtypes.py`` with
PyTorch 2.13: casts from float32, float64, float16, bfloat16 and int64 sources, and every bit pattern read back.
A backend without float8 (MLX, array-api-strict) refuses the dtype by name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import lucid_core as lc
from lucid_core.backend import ArrayAPIBackend

with np.load(Path(__file__).parent / "fixtures" / "low_precision_dtypes.npz") as _f:
    TORCH = {k: _f[k] for k in _f.files}

NAMES = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu")
SOURCES = ("float32", "float64", "float16", "bfloat16", "int64")


def _bits(t: lc.Tensor) -> np.ndarray:
    return np.asarray(t.numpy()).view(np.uint8)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("name", NAMES)
def test_cast_gives_pytorchs_bits(name, source):
    values = TORCH[f"source:{source}"]
    x = lc.asarray(values, dtype=lc.float32) if source == "float32" else lc.asarray(values)
    if source == "bfloat16":
        x = lc.astype(lc.asarray(values, dtype=lc.float32), lc.bfloat16)
    got, want = _bits(lc.astype(x, getattr(lc, name))), TORCH[f"{name}:{source}"]
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{name} from {source}: {bad.size} casts differ, e.g. {values[bad[:3]]} -> {got[bad[:3]]}"


@pytest.mark.parametrize("name", NAMES)
def test_tensor_from_python_floats_rounds_as_the_cast(name):
    values = TORCH["source:float32"][:500]
    got = _bits(lc.asarray(values.tolist(), dtype=getattr(lc, name)))
    np.testing.assert_array_equal(got, TORCH[f"{name}:float32"][:500])


@pytest.mark.parametrize("name", NAMES)
def test_every_bit_pattern_reads_back_as_pytorchs_float32(name):
    native = np.dtype(getattr(ml_dtypes, name))
    patterns = lc.asarray(np.arange(256, dtype=np.uint8).view(native))
    assert patterns.dtype is getattr(lc, name)
    got = lc.astype(patterns, lc.float32).numpy()
    np.testing.assert_array_equal(got, TORCH[f"{name}:back"])  # NaNs at the same places
    finite = np.isfinite(got)
    ints = lc.astype(lc.asarray(np.arange(256, dtype=np.uint8).view(native)[finite]), lc.int32)
    in_range = np.abs(got[finite]) < 2.0**31  # beyond int32 the C cast is undefined (PyTorch gives INT_MIN)
    np.testing.assert_array_equal(ints.numpy()[in_range], TORCH[f"{name}:back_int"][in_range])


#: torch.finfo of each dtype (PyTorch 2.13): eps, max, min, smallest_normal, resolution
FINFO = {
    "float8_e4m3fn": (0.125, 448.0, -448.0, 2.0**-6, 1.0),
    "float8_e4m3fnuz": (0.125, 240.0, -240.0, 2.0**-7, 1.0),
    "float8_e5m2": (0.25, 57344.0, -57344.0, 2.0**-14, 1.0),
    "float8_e5m2fnuz": (0.125, 57344.0, -57344.0, 2.0**-15, 1.0),
    "float8_e8m0fnu": (1.0, 2.0**127, 2.0**-127, 2.0**-127, 1.0),
}


@pytest.mark.parametrize("name", NAMES)
def test_finfo_is_pytorchs(name):
    info = lc.finfo(getattr(lc, name))
    assert (info.eps, info.max, info.min, info.smallest_normal, info.resolution) == FINFO[name]
    assert info.bits == 8 and info.tiny == info.smallest_normal and info.dtype is getattr(lc, name)


@pytest.mark.parametrize("name", NAMES)
def test_dtype_attributes(name):
    d = getattr(lc, name)
    assert d.itemsize == 1 and d.is_floating_point and repr(d) == f"lucid_core.{name}"
    assert lc.isdtype(d, "real floating")
    with pytest.raises(TypeError, match="iinfo"):
        lc.iinfo(d)


def test_promotion_with_another_dtype_is_refused_as_pytorch_does():
    with pytest.raises(TypeError, match="Promotion for Float8 Types is not supported.*float8_e4m3fn and float32"):
        lc.result_type(lc.float8_e4m3fn, lc.float32)
    with pytest.raises(TypeError, match="float8_e4m3fn and float8_e5m2"):
        lc.result_type(lc.float8_e4m3fn, lc.float8_e5m2)
    x = lc.asarray([1.0, 2.0], dtype=lc.float8_e4m3fn)
    with pytest.raises(TypeError, match="Promotion for Float8"):
        x + lc.asarray([1.0, 2.0])
    assert lc.result_type(lc.float8_e5m2, lc.float8_e5m2) is lc.float8_e5m2


def test_ops_pytorch_has_work_in_the_dtype():
    x = lc.asarray([1.5, -2.0, 3.0], dtype=lc.float8_e4m3fn)
    assert (x * x).dtype is lc.float8_e4m3fn
    assert lc.astype(x * x, lc.float32).tolist() == [2.25, 4.0, 9.0]  # PyTorch's products
    assert lc.astype(lc.abs(x), lc.float32).tolist() == [1.5, 2.0, 3.0]
    assert (x == x).tolist() == [True, True, True]
    assert lc.concat([x, x]).shape == (6,)


def test_not_in_the_standards_dtype_list():
    assert not any(n.startswith("float8") for n in lc.__array_namespace_info__().dtypes())


@pytest.fixture
def registered_strict() -> Any:
    strict = pytest.importorskip("array_api_strict")
    lc.register_backend(ArrayAPIBackend(strict, name="strict_f8"))
    yield
    lc.unregister_backend("strict_f8")


@pytest.mark.parametrize("name", NAMES)
def test_a_backend_without_float8_refuses_it_by_name(registered_strict, name):
    with pytest.raises(TypeError, match=rf"backend 'strict_f8' does not support dtype {name}"):
        lc.zeros(2, dtype=getattr(lc, name), device="strict_f8")


def test_mlx_refuses_float8_by_name():
    if "mlx" not in [b.name for b in lc.backends() if b.status == "ok"]:
        pytest.skip("MLX is not installed here")
    with pytest.raises(TypeError, match=r"backend 'mlx' does not support dtype float8_e4m3fn"):
        lc.zeros(2, dtype=lc.float8_e4m3fn, device="mlx")
