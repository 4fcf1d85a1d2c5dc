"""Messages that name the fix: a missing backend names the distribution to install, and PyTorch's keywords
on the namespace's functions name Lucid's spelling."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

import lucid_core as lc


# -- PyTorch keywords ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda x: lc.sum(x, dim=1), r"lucid_core\.sum\(\): use axis= instead of PyTorch's dim="),
        (
            lambda x: lc.mean(x, dim=1, keepdim=True),
            r"axis= instead of PyTorch's dim=; keepdims= instead of .*keepdim=",
        ),
        (lambda x: lc.max(x, keepdim=True), r"lucid_core\.max\(\): use keepdims= instead of PyTorch's keepdim="),
        (
            lambda x: lc.std(x, unbiased=False),
            r"correction= instead of PyTorch's unbiased= \(unbiased=True is correction=1",
        ),
        (lambda x: lc.permute_dims(x, dims=(1, 0)), r"permute_dims\(\): use axes= instead of PyTorch's dims="),
        (lambda x: lc.flip(x, dims=0), r"flip\(\): use axis= instead of PyTorch's dims="),
        (lambda x: lc.roll(x, shifts=1, dims=0), r"shift= instead of PyTorch's shifts=; axis= instead of .*dims="),
        (lambda x: lc.concat([x, x], dim=0), r"concat\(\): use axis= instead of PyTorch's dim="),
        (lambda x: lc.cumulative_sum(x, dim=0), r"cumulative_sum\(\): use axis="),
        (lambda x: lc.argmax(x, dim=0), r"argmax\(\): use axis="),
        (lambda x: lc.zeros(size=(2,), device=x.device), r"zeros\(\): use shape= instead of PyTorch's size="),
        (lambda x: lc.arange(0, end=3, device=x.device), r"arange\(\): use stop= instead of PyTorch's end="),
        (lambda x: lc.linalg.vector_norm(x, dim=1), r"lucid_core\.linalg\.vector_norm\(\): use axis="),
    ],
)
def test_a_pytorch_keyword_names_the_lucid_spelling(call: Any, expected: str, device: lc.Device) -> None:
    x = lc.ones((2, 3), device=device)
    with pytest.raises(TypeError, match=expected):
        call(x)


def test_other_type_errors_are_pythons_own(device: lc.Device) -> None:
    x = lc.ones(3, device=device)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        lc.sum(x, bogus=1)


def test_a_type_error_from_inside_a_function_passes_through_unchanged() -> None:
    from lucid_core._keywords import add_keyword_hints

    def reduce(x: Any, /, *, axis: int | None = None) -> None:
        raise TypeError("inside: bad x")

    namespace = {"reduce": reduce}
    add_keyword_hints(namespace, "ns.")
    assert namespace["reduce"] is not reduce and namespace["reduce"].__wrapped__ is reduce
    with pytest.raises(TypeError, match="^inside: bad x$"):
        namespace["reduce"](1, axis=0)
    with pytest.raises(TypeError, match=r"^ns\.reduce\(\): use axis= instead of PyTorch's dim="):
        namespace["reduce"](1, dim=0)


def test_the_wrapped_functions_keep_their_name_signature_and_results(device: lc.Device) -> None:
    assert lc.sum.__name__ == "sum" and "axis" in inspect.signature(lc.sum).parameters and lc.sum.__doc__
    x = lc.asarray([[1.0, 2.0], [3.0, 4.0]], device=device)
    assert lc.sum(x, axis=1, keepdims=True).tolist() == [[3.0], [7.0]]


# -- missing backends ---------------------------------------------------------------------------------------
def run_python(code: str, load_plugins: str, **extra_env: str) -> str:
    """The output of ``code`` in a process that loads only the plugins named (as if only those were installed)."""
    env = {**os.environ, "LUCID_LOAD_PLUGINS": load_plugins, **extra_env}
    env.pop("LUCID_DEVICE", None)
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=120
    )
    return out.stdout + out.stderr


ERRORS = """
import lucid_core as lc
for spec in {specs}:
    try:
        lc.zeros(2, device=spec)
    except Exception as exc:
        print(spec, "->", type(exc).__name__, exc)
"""


def test_with_no_backend_making_a_tensor_says_what_to_install() -> None:
    out = run_python(ERRORS.format(specs=["cpu", "mlx"]), load_plugins="")
    (cpu,) = [line for line in out.splitlines() if line.startswith("cpu ->")]
    assert "no installed backend offers a 'cpu' device; available devices: none" in cpu
    assert "`pip install lucid-backend-numpy`" in cpu and "`pip install lucid-backend-mlx`" in cpu
    assert "from a checkout of Lucid: `pip install ./lucid_backend_numpy`" in cpu
    (mlx,) = [line for line in out.splitlines() if line.startswith("mlx ->")]
    assert "`pip install lucid-backend-mlx`" in mlx and "`pip install ./lucid_backend_mlx`" in mlx


def test_mlx_without_its_plugin_names_lucid_backend_mlx() -> None:
    out = run_python(
        ERRORS.format(specs=["mlx", "mlx:cpu", "gpu", "cuda"]), load_plugins="numpy", LUCID_STRICT_DEVICE="1"
    )
    lines = dict(line.split(" -> ", 1) for line in out.splitlines() if " -> " in line)
    for spec in ("mlx", "mlx:cpu"):
        assert lines[spec].startswith(
            f"ValueError unknown device '{spec}': no backend named 'mlx'; installed backends: numpy"
        )
        assert "`pip install lucid-backend-mlx`" in lines[spec]
    for spec in ("gpu", "cuda"):  # PyTorch's "cuda" is Lucid's "gpu"
        assert "available devices: ['numpy:cpu']" in lines[spec] and "`pip install lucid-backend-mlx`" in lines[spec]


def test_gpu_without_one_falls_back_with_a_warning_that_names_lucid_backend_mlx() -> None:
    out = run_python(ERRORS.format(specs=["gpu", "cuda"]), load_plugins="numpy", LUCID_STRICT_DEVICE="0")
    assert " -> " not in out  # no exception: the tensors were made on the CPU
    assert out.count("RuntimeWarning") == 1  # one warning per process
    assert "using numpy:cpu instead" in out and "`pip install lucid-backend-mlx`" in out


def test_a_known_backend_whose_plugin_failed_to_load_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    from lucid_core import _registry

    lc.backends()  # discovery has run
    without_mlx = {k: v for k, v in _registry._state.backends.items() if k != "mlx"}
    monkeypatch.setattr(_registry._state, "backends", without_mlx)
    monkeypatch.setitem(_registry._state.errors, "mlx", ("lucid-backend-mlx", "0.1.0", "ImportError: no mlx.core"))
    with pytest.raises(ValueError, match=r"its plugin is installed \(lucid-backend-mlx 0.1.0\) but failed to load: Im"):
        lc.resolve_device("mlx")
