"""The OpInfo table (``opinfo.py``) against PyTorch's results (``fixtures/opinfo.npz``), on every backend.

Per row: the values (and dtypes) of each sample against PyTorch; float64 gradients against finite
differences; the method against the function; the in-place form against the out-of-place one (the
version bumps, a write through a view lands in its base, a leaf that requires grad refuses); ``out=``.
Samples marked ``full`` run with ``pytest -m opinfo_full``.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import lucid
import lucid_core as lc
from lucid_core import _op_table

from .opinfo import COVERED_ELSEWHERE, ROWS, OpInfo, Sample, convert, flat_results, invoke, row_id

HERE = Path(__file__).resolve().parent
with np.load(HERE / "fixtures" / "opinfo.npz") as _f:
    EXPECTED = {k: _f[k] for k in _f.files}
META = json.loads((HERE / "fixtures" / "opinfo.json").read_text(encoding="utf-8"))
IDS = [row_id(r) for r in ROWS]


def _tensor(device: Any) -> Any:
    return lambda a: lucid.tensor(a, device=device)


def _numpy(t: Any) -> np.ndarray:
    return np.asarray(t.detach().numpy())


def _check_sample(row: OpInfo, i: int, sample: Sample, device: Any) -> None:
    key = f"{row_id(row)}/{i}"
    if key in META["refused"]:
        with pytest.raises(Exception):  # noqa: B017 - PyTorch refused this sample; lucid must too
            invoke(lucid, row, sample, _tensor(device))
        return
    ours = flat_results(invoke(lucid, row, sample, _tensor(device)), _numpy)
    dtypes = META["dtypes"][key]
    assert len(ours) == len(dtypes), f"{key}: {len(ours)} outputs, PyTorch gives {len(dtypes)}"
    for j, (got, dtype) in enumerate(zip(ours, dtypes)):
        want = EXPECTED[f"{key}/{j}"]
        assert str(got.dtype) == dtype, f"{key} output {j}: dtype {got.dtype}, PyTorch {dtype}"
        assert got.shape == want.shape, f"{key} output {j}: shape {got.shape}, PyTorch {want.shape}"
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(got, want, rtol=row.rtol, atol=1e-12, equal_nan=True, err_msg=key)
        else:
            np.testing.assert_array_equal(got, want, err_msg=key)


@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_values_match_pytorch(row: OpInfo, device: Any) -> None:
    for i, sample in enumerate(row.samples):
        if not sample.full:
            _check_sample(row, i, sample, device)


@pytest.mark.opinfo_full
@pytest.mark.parametrize("row", ROWS, ids=IDS)
def test_full_samples_match_pytorch(row: OpInfo, device: Any, request: pytest.FixtureRequest) -> None:
    if "opinfo_full" not in (request.config.getoption("-m") or ""):
        pytest.skip("the full samples run with -m opinfo_full")
    for i, sample in enumerate(row.samples):
        _check_sample(row, i, sample, device)


def _float_positions(sample: Sample) -> list[int]:
    return [i for i, a in enumerate(sample.args) if isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.size]


@pytest.mark.parametrize(
    "row", [r for r in ROWS if r.grad is not False], ids=[row_id(r) for r in ROWS if r.grad is not False]
)
def test_gradients_match_finite_differences(row: OpInfo, device: Any) -> None:
    sample = row.samples[0]
    where = _float_positions(sample)
    assert where, f"{row_id(row)}: a gradient row needs a float tensor argument"
    kwargs = {k: convert(v, _tensor(device)) for k, v in sample.kwargs.items()}

    def fn(*ts: Any) -> Any:
        args = [convert(a, _tensor(device)) for a in sample.args]
        for pos, t in zip(where, ts):
            args[pos] = t
        out = getattr(lucid, row.name)(*args, **kwargs) if row.function else getattr(args[0], row.name)(*args[1:])
        if isinstance(out, (list, tuple)):
            out = out[row.grad] if type(row.grad) is int else tuple(out)
        return out

    inputs = [lucid.tensor(sample.args[p], dtype=lc.float64, device=device, requires_grad=True) for p in where]
    assert lc.gradcheck(fn, inputs)


def _first(row: OpInfo, device: Any) -> tuple[list[Any], dict[str, Any]]:
    s = row.samples[0]
    return [convert(a, _tensor(device)) for a in s.args], {k: convert(v, _tensor(device)) for k, v in s.kwargs.items()}


def _same(a: Any, b: Any) -> None:
    fa, fb = flat_results(a, _numpy), flat_results(b, _numpy)
    assert len(fa) == len(fb)
    for x, y in zip(fa, fb):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)


_METHOD_ROWS = [r for r in ROWS if r.method and r.function]


@pytest.mark.parametrize("row", _METHOD_ROWS, ids=[row_id(r) for r in _METHOD_ROWS])
def test_method_equals_function(row: OpInfo, device: Any) -> None:
    args, kwargs = _first(row, device)
    _same(getattr(args[0], row.name)(*args[1:], **kwargs), getattr(lucid, row.name)(*args, **kwargs))


_INPLACE_ROWS = [r for r in ROWS if r.inplace]


@pytest.mark.parametrize("row", _INPLACE_ROWS, ids=[row_id(r) for r in _INPLACE_ROWS])
def test_inplace_equals_out_of_place(row: OpInfo, device: Any) -> None:
    args, kwargs = _first(row, device)
    expected = getattr(lucid, row.name)(*args, **kwargs)
    x = args[0].clone()
    before = x._version
    returned = getattr(x, row.name + "_")(*args[1:], **kwargs)
    assert returned is x
    assert x._version > before
    _same(x, expected.astype(x.dtype))
    # a write through a view lands in its base, and only there
    base = lucid.stack([args[0], args[0]])
    view = base[1]
    getattr(view, row.name + "_")(*args[1:], **kwargs)
    _same(base[1], expected.astype(x.dtype))
    _same(base[0], args[0])
    if x.dtype.kind == "f":
        leaf = args[0].clone().requires_grad_()
        with pytest.raises(RuntimeError, match="leaf"):
            getattr(leaf, row.name + "_")(*args[1:], **kwargs)


_OUT_ROWS = [r for r in ROWS if r.out]


@pytest.mark.parametrize("row", _OUT_ROWS, ids=[row_id(r) for r in _OUT_ROWS])
def test_out_writes_the_result(row: OpInfo, device: Any) -> None:
    args, kwargs = _first(row, device)
    fn = getattr(lucid, row.name)
    expected = fn(*args, **kwargs)
    empty = lucid.empty(0, dtype=expected.dtype, device=device)
    assert fn(*args, **kwargs, out=empty) is empty
    _same(empty, expected)
    same_shape = lucid.zeros(expected.shape, dtype=expected.dtype, device=device)
    before = same_shape._version
    fn(*args, **kwargs, out=same_shape)
    _same(same_shape, expected)
    assert same_shape._version > before


def test_out_refuses_a_dtype_that_cannot_hold_the_result(device: Any) -> None:
    x = lucid.tensor([0.5, 1.5], device=device)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type int64"):
        lucid.exp(x, out=lucid.zeros(2, dtype=lucid.int64, device=device))
    wider = lucid.zeros(2, dtype=lucid.float64, device=device)
    lucid.add(x, 1, out=wider)  # a float32 result into float64: allowed, as in PyTorch
    np.testing.assert_allclose(_numpy(wider), [1.5, 2.5])


def test_out_refuses_autograd(device: Any) -> None:
    x = lucid.tensor([0.5, 1.5], device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        lucid.exp(x, out=lucid.zeros(2, device=device))


def test_out_of_another_nonempty_shape_is_resized_with_a_warning(device: Any) -> None:
    out = lucid.zeros(2, 2, device=device)
    with pytest.warns(UserWarning, match="resized"):
        lucid.exp(lucid.zeros(3, device=device), out=out)
    assert out.shape == (3,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lucid.exp(lucid.zeros(3, device=device), out=lucid.empty(0, device=device))  # empty: silently


def test_inplace_refuses_a_result_the_dtype_cannot_hold(device: Any) -> None:
    x = lucid.tensor([1, 2], device=device)
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.exp_()
    y = lucid.tensor([1.0, 2.0], device=device)
    assert y.eq_(lucid.tensor([1.0, 0.0], device=device)) is y  # a bool result is stored as 1.0 / 0.0
    np.testing.assert_array_equal(_numpy(y), [1.0, 0.0])


def test_every_generated_name_is_pytorchs() -> None:
    functions, methods = set(META["torch_functions"]), set(META["tensor_methods"])
    wrong = []
    for entry in _op_table.OPS:
        for name in entry.names:
            if entry.method and name not in methods:
                wrong.append(f"Tensor.{name}")
            if entry.function and name not in functions:
                wrong.append(f"torch.{name}")
            if entry.inplace and name + "_" not in methods:
                wrong.append(f"Tensor.{name}_")
    assert not wrong, f"the op table makes names PyTorch 2.13 does not have: {wrong}"


def test_every_table_function_has_an_opinfo_row() -> None:
    rows = {r.name for r in ROWS}
    missing = [n for e in _op_table.OPS if e.function for n in e.names if n not in rows and n not in COVERED_ELSEWHERE]
    assert not missing, f"table ops without an OpInfo row: {missing}"


def test_every_generated_form_exists() -> None:
    for entry in _op_table.OPS:
        for name in entry.names:
            if entry.method:
                assert callable(getattr(lc.Tensor, name))
            if entry.inplace:
                assert callable(getattr(lc.Tensor, name + "_"))
            if entry.function:
                assert callable(getattr(lucid, name))
