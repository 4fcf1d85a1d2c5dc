"""``lucid.distributed.fsdp``: PyTorch's ``torch.distributed.fsdp`` names over ``lucid_distributed.fsdp``.

Both surfaces: FSDP2's ``fully_shard`` (with ``FSDPModule``, ``MixedPrecisionPolicy``, ``OffloadPolicy``) and
FSDP1's ``FullyShardedDataParallel`` with its option types. Sharding strategies other than ``FULL_SHARD``
and ``SHARD_GRAD_OP``, mixed precision with a dtype and CPU offload are refused with an error that says so.
"""

from __future__ import annotations

from ..._optional import distributed_module

distributed_module()  # an ImportError saying how to install lucid_distributed, when it is missing

from lucid_distributed.fsdp import (  # noqa: E402
    BackwardPrefetch,
    CPUOffload,
    CPUOffloadPolicy,
    FSDPModule,
    FullOptimStateDictConfig,
    FullStateDictConfig,
    FullyShardedDataParallel,
    MixedPrecision,
    MixedPrecisionPolicy,
    OffloadPolicy,
    OptimStateDictConfig,
    ShardedOptimStateDictConfig,
    ShardedStateDictConfig,
    ShardingStrategy,
    StateDictType,
    fully_shard,
)

from . import wrap  # noqa: E402

__all__ = [
    "fully_shard", "FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy", "CPUOffloadPolicy",
    "FullyShardedDataParallel", "ShardingStrategy", "BackwardPrefetch", "CPUOffload", "MixedPrecision",
    "StateDictType", "FullStateDictConfig", "ShardedStateDictConfig", "OptimStateDictConfig",
    "FullOptimStateDictConfig", "ShardedOptimStateDictConfig", "wrap",
]  # fmt: skip
