"""``lucid.distributed.checkpoint.state_dict``: PyTorch's ``torch.distributed.checkpoint.state_dict``.

The model's and the optimizers' state dicts of a sharded (FSDP) model, keyed by parameter names: each
rank's ``Shard``s (to save with ``dcp.save`` and load on any number of ranks) or whole tensors
(``StateDictOptions(full_state_dict=True)``); see ``lucid_distributed.fsdp``.
"""

from __future__ import annotations

from lucid_distributed.fsdp import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    get_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
    set_state_dict,
)

__all__ = [
    "StateDictOptions", "get_model_state_dict", "get_optimizer_state_dict", "get_state_dict",
    "set_model_state_dict", "set_optimizer_state_dict", "set_state_dict",
]  # fmt: skip
