"""Optimizer state dicts of sharded models, keyed by parameter names: whole, or as each rank's ``Shard``s.

The optimizer is built on the pieces, so its per-element state (Adam's ``exp_avg``, SGD's
``momentum_buffer``) is shaped as a piece. Such state is described exactly as the piece is in the model's
state dict (the same :class:`~lucid_distributed.checkpoint.Shard`, or gathered to the parameter's whole
shape); scalar state (``step``) stays as it is. Loading cuts this rank's range out of a whole tensor or
takes a ``Shard``'s local part, and hands the optimizer an ordinary index-keyed ``load_state_dict``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import lucid_core
from lucid_core import Tensor

from .. import _group
from ..checkpoint import Shard
from ._options import StateDictOptions
from ._shard import _FlatParam, _gather_whole, _states
from ._state_dict import (
    _as_shard,
    _load_shard,
    _owners,
    _to_cpu,
    _unwrap,
    _write_piece,
    get_model_state_dict,
    set_model_state_dict,
)


def _optimizers(optimizers: Any, what: str) -> list[Any]:
    """``optimizers`` as a list: one optimizer or an iterable of them."""
    found = [optimizers] if hasattr(optimizers, "param_groups") else list(optimizers)
    for o in found:
        if not hasattr(o, "param_groups") or not hasattr(o, "load_state_dict"):
            raise TypeError(f"{what}: expected an optimizer (or several), got {type(o).__name__}")
    return found


def _flat(optim: Any) -> list[Tensor]:
    """The optimizer's parameters in ``state_dict()``'s index order."""
    return [p for g in optim.param_groups for p in g["params"]]


def _named(module: Any) -> dict[int, tuple[str, _FlatParam | None]]:
    """Every parameter (piece) of ``module`` by id: its name (a tied one: its first) and its _FlatParam, if sharded."""
    owners = _owners(module)
    return {id(p): (name, owners.get(id(p))) for name, p in module.named_parameters()}


def _names_of(named: dict[int, tuple[str, _FlatParam | None]], optim: Any, what: str) -> list[str]:
    out = []
    for p in _flat(optim):
        if id(p) not in named:
            raise ValueError(
                f"{what}: the optimizer holds a parameter of shape {tuple(p.shape)} that is not the model's; "
                "build the optimizer on model.parameters() after sharding the model"
            )
        out.append(named[id(p)][0])
    return out


def _holds_tensor(v: Any) -> bool:
    if isinstance(v, (Tensor, Shard)):
        return True
    if isinstance(v, Mapping):
        return any(_holds_tensor(x) for x in v.values())
    return isinstance(v, (list, tuple)) and any(_holds_tensor(x) for x in v)


def _per_element(fp: _FlatParam | None, v: Any, where: str) -> bool:
    """Whether state value ``v`` is shaped as the piece (described as the parameter is) or kept as it is."""
    if isinstance(v, Tensor):
        if fp is None or len(v.shape) == 0:
            return False
        if tuple(v.shape) == (fp.size,):
            return True
        raise ValueError(
            f"{where} is a tensor of shape {tuple(v.shape)}, neither a scalar nor shaped as the parameter's "
            f"piece ({fp.size},); only per-element state (and scalars) can be described as the parameter is"
        )
    if _holds_tensor(v):
        raise ValueError(f"{where} holds tensors inside a {type(v).__name__}; only tensors and plain values are kept")
    return False


# -- getting ------------------------------------------------------------------------------------------------------


def _init_state(optim: Any) -> None:
    """Give a fresh optimizer its state, as PyTorch does: one step with zero gradients at lr 0 (the parameters
    stay as they are), so that a template for ``checkpoint.load`` has every entry a trained one has."""
    if any(optim.state.values()) or any(p.grad is not None for p in _flat(optim)):
        return
    for p in _flat(optim):
        if p.requires_grad:
            p.grad = lucid_core.zeros_like(p.detach())
    lrs = [g["lr"] for g in optim.param_groups if "lr" in g]
    for g in optim.param_groups:
        if "lr" in g:
            g["lr"] = lucid_core.zeros_like(g["lr"]) if isinstance(g["lr"], Tensor) else 0.0
    optim.step()
    for g in optim.param_groups:
        if "lr" in g:
            g["lr"] = lrs.pop(0)
    optim.zero_grad(set_to_none=True)


def _fqn_state_dict(
    module: Any,
    optims: list[Any],
    *,
    full: bool,
    rank0_only: bool = False,
    cpu: bool = False,
    given: list[Mapping[str, Any]] | None = None,
    what: str = "get_optimizer_state_dict",
) -> dict[str, Any]:
    """``{"state": {fqn: state}, "param_groups": [{..., "params": [fqn, ...]}]}`` of ``optims`` (or of their
    ``given`` index-keyed state dicts); ``full`` gathers per-element state to whole tensors (a collective)."""
    named = _named(module)
    rank = _group.get_rank()
    state: dict[str, dict[str, Any]] = {}
    groups: list[dict[str, Any]] = []
    pending: list[tuple[dict[str, Any], str, _FlatParam, Tensor]] = []  # (where, key, ...) to gather when full
    for j, optim in enumerate(optims):
        local = optim.state_dict() if given is None else given[j]
        params, fqns = _flat(optim), _names_of(named, optim, what)
        for g in local["param_groups"]:
            groups.append({**{k: v for k, v in g.items() if k != "params"}, "params": [fqns[i] for i in g["params"]]})
        for i, st in sorted(local["state"].items(), key=lambda kv: int(kv[0])):
            if not 0 <= int(i) < len(params):
                raise ValueError(f"{what}: the optimizer's state dict has state for index {i}, which no group lists")
            fp = named[id(params[int(i)])][1]
            out = state[fqns[int(i)]] = {}
            for key, v in st.items():
                if not _per_element(fp, v, f"{what}: state {key!r} of {fqns[int(i)]!r}"):
                    out[key] = v
                elif full:
                    assert fp is not None
                    out[key] = None  # gathered below (the placeholder keeps the state's order)
                    pending.append((out, key, fp, v))
                else:
                    assert fp is not None
                    out[key] = _as_shard(fp, v, rank)
    if full:
        _gather_state(module, state, groups, pending, what)
        if rank0_only and rank != 0:
            return {}
    if cpu:
        state = {f: {k: _to_cpu(v) for k, v in st.items()} for f, st in state.items()}
    return {"state": state, "param_groups": groups}


def _signature(v: Any) -> Any:
    """What every rank must agree on about a state value: a tensor's dtype and shape, a plain value itself."""
    return (v.dtype.name, tuple(v.shape)) if isinstance(v, Tensor) else repr(v)


def _gather_state(
    module: Any,
    state: dict[str, dict[str, Any]],
    groups: list[dict[str, Any]],
    pending: list[tuple[dict[str, Any], str, _FlatParam, Tensor]],
    what: str,
) -> None:
    """Replace each pending per-element state by the whole tensor: one all-gather per unit and dtype."""
    world = _group.get_world_size()
    if world > 1:  # every rank must gather the same tensors in the same order (and agree on the rest)
        mine = [
            [(f, k, _signature(v)) for f, st in state.items() for k, v in st.items()],
            [(fp.name, k, t.dtype.name) for _, k, fp, t in pending],
            repr(groups),
        ]
        everyone: list[Any] = [None] * world
        _group.all_gather_object(everyone, mine)
        for r, sig in enumerate(everyone):
            if sig != mine:
                raise ValueError(
                    f"{what}: rank {_group.get_rank()} and rank {r} hold different optimizer state (other entries, "
                    "dtypes, values or param groups); every rank must step the same optimizer on the same model"
                )
    unit = {id(fp): u for u, s in enumerate(_states(module)) for fp in s.params}
    batches: dict[tuple[int, str], list[tuple[dict[str, Any], str, _FlatParam, Tensor]]] = {}
    for item in pending:
        batches.setdefault((unit[id(item[2])], item[3].dtype.name), []).append(item)
    with lucid_core.no_grad():
        for batch in batches.values():
            pieces = [t.to(fp.piece.device) for _, _, fp, t in batch]
            for (out, key, _, _), whole in zip(batch, _gather_whole([fp for _, _, fp, _ in batch], pieces, world)):
                out[key] = whole


def get_optimizer_state_dict(
    model: Any, optimizers: Any, *, submodules: Any = None, options: StateDictOptions | None = None
) -> dict[str, Any]:
    """The optimizers' state keyed by parameter names (FQNs): this rank's ``Shard``s, or whole (``full_state_dict``).

    PyTorch's ``torch.distributed.checkpoint.state_dict.get_optimizer_state_dict``: ``{"state": {fqn: {...}},
    "param_groups": [{..., "params": [fqn, ...]}]}``. State shaped as a parameter's piece becomes the
    ``Shard`` the model's state dict gives that parameter (or, with ``full_state_dict``, the whole tensor:
    a collective on every rank); scalar state (``step``) stays as it is. A fresh optimizer is given its
    state first (one step at lr 0 with zero gradients, as PyTorch), so the result can be a template for
    ``checkpoint.load``.
    """
    if submodules is not None:
        raise ValueError("get_optimizer_state_dict: submodules is not supported (deprecated in PyTorch)")
    opts = options or StateDictOptions()
    optims = _optimizers(optimizers, "get_optimizer_state_dict")
    for o in optims:
        _init_state(o)
    return _fqn_state_dict(_unwrap(model), optims, full=opts.full_state_dict, cpu=opts.cpu_offload)


# -- setting ------------------------------------------------------------------------------------------------------


def _local_value(fp: _FlatParam | None, p: Tensor, v: Any, where: str, rank: int) -> Any:
    """A saved state value (whole, a ``Shard`` or plain) as this rank's optimizer holds it for piece ``p``."""
    if fp is None:  # a parameter no unit shards: its state is whole
        if isinstance(v, Shard):
            if v.offset != 0 or v.local.size != p.size or tuple(v.global_shape) != tuple(p.shape):
                raise ValueError(f"{where}: a Shard of a parameter that is not sharded must hold all of it")
            return v.local.reshape(tuple(p.shape))
        return v
    if isinstance(v, Shard):
        into = lucid_core.zeros((fp.size,), dtype=v.local.dtype, device=fp.piece.device)
        _load_shard(fp, v, rank, into, where)
        return into
    if isinstance(v, Tensor) and tuple(v.shape) == fp.shape:
        into = lucid_core.zeros((fp.size,), dtype=v.dtype, device=fp.piece.device)
        _write_piece(fp, v, into, where)
        return into
    if isinstance(v, Tensor) and len(v.shape) != 0:
        raise ValueError(
            f"{where} has shape {tuple(v.shape)}; expected the parameter's shape {fp.shape} (whole), "
            "a Shard of it, or a scalar"
        )
    return v


def _to_local(module: Any, optims: list[Any], osd: Mapping[str, Any], what: str) -> list[dict[str, Any]]:
    """``osd`` (keyed by FQN, whole or sharded) as each optimizer's ``state_dict()`` would be on this rank.

    Everything is checked and converted before anything is loaded: a refused state dict changes nothing.
    """
    if not isinstance(osd, Mapping) or "state" not in osd or "param_groups" not in osd:
        raise ValueError(f"{what}: expected a dict with 'state' and 'param_groups' (get_optimizer_state_dict's)")
    named = _named(module)
    known = {name for name, _ in named.values()}
    names = [_names_of(named, o, what) for o in optims]
    optimized = {f for fs in names for f in fs}
    for fqn in osd["state"]:
        if fqn not in known:
            hint = " (it is keyed by index: Optimizer.state_dict()'s, not get_optimizer_state_dict's)"
            raise ValueError(
                f"{what}: the state dict has state for {fqn!r}, which is not a parameter of the model"
                f"{hint if isinstance(fqn, int) else ''}; its parameters are {sorted(known)}"
            )
        if fqn not in optimized:
            raise ValueError(f"{what}: the state dict has state for {fqn!r}, which none of the optimizers optimizes")
    rank = _group.get_rank()
    saved_groups = list(osd["param_groups"])
    out = []
    for optim, fqns in zip(optims, names):
        index = {f: i for i, f in enumerate(fqns)}
        groups, start = [], 0
        for gi, g in enumerate(optim.param_groups):
            mine = fqns[start : start + len(g["params"])]
            start += len(mine)
            match = next((s for s in saved_groups if mine and mine[0] in s["params"]), None)
            if match is None or sorted(match["params"]) != sorted(mine):
                raise ValueError(
                    f"{what}: the optimizer's param group {gi} holds {mine}, and no saved param group holds the "
                    f"same parameters (they hold {[list(s['params']) for s in saved_groups]})"
                )
            groups.append({**{k: v for k, v in match.items() if k != "params"}, "params": [index[f] for f in mine]})
        params = _flat(optim)
        state = {}
        for fqn, st in osd["state"].items():
            if fqn in index:
                i = index[fqn]
                fp = named[id(params[i])][1]
                state[i] = {k: _local_value(fp, params[i], v, f"{what}: state {k!r} of {fqn!r}", rank)
                            for k, v in st.items()}  # fmt: skip
        out.append({"state": state, "param_groups": groups})
    return out


def set_optimizer_state_dict(
    model: Any, optimizers: Any, optim_state_dict: Mapping[str, Any], *, options: StateDictOptions | None = None
) -> None:
    """Load an optimizer state dict keyed by FQNs (whole tensors or ``Shard``s) into the optimizers of this rank.

    PyTorch's ``set_optimizer_state_dict``: each rank cuts its piece's range out of whole state, or takes a
    ``Shard``'s local part (after ``checkpoint.load`` into a template from :func:`get_optimizer_state_dict`,
    the pieces it loaded, from a checkpoint saved on any number of ranks); hyperparameters come from the
    saved param groups. Unknown parameter names and wrong shapes raise before anything is loaded.
    """
    opts = options or StateDictOptions()
    if opts.broadcast_from_rank0:
        raise ValueError("set_optimizer_state_dict: broadcast_from_rank0 is not supported; load on every rank")
    optims = _optimizers(optimizers, "set_optimizer_state_dict")
    for optim, local in zip(optims, _to_local(_unwrap(model), optims, optim_state_dict, "set_optimizer_state_dict")):
        optim.load_state_dict(local)


def get_state_dict(
    model: Any, optimizers: Any, *, submodules: Any = None, options: StateDictOptions | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(get_model_state_dict(model), get_optimizer_state_dict(model, optimizers))`` (PyTorch's ``get_state_dict``)."""
    model_sd = get_model_state_dict(model, submodules=submodules, options=options)
    return model_sd, get_optimizer_state_dict(model, optimizers, submodules=submodules, options=options)


def set_state_dict(
    model: Any,
    optimizers: Any,
    *,
    model_state_dict: Mapping[str, Any],
    optim_state_dict: Mapping[str, Any],
    options: StateDictOptions | None = None,
) -> Any:
    """Load both into the sharded model and its optimizers (PyTorch's ``set_state_dict``); the model's missing and
    unexpected keys."""
    optims = _optimizers(optimizers, "set_state_dict")
    locals_ = _to_local(_unwrap(model), optims, optim_state_dict, "set_state_dict")  # checked before loading
    result = set_model_state_dict(model, model_state_dict, options=options)
    for optim, local in zip(optims, locals_):
        optim.load_state_dict(local)
    return result
