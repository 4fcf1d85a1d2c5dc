"""The one error a checkpoint that cannot be read raises (shared by the safetensors and PyTorch readers)."""

from __future__ import annotations

__all__ = ["CheckpointError", "UnsafeCheckpointError"]

import pickle


class CheckpointError(ValueError):
    """A checkpoint file that cannot be read: damaged, truncated, or not a format Lucid reads.

    The message names the file and what is wrong in it. It is a ValueError, so code written against
    the earlier errors still catches it.
    """


class UnsafeCheckpointError(CheckpointError, pickle.UnpicklingError):
    """A PyTorch pickle that names a global outside PyTorch's ``weights_only=True`` allow-list.

    Nothing it names is imported or run. Also a ``pickle.UnpicklingError``, which is what
    ``torch.load(..., weights_only=True)`` raises for the same file.
    """
