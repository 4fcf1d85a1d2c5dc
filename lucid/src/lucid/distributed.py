"""``lucid.distributed``: PyTorch's ``torch.distributed`` API from ``lucid_distributed`` (installed separately).

``import lucid.distributed as dist`` always works; ``dist.is_available()`` says whether ``lucid_distributed``
is installed, and any other name raises an ImportError that says how to install it.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from ._optional import distributed_module


def is_available() -> bool:
    """Whether ``lucid_distributed`` is installed."""
    return importlib.util.find_spec("lucid_distributed") is not None


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(distributed_module(), name)
