"""``lucid.backends.cudnn``: the flags PyTorch scripts set (``deterministic``, ``benchmark``).

Lucid has no cuDNN; the flags are accepted and have no effect (Lucid's kernels are deterministic).
"""

from __future__ import annotations

deterministic = False
benchmark = False
enabled = True
allow_tf32 = False


def is_available() -> bool:
    """Always False: Lucid does not use cuDNN."""
    return False
