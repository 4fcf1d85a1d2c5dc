"""Strangers' plugins: the example ``lucid-backend-{strict,torch,jax,dask}`` distributions.

Each is installed with pip into a throwaway target folder (nothing touches the test environment)
and used from fresh processes, exactly as after ``pip install``. An example is skipped where its
array library is not installed (CI installs array-api-strict and dask; torch and JAX are optional:
JAX compiles every op for every new shape, so its conformance run takes minutes).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = {"strict": "array_api_strict", "torch": "torch", "jax": "jax", "dask": "dask"}


@pytest.fixture(scope="module", params=sorted(PLUGINS))
def plugin(request: pytest.FixtureRequest) -> str:
    if importlib.util.find_spec(PLUGINS[request.param]) is None:
        pytest.skip(f"{PLUGINS[request.param]} is not installed")
    return request.param


@pytest.fixture(scope="module")
def site(plugin: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp(f"{plugin}-site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(ROOT / "examples" / f"lucid-backend-{plugin}"),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return target


def run(
    site: Path, code: str, cwd: Path | None = None, args: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    env.pop("LUCID_TEST_BACKENDS", None)
    cmd = [sys.executable, *(args or ["-c", textwrap.dedent(code)])]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=600)


def test_the_installed_plugin_is_listed_with_its_distribution(plugin: str, site: Path) -> None:
    out = run(
        site,
        f"""
        import lucid_core as lc
        row = {{b.name: b for b in lc.backends()}}["{plugin}"]
        print(row.devices, row.distribution, row.version, row.status)
        print((lc.ones(3, device="{plugin}:cpu") * 2).tolist())
        """,
    )
    assert out.returncode == 0, out.stderr
    assert f"'{plugin}:cpu'" in out.stdout and f"lucid-backend-{plugin} 0.1.0 ok" in out.stdout
    assert "[2.0, 2.0, 2.0]" in out.stdout


def test_the_conformance_kit_passes_on_the_plugin(plugin: str, site: Path, tmp_path: Path) -> None:
    (tmp_path / "test_strict_conformance.py").write_text(
        textwrap.dedent(
            f"""
            from lucid_core.testing import BackendConformance

            class TestPlugin(BackendConformance):
                backend = "{plugin}"
            """
        )
    )
    out = run(
        site, "", cwd=tmp_path, args=["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_strict_conformance.py"]
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert " passed" in out.stdout and "failed" not in out.stdout


def test_a_small_model_trains_on_the_plugin(plugin: str, site: Path) -> None:
    out = run(
        site,
        f"""
        device = "{plugin}:cpu"
        import lucid_core as lc
        import lucid_nn as nn
        import lucid_optim as optim

        lc.manual_seed(0)
        x = lc.randn(64, 4, device=device)
        y = (x[:, 0] + x[:, 1] > 0).astype(lc.int64)
        model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2)).to(device)
        opt = optim.SGD(model.parameters(), lr=0.5, momentum=0.5)
        w = model[0].weight
        graph = lambda: lc.get_backend("{plugin}").graph_size(w._data)  # pending tasks, on lazy backends
        losses, graphs = [], []
        for _ in range(40):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            graphs.append(graph())
        print(losses[0], losses[-1], next(model.parameters()).device, graphs[0], graphs[-1])
        """,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    first, last, device, graph_first, graph_last = out.stdout.split()
    assert float(last) < 0.5 * float(first)
    assert device == f"{plugin}:cpu"
    # dask before Backend.eval could hand back persisted arrays: a weight's graph grew from 59 to 1,775 tasks
    assert graph_last == graph_first, f"the weight's pending graph grew from {graph_first} to {graph_last} tasks"
    if plugin == "dask":
        assert int(graph_last) <= 4
