"""FSDP1's user surface: ``FullyShardedDataParallel`` and its auto-wrap policies, built on ``fully_shard``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from lucid_core import Tensor

from .. import _group
from ._optim_state_dict import _fqn_state_dict, _to_local
from ._options import (
    BackwardPrefetch,
    CPUOffload,
    FullOptimStateDictConfig,
    FullStateDictConfig,
    MixedPrecision,
    ShardedOptimStateDictConfig,
    ShardedStateDictConfig,
    ShardingStrategy,
    StateDictOptions,
    StateDictType,
)
from ._shard import FSDPModule, _states, fully_shard
from ._state_dict import (
    _full_params,
    _full_state_dict,
    _load_state_dict,
    _unwrap,
    clip_grad_norm_,
    get_model_state_dict,
)

# -- FSDP1: the wrapper -----------------------------------------------------------------------------------------


class ModuleWrapPolicy:
    """Wrap every submodule whose class is one of ``module_classes`` (PyTorch's ``ModuleWrapPolicy``)."""

    def __init__(self, module_classes: Iterable[type]) -> None:
        self.module_classes = tuple(module_classes)

    def __call__(self, module: Any, recurse: bool, nonwrapped_numel: int) -> bool:
        return True if recurse else isinstance(module, self.module_classes)


def transformer_auto_wrap_policy(
    module: Any, recurse: bool, nonwrapped_numel: int, transformer_layer_cls: Iterable[type] = ()
) -> bool:
    """Wrap the transformer layers (use with ``functools.partial(..., transformer_layer_cls={Block})``)."""
    return True if recurse else isinstance(module, tuple(transformer_layer_cls))


def size_based_auto_wrap_policy(
    module: Any, recurse: bool, nonwrapped_numel: int, min_num_params: int = int(1e8), **_: Any
) -> bool:
    """Wrap a submodule once its not-yet-wrapped parameters reach ``min_num_params``."""
    return True if recurse else nonwrapped_numel >= min_num_params


def _auto_wrap(module: Any, policy: Any, reshard: bool, root: bool = True) -> None:
    """Apply fully_shard bottom-up to the submodules the policy picks (PyTorch's auto wrapping)."""
    if isinstance(policy, (set, list, tuple, frozenset)):
        policy = ModuleWrapPolicy(policy)
    for child in module.children():
        if not isinstance(child, FSDPModule) and policy(module=child, recurse=True, nonwrapped_numel=0):
            _auto_wrap(child, policy, reshard, root=False)
    if not root:
        numel = sum(p.size for p in module.parameters())
        if policy(module=module, recurse=False, nonwrapped_numel=numel):
            fully_shard(module, reshard_after_forward=reshard)


class FullyShardedDataParallel:
    """PyTorch's FSDP1 wrapper: ``FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}))``.

    Built on :func:`fully_shard`: the policy's submodules become units bottom-up, then the root. Call
    the wrapper as the module; build the optimizer on ``fsdp.parameters()`` (each rank's pieces, named as
    the original parameters). ``state_dict()`` is the whole model (``FULL_STATE_DICT``, the default) or
    this rank's pieces (``SHARDED_STATE_DICT``), chosen with :meth:`state_dict_type`.
    """

    _is_fsdp_wrapper = True

    def __init__(
        self,
        module: Any,
        process_group: Any = None,
        sharding_strategy: ShardingStrategy | None = None,
        cpu_offload: CPUOffload | None = None,
        auto_wrap_policy: Any = None,
        backward_prefetch: BackwardPrefetch | None = BackwardPrefetch.BACKWARD_PRE,
        mixed_precision: MixedPrecision | None = None,
        ignored_modules: Any = None,
        param_init_fn: Any = None,
        device_id: Any = None,
        sync_module_states: bool = False,
        forward_prefetch: bool = False,
        limit_all_gathers: bool = True,
        use_orig_params: bool = False,
        ignored_states: Any = None,
        device_mesh: Any = None,
    ) -> None:
        strategy = ShardingStrategy.FULL_SHARD if sharding_strategy is None else sharding_strategy
        if strategy not in (ShardingStrategy.FULL_SHARD, ShardingStrategy.SHARD_GRAD_OP):
            advice = "use DistributedDataParallel" if strategy is ShardingStrategy.NO_SHARD else "use FULL_SHARD"
            raise ValueError(
                f"FullyShardedDataParallel: sharding_strategy={strategy} is not supported (Lucid has one process "
                f"group, sharded across all ranks: FULL_SHARD or SHARD_GRAD_OP); {advice}"
            )
        refused = {
            "process_group": process_group, "ignored_modules": ignored_modules, "param_init_fn": param_init_fn,
            "ignored_states": ignored_states, "device_mesh": device_mesh,
        }  # fmt: skip
        for name, value in refused.items():
            if value is not None:
                raise ValueError(f"FullyShardedDataParallel: {name} is not supported; leave it None")
        if cpu_offload is not None and cpu_offload.offload_params:
            raise ValueError("FullyShardedDataParallel: CPUOffload(offload_params=True) is not supported")
        if mixed_precision is not None and mixed_precision != MixedPrecision():
            raise ValueError(
                "FullyShardedDataParallel: mixed_precision with a dtype is not supported yet (gathering and "
                "reducing in low precision is not built, and MPI has no bfloat16 reduction); "
                "cast the model with .to(dtype) instead"
            )
        if isinstance(module, (FSDPModule, FullyShardedDataParallel)):
            raise ValueError("FullyShardedDataParallel: the module is already sharded")
        if sync_module_states:
            tensors = [p for p in module.parameters()] + list(module.buffers())
            for t in tensors:
                _group.broadcast(t, 0)
        reshard = strategy is ShardingStrategy.FULL_SHARD
        if auto_wrap_policy is not None:
            _auto_wrap(module, auto_wrap_policy, reshard)
        fully_shard(module, reshard_after_forward=reshard)
        self.module = module
        self.sharding_strategy = strategy
        self._state_dict_type = StateDictType.FULL_STATE_DICT
        self._state_dict_config: Any = FullStateDictConfig()
        self._optim_state_dict_config: Any = FullOptimStateDictConfig()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Run the wrapped module (its units gather, compute and reshard)."""
        return self.module(*args, **kwargs)

    # -- the Module surface -------------------------------------------------------------------------------
    def parameters(self, recurse: bool = True) -> Iterator[Tensor]:
        """This rank's pieces: what the optimizer is built on."""
        return self.module.parameters(recurse)

    def named_parameters(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple[str, Tensor]]:
        """The pieces, named as the original parameters."""
        return self.module.named_parameters(prefix, recurse)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """The wrapped module's buffers (not sharded)."""
        return self.module.buffers(recurse)

    def train(self, mode: bool = True) -> FullyShardedDataParallel:
        """Set training mode on the wrapped module."""
        self.module.train(mode)
        return self

    def eval(self) -> FullyShardedDataParallel:
        """Set evaluation mode on the wrapped module."""
        self.module.eval()
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the pieces' gradients."""
        self.module.zero_grad(set_to_none)

    @contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside this block backward keeps each rank's own gradients (sum them later under a synced step)."""
        states = _states(self.module)
        prev = [s.gradient_sync for s in states]
        for s in states:
            s.gradient_sync = False
        try:
            yield
        finally:
            for s, p in zip(states, prev):
                s.gradient_sync = p

    # -- whole parameters -----------------------------------------------------------------------------------
    @staticmethod
    @contextmanager
    def summon_full_params(
        module: Any, recurse: bool = True, writeback: bool = True, rank0_only: bool = False,
        offload_to_cpu: bool = False, with_grads: bool = False,
    ) -> Iterator[None]:  # fmt: skip
        """Inside the block the module holds its whole parameters (every rank); with ``writeback`` changes
        made to them are kept (each rank takes its piece back) when the block ends."""
        if not recurse or rank0_only or offload_to_cpu or with_grads:
            raise ValueError(
                "summon_full_params: only recurse=True, rank0_only=False, offload_to_cpu=False, with_grads=False "
                "are supported"
            )
        with _full_params(_unwrap(module), writeback=writeback):
            yield

    def clip_grad_norm_(self, max_norm: float, norm_type: float = 2.0) -> Tensor:
        """Clip the gradients of all ranks' pieces by their joint norm (PyTorch's ``FSDP.clip_grad_norm_``).

        A collective on every rank; returns the total norm before clipping.
        """
        return clip_grad_norm_(self.module, max_norm, norm_type)

    # -- state dicts ------------------------------------------------------------------------------------------
    @staticmethod
    @contextmanager
    def state_dict_type(
        module: Any, state_dict_type: StateDictType, state_dict_config: Any = None, optim_state_dict_config: Any = None
    ) -> Iterator[None]:
        """Inside the block ``state_dict()``/``load_state_dict()`` and the optimizer's ``optim_state_dict()`` /
        ``optim_state_dict_to_load()`` use ``state_dict_type`` (PyTorch's context)."""
        if not isinstance(module, FullyShardedDataParallel):
            raise TypeError("state_dict_type: expected a FullyShardedDataParallel module")
        if state_dict_type is StateDictType.LOCAL_STATE_DICT:
            raise ValueError("state_dict_type: LOCAL_STATE_DICT is not supported; use SHARDED_STATE_DICT")
        prev = module._state_dict_type, module._state_dict_config, module._optim_state_dict_config
        full = state_dict_type is StateDictType.FULL_STATE_DICT
        default = FullStateDictConfig() if full else ShardedStateDictConfig()
        optim_default = FullOptimStateDictConfig() if full else ShardedOptimStateDictConfig()
        module._state_dict_type, module._state_dict_config = state_dict_type, state_dict_config or default
        module._optim_state_dict_config = optim_state_dict_config or optim_default
        try:
            yield
        finally:
            module._state_dict_type, module._state_dict_config, module._optim_state_dict_config = prev

    def state_dict(self) -> dict[str, Any]:
        """The whole model (every rank, or rank 0 only) or this rank's ``Shard``s, per :meth:`state_dict_type`."""
        cfg = self._state_dict_config
        if self._state_dict_type is StateDictType.FULL_STATE_DICT:
            return _full_state_dict(self.module, cfg.rank0_only, cfg.offload_to_cpu)
        return get_model_state_dict(self.module, options=StateDictOptions(cpu_offload=cfg.offload_to_cpu))

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True) -> Any:
        """Load a whole-model or a sharded state dict (each rank keeps its piece)."""
        return _load_state_dict(self.module, state_dict, strict)

    @staticmethod
    def optim_state_dict(
        model: Any, optim: Any, optim_state_dict: Mapping[str, Any] | None = None, group: Any = None
    ) -> dict[str, Any]:
        """The optimizer's state keyed by parameter names, whole or as ``Shard``s per :meth:`state_dict_type`.

        PyTorch's FSDP1 static method: ``FULL_STATE_DICT`` (the default) gathers every rank's state (a
        collective; ``FullOptimStateDictConfig`` says ``rank0_only`` and ``offload_to_cpu``, True by default
        as in PyTorch), ``SHARDED_STATE_DICT`` gives this rank's ``Shard``s. ``optim_state_dict``: an
        ``optim.state_dict()`` to convert instead of the optimizer's own.
        """
        if group is not None:
            raise ValueError("optim_state_dict: group is not supported; leave it None (the default group)")
        full, cfg = _optim_settings(model)
        given = None if optim_state_dict is None else [optim_state_dict]
        return _fqn_state_dict(
            _unwrap(model), [optim], full=full, rank0_only=full and getattr(cfg, "rank0_only", False),
            cpu=cfg.offload_to_cpu, given=given, what="optim_state_dict",
        )  # fmt: skip

    @staticmethod
    def optim_state_dict_to_load(
        model: Any, optim: Any, optim_state_dict: Mapping[str, Any], is_named_optimizer: bool = False,
        load_directly: bool = False, group: Any = None,
    ) -> dict[str, Any]:  # fmt: skip
        """``optim_state_dict`` (from :meth:`optim_state_dict`: whole or ``Shard``s) as ``optim.load_state_dict``
        takes it on this rank (PyTorch's FSDP1 static method); ``load_directly`` also loads it."""
        what = "optim_state_dict_to_load"
        if is_named_optimizer:
            raise ValueError(f"{what}: is_named_optimizer=True is not supported (Lucid has no NamedOptimizer)")
        if group is not None:
            raise ValueError(f"{what}: group is not supported; leave it None (the default group)")
        full, cfg = _optim_settings(model)
        if full and getattr(cfg, "rank0_only", False):
            raise ValueError(
                f"{what}: FullOptimStateDictConfig(rank0_only=True) is not supported (rank 0's state dict would "
                "have to be broadcast to the others); pass the whole optimizer state dict on every rank"
            )
        local = _to_local(_unwrap(model), [optim], optim_state_dict, what)[0]
        if load_directly:
            optim.load_state_dict(local)
        return local

    def __getattr__(self, name: str) -> Any:
        if name == "module":
            raise AttributeError(name)
        return getattr(self.module, name)

    def __repr__(self) -> str:
        return f"FullyShardedDataParallel({self.module!r})"


def _optim_settings(model: Any) -> tuple[bool, Any]:
    """``(whole?, optimizer state-dict config)`` of ``model``: its :meth:`~FullyShardedDataParallel.state_dict_type`,
    or FSDP1's default (whole) for a ``fully_shard`` module."""
    if isinstance(model, FullyShardedDataParallel):
        return model._state_dict_type is StateDictType.FULL_STATE_DICT, model._optim_state_dict_config
    return True, FullOptimStateDictConfig()
