"""A seeded training run gives bit-identical parameters for any thread count (numpy backend).

Each run is a fresh interpreter with ``LUCID_NUM_THREADS`` / ``OMP_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS`` set,
training a small CNN and an MLP for a few AdamW steps from ``manual_seed(0)``; the SHA-256 of every
parameter's bytes must agree. Before products ran on a thread-count-independent partition, OpenBLAS's
threaded products made the 1- and 2-thread runs differ in the last bits (see docs/backends.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

TRAIN = """
import hashlib
import lucid_core as lc
import lucid_nn as nn
import lucid_nn.functional as F
import lucid_optim as optim

lc.set_default_device("numpy")
lc.manual_seed(0)
cnn = nn.Sequential(
    nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3), nn.ReLU(),
    nn.Flatten(), nn.Linear(16 * 6 * 6, 64), nn.ReLU(), nn.Linear(64, 10),
)
mlp = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.LayerNorm(256), nn.Linear(256, 10))
params = list(cnn.parameters()) + list(mlp.parameters())
opt = optim.AdamW(params, lr=1e-3)
x, y = lc.randn(128, 1, 16, 16), lc.randint(0, 10, (128,))
for step in range(4):
    loss = F.cross_entropy(cnn(x), y) + F.cross_entropy(mlp(lc.randn(128, 64)), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
digest = hashlib.sha256()
for p in params:
    digest.update(p.detach().numpy().tobytes())
print(digest.hexdigest())
"""


def _train(threads: int | None) -> str:
    env = {
        k: v for k, v in os.environ.items() if k not in ("LUCID_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")
    }
    if threads is not None:
        env.update(LUCID_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(TRAIN)], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_seeded_training_has_the_same_bits_at_one_and_two_threads() -> None:
    one, two, default = _train(1), _train(2), _train(None)
    assert len(one) == 64
    assert one == two == default
