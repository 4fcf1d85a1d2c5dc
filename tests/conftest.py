"""Suite-wide fixtures: the ``backend``/``device`` parametrization and hypothesis profiles.

Every test that takes ``device`` (or ``backend``) runs once per installed backend.
``LUCID_TEST_BACKENDS=numpy,mlx`` restricts the list and fails if a named backend is missing,
so CI cannot pass by silently skipping one.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

import lucid_core as lc

settings.register_profile(
    "ci",
    max_examples=20,
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "dev",
    max_examples=60,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


def installed_backends() -> list[str]:
    """Backends to test: every working one, or exactly those named in LUCID_TEST_BACKENDS."""
    ok = [b.name for b in lc.backends() if b.status == "ok"]
    wanted = os.environ.get("LUCID_TEST_BACKENDS")
    if not wanted:
        return ok
    names = [n.strip() for n in wanted.split(",") if n.strip()]
    missing = [n for n in names if n not in ok]
    if missing:
        raise pytest.UsageError(
            f"LUCID_TEST_BACKENDS names {missing}, which are not installed and working; "
            f"working backends: {ok}; see lucid_core.backends() for the errors"
        )
    return names


BACKENDS = installed_backends()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", BACKENDS, scope="session")


@pytest.fixture
def device(backend: str) -> lc.Device:
    """The default device of the backend under test."""
    return lc.get_backend(backend).default_device


@pytest.fixture(autouse=True)
def _seeded() -> None:
    lc.manual_seed(0)


#: test files whose tests start processes, pools or timers of their own (MPI ranks, loader workers, fresh venvs,
#: subprocess examples, thread-pool and timeout checks): under pytest-xdist they all run on one worker, one at a
#: time, while the other workers take the in-process tests
_ONE_AT_A_TIME = (
    "tests/distributed/", "tests/integration/", "tests/data/test_data_workers.py",
    "tests/backends/test_numpy_threads.py", "tests/backends/test_numpy_pool.py", "tests/nn/test_thread_determinism.py",
    "tests/core/test_registry_threads.py", "tests/nn/test_checkpoint_faults.py",
)  # fmt: skip


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        if path.startswith(_ONE_AT_A_TIME):
            item.add_marker(pytest.mark.xdist_group("processes"))
