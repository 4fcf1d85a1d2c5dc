"""The pluggy backend registry: discovery, in-process plugins, errors, devices."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import lucid_core as lc
from lucid_core import _registry
from lucid_core.backend import ArrayAPIBackend, Backend


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **env}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=full_env, timeout=120
    )


def test_import_lucid_core_imports_no_array_library():
    out = run_python(
        """
        import sys
        import lucid_core, lucid_nn, lucid_optim, lucid_data
        bad = [m for m in ("numpy", "mlx", "mlx.core", "torch", "array_api_compat") if m in sys.modules]
        print("LOADED:", bad)
        assert not bad, bad
        lucid_core.zeros(2)  # first tensor: now the default backend loads
        assert "numpy" in sys.modules
        """
    )
    assert out.returncode == 0, out.stderr + out.stdout


def test_backends_lists_numpy_with_its_distribution():
    rows = {b.name: b for b in lc.backends()}
    assert rows["numpy"].status == "ok"
    assert rows["numpy"].devices == ("numpy:cpu",)
    assert rows["numpy"].distribution == "lucid-backend-numpy"
    assert rows["numpy"].version


def test_get_backend_unknown_name_lists_installed():
    with pytest.raises(ValueError, match="no backend named 'nope'; installed backends: .*numpy"):
        lc.get_backend("nope")


@pytest.mark.parametrize("spec", ["cpu", "numpy", "numpy:cpu", " CPU "])
def test_device_strings_resolve_to_the_numpy_cpu_device(spec):
    assert lc.resolve_device(spec) is lc.get_backend("numpy").default_device


def test_unknown_device_lists_installed_backends():
    with pytest.raises(ValueError, match="unknown device 'tpu'.*installed backends"):
        lc.resolve_device("tpu")
    with pytest.raises(RuntimeError, match="backend 'numpy' has no 'gpu' device.*numpy:cpu"):
        lc.resolve_device("numpy:gpu")
    with pytest.raises(TypeError, match="device must be a string"):
        lc.resolve_device(3)


def test_gpu_without_a_gpu_backend_names_the_available_devices(monkeypatch):
    has_gpu = any(d.type == "gpu" for d in lc.__array_namespace_info__().devices())
    if has_gpu:
        pytest.skip("this machine has a GPU backend")
    # without LUCID_STRICT_DEVICE, "gpu" falls back to the CPU with one warning (tests/core/test_tensor_methods.py)
    monkeypatch.setenv("LUCID_STRICT_DEVICE", "1")
    with pytest.raises(
        RuntimeError, match=r"no installed backend offers a 'gpu' device \(available devices: .*numpy:cpu"
    ):
        lc.zeros(2, device="gpu")


def test_device_equality_with_strings():
    t = lc.zeros(2, device="numpy")
    assert t.device == "cpu" and t.device == "numpy:cpu" and str(t.device) == "numpy:cpu"
    assert t.device != "tpu"


def test_lucid_device_env_sets_the_default_device():
    out = run_python(
        """
        import lucid_core
        print(lucid_core.zeros(1).device)
        """,
        LUCID_DEVICE="numpy:cpu",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "numpy:cpu"


def test_set_default_device_round_trip():
    before = lc.get_default_device()
    try:
        lc.set_default_device("numpy")
        assert lc.zeros(1).device is lc.get_backend("numpy").default_device
    finally:
        lc.set_default_device(before)


class _ToyPlugin:
    """An in-process plugin registering a backend over array-api-strict."""

    def __init__(self, name: str) -> None:
        self.name = name

    @lc.hookimpl
    def lucid_register_backends(self, register):
        strict = pytest.importorskip("array_api_strict")
        register(ArrayAPIBackend(strict, name=self.name))


def test_in_process_plugin_registers_and_unregisters_a_backend():
    pytest.importorskip("array_api_strict")
    plugin = _ToyPlugin("toy")
    lc.plugin_manager.register(plugin, name="toy-plugin")
    try:
        assert "toy" in {b.name for b in lc.backends()}
        t = lc.ones(3, device="toy") * 2.0
        assert t.tolist() == [2.0, 2.0, 2.0]
        assert str(t.device) == "toy:cpu"
    finally:
        lc.plugin_manager.unregister(plugin)
    assert "toy" not in {b.name for b in lc.backends()}


def test_mixing_devices_raises_naming_both():
    pytest.importorskip("array_api_strict")
    plugin = _ToyPlugin("toy2")
    lc.plugin_manager.register(plugin, name="toy2-plugin")
    try:
        a = lc.ones(2, device="numpy")
        b = lc.ones(2, device="toy2")
        with pytest.raises(RuntimeError, match=r"different devices \(numpy:cpu and toy2:cpu\)"):
            a + b
        moved = b.to("numpy")
        assert (a + moved).tolist() == [2.0, 2.0]
    finally:
        lc.plugin_manager.unregister(plugin)


def test_gradient_flows_back_across_a_device_move():
    pytest.importorskip("array_api_strict")
    plugin = _ToyPlugin("toy3")
    lc.plugin_manager.register(plugin, name="toy3-plugin")
    try:
        x = lc.asarray([1.0, 2.0], device="numpy", requires_grad=True)
        y = (x.to("toy3") * 3.0).to("numpy").sum()
        y.backward()
        assert x.grad.tolist() == [3.0, 3.0] and x.grad.device == "numpy"
    finally:
        lc.plugin_manager.unregister(plugin)


def test_two_backends_with_one_name_is_an_error_naming_both():
    class Dup(Backend):
        name = "numpy"

    with pytest.raises(lc.PluginError, match="two backends are named 'numpy'.*lucid-backend-numpy.*register_backend"):
        lc.register_backend(Dup())


def test_incompatible_contract_version_is_refused():
    class Old(Backend):
        name = "old"
        contract_version = 0

    with pytest.raises(lc.PluginError, match="contract version 0.*needs version 1"):
        lc.register_backend(Old())


def test_register_backend_rejects_non_backends():
    with pytest.raises(TypeError, match="expected a lucid_core.backend.Backend"):
        lc.register_backend(object())


def test_unregister_unknown_backend_raises():
    with pytest.raises(KeyError, match="no backend named 'ghost'"):
        lc.unregister_backend("ghost")


def test_a_plugin_whose_hook_raises_warns_and_the_rest_still_load():
    class Broken:
        @lc.hookimpl
        def lucid_register_backends(self, register):
            raise ImportError("libfoo.so not found")

    with pytest.warns(RuntimeWarning, match="plugin 'broken' failed to register its backends: ImportError: libfoo.so"):
        lc.plugin_manager.register(Broken(), name="broken")
    try:
        assert lc.zeros(1).tolist() == [0.0]
    finally:
        lc.plugin_manager.unregister(name="broken")


def test_strict_plugins_env_makes_failures_fatal(monkeypatch):
    class Broken:
        @lc.hookimpl
        def lucid_register_backends(self, register):
            raise RuntimeError("boom")

    monkeypatch.setenv("LUCID_STRICT_PLUGINS", "1")
    with pytest.raises(lc.PluginError, match="plugin 'broken2' failed.*boom"):
        lc.plugin_manager.register(Broken(), name="broken2")
    lc.plugin_manager.unregister(name="broken2")


def test_broken_entry_point_warns_in_a_fresh_process(tmp_path):
    # a distribution whose entry point module raises at import
    dist = tmp_path / "lucid_broken-0.0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: lucid-broken\nVersion: 0.0.1\n")
    (dist / "entry_points.txt").write_text("[lucid]\nbroken = lucid_broken_mod\n")
    (tmp_path / "lucid_broken_mod.py").write_text("raise ImportError('missing native library')\n")
    code = """
        import warnings
        warnings.simplefilter("always")
        import lucid_core
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            names = [b.name for b in lucid_core.backends()]
        print(names)
        print([str(x.message) for x in w])
        row = {b.name: b for b in lucid_core.backends()}["broken"]
        print("ROW", row.distribution, row.version, row.status)
        """
    out = run_python(code, PYTHONPATH=str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "'numpy'" in out.stdout
    assert (
        "plugin 'broken' (distribution lucid-broken 0.0.1) failed to load: ImportError: missing native library"
        in out.stdout
    )
    strict = run_python(code, PYTHONPATH=str(tmp_path), LUCID_STRICT_PLUGINS="1")
    assert strict.returncode != 0 and "PluginError" in strict.stderr


def test_an_entry_point_taking_a_used_name_warns_naming_both_and_the_rest_load(tmp_path):
    dist = tmp_path / "lucid_dup-0.0.2.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: lucid-dup\nVersion: 0.0.2\n")
    (dist / "entry_points.txt").write_text("[lucid]\ndup = lucid_dup_mod\n")
    (tmp_path / "lucid_dup_mod.py").write_text(
        textwrap.dedent(
            """
            from lucid_core import hookimpl
            from lucid_core.backend import Backend

            class Impostor(Backend):
                name = "numpy"

            @hookimpl
            def lucid_register_backends(register):
                register(Impostor())
            """
        )
    )
    # the plugin's folder goes after site-packages: the first backend to claim a name keeps it
    out = run_python(
        f"""
        import sys
        sys.path.append({str(tmp_path)!r})
        import warnings
        import lucid_core
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            rows = {{b.name: b for b in lucid_core.backends()}}
        print(rows["numpy"].distribution, rows["numpy"].status)
        print([str(x.message) for x in w])
        print(lucid_core.zeros(2).tolist())
        """,
        LUCID_LOAD_PLUGINS="numpy,dup",
    )
    assert out.returncode == 0, out.stderr
    assert "lucid-backend-numpy ok" in out.stdout
    assert "plugin 'dup' (distribution lucid-dup 0.0.2) failed to register its backends" in out.stdout
    assert "two backends are named 'numpy'" in out.stdout and "lucid-backend-numpy" in out.stdout
    assert "[0.0, 0.0]" in out.stdout


def test_lucid_load_plugins_limits_which_plugins_load():
    out = run_python(
        """
        import lucid_core
        print([b.name for b in lucid_core.backends()])
        """,
        LUCID_LOAD_PLUGINS="numpy",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['numpy']"


def test_discovery_happens_once():
    _registry.discover()
    before = dict(_registry._state.backends)
    _registry.discover()
    assert _registry._state.backends == before


def test_device_context_wraps_every_op_forward_and_backward():
    strict = pytest.importorskip("array_api_strict")
    import contextlib

    entered = []

    class Streamed(ArrayAPIBackend):
        def make_device(self, type):  # noqa: A002
            dev = super().make_device(type)

            @contextlib.contextmanager
            def stream():
                entered.append(type)
                yield

            dev.context = stream
            return dev

    lc.register_backend(Streamed(strict, name="streamed"))
    try:
        x = lc.asarray([1.0, 2.0], device="streamed", requires_grad=True)
        before = len(entered)
        y = (lc.tanh(x) * 2.0).sum()
        assert len(entered) - before == 3  # tanh, multiply, sum
        y.backward()
        assert len(entered) - before > 3  # the backward ops ran inside it too
        assert x.grad.tolist() == pytest.approx([2 * (1 - v**2) for v in lc.tanh(x).tolist()])
    finally:
        lc.unregister_backend("streamed")
