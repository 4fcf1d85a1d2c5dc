"""``lucid.nn.parallel``: ``DistributedDataParallel`` from ``lucid_distributed`` (installed separately)."""

from __future__ import annotations

from typing import Any

from .._optional import distributed_module

__all__ = ["DistributedDataParallel"]  # noqa: F822 - loaded by __getattr__


def __getattr__(name: str) -> Any:
    if name == "DistributedDataParallel":
        return distributed_module().DistributedDataParallel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
