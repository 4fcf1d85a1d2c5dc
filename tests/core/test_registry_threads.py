"""Backend discovery and first loads are thread-safe: threads that make their first tensors at once all succeed.

Each case runs in a fresh interpreter (discovery happens once per process), its threads released together
from a barrier; before the registry took a lock, one of them regularly found no backend ("no installed
backend offers a 'cpu' device"), every run on a 2-core machine.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

FIRST_TENSORS = """
import sys, threading
import lucid_core as lc

barrier, errors = threading.Barrier(4), []

def first_tensor():
    barrier.wait()
    try:
        assert (lc.zeros(3) + 1).tolist() == [1.0, 1.0, 1.0]
    except BaseException as exc:
        errors.append(f"{type(exc).__name__}: {exc}")

threads = [threading.Thread(target=first_tensor) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("\\n".join(errors))
sys.exit(1 if errors else 0)
"""

THREAD_WORKERS = """
import lucid_core as lc
from lucid_data import DataLoader, Dataset

class Squares(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        return lc.asarray([float(i * i)])  # the process's first tensors are made in the workers

loader = DataLoader(Squares(), batch_size=2, num_workers=4, worker_type="thread")
values = [v for batch in loader for v in batch.reshape(-1).tolist()]
assert values == [float(i * i) for i in range(16)], values
"""


def _run(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("attempt", range(3))
def test_four_threads_make_their_first_tensors_at_once(attempt: int) -> None:
    result = _run(FIRST_TENSORS)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("attempt", range(2))
def test_thread_workers_of_a_fresh_process_find_the_backend(attempt: int) -> None:
    result = _run(THREAD_WORKERS)
    assert result.returncode == 0, result.stdout + result.stderr
