"""PyTorch's FSDP option types: strategies, policies and state-dict configurations."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

# -- PyTorch's option types --------------------------------------------------------------------------------


class ShardingStrategy(enum.Enum):
    """FSDP1's strategies; Lucid runs FULL_SHARD and SHARD_GRAD_OP (no resharding after forward)."""

    FULL_SHARD = 1
    SHARD_GRAD_OP = 2
    NO_SHARD = 3
    HYBRID_SHARD = 4
    _HYBRID_SHARD_ZERO2 = 5


class BackwardPrefetch(enum.Enum):
    """Accepted for PyTorch scripts; Lucid gathers each unit when its backward starts (no prefetch)."""

    BACKWARD_PRE = 1
    BACKWARD_POST = 2


class StateDictType(enum.Enum):
    """What ``FullyShardedDataParallel.state_dict()`` returns: the whole model or this rank's shards."""

    FULL_STATE_DICT = 1
    LOCAL_STATE_DICT = 2
    SHARDED_STATE_DICT = 3


@dataclass
class CPUOffload:
    """PyTorch's option; ``offload_params=True`` is refused (parameters stay on their device)."""

    offload_params: bool = False


@dataclass
class MixedPrecision:
    """PyTorch's option; only the trivial one (no dtype given) is accepted (low-precision gathers are not built)."""

    param_dtype: Any = None
    reduce_dtype: Any = None
    buffer_dtype: Any = None
    keep_low_precision_grads: bool = False
    cast_forward_inputs: bool = False
    cast_root_forward_inputs: bool = True


@dataclass
class MixedPrecisionPolicy:
    """FSDP2's ``mp_policy``; only the trivial one (no dtype) is accepted: low-precision gathers are not built."""

    param_dtype: Any = None
    reduce_dtype: Any = None
    output_dtype: Any = None
    cast_forward_inputs: bool = True


@dataclass
class OffloadPolicy:
    """FSDP2's ``offload_policy``: no offloading (the default)."""


@dataclass
class CPUOffloadPolicy(OffloadPolicy):
    """FSDP2's CPU offloading: refused (parameters stay on their device)."""

    pin_memory: bool = True


@dataclass
class FullStateDictConfig:
    """Full state dicts: ``rank0_only`` leaves the other ranks an empty dict; ``offload_to_cpu`` moves to "cpu"."""

    offload_to_cpu: bool = False
    rank0_only: bool = False


@dataclass
class ShardedStateDictConfig:
    """Sharded state dicts: ``offload_to_cpu`` moves each rank's pieces to "cpu"."""

    offload_to_cpu: bool = False


@dataclass
class OptimStateDictConfig:
    """FSDP1's optimizer state-dict configuration: ``offload_to_cpu`` (PyTorch's default True) moves it to "cpu"."""

    offload_to_cpu: bool = True


@dataclass
class FullOptimStateDictConfig(OptimStateDictConfig):
    """Full optimizer state dicts (``FULL_STATE_DICT``): ``rank0_only`` leaves the other ranks an empty dict."""

    rank0_only: bool = False


@dataclass
class ShardedOptimStateDictConfig(OptimStateDictConfig):
    """Sharded optimizer state dicts (``SHARDED_STATE_DICT``): each rank's pieces as ``Shard``s."""


@dataclass
class StateDictOptions:
    """The options of ``get_model_state_dict``, ``get_optimizer_state_dict`` and the ``set_*`` functions.

    PyTorch's ``torch.distributed.checkpoint.state_dict.StateDictOptions``: ``full_state_dict`` whole tensors
    instead of ``Shard``s, ``cpu_offload`` moves them to "cpu", ``strict`` for the model's keys.
    """

    full_state_dict: bool = False
    cpu_offload: bool = False
    strict: bool = True
    broadcast_from_rank0: bool = False
