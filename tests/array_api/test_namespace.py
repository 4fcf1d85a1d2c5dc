"""lucid_core as an Array API namespace: hypothesis drives it, dtypes, promotion, info, copy, DLPack, special cases."""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.array_api import make_strategies_namespace

import lucid_core as lc

xps = make_strategies_namespace(lc)


@pytest.fixture
def on_device(device):
    """Make ``device`` the default, so hypothesis's ``xps.arrays`` builds tensors there."""
    prev = lc.get_default_device()
    lc.set_default_device(device)
    yield device
    lc.set_default_device(prev)


def test_hypothesis_namespace_reports_2024_12():
    assert xps.api_version == "2024.12"
    assert lc.__array_api_version__ == "2024.12"


@given(data=st.data())
def test_hypothesis_arrays_are_built_on_the_device(on_device, data):
    x = data.draw(
        xps.arrays(dtype=st.sampled_from([lc.float32, lc.int32, lc.uint8, lc.bool]), shape=xps.array_shapes(max_side=3))
    )
    assert x.device == on_device
    assert x.dtype in (lc.float32, lc.int32, lc.uint8, lc.bool)


_REF_UNARY = {"asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh,
              "atanh": np.arctanh}  # fmt: skip


@given(data=st.data(), name=st.sampled_from(["exp", "log1p", "sqrt", "tanh", "sin", "floor", "abs", "square"]))
def test_unary_matches_numpy_on_generated_arrays(on_device, data, name):
    x = data.draw(
        xps.arrays(dtype=lc.float32, shape=xps.array_shapes(max_side=4), elements={"min_value": 0, "max_value": 4})
    )
    got = getattr(lc, name)(x).numpy()
    want = getattr(np, name)(x.numpy())
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


@given(data=st.data())
def test_binary_broadcasting_matches_numpy(on_device, data):
    s1, s2 = data.draw(xps.mutually_broadcastable_shapes(2, max_side=3)).input_shapes
    x1 = data.draw(xps.arrays(dtype=lc.float32, shape=s1, elements={"min_value": -5, "max_value": 5}))
    x2 = data.draw(xps.arrays(dtype=lc.float32, shape=s2, elements={"min_value": 0.5, "max_value": 5}))
    for fn, ref in ((lc.add, np.add), (lc.divide, np.divide), (lc.maximum, np.maximum), (lc.atan2, np.arctan2)):
        np.testing.assert_allclose(fn(x1, x2).numpy(), ref(x1.numpy(), x2.numpy()), rtol=1e-6, atol=1e-6)


# -- special cases: nan, inf and signed zeros (inherited from the backend, checked here) ------------------

SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5], dtype=np.float32)
UNARY = "abs acos acosh asin asinh atan atanh ceil cos cosh exp expm1 floor log log1p log2 log10 negative round " \
        "sign sin sinh sqrt square tan tanh trunc".split()  # fmt: skip
KNOWN_DEVIATIONS: set[tuple[str, str]] = set()  # (backend, function) pairs listed in the docs


@pytest.mark.parametrize("name", UNARY)
def test_unary_special_cases_follow_the_standard(device, name):
    if (device.backend.name, name) in KNOWN_DEVIATIONS:
        pytest.xfail(f"{device.backend.name} deviates on {name} special cases (listed in docs)")
    ref = _REF_UNARY.get(name) or getattr(np, name)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        got = getattr(lc, name)(lc.asarray(SPECIAL, device=device)).numpy()
        want = ref(SPECIAL)
    assert np.array_equal(np.isnan(got), np.isnan(want)), (got, want)
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-6)
    assert np.array_equal(np.signbit(got[ok]), np.signbit(want[ok])), f"signed zeros differ: {got} vs {want}"


def test_binary_special_cases(device):
    a = lc.asarray([0.0, -0.0, np.inf, np.nan, 1.0], device=device)
    b = lc.asarray([-0.0, 0.0, np.inf, 1.0, 0.0], device=device)
    with np.errstate(all="ignore"):
        assert lc.isnan(lc.add(a, b)).tolist() == [False, False, False, True, False]
        assert np.signbit((a * b).numpy()[:2]).tolist() == [True, True]
        assert lc.maximum(a, b).numpy()[3] != lc.maximum(a, b).numpy()[3]  # nan propagates
        assert (a / b).numpy()[4] == np.inf


# -- dtypes and promotion ---------------------------------------------------------------------

ALL = [lc.bool, lc.int8, lc.int16, lc.int32, lc.int64, lc.uint8, lc.uint16, lc.uint32, lc.uint64,
       lc.float32, lc.float64, lc.complex64, lc.complex128]  # fmt: skip


def test_promotion_table_matches_array_api_strict():
    strict = pytest.importorskip("array_api_strict")
    for a in ALL:
        for b in ALL:
            try:
                want = strict.result_type(getattr(strict, a.name), getattr(strict, b.name))
            except TypeError:
                continue  # the standard leaves this pair (bool/int/float mixes) unspecified
            assert lc.result_type(a, b).name == str(want).rsplit(".", 1)[-1], (a, b)


def _supported(device):
    return [d for d in ALL if d in device.backend.dtypes]


def test_operators_follow_result_type(device):
    for a in _supported(device):
        for b in _supported(device):
            if a.kind == "b" or b.kind == "b" or a.kind != b.kind or (a.kind == "u") != (b.kind == "u"):
                continue
            x = lc.ones(2, dtype=a, device=device)
            y = lc.ones(2, dtype=b, device=device)
            assert (x + y).dtype is lc.result_type(a, b), (a, b)


@pytest.mark.parametrize(
    ("dtype", "scalar", "want"),
    [(lc.int8, 3, lc.int8), (lc.uint16, 3, lc.uint16), (lc.float32, 2.5, lc.float32), (lc.int32, 2.5, lc.float32),
     (lc.float32, 1j, lc.complex64), (lc.bool, True, lc.bool), (lc.float64, 1j, lc.complex128)],
)  # fmt: skip
def test_python_scalars_are_weakly_typed(device, dtype, scalar, want):
    if want not in device.backend.dtypes:
        pytest.skip(f"{device.backend.name} has no {want.name}")
    x = lc.ones(2, dtype=dtype, device=device)
    assert (x * scalar).dtype is want
    assert lc.result_type(x, scalar) is want


@pytest.mark.parametrize("dtype", [lc.uint8, lc.uint16, lc.uint32, lc.uint64])
def test_every_unsigned_width_works(device, dtype):
    info = lc.iinfo(dtype)
    x = lc.asarray([0, info.max], dtype=dtype, device=device)
    assert x.tolist() == [0, info.max]
    assert (x // 2).dtype is dtype
    assert lc.max(x).item() == info.max
    assert lc.full((2,), info.max, dtype=dtype, device=device).tolist() == [info.max] * 2


def test_complex_dtypes(device):
    x = lc.asarray([1 + 2j, -1j], dtype=lc.complex64, device=device)
    assert x.dtype is lc.complex64
    assert lc.abs(x).dtype is lc.float32
    np.testing.assert_allclose(lc.conj(x).numpy(), [1 - 2j, 1j])
    if lc.complex128 in device.backend.dtypes:
        assert (x.astype(lc.complex128) * 1.0).dtype is lc.complex128


def test_finfo_and_iinfo():
    assert lc.finfo(lc.float32).eps == np.finfo(np.float32).eps
    assert lc.finfo(lc.complex128).bits == 64
    assert lc.iinfo(lc.uint64).max == 2**64 - 1
    with pytest.raises(TypeError, match="floating-point dtype"):
        lc.finfo(lc.int32)


# -- inspection, copy, DLPack, devices, in-place --------------------------------------------------


def test_namespace_info(device):
    info = lc.__array_namespace_info__()
    assert set(info.capabilities()) >= {"boolean indexing", "data-dependent shapes", "max dimensions"}
    assert set(info.default_dtypes(device=device)) == {"real floating", "complex floating", "integral", "indexing"}
    assert info.default_dtypes()["real floating"] is lc.float32
    floats = info.dtypes(device=device, kind="real floating")
    assert set(floats) <= {"float16", "float32", "float64"} and "float32" in floats
    assert set(info.dtypes(device=device, kind="unsigned integer")) == {"uint8", "uint16", "uint32", "uint64"}
    assert set(info.dtypes(device=device, kind=("bool", "signed integer"))) == {
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
    }
    assert device in info.devices()


def test_asarray_copy_semantics():
    a = np.arange(3.0, dtype=np.float32)
    shared = lc.asarray(a, copy=False, device="numpy")
    copied = lc.asarray(a, copy=True, device="numpy")
    a[0] = 10.0
    assert shared.tolist()[0] == 10.0
    assert copied.tolist()[0] == 0.0
    with pytest.raises(ValueError, match="copy=False"):
        lc.asarray(a, dtype=lc.float64, copy=False, device="numpy")
    t = lc.asarray([1.0, 2.0], device="numpy")
    assert lc.asarray(t, copy=True) is not t
    c = lc.asarray(t, copy=True)
    c[0] = 5.0
    assert t.tolist() == [1.0, 2.0]


def test_dlpack_round_trip(device):
    t = lc.asarray([[1.0, 2.0], [3.0, 4.0]], device=device)
    dev_type, _ = t.__dlpack_device__()
    assert dev_type == 1  # kDLCPU
    host = np.from_dlpack(t)
    np.testing.assert_array_equal(host, [[1.0, 2.0], [3.0, 4.0]])
    back = lc.from_dlpack(host, device=device)
    assert back.device == device and back.tolist() == t.tolist()


def test_to_device_and_array_namespace(device):
    t = lc.ones(2, device=device)
    assert t.__array_namespace__() is lc
    moved = t.to_device("numpy")
    assert moved.device == "numpy" and moved.tolist() == [1.0, 1.0]


def test_inplace_operators_keep_identity_and_dtype(device):
    x = lc.asarray([1.0, 2.0], device=device)
    y = x
    x += 1
    x *= 2.0
    x **= 2
    assert x is y and x.dtype is lc.float32 and x.tolist() == [16.0, 36.0]
    i = lc.asarray([6, 3], dtype=lc.int32, device=device)
    i //= 2
    i &= 1
    assert i.dtype is lc.int32 and i.tolist() == [1, 1]


# -- signatures ------------------------------------------------------------------------------

# creation functions also take PyTorch's varargs shape and requires_grad: documented extensions
SIGNATURE_EXTENSIONS = {"asarray", "zeros", "ones", "empty", "full"}


def test_signatures_match_the_standard():
    strict = pytest.importorskip("array_api_strict")
    from lucid_core import fft, linalg

    pairs = [(lc, strict)] + [(m, getattr(strict, m.__name__.rsplit(".", 1)[1])) for m in (linalg, fft)]
    bad = []
    for ours, ref in pairs:
        for name in getattr(ours, "__all__", dir(ours)):
            r, o = getattr(ref, name, None), getattr(ours, name, None)
            if not (inspect.isfunction(r) and inspect.isfunction(o)) or name in SIGNATURE_EXTENSIONS:
                continue
            kinds = lambda f: [(p.name, p.kind) for p in inspect.signature(f).parameters.values()]  # noqa: E731
            if kinds(o) != kinds(r):
                bad.append(f"{ours.__name__}.{name}{inspect.signature(o)} vs {inspect.signature(r)}")
    assert not bad, "\n".join(bad)


def test_constants():
    assert lc.e == math.e and lc.pi == math.pi and lc.inf == math.inf and math.isnan(lc.nan) and lc.newaxis is None
