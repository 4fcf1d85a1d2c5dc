"""``lucid.nn``: PyTorch's ``torch.nn`` on Lucid (the layers, containers and losses of ``lucid_nn``).

Laid out as PyTorch's: ``lucid.nn.modules.<file>`` (``modules.module.Module``, ``modules.conv.Conv2d``),
``lucid.nn.utils`` (``rnn``, ``parametrize``, ``parametrizations``), ``lucid.nn.parallel`` and ``lucid.nn.init``.
"""

from __future__ import annotations

import importlib
from typing import Any

from lucid_core import Parameter
from lucid_nn import *  # noqa: F403
from lucid_nn import Module

from . import functional, init, modules

__all__ = ["Module", "Parameter", "functional", "init", "modules", "utils", "parallel"]  # noqa: F405 - lazy


def __getattr__(name: str) -> Any:
    if name in ("utils", "parallel"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
