"""The generic backend contract: ArrayAPIBackend claims only the dtypes a library holds, host transfer
fails loudly, ``eval`` may hand back new arrays that the core rebinds, sort uses the library's sort.

The backends here wrap array-api-strict in-process (a test dependency) with one thing changed each.
"""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import lucid_core as lc
import lucid_nn as nn
import lucid_optim as optim
from lucid_core.backend import ArrayAPIBackend, probe_dtypes

strict = pytest.importorskip("array_api_strict")


class _Narrowing:
    """array-api-strict, except that a request for ``wide`` silently gives ``narrow`` (as JAX without x64)."""

    def __init__(self, wide: str, narrow: str) -> None:
        self._wide, self._narrow = getattr(strict, wide), getattr(strict, narrow)

    def _fix(self, dtype: Any) -> Any:
        return self._narrow if dtype == self._wide else dtype

    def __getattr__(self, name: str) -> Any:
        return getattr(strict, name)

    def asarray(self, obj: Any, dtype: Any = None, **kw: Any) -> Any:
        return strict.asarray(obj, dtype=self._fix(dtype), **kw)

    def zeros(self, shape: Any, dtype: Any = None, **kw: Any) -> Any:
        return strict.zeros(shape, dtype=self._fix(dtype), **kw)

    def astype(self, x: Any, dtype: Any, **kw: Any) -> Any:
        return strict.astype(x, self._fix(dtype), **kw)


@pytest.fixture
def registered() -> Iterator[list[str]]:
    """Register backends for one test and remove them afterwards."""
    names: list[str] = []
    yield names
    for n in names:
        lc.unregister_backend(n)


def _register(names: list[str], backend: Any) -> Any:
    lc.register_backend(backend)
    names.append(backend.name)
    return backend


# -- dtype honesty -------------------------------------------------------------------------------------
def test_a_dtype_the_library_narrows_is_not_advertised(registered):
    b = _register(registered, ArrayAPIBackend(_Narrowing("float64", "float32"), name="narrow"))
    assert lc.float64 not in lc.get_backend("narrow").dtypes
    assert b.capabilities["float64"] is False
    assert lc.float32 in b.dtypes and lc.int64 in b.dtypes
    with pytest.raises(TypeError, match="backend 'narrow' does not support dtype float64"):
        lc.asarray([1.0], dtype=lc.float64, device="narrow")
    assert lc.ones(2, device="narrow").dtype is lc.float32  # the rest works


def test_the_probe_keeps_every_dtype_the_library_holds():
    found = probe_dtypes(strict, "strict")
    assert {d.name for d in found} >= {"bool", "int8", "int64", "uint64", "float32", "float64", "complex128"}
    assert found[lc.float64] == strict.float64


def test_a_library_without_int64_is_refused_naming_backend_and_dtype(registered):
    _register(registered, ArrayAPIBackend(_Narrowing("int64", "int32"), name="narrowint"))
    row = {b.name: b for b in lc.backends()}["narrowint"]
    assert "cannot hold int64" in row.status and "'narrowint'" in row.status
    match = "backend 'narrowint' cannot hold int64.*asked for int64, its arrays report .*int32"
    with pytest.raises(TypeError, match=match):
        lc.ones(2, device="narrowint")


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax is not installed")
def test_jax_without_x64_is_refused_instead_of_training_in_float32():
    code = """
        import warnings
        warnings.simplefilter("error")  # JAX's own narrowing warning must not leak out of the probe
        import jax
        from lucid_core.backend import ArrayAPIBackend
        b = ArrayAPIBackend(jax.numpy, name="jax32")
        try:
            b.ensure_loaded()
        except TypeError as exc:
            print(exc)
        """
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "backend 'jax32' cannot hold int64" in out.stdout and "jax_enable_x64" in out.stdout


# -- host transfer -------------------------------------------------------------------------------------
class _Opaque:
    """An array with neither DLPack nor ``__array__`` nor a buffer (as ndonnx's)."""

    dtype = "float32"


def test_host_transfer_without_dlpack_or_array_names_the_method_to_supply():
    b = ArrayAPIBackend(strict, name="opaque")
    with pytest.raises(TypeError, match=r"backend 'opaque': cannot bring a .*_Opaque to the host.*Backend\.to_numpy"):
        b.to_numpy(_Opaque())
    with pytest.raises(TypeError, match="Backend.to_numpy"):
        b.to_list(_Opaque())


def test_host_transfer_through_the_buffer_protocol_still_works():
    b = ArrayAPIBackend(strict, name="buffered")
    host = b.to_numpy(memoryview(np.arange(3.0)))
    assert host.dtype == np.float64 and host.tolist() == [0.0, 1.0, 2.0]


@pytest.mark.skipif(importlib.util.find_spec("ndonnx") is None, reason="ndonnx is not installed")
def test_ndonnx_item_raises_instead_of_returning_the_library_array(registered):
    import ndonnx

    _register(registered, ArrayAPIBackend(ndonnx, name="onnx"))
    t = lc.asarray([1.0, 2.0], device="onnx")
    for read in (lambda: t.sum().item(), lambda: t.to("numpy"), t.tolist):
        with pytest.raises(TypeError, match="Backend.to_numpy"):
            read()


# -- eval hands back new arrays ---------------------------------------------------------------------------
class _Persisting(ArrayAPIBackend):
    """A 'lazy' backend whose eval hands back new arrays (as dask's persist does)."""

    def __init__(self, name: str = "persisting", wrong_count: bool = False) -> None:
        super().__init__(strict, name=name, capabilities={"lazy": True})
        self.calls: list[int] = []
        self.handed: list[Any] = []
        self.wrong_count = wrong_count

    def eval(self, *arrays: Any) -> Any:
        self.calls.append(len(arrays))
        out = [strict.asarray(a, copy=True) for a in arrays]
        self.handed.extend(out)
        return out[:-1] if self.wrong_count else out


def test_eval_rebinds_the_arrays_the_backend_hands_back(registered):
    b = _register(registered, _Persisting())
    x = lc.ones(3, device="persisting") * 2.0
    y = x + 1.0
    lc.eval(x, y, x)  # each tensor once, in one call
    assert b.calls == [2]
    assert x._data is b.handed[0] and y._data is b.handed[1]
    assert x.eval() is x and x._data is b.handed[2]
    assert y.tolist() == [3.0, 3.0, 3.0]


def test_eval_returning_the_wrong_number_of_arrays_is_an_error(registered):
    _register(registered, _Persisting("miscounting", wrong_count=True))
    x = lc.ones(2, device="miscounting")
    with pytest.raises(RuntimeError, match="backend 'miscounting': eval returned 1 arrays for 2 inputs"):
        lc.eval(x, x * 2.0)


def test_an_optimizer_step_rebinds_parameters_grads_and_state(registered):
    b = _register(registered, _Persisting())
    lc.manual_seed(0)
    model = nn.Linear(3, 2).to("persisting")
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = lc.randn(4, 3, device="persisting")
    model(x).sum().backward()
    opt.step()
    handed = {id(a) for a in b.handed}
    for p in model.parameters():
        assert id(p._data) in handed and id(p.grad._data) in handed
        assert id(opt.state[p]["momentum_buffer"]._data) in handed


# -- sort -------------------------------------------------------------------------------------------------
class _NoFancyIndexing(ArrayAPIBackend):
    """A backend whose arrays refuse n-d integer-array indexing (as dask's do)."""

    def load(self) -> None:
        super().load()

        def getitem(x: Any, key: Any) -> Any:
            keys = key if isinstance(key, tuple) else (key,)
            if sum(hasattr(k, "dtype") for k in keys) > 1:
                raise NotImplementedError("no n-d fancy indexing here")
            return x[key]

        self.kernels["getitem"] = getitem
        del self.kernels["index_add"]


def test_sort_and_its_gradients_use_the_library_sort_only(registered):
    _register(registered, _NoFancyIndexing(strict, name="nofancy"))
    values = [[3.0, 1.0, 2.0, 1.0], [0.0, 5.0, 4.0, -1.0]]
    x = lc.asarray(values, dtype=lc.float64, device="nofancy", requires_grad=True)
    y = lc.sort(x, axis=1, descending=True)
    assert y.tolist() == [[3.0, 2.0, 1.0, 1.0], [5.0, 4.0, 0.0, -1.0]]
    w = lc.asarray([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]], dtype=lc.float64, device="nofancy")
    (y * w).sum().backward()
    # ties keep their order (stable), as PyTorch's stable sort: the first 1.0 gets weight 3, the second 4
    assert x.grad.tolist() == [[1.0, 3.0, 2.0, 4.0], [7.0, 5.0, 6.0, 8.0]]
    z = lc.asarray([0.3, -1.2, 0.5, 2.0, -0.7], dtype=lc.float64, device="nofancy", requires_grad=True)
    assert lc.gradcheck(lambda a: lc.sort(a * a * a) ** 2, [z])
    assert lc.gradgradcheck(lambda a: lc.sort(a * a * a, descending=True) ** 2, [z])


def test_sort_gradient_matches_along_every_axis(device):
    x = lc.asarray(np.random.default_rng(0).standard_normal((3, 4, 2)), dtype=lc.float32, device=device)
    x.requires_grad_()
    for axis in (0, 1, 2):
        y = lc.sort(x, axis=axis)
        np.testing.assert_array_equal(y.detach().numpy(), np.sort(x.detach().numpy(), axis=axis))
        (g,) = lc.grad((y * lc.arange(y.size, device=device).reshape(y.shape)).sum(), x)
        order = np.argsort(x.detach().numpy(), axis=axis, kind="stable")
        want = np.zeros(x.shape, dtype=np.float32)
        np.put_along_axis(want, order, np.arange(y.size, dtype=np.float32).reshape(y.shape), axis=axis)
        np.testing.assert_array_equal(g.numpy(), want)


# -- the generic erf (backends without an erf kernel) --------------------------------------------------------
def test_generic_erf_is_float64_accurate(registered):
    _register(registered, ArrayAPIBackend(strict, name="plainerf"))
    values = [-7.0, -3.1, -2.5, -1.0, -1e-9, 0.0, 0.4, 1.7, 2.4999, 2.5, 4.2, 9.0]
    got = lc.erf(lc.asarray(values, dtype=lc.float64, device="plainerf")).tolist()
    for v, g in zip(values, got):
        assert math.isclose(g, math.erf(v), rel_tol=5e-15, abs_tol=1e-300), (v, g, math.erf(v))
    assert lc.erf(lc.asarray([math.inf, -math.inf], dtype=lc.float64, device="plainerf")).tolist() == [1.0, -1.0]
