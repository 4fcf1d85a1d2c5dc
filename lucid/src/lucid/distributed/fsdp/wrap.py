"""``lucid.distributed.fsdp.wrap``: FSDP1's auto-wrap policies (PyTorch's ``torch.distributed.fsdp.wrap``)."""

from __future__ import annotations

from lucid_distributed.fsdp import ModuleWrapPolicy, size_based_auto_wrap_policy, transformer_auto_wrap_policy

__all__ = ["ModuleWrapPolicy", "size_based_auto_wrap_policy", "transformer_auto_wrap_policy"]
