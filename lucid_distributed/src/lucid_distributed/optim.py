"""``ZeroRedundancyOptimizer``: optimizer state sharded across ranks (ZeRO stage 1), PyTorch's API.

Each rank keeps the optimizer state of its own partition of the parameters only, so the state per
rank is about 1/N of the whole. ``step()`` updates that partition with the wrapped optimizer (the
gradients are the full, averaged ones: DDP's, or any other data-parallel reduction) and then every
rank receives the parameters the others updated, so all ranks end each step with the same model.

The partition is PyTorch's: within each param group, parameters are sorted by size (largest first)
and each goes to the rank with the fewest elements so far (the sizes add up across groups).
"""

from __future__ import annotations

__all__ = ["ZeroRedundancyOptimizer"]

import copy
import os
from collections.abc import Iterable, Iterator
from typing import Any

import lucid_core
from lucid_core import Tensor

from . import _group, checkpoint


def _optimizer_base(optimizer_class: type) -> type | None:
    """The family's base class in ``optimizer_class``'s MRO (``lucid_optim.Optimizer``), found without importing it."""
    needed = ("add_param_group", "state_dict", "load_state_dict", "zero_grad", "step")
    for c in reversed(optimizer_class.__mro__):
        if c is not object and all(n in vars(c) for n in needed):
            return c
    return None


_WITH_BASE: dict[tuple[type, type], type] = {}


class ZeroRedundancyOptimizer:
    """Wrap ``optimizer_class`` so that each rank holds the state of its partition of ``params`` only.

    As ``torch.distributed.optim.ZeroRedundancyOptimizer``: ``param_groups`` lists every parameter
    (schedulers and ``zero_grad`` act on all of them), ``optim`` is this rank's local
    ``optimizer_class`` over its partition (built with ``**defaults``), and ``step()`` updates the
    partition, then broadcasts each rank's parameters from it (one flat buffer per rank with
    ``parameters_as_bucket_view=True``). The wrapper is an instance of the optimizer family's base
    class (``lucid_optim.Optimizer``, found from ``optimizer_class``), so learning-rate schedulers take it.

    Args:
        params: Parameters or param-group dicts, the same on every rank (same order, shapes, dtypes).
        optimizer_class: the optimizer to shard (``lucid_optim.SGD``, ``Adam``, ...).
        process_group: must be None (the default group).
        parameters_as_bucket_view: send each rank's updated parameters as one flat buffer (one
            broadcast per rank instead of one per parameter).
        overlap_with_ddp: not supported (raises); see :meth:`DistributedDataParallel.overlap_optimizer`.
        **defaults: hyperparameters for ``optimizer_class`` (``lr=0.1, momentum=0.9``).
    """

    def __new__(cls, params: Any, optimizer_class: type, *args: Any, **kwargs: Any) -> ZeroRedundancyOptimizer:
        base = _optimizer_base(optimizer_class) if isinstance(optimizer_class, type) else None
        if base is not None and not issubclass(cls, base):
            key = (cls, base)
            if key not in _WITH_BASE:
                _WITH_BASE[key] = type(cls.__name__, (cls, base), {"__module__": cls.__module__})
            cls = _WITH_BASE[key]
        return object.__new__(cls)

    def __init__(
        self,
        params: Iterable[Any],
        optimizer_class: type,
        process_group: Any = None,
        parameters_as_bucket_view: bool = False,
        overlap_with_ddp: bool = False,
        **defaults: Any,
    ) -> None:
        if overlap_with_ddp:
            raise NotImplementedError(
                "ZeroRedundancyOptimizer: overlap_with_ddp=True is not supported; use overlap_with_ddp=False (the "
                "step runs after backward), or DistributedDataParallel.overlap_optimizer(opt) with an unsharded "
                "optimizer to run the update inside backward"
            )
        if not isinstance(optimizer_class, type):
            raise TypeError(f"ZeroRedundancyOptimizer: optimizer_class must be a class, got {optimizer_class!r}")
        if process_group is not None:
            raise NotImplementedError("ZeroRedundancyOptimizer: only the default process group (None) is supported")
        self._initialized = False
        self._optim_class = optimizer_class
        self._optim_defaults = dict(defaults)
        self.process_group = process_group
        self.parameters_as_bucket_view = bool(parameters_as_bucket_view)
        self.rank, self.world_size = _group.get_rank(), _group.get_world_size()
        self._consolidated: dict[str, Any] | None = None
        self._base = _optimizer_base(type(self))
        if isinstance(params, Tensor):
            raise TypeError(
                "ZeroRedundancyOptimizer: params must be an iterable of Parameters or dicts; wrap it in a list"
            )
        if self._base is not None:
            self._base.__init__(self, params, dict(defaults))  # type: ignore[misc]  # the base adds the groups
        else:
            self.defaults = dict(defaults)
            self.param_groups: list[dict[str, Any]] = []
            groups = list(params)
            if not groups:
                raise ValueError("ZeroRedundancyOptimizer got an empty parameter list")
            for g in groups if isinstance(groups[0], dict) else [{"params": groups}]:
                self.add_param_group(g)
        self._check_same_parameters()
        self._initialized = True
        self._build_local_optimizer()

    # -- the partition ---------------------------------------------------------------------------------
    def _all_params(self) -> list[Tensor]:
        return [p for g in self.param_groups for p in g["params"]]

    def _partition_parameters(self) -> list[list[list[Tensor]]]:
        """``[rank][group]``: each rank's parameters of each group (PyTorch's greedy assignment by size)."""
        sizes = [0] * self.world_size
        out: list[list[list[Tensor]]] = [[] for _ in range(self.world_size)]
        for g in self.param_groups:
            per_rank: list[list[Tensor]] = [[] for _ in range(self.world_size)]
            for p in sorted(g["params"], key=lambda t: t.size, reverse=True):  # stable: ties keep their order
                r = sizes.index(min(sizes))
                per_rank[r].append(p)
                sizes[r] += p.size
            for r in range(self.world_size):
                out[r].append(per_rank[r])
        return out

    def _build_local_optimizer(self) -> None:
        parts = self._partition_parameters()
        self._partition = parts
        self._param_to_rank = {id(p): r for r in range(self.world_size) for ps in parts[r] for p in ps}
        self._index = {id(p): i for i, p in enumerate(self._all_params())}
        mine = parts[self.rank]
        self._local_group = {}  # global group index -> index in the local optimizer (groups this rank has params of)
        local_groups = []
        for gi, (g, ps) in enumerate(zip(self.param_groups, mine)):
            if ps:
                self._local_group[gi] = len(local_groups)
                local_groups.append({**{k: v for k, v in g.items() if k != "params"}, "params": ps})
        self.optim: Any = self._optim_class(local_groups, **self._optim_defaults) if local_groups else None
        self.state = self.optim.state if self.optim is not None else {}
        self._sync_param_groups(to_local=False)
        self._buckets = [[p for ps in parts[r] for p in ps] for r in range(self.world_size)]

    def _sync_param_groups(self, to_local: bool) -> None:
        """Copy every hyperparameter (not ``params``) between the exposed groups and the local optimizer's."""
        if self.optim is None:
            return
        for gi, li in self._local_group.items():
            src, dst = (self.param_groups[gi], self.optim.param_groups[li])
            if not to_local:
                src, dst = dst, src
            for k, v in src.items():
                if k != "params":
                    dst[k] = v

    def _check_same_parameters(self) -> None:
        """Every rank must pass the same parameters (count, order, shapes, dtypes), else each raises the same error."""
        if self.world_size == 1:
            return
        mine = [[(tuple(p.shape), p.dtype.name) for p in g["params"]] for g in self.param_groups]
        everyone: list[Any] = [None] * self.world_size
        _group.all_gather_object(everyone, mine)
        for r, sig in enumerate(everyone):
            if sig != everyone[0]:
                raise ValueError(
                    f"ZeroRedundancyOptimizer: rank {r} passed different parameters than rank 0 (groups of "
                    f"{[len(g) for g in sig]} vs {[len(g) for g in everyone[0]]} parameters, or other shapes or "
                    "dtypes); every rank must pass the same model's parameters in the same order"
                )

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a param group (on every rank alike); its parameters are partitioned like the others."""
        if self._base is not None:
            self._base.add_param_group(self, param_group)  # type: ignore[attr-defined]
        else:
            group = dict(param_group)
            group["params"] = list(group["params"]) if not isinstance(group["params"], Tensor) else [group["params"]]
            for k, v in self.defaults.items():
                group.setdefault(k, v)
            self.param_groups.append(group)
        if self._initialized:  # the earlier groups keep their assignment: the greedy walk is deterministic
            parts = self._partition_parameters()
            self._partition = parts
            self._param_to_rank = {id(p): r for r in range(self.world_size) for ps in parts[r] for p in ps}
            self._index = {id(p): i for i, p in enumerate(self._all_params())}
            self._buckets = [[p for ps in parts[r] for p in ps] for r in range(self.world_size)]
            mine, gi = parts[self.rank][-1], len(self.param_groups) - 1
            if mine:
                group = {**{k: v for k, v in self.param_groups[gi].items() if k != "params"}, "params": mine}
                if self.optim is None:
                    self.optim = self._optim_class([group], **self._optim_defaults)
                    self.state = self.optim.state
                    self._local_group[gi] = 0
                else:
                    self.optim.add_param_group(group)
                    self._local_group[gi] = len(self.optim.param_groups) - 1
                self._sync_param_groups(to_local=False)

    # -- the step -------------------------------------------------------------------------------------------
    def step(self, closure: Any = None, **kwargs: Any) -> Any:
        """Update this rank's partition with the local optimizer, then give every rank everyone's parameters."""
        self._sync_param_groups(to_local=True)  # a scheduler may have changed lr in the exposed groups
        if self.optim is not None:
            loss = self.optim.step(closure, **kwargs) if closure is not None else self.optim.step(**kwargs)
        else:
            loss = None
            if closure is not None:
                with lucid_core.enable_grad():
                    loss = closure()
        self._sync_params()
        self._sync_param_groups(to_local=False)
        return loss

    def _sync_params(self) -> None:
        """Broadcast each rank's updated parameters from it (all broadcasts in flight at once)."""
        if self.world_size == 1:
            return
        works: list[Any] = []
        flats: list[tuple[Tensor, list[Tensor]]] = []
        for r, params in enumerate(self._buckets):
            if not params:
                continue
            if self.parameters_as_bucket_view:
                with lucid_core.no_grad():
                    if r == self.rank:
                        flat = lucid_core.concat([p.detach().reshape(-1) for p in params])
                    else:
                        flat = lucid_core.empty((sum(p.size for p in params),), dtype=params[0].dtype,
                                                device=params[0].device)  # fmt: skip
                flats.append((flat, params))
                works.append(_group._broadcast(flat, r, self.process_group, True, check=False))
            else:
                # shapes agree by construction (checked once in __init__): the broadcasts skip the per-call check
                works.extend(_group._broadcast(p, r, self.process_group, True, check=False) for p in params)
        for w in works:
            w.wait()
        with lucid_core.no_grad():
            for flat, params in flats:
                if params and self._param_to_rank[id(params[0])] == self.rank:
                    continue
                off = 0
                for p in params:
                    p.copy_(flat[off : off + p.size].reshape(p.shape))
                    off += p.size

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's gradient (all of them, not only this rank's partition)."""
        for p in self._all_params():
            if p.grad is not None:
                p.grad = None if set_to_none else lucid_core.zeros_like(p.grad)

    # -- state dicts ----------------------------------------------------------------------------------------
    def _packed_groups(self) -> list[dict[str, Any]]:
        out, start = [], 0
        for g in self.param_groups:
            packed = {k: copy.deepcopy(v) for k, v in g.items() if k != "params"}
            packed["params"] = list(range(start, start + len(g["params"])))
            start += len(g["params"])
            out.append(packed)
        return out

    def _local_state(self) -> dict[int, dict[str, Any]]:
        """This rank's optimizer state, keyed by the global parameter index (as the full state dict is)."""
        if self.optim is None:
            return {}
        return {self._index[id(p)]: st for p, st in self.optim.state.items() if st}

    def consolidate_state_dict(self, to: int = 0) -> None:
        """Collect every rank's state on rank ``to`` (call it on every rank), for :meth:`state_dict` there."""
        _group._check_rank(to, _group._group(self.process_group), "consolidate_state_dict", "to")
        params = self._all_params()
        merged: dict[int, dict[str, Any]] = {}
        for r in range(self.world_size):
            if r == self.rank:
                tensors: list[Tensor] = []
                skeleton = {i: _split(st, tensors) for i, st in self._local_state().items()}
                specs = [(tuple(t.shape), t.dtype.name) for t in tensors]
            box: list[Any] = [(skeleton, specs) if r == self.rank else None]
            if self.world_size > 1:
                _group.broadcast_object_list(box, src=r)
            skel, spec_list = box[0]
            if r != self.rank:
                owners = [i for i, st in skel.items() for _ in range(_count(st))]
                tensors = [
                    lucid_core.empty(shape, dtype=getattr(lucid_core, dt), device=params[i].device)
                    for (shape, dt), i in zip(spec_list, owners)
                ]
            works = [_group._broadcast(t, r, self.process_group, True, check=False) for t in tensors]
            for w in works:
                w.wait()
            if self.rank == to:
                merged.update({i: _join(st, tensors) for i, st in skel.items()})
        self._consolidated = (
            {"state": dict(sorted(merged.items())), "param_groups": self._packed_groups()} if self.rank == to else None
        )

    def state_dict(self) -> dict[str, Any]:
        """The whole optimizer's state dict (PyTorch's layout, global indices), on the rank it was consolidated to."""
        if self._consolidated is None:
            raise RuntimeError(
                "Optimizer state has not been consolidated on this rank. Please call `consolidate_state_dict(to=...)` "
                "on all ranks beforehand"
            )
        out = self._consolidated
        out["param_groups"] = self._packed_groups()
        return out

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a whole optimizer's state dict (from :meth:`state_dict` or an unsharded optimizer): each rank
        keeps the state of its own partition."""
        if not isinstance(state_dict, dict) or "state" not in state_dict or "param_groups" not in state_dict:
            raise ValueError("load_state_dict expects a dict with 'state' and 'param_groups' (Optimizer.state_dict())")
        saved = state_dict["param_groups"]
        sizes = [len(g["params"]) for g in self.param_groups]
        if [len(g["params"]) for g in saved] != sizes:
            raise ValueError(
                f"ZeroRedundancyOptimizer.load_state_dict: the state dict's groups hold "
                f"{[len(g['params']) for g in saved]} parameters, this optimizer's {sizes}"
            )
        params = self._all_params()
        flat_ids = [i for g in saved for i in g["params"]]
        by_index = dict(zip(flat_ids, params))
        self._install_state({int(k): v for k, v in state_dict["state"].items()}, by_index)
        for g, s in zip(self.param_groups, saved):
            for k, v in s.items():
                if k != "params":
                    g[k] = copy.deepcopy(v)
        self._sync_param_groups(to_local=True)

    def _install_state(self, state: dict[int, dict[str, Any]], by_index: dict[int, Tensor]) -> None:
        if self.optim is None:
            return
        for idx, st in state.items():
            p = by_index.get(idx)
            if p is None:
                raise ValueError(f"the state dict has state for parameter index {idx}, which no group lists")
            if self._param_to_rank[id(p)] == self.rank:
                self.optim.state[p] = {k: _to_param(v, p) for k, v in st.items()}

    # -- sharded checkpoints ------------------------------------------------------------------------------------
    def sharded_state_dict(self) -> dict[str, Any]:
        """This rank's share of the state dict, for :func:`lucid_distributed.checkpoint.save` (no communication).

        ``{"state": {global index: state}, "param_groups": [...]}`` with the state of this rank's partition
        only: saved from every rank, the checkpoint holds the whole optimizer once, and
        :meth:`load_sharded_state_dict` resumes it on any number of ranks.
        """
        return {"state": self._local_state(), "param_groups": self._packed_groups()}

    def load_sharded_state_dict(self, checkpoint_id: str | os.PathLike[str], prefix: str = "") -> None:
        """Resume from a sharded checkpoint saved by any number of ranks: each rank reads its own partition's state.

        ``prefix``: where :meth:`sharded_state_dict` sits in the saved state dict (``"optim"`` for
        ``{"model": ..., "optim": opt.sharded_state_dict()}``; ``""`` when it was saved alone).
        """
        head = f"{prefix}." if prefix else ""
        meta = checkpoint.read_metadata(checkpoint_id)
        wanted = {str(self._index[id(p)]) for ps in self._partition[self.rank] for p in ps}
        saved = [*meta["tensors"], *meta["values"]]
        state_names = [n for n in saved if n.startswith(f"{head}state.") and n[len(head) + 6 :].split(".")[0] in wanted]
        group_names = [n for n in saved if n.startswith(f"{head}param_groups.")]
        tree: Any = checkpoint.load_full(checkpoint_id, names=state_names + group_names)
        for part in prefix.split(".") if prefix else ():
            tree = tree.get(part, {})
        groups = tree.get("param_groups", [])
        if len(groups) != len(self.param_groups):
            raise ValueError(
                f"load_sharded_state_dict: {os.fspath(checkpoint_id)} holds {len(groups)} param groups under "
                f"{prefix or 'the top'!r}, this optimizer has {len(self.param_groups)}"
            )
        self._install_state(dict(tree.get("state", {})), dict(enumerate(self._all_params())))
        for g, s in zip(self.param_groups, groups):
            for k, v in s.items():
                if k != "params":
                    g[k] = v
        self._sync_param_groups(to_local=True)

    def __repr__(self) -> str:
        return f"ZeroRedundancyOptimizer(rank {self.rank} of {self.world_size}, {self.optim!r})"


def _split(value: Any, tensors: list[Tensor]) -> Any:
    """``value`` with each tensor replaced by its position in ``tensors`` (appended), for sending as an object."""
    if isinstance(value, Tensor):
        with lucid_core.no_grad():
            tensors.append(lucid_core.clone(value.detach()))  # a copy: the state dict must not follow later steps
        return {"__tensor__": len(tensors) - 1}
    if isinstance(value, dict):
        return {k: _split(v, tensors) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_split(v, tensors) for v in value)
    return value


def _count(value: Any) -> int:
    if isinstance(value, dict):
        return 1 if "__tensor__" in value else sum(_count(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_count(v) for v in value)
    return 0


def _join(value: Any, tensors: list[Tensor]) -> Any:
    if isinstance(value, dict):
        if "__tensor__" in value:
            return tensors[value["__tensor__"]]
        return {k: _join(v, tensors) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_join(v, tensors) for v in value)
    return value


def _to_param(value: Any, p: Tensor) -> Any:
    """A copy of a state value on ``p``'s device (floating tensors also take its dtype)."""
    if isinstance(value, (list, tuple)):
        return type(value)(_to_param(v, p) for v in value)
    if not isinstance(value, Tensor):
        return copy.deepcopy(value)
    with lucid_core.no_grad():
        dtype = p.dtype if value.dtype.kind == "f" and p.dtype.kind == "f" else value.dtype
        return lucid_core.clone(value.detach().to(p.device, dtype))


def _iter_tensors(value: Any) -> Iterator[Tensor]:
    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _iter_tensors(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _iter_tensors(v)


def state_bytes(optimizer: Any) -> int:
    """Bytes of the tensors in ``optimizer.state`` (the local optimizer's, for a ZeroRedundancyOptimizer)."""
    state = optimizer.optim.state if isinstance(optimizer, ZeroRedundancyOptimizer) and optimizer.optim else None
    state = optimizer.state if state is None else state
    return sum(t.size * t.dtype.itemsize for st in state.values() for t in _iter_tensors(st))
