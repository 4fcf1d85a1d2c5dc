"""Optional distributions the face exposes under PyTorch's names, imported when first used."""

from __future__ import annotations

import importlib
from types import ModuleType

INSTALL_DISTRIBUTED = "pip install ./lucid_distributed"


def distributed_module() -> ModuleType:
    """``lucid_distributed``, or an ImportError that says how to install it."""
    try:
        return importlib.import_module("lucid_distributed")
    except ImportError as exc:
        if exc.name != "lucid_distributed":
            raise
        raise ImportError(
            f"lucid.distributed and lucid.nn.parallel need the lucid_distributed package: {INSTALL_DISTRIBUTED} "
            "(from a clone of the Lucid repository)"
        ) from exc
