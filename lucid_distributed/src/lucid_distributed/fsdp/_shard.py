"""Sharding one unit: flat padded pieces, the gather/reduce autograd node, the forward hooks, ``fully_shard``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import lucid_core
from lucid_core import Parameter, Tensor

from .. import _group
from .._communicator import ReduceOp
from ._options import CPUOffloadPolicy

# -- one sharded parameter ---------------------------------------------------------------------------------


class _FlatParam:
    """One original parameter: where it sits in the module tree, its shape and this rank's padded piece."""

    __slots__ = ("locations", "name", "numel", "piece", "shape")

    def __init__(self, name: str, locations: list[tuple[Any, str]], full: Tensor, rank: int, world: int) -> None:
        self.name = name
        self.locations = locations  # (module, attribute) pairs: a tied parameter sits in several
        self.shape = tuple(full.shape)
        self.numel = full.size
        size = -(-self.numel // world)  # ceil: every rank's piece has the same length
        with lucid_core.no_grad():
            flat = full.detach().reshape(-1)
            start, stop = min(rank * size, self.numel), min((rank + 1) * size, self.numel)
            part = flat[start:stop]
            if stop - start < size:
                pad = lucid_core.zeros((size - (stop - start),), dtype=full.dtype, device=full.device)
                part = lucid_core.concat([part, pad])
            piece = Parameter(part.clone(), requires_grad=full.requires_grad)
        self.piece = piece

    @property
    def size(self) -> int:
        """Elements in each rank's piece (padded)."""
        return self.piece.size

    def valid(self, rank: int) -> int:
        """How many of rank ``rank``'s piece's elements are the parameter's (the rest is padding)."""
        return max(0, min(self.size, self.numel - rank * self.size))

    def install(self, value: Tensor) -> None:
        for module, attr in self.locations:
            module._parameters[attr] = value


# -- memory bookkeeping --------------------------------------------------------------------------------------


class _Memory:
    """Bytes of full (gathered) parameters and full gradients alive now, and the most seen since a reset."""

    def __init__(self) -> None:
        self.current = 0
        self.peak = 0

    def add(self, nbytes: int) -> None:
        self.current += nbytes
        self.peak = max(self.peak, self.current)

    def reset_peak(self) -> None:
        self.peak = self.current


_memory = _Memory()


def memory_stats(reset_peak: bool = False) -> dict[str, int]:
    """This process's FSDP transient memory: bytes of gathered parameters and full gradients now and at peak.

    Not in PyTorch (whose allocator reports it): the bytes FSDP itself holds beyond the shards, counted as
    it gathers, frees and reduces. ``reset_peak`` starts a new peak (call it before a step to measure it).
    """
    out = {"unsharded_bytes": _memory.current, "peak_unsharded_bytes": _memory.peak}
    if reset_peak:
        _memory.reset_peak()
    return out


def _nbytes(t: Tensor) -> int:
    return t.size * t.dtype.itemsize


# -- gathering and reducing: one autograd node per unit call -----------------------------------------------------


def _free(t: Tensor) -> None:
    """Drop ``t``'s values but keep its shape and dtype (a zero-strided stand-in): a resharded full parameter."""
    with lucid_core.no_grad():
        t._data = lucid_core.broadcast_to(lucid_core.zeros((), dtype=t.dtype, device=t.device), t.shape)._data


def _gather_whole(params: list[_FlatParam], pieces: list[Tensor], world: int) -> list[Tensor]:
    """The whole tensors of which ``pieces`` (one per parameter, of its piece's length and one dtype) are this
    rank's pieces: one all-gather of every rank's, cut and reshaped to each parameter's shape."""
    if not params:
        return []
    total = sum(fp.size for fp in params)
    mine = lucid_core.concat([t.detach().reshape(-1) for t in pieces])
    out = lucid_core.empty((world * total,), dtype=mine.dtype, device=mine.device)
    _group._all_gather_into_tensor(out, mine, None, False, check=False)  # the callers' ranks agree on the layout
    fulls, off = [], 0
    for fp in params:
        # rank r's piece of this parameter sits at r * total + off: one copy joins them (none for one rank)
        parts = [out[r * total + off : r * total + off + fp.size] for r in range(world)]
        flat = parts[0] if world == 1 else lucid_core.concat(parts)
        fulls.append(flat[: fp.numel].reshape(fp.shape))
        off += fp.size
    return fulls


class _Unshard(lucid_core.Function):
    """Forward: all-gather a unit's pieces into its full parameters; backward: reduce-scatter their gradients."""

    @staticmethod
    def forward(ctx: Any, state: _FSDPState, *pieces: Tensor) -> tuple[Tensor, ...]:
        ctx.state = state
        return tuple(state._gather_full())

    @staticmethod
    def backward(ctx: Any, *grads: Tensor | None) -> tuple[Tensor | None, ...]:
        state: _FSDPState = ctx.state
        return (None, *state._reduce_grads(grads))


class _FSDPState:
    """One unit: its sharded parameters, its forward hooks and its share of the root's bookkeeping."""

    def __init__(self, module: Any, reshard_after_forward: bool, owned: set[int]) -> None:
        self.module = module
        self.reshard_after_forward = bool(reshard_after_forward)
        self.rank = _group.get_rank()
        self.world = _group.get_world_size()
        self.is_root: bool | None = None  # decided at the first forward (as FSDP2's lazy init)
        self.gradient_sync = True
        self.params = self._shard(owned)
        self._handles = [
            module.register_forward_pre_hook(self._pre_forward, prepend=True),
            module.register_forward_hook(self._post_forward, always_call=True),
        ]
        self._full: list[Tensor] | None = None  # while the unit's forward runs
        self._held: list[Tensor] = []  # full parameters of the last forward kept for backward (not resharded)
        self._unsynced: Tensor | None = None  # whole gradients accumulated under no_sync, reduced with the next

    def _shard(self, owned: set[int]) -> list[_FlatParam]:
        by_id: dict[int, _FlatParam] = {}
        params: list[_FlatParam] = []
        for mod_name, m in self.module.named_modules(remove_duplicate=False):
            for attr, p in list(m._parameters.items()):
                if p is None or id(p) in owned:
                    continue
                fp = by_id.get(id(p))
                if fp is None:
                    name = f"{mod_name}.{attr}" if mod_name else attr
                    fp = by_id[id(p)] = _FlatParam(name, [], p, self.rank, self.world)
                    params.append(fp)
                fp.locations.append((m, attr))
        for fp in params:
            fp.install(fp.piece)
            owned.add(id(fp.piece))
        dtypes = {(fp.piece.dtype, fp.piece.device) for fp in params}
        if len(dtypes) > 1:
            raise ValueError(
                f"fully_shard: the parameters of one unit must share dtype and device (one flat all-gather), got "
                f"{sorted(f'{d.name} on {v}' for d, v in dtypes)}; apply fully_shard to smaller submodules"
            )
        return params

    # -- collectives ------------------------------------------------------------------------------------
    def _gather_full(self) -> list[Tensor]:
        """The unit's full parameters: one all-gather of every rank's pieces, cut and reshaped."""
        fulls = _gather_whole(self.params, [fp.piece for fp in self.params], self.world)
        _memory.add(sum(_nbytes(f) for f in fulls))
        return fulls

    def _refill(self, fulls: list[Tensor]) -> None:
        """Gather again into full parameters freed after forward (their gradient is about to be needed)."""
        with lucid_core.no_grad():
            for t, new in zip(fulls, self._gather_full()):
                t._data = new._data

    def _reduce_grads(self, grads: tuple[Tensor | None, ...]) -> list[Tensor | None]:
        """The pieces' gradients: the full gradients averaged over ranks, rank ``r`` keeping piece ``r``."""
        p0 = self.params[0].piece
        flats = [None if g is None else g.reshape(-1) for g in grads]
        chunks = []  # rank r's pieces of every parameter, for r = 0 ... N-1: the reduce-scatter's layout
        for r in range(self.world):
            for fp, flat in zip(self.params, flats):
                start, stop = r * fp.size, min((r + 1) * fp.size, fp.numel)
                have = max(0, stop - start) if flat is not None else 0
                if have:
                    chunks.append(flat[start:stop])
                if have < fp.size:
                    chunks.append(lucid_core.zeros((fp.size - have,), dtype=p0.dtype, device=p0.device))
        send = lucid_core.concat(chunks)
        full_bytes = _nbytes(send)
        _memory.add(full_bytes)
        out = lucid_core.empty((sum(fp.size for fp in self.params),), dtype=send.dtype, device=send.device)
        if not self.gradient_sync:  # no_sync: keep this rank's whole gradient, reduce it with the next synced one
            if self._unsynced is None:
                self._unsynced = send  # its bytes stay counted until the synced backward reduces them
            else:
                self._unsynced = self._unsynced + send
                _memory.add(-full_bytes)
            self._release()
            return [None] * len(self.params)
        if self._unsynced is not None:
            send = send + self._unsynced
            _memory.add(-full_bytes)
            self._unsynced = None
        comm = _group._group(None)
        # every rank's units have the same pieces (checked at the first forward): no per-call check
        _group._collective(
            comm,
            "reduce_scatter_tensor",
            lambda: comm.reduce_scatter_tensor(out, send, ReduceOp.AVG),
            False,
            send,
            ReduceOp.AVG,
            check=False,
        )
        _memory.add(-full_bytes)
        self._release()
        res: list[Tensor | None] = []
        off = 0
        for fp in self.params:
            res.append(out[off : off + fp.size] if fp.piece.requires_grad else None)
            off += fp.size
        return res

    def _release(self) -> None:
        held = self._held
        self._held = []
        _memory.add(-sum(_nbytes(t) for t in held))

    # -- hooks --------------------------------------------------------------------------------------------
    def _pre_forward(self, module: Any, args: Any) -> None:
        if self.is_root is None:
            _lazy_init(self)
        if self._held:  # a forward whose backward never ran (evaluation, or a discarded graph)
            self._release()
        if not self.params:
            return
        fulls = _Unshard.apply(self, *[fp.piece for fp in self.params])
        fulls = list(fulls) if isinstance(fulls, tuple) else [fulls]
        node = fulls[0]._node
        if node is not None:
            # Backward runs nodes by decreasing generation, and a node made from leaves has generation 0: this
            # unit's reduce-scatter would wait for the end of backward, holding every unit's full gradients.
            # Ranked with the unit's input instead, it runs as soon as the unit's own backward is done (every
            # node that reads the full parameters is made after it, so still has a higher generation).
            node.generation = max((t._node.generation for t in _tensors(args) if t._node is not None), default=0)
        self._full = fulls
        for fp, t in zip(self.params, fulls):
            fp.install(t)

    def _post_forward(self, module: Any, args: Any, output: Any) -> None:
        fulls, self._full = self._full, None
        for fp in self.params:
            fp.install(fp.piece)
        if fulls is None:
            return
        needs_backward = any(t._requires_grad for t in fulls)
        keep = not self.reshard_after_forward or self.is_root
        if needs_backward and keep:
            self._held.extend(fulls)  # counted as alive until this unit's gradients are reduced
            return
        _memory.add(-sum(_nbytes(t) for t in fulls))
        if not needs_backward:
            return
        for t in fulls:
            _free(t)
        outs = [t for t in _tensors(output) if t._requires_grad]
        if not outs:
            return
        done = [False]

        def regather(grad: Tensor) -> None:
            if not done[0]:
                done[0] = True
                self._refill(fulls)
                self._held.extend(fulls)

        for t in outs:
            t.register_hook(regather)

    def remove(self) -> None:
        for h in self._handles:
            h.remove()


def _tensors(obj: Any) -> Iterator[Tensor]:
    """The tensors in a module's output (nested tuples, lists and dicts)."""
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _tensors(x)
    elif isinstance(obj, Mapping):
        for x in obj.values():
            yield from _tensors(x)


def _states(module: Any) -> list[_FSDPState]:
    """Every unit in ``module``'s tree, outermost first."""
    return [m._fsdp_state for m in module.modules() if isinstance(m, FSDPModule)]


def _lazy_init(state: _FSDPState) -> None:
    """At the first forward, the outermost unit called is the root; the units below it are not."""
    state.is_root = True
    states = _states(state.module)
    for s in states:
        if s is not state:
            s.is_root = False
    if _group.get_world_size() > 1:  # the collectives skip the per-call check: the ranks' units must agree
        mine = [(fp.name, fp.shape, fp.piece.dtype.name) for s in states for fp in s.params]
        everyone: list[Any] = [None] * _group.get_world_size()
        _group.all_gather_object(everyone, mine)
        for r, sig in enumerate(everyone):
            if sig != mine:
                diff = next((f"{a} vs {b}" for a, b in zip(mine, sig) if a != b), f"{len(mine)} vs {len(sig)} params")
                raise ValueError(
                    f"fully_shard: rank {_group.get_rank()} and rank {r} shard different models ({diff}); every "
                    "rank must build the same model and apply fully_shard to the same modules"
                )


# -- FSDP2: fully_shard ------------------------------------------------------------------------------------------


class FSDPModule:
    """Mixed into the class of every module ``fully_shard`` was applied to (PyTorch's ``FSDPModule``)."""

    _fsdp_state: _FSDPState

    def reshard(self) -> None:
        """Free full parameters kept after forward (PyTorch's ``reshard``): the pieces stay."""
        self._fsdp_state._release()

    def set_requires_gradient_sync(self, requires_gradient_sync: bool, *, recurse: bool = True) -> None:
        """With False, backward keeps this rank's own gradients (no reduce-scatter), to accumulate locally."""
        states = _states(self) if recurse else [self._fsdp_state]
        for s in states:
            s.gradient_sync = bool(requires_gradient_sync)

    def set_reshard_after_forward(self, reshard_after_forward: bool, recurse: bool = True) -> None:
        """Whether full parameters are freed after forward and gathered again for backward."""
        states = _states(self) if recurse else [self._fsdp_state]
        for s in states:
            s.reshard_after_forward = bool(reshard_after_forward)

    def state_dict(self, destination: Any = None, prefix: str = "", keep_vars: bool = False) -> dict[str, Any]:
        """The module's state with each sharded parameter as this rank's :class:`~lucid_distributed.checkpoint.Shard`.

        As FSDP2's sharded state dict (DTensors there); ``get_model_state_dict(..., full_state_dict=True)``
        gives whole tensors. ``lucid_distributed.checkpoint.save`` writes it; ``load`` reads it back in place.
        """
        from ._state_dict import _sharded_state_dict

        base = super().state_dict  # type: ignore[misc]
        if destination is not None:  # called by an outer module's state_dict: the outermost call converts
            return base(destination, prefix, True)
        return _sharded_state_dict(self, base(None, prefix, True), keep_vars)

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False) -> Any:
        """Load a sharded (``Shard`` values) or a full state dict into the pieces and buffers."""
        from ._state_dict import _load_state_dict

        if assign:
            raise ValueError("load_state_dict: assign=True is not supported on a fully_shard module")
        return _load_state_dict(self, state_dict, strict)


def fully_shard(module: Any, *, mesh: Any = None, reshard_after_forward: bool = True, **options: Any) -> Any:
    """Shard ``module``'s parameters across the ranks (PyTorch's FSDP2 ``fully_shard``); returns ``module``.

    Apply it to each layer first, then to the root: each call owns the parameters not owned by an inner
    call. ``module``'s class becomes a subclass of :class:`FSDPModule` too. Build the optimizer afterwards,
    on ``module.parameters()`` (the pieces). ``mp_policy`` (:class:`MixedPrecisionPolicy`) and
    ``offload_policy`` are accepted when they ask for nothing (no dtype, no CPU offload).
    """
    if mesh is not None:
        raise ValueError("fully_shard: Lucid has one process group per job; pass mesh=None (all ranks)")
    mp_policy = options.pop("mp_policy", None)
    if mp_policy is not None and (mp_policy.param_dtype is not None or mp_policy.reduce_dtype is not None):
        raise ValueError(
            "fully_shard: mp_policy with a param_dtype or reduce_dtype is not supported yet (gathering and reducing "
            "in low precision is not built, and MPI has no bfloat16 reduction); "
            "cast the model with .to(dtype) instead"
        )
    offload = options.pop("offload_policy", None)
    if isinstance(offload, CPUOffloadPolicy):
        raise ValueError("fully_shard: CPUOffloadPolicy is not supported; parameters stay on their device")
    if options:
        raise TypeError(f"fully_shard: unexpected arguments {sorted(options)}")
    if not hasattr(module, "_parameters") or not hasattr(module, "register_forward_pre_hook"):
        raise TypeError(f"fully_shard: expected an nn.Module, got {type(module).__name__}")
    if isinstance(module, FSDPModule):
        raise ValueError(f"fully_shard: {type(module).__name__} is already sharded")
    if not isinstance(reshard_after_forward, bool):
        raise TypeError("fully_shard: reshard_after_forward must be a bool (Lucid does not reshard to a smaller group)")
    owned = {id(fp.piece) for s in _states(module) for fp in s.params}
    state = _FSDPState(module, reshard_after_forward, owned)
    cls = type(module)
    module.__class__ = type(f"FSDP{cls.__name__}", (FSDPModule, cls), {})
    object.__setattr__(module, "_fsdp_state", state)
    return module
