"""``lucid.utils.data`` (also ``lucid.data``): PyTorch's data loading (``lucid_data``).

``DataLoader`` accepts PyTorch's ``pin_memory``, ``persistent_workers`` and ``worker_init_fn`` where
``lucid_data`` does not take them itself: pinned memory means nothing on the CPU (no-op), and the loader's
workers are already kept for its lifetime.
"""

from __future__ import annotations

import inspect
from typing import Any

import lucid_data
from lucid_data import *  # noqa: F403
from lucid_data import __all__ as _data_all

_PYTORCH_ONLY = ("pin_memory", "persistent_workers", "pin_memory_device", "timeout", "multiprocessing_context")
_accepted = set(inspect.signature(lucid_data.DataLoader.__init__).parameters)

if all(name in _accepted for name in _PYTORCH_ONLY):
    DataLoader = lucid_data.DataLoader
else:

    class DataLoader(lucid_data.DataLoader):  # type: ignore[no-redef]
        """``lucid_data.DataLoader`` that also takes PyTorch's ``pin_memory``/``persistent_workers`` (no-ops here)."""

        def __init__(self, dataset: Any, *args: Any, **kwargs: Any) -> None:
            for name in _PYTORCH_ONLY:
                if name not in _accepted:
                    kwargs.pop(name, None)
            super().__init__(dataset, *args, **kwargs)


__all__ = list(_data_all)
