"""``lucid.nn.parallel``: ``DistributedDataParallel`` (from ``lucid_distributed``) and ``DataParallel``
(``lucid_nn``'s, one device)."""

from __future__ import annotations

from typing import Any

from lucid_nn import DataParallel

from .._optional import distributed_module

__all__ = ["DataParallel", "DistributedDataParallel"]  # noqa: F822 - DistributedDataParallel: __getattr__


def __getattr__(name: str) -> Any:
    if name == "DistributedDataParallel":
        return distributed_module().DistributedDataParallel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
