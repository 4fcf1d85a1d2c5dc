"""Fully sharded data parallel: parameters, gradients and optimizer state split across the ranks.

PyTorch's two spellings: ``fully_shard(module)`` (FSDP2: applied to each layer, then to the root) and
``FullyShardedDataParallel(module, auto_wrap_policy=...)`` (FSDP1's wrapper, built on ``fully_shard``).

How it works. Each *unit* (a module ``fully_shard`` was applied to) owns the parameters of its subtree
that no inner unit owns. Each of them is flattened, padded to a multiple of the world size N and cut
into N equal pieces; rank ``r`` keeps piece ``r`` as the ``Parameter`` the module (and so the optimizer)
sees: parameters, gradients and optimizer state all live at 1/N. Just before a unit's forward one
``all_gather_into_tensor`` of the unit's pieces rebuilds its full parameters, through an autograd node
(``_Unshard``) whose backward is one ``reduce_scatter_tensor`` (AVG) of the full gradients back into
the pieces' ``.grad``, so gradients arrive sharded and averaged inside ``loss.backward()``. After the
unit's forward the full parameters are freed (``reshard_after_forward=True``; the root unit keeps
its own, which backward needs at once, as PyTorch does) and gathered again when the gradient of the
unit's output arrives, before any of the unit's backward runs.

Communication per step: each unit's parameters are all-gathered twice (forward and backward) and its
gradients reduce-scattered once: 1.5x DDP's all-reduce volume, in exchange for memory per rank of
about 1/N of parameters + gradients + optimizer state, plus the largest unit while it is gathered.

State dicts (PyTorch's ``torch.distributed.checkpoint.state_dict``): ``get_model_state_dict`` gives each
sharded parameter as this rank's :class:`~lucid_distributed.checkpoint.Shard` (a flat range of the whole
parameter) or whole; ``get_optimizer_state_dict`` keys the optimizer's state by parameter name and
describes its per-element state (shaped as the pieces) the same way, so ``checkpoint.save`` of both on N
ranks resumes exactly with ``checkpoint.load`` + ``set_state_dict`` on any other number of ranks.

What is not here (refused with an error saying so): CPU offload, mixed precision with a dtype,
sharding strategies other than FULL_SHARD / SHARD_GRAD_OP, device meshes and process groups other
than the default one.
"""

from __future__ import annotations

__all__ = [
    "fully_shard", "FSDPModule", "FullyShardedDataParallel", "ShardingStrategy", "BackwardPrefetch", "CPUOffload",
    "MixedPrecision", "MixedPrecisionPolicy", "OffloadPolicy", "CPUOffloadPolicy", "StateDictType",
    "FullStateDictConfig", "ShardedStateDictConfig", "OptimStateDictConfig", "FullOptimStateDictConfig",
    "ShardedOptimStateDictConfig", "StateDictOptions", "ModuleWrapPolicy", "size_based_auto_wrap_policy",
    "transformer_auto_wrap_policy", "get_model_state_dict", "set_model_state_dict", "get_optimizer_state_dict",
    "set_optimizer_state_dict", "get_state_dict", "set_state_dict", "memory_stats", "clip_grad_norm_",
]  # fmt: skip

from ._optim_state_dict import get_optimizer_state_dict, get_state_dict, set_optimizer_state_dict, set_state_dict
from ._options import (
    BackwardPrefetch,
    CPUOffload,
    CPUOffloadPolicy,
    FullOptimStateDictConfig,
    FullStateDictConfig,
    MixedPrecision,
    MixedPrecisionPolicy,
    OffloadPolicy,
    OptimStateDictConfig,
    ShardedOptimStateDictConfig,
    ShardedStateDictConfig,
    ShardingStrategy,
    StateDictOptions,
    StateDictType,
)
from ._shard import FSDPModule, fully_shard, memory_stats
from ._state_dict import clip_grad_norm_, get_model_state_dict, set_model_state_dict
from ._wrap import FullyShardedDataParallel, ModuleWrapPolicy, size_based_auto_wrap_policy, transformer_auto_wrap_policy
