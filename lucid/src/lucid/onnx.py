"""``lucid.onnx``: importable, as programs import ``torch.onnx`` at the top; exporting is not supported.

Lucid has no graph capture yet (issue 36), so it cannot write an ONNX graph: :func:`export` raises saying
so instead of writing a file that would not hold the model.
"""

from __future__ import annotations

from typing import Any

__all__ = ["export", "is_in_onnx_export"]


def export(model: Any, args: Any, f: Any = None, *rest: Any, **kwargs: Any) -> None:
    """Not supported: raises NotImplementedError (Lucid cannot capture a model as a graph yet)."""
    raise NotImplementedError(
        "lucid.onnx.export: Lucid cannot export ONNX graphs (it has no graph capture yet); save the weights with "
        "lucid.save(model.state_dict(), path) and export from PyTorch if you need ONNX"
    )


def is_in_onnx_export() -> bool:
    """False: no ONNX export is ever running."""
    return False
