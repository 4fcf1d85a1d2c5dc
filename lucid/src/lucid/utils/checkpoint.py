"""``lucid.utils.checkpoint``: activation checkpointing (``lucid_nn.utils.checkpoint``): recompute in backward."""

from __future__ import annotations

from lucid_nn.utils.checkpoint import checkpoint, checkpoint_sequential

__all__ = ["checkpoint", "checkpoint_sequential"]
