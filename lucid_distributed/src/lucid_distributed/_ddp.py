"""DistributedDataParallel: every rank trains a replica; gradients are averaged during backward.

As PyTorch's reducer does: parameters are grouped into buckets of about ``bucket_cap_mb`` in
reverse registration order (roughly the order backward produces their gradients). A
post-accumulate-grad hook on each parameter counts down its bucket; when a bucket's last gradient
is in, its gradients go into the bucket's flat buffer and the bucket's non-blocking all-reduce
starts (buckets start in the same order on every rank, as MPI requires), so communication overlaps
the rest of backward. The hook that completes the last bucket waits for all of them and hands the
averaged gradients to ``.grad``, still inside ``loss.backward()``: the training loop is unchanged
(``loss.backward(); opt.step()``).

With ``gradient_as_bucket_view=True`` (PyTorch's option) on a backend that can alias memory (NumPy
under MPI) each bucket keeps one persistent flat buffer: gradients are copied into it once, reduced
in place and handed back as views of it (no concatenation, no copy back). With
:meth:`DistributedDataParallel.overlap_optimizer` the optimizer's update also runs inside backward,
bucket by bucket as each bucket's reduction lands, so the last buckets' all-reduce overlaps the
update of the first ones; every parameter gets exactly the update ``opt.step()`` would give it.
"""

from __future__ import annotations

__all__ = ["DistributedDataParallel"]

import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import lucid_core
from lucid_core import Tensor

from . import _group
from ._communicator import FlatGradients, ReduceOp, Work


class _Bucket:
    """Parameters whose gradients travel together in one flat all-reduce."""

    __slots__ = ("buffer", "index", "params", "pending", "work")

    def __init__(self, index: int) -> None:
        self.index = index
        self.params: list[Tensor] = []
        self.pending = 0
        self.buffer: FlatGradients | None = None
        self.work: Work | None = None


class DistributedDataParallel:
    """Wrap ``module`` so that ``loss.backward()`` leaves every rank with the ranks' average gradient.

    At construction rank 0's parameters and buffers are broadcast to every rank (so ranks start
    equal) after checking that all ranks hold the same model (count, names, shapes, dtypes and
    ``requires_grad`` of parameters and buffers; every rank raises the same ``ValueError`` naming the
    first difference otherwise). That check is why DDP's own collectives skip the per-call one.
    Call the wrapper as the module; use :meth:`no_sync` to accumulate gradients locally
    over several micro-batches. With ``find_unused_parameters=True`` parameters that the forward did
    not use are found from the output's graph and do not hold up the reduction; parameters unused on
    every rank keep their ``.grad`` untouched. ``broadcast_buffers`` re-broadcasts rank 0's buffers
    (BatchNorm statistics) at every forward.

    ``gradient_as_bucket_view=True`` (PyTorch's option) makes ``.grad`` views of persistent bucket
    buffers where the backend allows (NumPy over MPI; MLX keeps copying): no concatenation and no
    copy back, but a gradient is overwritten by the next synchronized backward (clone it to keep it).
    ``overlap=False`` (not in PyTorch) starts the all-reduces only after the last gradient is in, to
    measure how much communication the overlap hides. :meth:`overlap_optimizer` moves an optimizer's
    update into backward, bucket by bucket (PyTorch's ``_register_fused_optim``).

    The wrapper is not an ``nn.Module`` instance (lucid_distributed depends on lucid_core only) but
    offers a Module's usual surface: ``module``, ``parameters``, ``named_parameters`` (``module.``
    prefixed, as PyTorch's), ``state_dict``, ``train``/``eval``, ``zero_grad``; any other attribute is
    looked up on the wrapped module.
    """

    def __init__(
        self,
        module: Any,
        device_ids: Any = None,
        output_device: Any = None,
        dim: int = 0,
        broadcast_buffers: bool = True,
        process_group: Any = None,
        bucket_cap_mb: float = 25.0,
        find_unused_parameters: bool = False,
        *,
        gradient_as_bucket_view: bool = False,
        overlap: bool = True,
    ) -> None:
        if dim != 0:
            raise ValueError("DistributedDataParallel: only dim=0 (batches split along the first axis) is supported")
        if not bucket_cap_mb > 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be positive, got {bucket_cap_mb!r}")
        self.module = module
        self.process_group = process_group
        self.broadcast_buffers = bool(broadcast_buffers)
        self.find_unused_parameters = bool(find_unused_parameters)
        self.bucket_cap_mb = float(bucket_cap_mb)
        self.overlap = bool(overlap)
        self.gradient_as_bucket_view = bool(gradient_as_bucket_view)
        self.world_size = _group.get_world_size(process_group)
        self._named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        self._check_same_model()
        self._sync_state()
        self.require_backward_grad_sync = True
        self._armed = False
        self._next = 0
        self._used: set[int] = set()
        self._poll = True  # Test() the buckets in flight from every hook: MPI progresses only inside MPI calls
        self._optimizer: Any = None
        self._groups: dict[int, dict[str, Any]] = {}  # id(p) -> its param group in the registered optimizer
        self._stepped: dict[int, tuple[Tensor, Tensor, int]] = {}  # id(p) -> (p, the grad it stepped with, version)
        self._buckets = self._make_buckets()
        comm = _group._group(process_group)
        for b in self._buckets:
            b.buffer = comm.flat_gradients(b.params, as_view=self.gradient_as_bucket_view)
        self._bucket_of = {id(p): b for b in self._buckets for p in b.params}
        self._handles = [p.register_post_accumulate_grad_hook(self._on_grad) for _, p in self._named]

    # -- construction ----------------------------------------------------------------------------
    def _signature(self, buffers_only: bool = False) -> list[tuple[str, str, tuple[int, ...], str, bool]]:
        sig = [] if buffers_only else [
            ("parameter", n, tuple(p.shape), p.dtype.name, bool(p.requires_grad))
            for n, p in self.module.named_parameters()
        ]  # fmt: skip
        sig += [("buffer", n, tuple(b.shape), b.dtype.name, False) for n, b in self.module.named_buffers()]
        return sig

    def _check_same_model(self, buffers_only: bool = False) -> None:
        """Every rank must wrap the same architecture; otherwise every rank raises the same error."""
        mine = self._signature(buffers_only)
        everyone: list[Any] = [None] * self.world_size
        _group.all_gather_object(everyone, mine, self.process_group)
        ref = everyone[0]
        differ = [r for r, sig in enumerate(everyone) if sig != ref]
        if not differ:
            return
        rank, sig = differ[0], everyone[differ[0]]
        detail = _first_difference(ref, sig, rank)
        others = f"; ranks {', '.join(map(str, differ[1:]))} also differ from rank 0" if differ[1:] else ""
        advice = (
            "a buffer changed on some rank after DistributedDataParallel was built, but rank 0's buffers are "
            "broadcast at every forward, so every rank's must keep their shapes and dtypes"
            if buffers_only
            else "every rank must build the same model (and set requires_grad alike) before wrapping it"
        )
        raise ValueError(f"DistributedDataParallel: the ranks hold different models ({detail}{others}); {advice}")

    def _check_same_buffers(self) -> None:
        """Before the per-forward buffer broadcasts: one checksum of the buffers' names, shapes and dtypes
        (a single small all-gather), and the full comparison naming the buffer only when they differ."""
        comm = _group._group(self.process_group)
        if not _group._state.check or comm.world_size == 1:
            return
        mine = zlib.crc32(repr(self._signature(buffers_only=True)).encode())
        if len(set(comm.gather_signatures((mine,), "DistributedDataParallel buffer check"))) > 1:
            self._check_same_model(buffers_only=True)

    def _sync_state(self) -> None:
        """Copy rank 0's parameters and buffers to every rank (all broadcasts in flight at once)."""
        tensors = [p for _, p in self.module.named_parameters()] + list(self.module.buffers())
        # shapes agree: _check_same_model compared them, so the broadcasts skip the per-call check
        works = [_group._broadcast(t, 0, self.process_group, True, check=False) for t in tensors]
        for w in works:
            assert w is not None
            w.wait()

    def _make_buckets(self) -> list[_Bucket]:
        cap = self.bucket_cap_mb * 1024 * 1024
        buckets: list[_Bucket] = []
        size = 0.0
        for _, p in reversed(self._named):
            nbytes = p.size * p.dtype.itemsize
            cur = buckets[-1] if buckets else None
            if (
                cur is None
                or size + nbytes > cap
                or cur.params[0].dtype is not p.dtype
                or cur.params[0].device != p.device
            ):
                cur = _Bucket(len(buckets))
                buckets.append(cur)
                size = 0.0
            cur.params.append(p)
            size += nbytes
        return buckets

    # -- the Module surface ------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Run the module; when gradients will be synchronized, prepare the buckets for this backward."""
        if self._armed:
            missing = [n for n, p in self._named if self._bucket_of[id(p)].pending and id(p) not in self._used]
            self._armed = False
            raise RuntimeError(
                "DistributedDataParallel: expected to have finished reduction in the prior iteration before "
                f"starting a new one; these parameters received no gradient: {missing[:10]}. Pass "
                "find_unused_parameters=True if the forward does not use every parameter, and call backward on "
                "the output of every forward"
            )
        buffers = list(self.module.buffers()) if self.broadcast_buffers and self.world_size > 1 else []
        if buffers:
            self._check_same_buffers()  # a buffer replaced after construction must not broadcast garbage
            for w in [_group._broadcast(b, 0, self.process_group, True, check=False) for b in buffers]:
                assert w is not None
                w.wait()
        out = self.module(*args, **kwargs)
        if self.require_backward_grad_sync and lucid_core.is_grad_enabled() and self._named:
            self._prepare(out)
        return out

    def _prepare(self, out: Any) -> None:
        self._armed = True
        self._next = 0
        self._used = set()
        for b in self._buckets:
            b.pending, b.work = len(b.params), None
        if self.find_unused_parameters:
            reached = _leaves_reached(out)
            unused = [p for _, p in self._named if id(p) not in reached]
            for p in unused:
                self._bucket_of[id(p)].pending -= 1
            self._launch_ready()

    @contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside this block forwards and backwards accumulate gradients locally, without communication."""
        prev = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = prev

    # -- the reducer ---------------------------------------------------------------------------------
    def _on_grad(self, p: Tensor) -> None:
        """A parameter's gradient is complete: count down its bucket, start what is ready, poll the rest."""
        if not self._armed:
            return
        self._used.add(id(p))
        self._bucket_of[id(p)].pending -= 1
        self._launch_ready()
        if self._poll:
            for b in self._buckets[: self._next]:
                if b.work is not None:
                    b.work.is_completed()  # MPI progresses non-blocking collectives only when polled

    def _launch_ready(self) -> None:
        buckets = self._buckets
        if not self.overlap and any(b.pending for b in buckets):
            return
        while self._next < len(buckets) and buckets[self._next].pending == 0:
            self._launch(buckets[self._next])
            self._next += 1
        if self._next == len(buckets):
            self._finish()

    def _launch(self, b: _Bucket) -> None:
        assert b.buffer is not None
        with lucid_core.no_grad():
            for i, p in enumerate(b.params):
                b.buffer.put(i, p.grad)
        # every rank's buckets have the same sizes (same model, checked at construction): no per-call check
        b.work = _group._all_reduce(b.buffer.flat(), ReduceOp.AVG, self.process_group, True, check=False)

    def _finish(self) -> None:
        """Wait for every bucket and put the averaged gradients into ``.grad`` (and step, if asked)."""
        self._armed = False
        used_everywhere = None
        if self.find_unused_parameters:
            flags = [1 if id(p) in self._used else 0 for _, p in self._named]
            used = lucid_core.asarray(flags, dtype=lucid_core.int32, device=_group._group(self.process_group).device)
            _group._all_reduce(used, ReduceOp.MAX, self.process_group, False, check=False)
            used_everywhere = {id(p) for (_, p), u in zip(self._named, used.tolist()) if u}
        self._stepped = {}
        if self._optimizer is not None:  # looked up every time: load_state_dict may replace the group dicts
            self._groups = {id(p): g for g in self._optimizer.param_groups for p in g["params"]}
        with lucid_core.no_grad():
            for k, b in enumerate(self._buckets):
                assert b.work is not None and b.buffer is not None
                b.work.wait()
                for p, g in zip(b.params, b.buffer.unpack()):
                    if used_everywhere is None or id(p) in used_everywhere:
                        p.grad = g
                b.work = None
                if self._optimizer is not None:
                    self._step_bucket(b, self._buckets[k + 1 :])

    # -- the optimizer's update inside backward ----------------------------------------------------------
    def overlap_optimizer(self, optimizer: Any) -> None:
        """Run ``optimizer``'s update inside each synchronized backward, bucket by bucket.

        When the last bucket's all-reduce has started, backward waits for the buckets in order and,
        as each one's averaged gradients land, updates that bucket's parameters with ``optimizer``
        (polling the buckets still in flight between parameters), so the all-reduce of the last
        buckets overlaps the update of the first ones. Each parameter gets exactly the update
        ``optimizer.step()`` would give it (the optimizer's own per-parameter ``apply_single``, in
        the same state), so results do not change. ``optimizer.step()`` stays in the loop: it then
        updates only the parameters DDP did not (none, usually), and raises if a gradient DDP
        stepped with was changed after backward (clipping or scaling between backward and step
        cannot work when the step already happened: clip inside a hook or do not use this).
        Backwards under :meth:`no_sync` do not step. Works with optimizers built on Lucid's
        ``Optimizer.step`` (SGD, Adam, ...); LBFGS (which needs the loss closure) is refused.
        """
        needed = ("param_groups", "state", "init_single", "apply_single", "step")
        if not all(hasattr(optimizer, a) for a in needed):
            raise TypeError(
                f"overlap_optimizer: expected a lucid_optim optimizer (with {', '.join(needed)}), got "
                f"{type(optimizer).__name__}"
            )
        if getattr(type(optimizer).step, "__qualname__", "") != "Optimizer.step":
            raise ValueError(
                f"overlap_optimizer: {type(optimizer).__name__} has its own step(), so its update cannot be "
                "split per parameter; call optimizer.step() after backward as usual"
            )
        if self._optimizer is not None:
            raise RuntimeError("overlap_optimizer: an optimizer is already registered with this DDP wrapper")
        self._optimizer = optimizer
        original = optimizer.step

        def step(closure: Any = None) -> Any:
            loss = None
            if closure is not None:
                with lucid_core.enable_grad():
                    loss = closure()
            stepped, self._stepped = self._stepped, {}
            changed = [p for p, g, v in stepped.values() if p.grad is not g or g._version != v]
            if changed:
                raise RuntimeError(
                    "DistributedDataParallel.overlap_optimizer: the optimizer already updated these parameters "
                    f"inside backward, but {len(changed)} of their gradients changed afterwards (clipping or "
                    "scaling between backward and step() has no effect on an update that already happened)"
                )
            held = [(p, p.grad) for p, _, _ in stepped.values()]
            for p, _ in held:
                p.grad = None  # the base step skips parameters without a gradient
            try:
                original()
            finally:
                for p, g in held:
                    p.grad = g
            return loss

        optimizer.step = step

    def _step_bucket(self, b: _Bucket, in_flight: list[_Bucket]) -> None:
        """Update ``b``'s parameters as ``optimizer.step()`` would, polling the later buckets between them."""
        opt = self._optimizer
        touched: list[Tensor] = []
        for p in b.params:
            grad, group = p.grad, self._groups.get(id(p))
            if grad is None or group is None:
                continue
            state = opt.state[p]
            if not state:
                opt.init_single(p, state, group)
            opt.apply_single(p, -grad if group.get("maximize", False) else grad, state, group)
            self._stepped[id(p)] = (p, grad, grad._version)
            touched.extend((p, grad))
            touched.extend(v for v in state.values() if isinstance(v, Tensor))
            if self._poll:
                for nb in in_flight:
                    if nb.work is not None:
                        nb.work.is_completed()
        if touched:
            lucid_core.eval(*touched)

    # -- delegation --------------------------------------------------------------------------------
    def parameters(self, recurse: bool = True) -> Iterator[Any]:
        """The wrapped module's parameters."""
        return self.module.parameters(recurse)

    def named_parameters(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple[str, Any]]:
        """The wrapped module's parameters, named ``module.<name>`` as in PyTorch."""
        for n, p in self.module.named_parameters(recurse=recurse):
            yield f"{prefix}module.{n}", p

    def buffers(self, recurse: bool = True) -> Iterator[Any]:
        """The wrapped module's buffers."""
        return self.module.buffers(recurse)

    def state_dict(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The wrapped module's state, keys prefixed ``module.`` (PyTorch's DDP checkpoints)."""
        return {f"module.{k}": v for k, v in self.module.state_dict(*args, **kwargs).items()}

    def load_state_dict(self, state_dict: Any, strict: bool = True) -> Any:
        """Load a state saved from a DDP wrapper (``module.`` keys) or from the bare module."""
        keys = {k.removeprefix("module."): v for k, v in state_dict.items()}
        return self.module.load_state_dict(keys, strict=strict)

    def train(self, mode: bool = True) -> DistributedDataParallel:
        """Set training mode on the wrapped module."""
        self.module.train(mode)
        return self

    def eval(self) -> DistributedDataParallel:
        """Set evaluation mode on the wrapped module."""
        self.module.eval()
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the wrapped module's gradients."""
        self.module.zero_grad(set_to_none)

    def __getattr__(self, name: str) -> Any:
        if name == "module":  # not yet set: during construction
            raise AttributeError(name)
        return getattr(self.module, name)

    def __repr__(self) -> str:
        return f"DistributedDataParallel({self.module!r})"


def _describe_entry(e: tuple[str, str, tuple[int, ...], str, bool], requires_grad: bool) -> str:
    text = f"{e[0]} {e[1]!r} of shape {e[2]} {e[3]}"
    return f"{text} with requires_grad={e[4]}" if requires_grad else text


def _first_difference(ref: list[Any], sig: list[Any], rank: int) -> str:
    """The first entry where rank ``rank``'s model differs from rank 0's, in words."""
    for a, b in zip(ref, sig):
        if a != b:
            rg = a[:4] == b[:4]  # only requires_grad differs: say so
            return f"first difference: rank 0 has {_describe_entry(a, rg)}, rank {rank} has {_describe_entry(b, rg)}"
    longer, who, other = (sig, rank, 0) if len(sig) > len(ref) else (ref, 0, rank)
    extra = longer[min(len(ref), len(sig))]
    return (
        f"rank 0 has {len(ref)} parameters and buffers, rank {rank} has {len(sig)}; first difference: rank {who} "
        f"has {_describe_entry(extra, False)} that rank {other} does not have"
    )


def _leaves_reached(out: Any) -> set[int]:
    """Ids of the leaf tensors that the graph behind ``out`` (tensors in any nesting) reaches."""
    stack: list[Any] = [out]
    seen: set[int] = set()
    leaves: set[int] = set()
    while stack:
        x = stack.pop()
        if isinstance(x, Tensor):
            fn = x.grad_fn
            if fn is None:
                leaves.add(id(x))
            elif id(fn) not in seen:
                seen.add(id(fn))
                stack.extend(a for a in (fn.inputs or ()) if isinstance(a, Tensor))
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
    return leaves
