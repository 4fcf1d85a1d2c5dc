"""Whole and sharded state dicts of sharded modules, ``summon_full_params``' gathering, clipping over shards."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import lucid_core
from lucid_core import Parameter, Tensor

from .. import _group
from .._communicator import ReduceOp
from ..checkpoint import Shard
from ._options import StateDictOptions
from ._shard import FSDPModule, _FlatParam, _memory, _nbytes, _states

# -- state dicts ---------------------------------------------------------------------------------------------


def _owners(module: Any) -> dict[int, _FlatParam]:
    return {id(fp.piece): fp for s in _states(module) for fp in s.params}


def _sharded_state_dict(module: Any, raw: dict[str, Any], keep_vars: bool) -> dict[str, Any]:
    owners = _owners(module)
    rank = _group.get_rank()
    out = {}
    for k, v in raw.items():
        fp = owners.get(id(v)) if isinstance(v, Tensor) else None
        if fp is not None:
            v = _as_shard(fp, v, rank)
        elif isinstance(v, Tensor) and not keep_vars:
            v = v.detach()
        out[k] = v
    return out


def _as_shard(fp: _FlatParam, piece: Tensor, rank: int) -> Shard:
    """``piece`` (the parameter's piece, or optimizer state shaped as it) as this rank's range of the whole."""
    return Shard(piece.detach()[: fp.valid(rank)], fp.shape, rank * fp.size)


@contextmanager
def _full_params(module: Any, writeback: bool = False) -> Iterator[None]:
    """Every unit's full parameters installed in the module (no graph) for the block; pieces after."""
    states = _states(module)
    fulls = []
    with lucid_core.no_grad():
        for s in states:
            fs = [Parameter(f, requires_grad=fp.piece.requires_grad) for fp, f in zip(s.params, s._gather_full())]
            fulls.append(fs)
            for fp, f in zip(s.params, fs):
                fp.install(f)
    try:
        yield
    finally:
        with lucid_core.no_grad():
            for s, fs in zip(states, fulls):
                for fp, f in zip(s.params, fs):
                    fp.install(fp.piece)
                    if writeback:
                        _write_piece(fp, f)
                _memory.add(-sum(_nbytes(f) for f in fs))


def _write_piece(fp: _FlatParam, full: Tensor, into: Tensor | None = None, what: str | None = None) -> None:
    """Copy this rank's part of the whole parameter ``full`` into its piece (or into ``into``, shaped as it)."""
    rank = _group.get_rank()
    n = fp.valid(rank)
    target = fp.piece if into is None else into
    if tuple(full.shape) != fp.shape:
        raise ValueError(f"{what or fp.name}: expected a tensor of shape {fp.shape}, got {tuple(full.shape)}")
    with lucid_core.no_grad():
        if n:
            start = rank * fp.size
            target[:n] = full.detach().reshape(-1)[start : start + n].to(target.device).astype(target.dtype)


def _full_state_dict(module: Any, rank0_only: bool, cpu: bool) -> dict[str, Any]:
    """The whole model's state on every rank (or rank 0 only): a gather of every unit."""
    with _full_params(module):
        sd = _base_state_dict(module)(None, "", False)
        sd = {k: (v.detach().clone() if isinstance(v, Tensor) else v) for k, v in sd.items()}
    if rank0_only and _group.get_rank() != 0:
        return {}
    return {k: (v.to("cpu") if cpu and isinstance(v, Tensor) else v) for k, v in sd.items()}


def _base_state_dict(module: Any) -> Callable[..., dict[str, Any]]:
    """``nn.Module.state_dict`` of ``module`` (past FSDPModule's override, which shards it)."""
    for cls in type(module).__mro__:
        if cls is not FSDPModule and "state_dict" in cls.__dict__ and not issubclass(cls, FSDPModule):
            return cls.__dict__["state_dict"].__get__(module)
    raise TypeError(f"{type(module).__name__} has no state_dict")


def _load_state_dict(module: Any, state_dict: Mapping[str, Any], strict: bool = True) -> Any:
    """Load whole tensors or :class:`Shard` values into the pieces; everything else through the module."""
    owners = _owners(module)
    by_name = {}  # every name a sharded parameter has (a tied one has several)
    for mod_name, m in module.named_modules(remove_duplicate=False):
        for attr, p in m._parameters.items():
            if p is not None and id(p) in owners:
                by_name[f"{mod_name}.{attr}" if mod_name else attr] = owners[id(p)]
    own = set(_base_state_dict(module)(None, "", True))  # every key: the pieces' names and the buffers'
    missing = [k for k in own if k not in state_dict]
    unexpected = [k for k in state_dict if k not in own]
    if strict and (missing or unexpected):  # checked before anything is written, as Module.load_state_dict
        raise RuntimeError(
            f"Error(s) in loading state_dict for {type(module).__name__}: missing keys {missing}, "
            f"unexpected keys {unexpected}"
        )
    rank = _group.get_rank()
    rest = {}
    for k, v in state_dict.items():
        fp = by_name.get(k)
        if fp is None:
            rest[k] = v
        elif isinstance(v, Shard):
            _load_shard(fp, v, rank)
        else:
            _write_piece(fp, v)
    result = _base_load(module)({k: v for k, v in rest.items() if k in own}, strict=False)
    return type(result)(missing, unexpected)


def _load_shard(fp: _FlatParam, shard: Shard, rank: int, into: Tensor | None = None, what: str | None = None) -> None:
    """Copy a saved piece that covers exactly this rank's range into the piece (or into ``into``, shaped as it);
    resharding goes through checkpoint.load."""
    start, n = rank * fp.size, fp.valid(rank)
    target = fp.piece if into is None else into
    if tuple(shard.global_shape) != fp.shape or shard.offset != start or shard.local.size != n:
        raise ValueError(
            f"{what or fp.name}: a Shard of elements [{shard.offset}, {shard.offset + shard.local.size}) of shape "
            f"{shard.global_shape} does not match this rank's piece [{start}, {start + n}) of shape {fp.shape}; "
            "load a checkpoint saved on another number of ranks with lucid_distributed.checkpoint.load into "
            "get_model_state_dict(model) (get_state_dict(model, optimizer) for its optimizer too)"
        )
    with lucid_core.no_grad():
        if n:
            target[:n] = shard.local.reshape(-1).to(target.device).astype(target.dtype)


def _base_load(module: Any) -> Callable[..., Any]:
    for cls in type(module).__mro__:
        if "load_state_dict" in cls.__dict__ and not issubclass(cls, FSDPModule):
            return cls.__dict__["load_state_dict"].__get__(module)
    raise TypeError(f"{type(module).__name__} has no load_state_dict")


def get_model_state_dict(model: Any, *, submodules: Any = None, options: StateDictOptions | None = None) -> dict:
    """The model's state: this rank's pieces as ``Shard``s (default) or whole tensors (``full_state_dict``).

    PyTorch's ``torch.distributed.checkpoint.state_dict.get_model_state_dict``; with ``full_state_dict``
    every rank gets the whole model (``cpu_offload`` moves it to "cpu"), a collective on every rank.
    """
    if submodules is not None:
        raise ValueError("get_model_state_dict: submodules is not supported (deprecated in PyTorch)")
    opts = options or StateDictOptions()
    module = _unwrap(model)
    if opts.full_state_dict:
        return _full_state_dict(module, False, opts.cpu_offload)
    sd = _sharded_state_dict(module, _base_state_dict(module)(None, "", True), False)
    if opts.cpu_offload:
        sd = {k: _to_cpu(v) for k, v in sd.items()}
    return sd


def set_model_state_dict(
    model: Any, model_state_dict: Mapping[str, Any], *, options: StateDictOptions | None = None
) -> Any:
    """Load a full or sharded state dict into a sharded model (PyTorch's ``set_model_state_dict``)."""
    opts = options or StateDictOptions()
    if opts.broadcast_from_rank0:
        raise ValueError("set_model_state_dict: broadcast_from_rank0 is not supported; load on every rank")
    return _load_state_dict(_unwrap(model), model_state_dict, opts.strict)


def _to_cpu(v: Any) -> Any:
    if isinstance(v, Shard):
        return Shard(v.local.to("cpu"), v.global_shape, v.offset)
    return v.to("cpu") if isinstance(v, Tensor) else v


def _unwrap(model: Any) -> Any:
    """The sharded module inside a ``FullyShardedDataParallel`` wrapper (or ``model`` itself)."""
    return model.module if getattr(type(model), "_is_fsdp_wrapper", False) else model


# -- gradient clipping over shards ------------------------------------------------------------------------------


def clip_grad_norm_(parameters: Any, max_norm: float, norm_type: float = 2.0) -> Tensor:
    """Clip sharded gradients by the norm of all ranks' pieces together; returns that norm (before clipping).

    ``parameters`` is a sharded module or its parameters. ``lucid_nn.utils.clip_grad_norm_`` would see only
    this rank's pieces; this is the collective version (what PyTorch's does on DTensors). Every rank calls it.
    """
    params = _unwrap(parameters).parameters() if hasattr(_unwrap(parameters), "parameters") else parameters
    grads = [p.grad for p in params if p.grad is not None]
    norm_type = float(norm_type)
    comm = _group._group(None)
    with lucid_core.no_grad():
        if norm_type == math.inf:
            local = max((float(lucid_core.max(lucid_core.abs(g)).item()) for g in grads if g.size), default=0.0)
            total = lucid_core.asarray([local], dtype=lucid_core.float64, device=comm.device)
            _group._all_reduce(total, ReduceOp.MAX, None, False)
            norm = total[0]
        else:
            local = sum((lucid_core.sum(lucid_core.abs(g) ** norm_type).item() for g in grads), 0.0)
            total = lucid_core.asarray([float(local)], dtype=lucid_core.float64, device=comm.device)
            _group._all_reduce(total, ReduceOp.SUM, None, False)
            norm = total[0] ** (1.0 / norm_type)
        coef = min(float(max_norm) / (float(norm.item()) + 1e-6), 1.0)
        for g in grads:
            g.mul_(coef)
    return norm
