"""Graph capture: ``compile(fn)`` records one eager run of ``fn`` as a plan and replays it on later calls.

A compiled function keeps a small cache of plans keyed by what its arguments look like (each tensor's
shape, dtype, device and ``requires_grad``; every other argument by value), the grad mode and the autocast
state. Calling it:

1. **first call with a new key**: ``fn`` runs eagerly while a recorder writes down every op, every backward
   node, every in-place write and random draw, every read of a value (:mod:`._capture`);
2. **second call**: ``fn`` runs eagerly and is recorded again; the two plans must agree op for op, constant
   for constant (a constant that changed came from Python state the plan cannot see, e.g. a counter: that
   key then stays eager, and :func:`explain` says where);
3. **later calls** replay the plan: a flat list of backend calls on native arrays, no Tensor objects or graph
   nodes in between, the optimizer's ``step``/``zero_grad`` and schedulers called as themselves.

The semantics are a tracing compiler's (``jax.jit``, ``mx.compile``): Python code inside ``fn`` runs when it
is traced, not on replay. Values read into Python (``loss.item()``, ``if t > 0``) become guards: the replay
reads them again and runs ``fn`` eagerly if they changed (``fullgraph=True`` refuses such reads instead,
naming the line). Module ``training`` flags and the shapes of the tensors it reads are guarded too.
``LUCID_COMPILE=0`` turns every compiled function back into its eager self.
"""

from __future__ import annotations

__all__ = [
    "CompileError", "CompiledFunction", "check", "compile", "disable", "explain", "guard_attr", "is_compiling",
    "opaque", "reset",
]  # fmt: skip

import functools
import os
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from .. import _autograd as ag
from .. import amp as _amp
from .._grad_mode import _mode
from .._tensor import Tensor, _fw_levels, _new_tensor
from ..func._pytree import flatten, unflatten
from ._capture import GraphBreakError, Recorder, Step, UncapturableError, _Installed
from ._plan import AbandonError, Plan


class CompileError(RuntimeError):
    """``fullgraph=True`` and the function does something a single plan cannot hold."""


#: plans kept per compiled function before it gives up and stays eager (torch's cache_size_limit)
CACHE_SIZE_LIMIT = 8
#: replays abandoned at a value guard (more often than replayed) after which a key runs eagerly
ABANDON_LIMIT = 4
#: how many times a key is traced again when two consecutive runs disagree, before it stays eager
STABILIZE_TRIES = 3


def _enabled() -> bool:
    return os.environ.get("LUCID_COMPILE", "1") not in ("0", "false", "False", "off")


def is_compiling() -> bool:
    """Whether a compiled function is being traced right now (``torch.compiler.is_compiling``)."""
    return ag._trace is not None


def opaque(fn: Callable[..., Any] | None = None, *, idempotent: bool = False) -> Any:
    """Mark ``fn`` as a call a plan makes as itself (an optimizer's ``step``, ``zero_grad``, a scheduler's ``step``).

    Its Python logic (counters, hyperparameters, lazily made state) then runs on every replay; the plan hands it
    the tensors' current values (gradients, parameters) and reads them again after it. Outside tracing it costs
    one global lookup. ``idempotent=True`` (``zero_grad``) says calling it twice in a row is calling it once: a
    replay abandoned after it (a guard failed later) may still run the function eagerly from the start."""
    if fn is None:
        return functools.partial(opaque, idempotent=idempotent)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        rec = ag._trace
        if rec is None:
            return fn(*args, **kwargs)
        return rec.opaque(fn, args, kwargs, idempotent)

    wrapper.__lucid_opaque__ = True  # type: ignore[attr-defined]
    wrapper.__lucid_idempotent__ = idempotent  # type: ignore[attr-defined]
    return wrapper


#: mark a function that only checks tensors' values (returns None or raises): replays call it again
check = ag.traced_check


def guard_attr(obj: Any, name: str) -> None:
    """While tracing, make the plan depend on ``obj.name`` (a Module's ``training``): a new value retraces."""
    rec = ag._trace
    if rec is not None and not rec.depth:
        rec.attrs.setdefault((id(obj), name), (obj, name, getattr(obj, name)))


def disable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` runs eagerly even when called from a compiled function (recorded as an opaque call)."""
    return opaque(fn)


def _signature(leaf: Any) -> Any:
    if isinstance(leaf, Tensor):
        return ("T", type(leaf), tuple(leaf._data.shape), leaf._data.dtype, leaf._device, leaf._requires_grad,
                leaf._node is None)  # fmt: skip
    if leaf is None or isinstance(leaf, (bool, int, float, complex, str, bytes)):
        return (type(leaf), leaf)
    try:
        hash(leaf)
    except TypeError:
        return ("id", id(leaf))
    return ("obj", type(leaf), id(leaf))


def _autocast_key() -> Any:
    if not _amp.active:
        return None
    st = _amp._state
    return (tuple(sorted(st.enabled.items())), tuple(sorted((k, v.name) for k, v in st.dtype.items())))


#: every compiled function alive, for :func:`reset`
_LIVE: weakref.WeakSet[CompiledFunction] = weakref.WeakSet()


class _Entry:
    """One cache entry: a plan on probation (``candidate``), a plan in use (``plan``), or eager for ``reason``."""

    __slots__ = ("abandoned", "candidate", "plan", "reason", "replays", "tries", "where")

    def __init__(self) -> None:
        self.candidate: Plan | None = None
        self.plan: Plan | None = None
        self.reason: str | None = None
        self.where: str | None = None
        self.tries = 0
        self.replays = 0
        self.abandoned = 0


class CompiledFunction:
    """What :func:`compile` returns: call it as ``fn``; ``explain()`` says what was captured."""

    def __init__(self, fn: Callable[..., Any], *, fullgraph: bool = False, backend: Any = None) -> None:
        self.fn = fn
        self.fullgraph = fullgraph
        self.backend = backend
        self.cache: dict[Any, list[_Entry]] = {}
        self.stats = {"traces": 0, "replays": 0, "eager": 0, "abandoned": 0}
        functools.update_wrapper(self, fn)
        _LIVE.add(self)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:  # a compiled method binds like a function
        return self if obj is None else functools.partial(self, obj)

    def reset(self) -> None:
        """Forget every plan (the next call traces again)."""
        self.cache.clear()

    # -- calling ------------------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not _enabled() or ag._trace is not None or _fw_levels or ag._vmap_dispatch is not None:
            return self.fn(*args, **kwargs)
        leaves, tree = flatten((args, kwargs))
        key = (_mode.enabled, _autocast_key(), tree_key(tree), tuple(_signature(x) for x in leaves))
        entries = self.cache.get(key)
        if entries is None:
            if sum(len(v) for v in self.cache.values()) >= CACHE_SIZE_LIMIT:
                self.stats["eager"] += 1
                return self.fn(*args, **kwargs)
            entries = self.cache[key] = [_Entry()]
        for e in entries:
            plan = e.plan
            if plan is not None and plan.valid():
                return self._replay(e, plan, leaves, args, kwargs)
        e = next((e for e in entries if e.plan is None), None)
        if e is None:  # every plan's guards failed: a new variant (a module switched to eval, ...)
            if len(entries) >= CACHE_SIZE_LIMIT:
                self.stats["eager"] += 1
                return self.fn(*args, **kwargs)
            e = _Entry()
            entries.append(e)
        if e.reason is not None:
            self.stats["eager"] += 1
            return self.fn(*args, **kwargs)
        return self._trace(e, leaves, args, kwargs)

    def _replay(self, e: _Entry, plan: Plan, leaves: list[Any], args: Any, kwargs: Any) -> Any:
        rng = _rng_state() if plan.guards and plan.random else None
        try:
            outs = plan.replay(leaves)
        except AbandonError as exc:
            if rng is not None:
                _set_rng_state(rng)
            if exc.after_call:
                raise RuntimeError(
                    f"lucid.compile: {exc} after an opaque call (optimizer step) had run, so the call cannot be "
                    "redone eagerly; call .reset() on the compiled function or compile a smaller function"
                ) from None
            self.stats["abandoned"] += 1
            e.abandoned += 1
            if e.abandoned >= ABANDON_LIMIT and e.abandoned > e.replays:  # a branch on values that keep changing
                e.plan = None
                e.reason = f"{exc}: the values it reads change between calls (a data-dependent branch)"
            return self.fn(*args, **kwargs)
        e.replays += 1
        self.stats["replays"] += 1
        return unflatten(outs, plan.out_tree)

    def _trace(self, e: _Entry, leaves: list[Any], args: Any, kwargs: Any) -> Any:
        self.stats["traces"] += 1
        rec = Recorder(self.fullgraph)
        for pos, leaf in enumerate(leaves):
            if isinstance(leaf, Tensor):
                rec.args.setdefault(id(leaf), pos)
                rec.keep.append(leaf)
        with _Installed(rec, _loaded_backends()):
            try:
                out = self.fn(*args, **kwargs)
            except GraphBreakError as exc:
                raise CompileError(str(exc)) from None
            try:
                rec.flush()
            except UncapturableError:
                pass
            plan = None
            if rec.reason is None:
                plan = _make_plan(rec, out, leaves)
        if rec.reason is not None:
            if self.fullgraph:
                raise CompileError(f"lucid.compile(fullgraph=True): {rec.reason} at {rec.where}")
            e.reason, e.where = rec.reason, rec.where
            return out
        assert plan is not None
        if e.candidate is not None and e.candidate.same_as(plan):
            e.plan, e.candidate = plan, None
        else:
            e.tries += 1
            if e.tries > STABILIZE_TRIES:
                e.reason = "two runs recorded different plans: " + (
                    e.candidate.difference(plan) if e.candidate else "?"
                )
                e.where = None
                warnings.warn(f"lucid.compile: {self.__name__} runs eagerly: {e.reason}", stacklevel=3)
                e.candidate = None
            else:
                e.candidate = plan
        return out

    # -- explaining ------------------------------------------------------------------------------------------
    def explain(self) -> str:
        """What each cached key holds: the plan's size, its guards, or why it runs eagerly."""
        lines = [f"compiled {getattr(self.fn, '__qualname__', self.fn)!s}: {self.stats}"]
        for i, entries in enumerate(self.cache.values()):
            for e in entries:
                if e.plan is not None:
                    lines.append(f"  [{i}] plan: {e.plan.summary()}")
                elif e.reason is not None:
                    lines.append(f"  [{i}] eager: {e.reason}" + (f" (at {e.where})" if e.where else ""))
                elif e.candidate is not None:
                    lines.append(f"  [{i}] recorded once, confirmed on the next call: {e.candidate.summary()}")
        return "\n".join(lines)


def tree_key(spec: Any) -> Any:
    """A hashable form of a pytree spec."""
    if spec is None:
        return None
    kind, aux, children = spec
    if kind == "dict":
        aux = tuple(aux)
    return (kind, aux, tuple(tree_key(c) for c in children))


def _make_plan(rec: Recorder, out: Any, args: list[Any]) -> Plan | None:
    leaves, tree = flatten(out)
    spec: list[Any] = []
    needs_graph = []
    for leaf in leaves:
        if isinstance(leaf, Tensor):
            try:
                s = rec.slot(leaf)
            except UncapturableError:
                return None
            graph = leaf._requires_grad and _mode.enabled and leaf._node is not None
            if graph:
                needs_graph.append(leaf)
            spec.append(("s", s, leaf._device, graph))
        else:
            spec.append(("c", leaf))
    if needs_graph:
        try:
            _record_backward(rec, needs_graph, args)
        except UncapturableError:
            return None
        if rec.reason is not None:
            return None
    return Plan(rec, spec, tree, list(rec.attrs.values()))


def _record_backward(rec: Recorder, outs: list[Tensor], args: list[Any]) -> None:
    """A forward whose outputs need a graph (AOTAutograd's idea): record, now, the backward from those outputs to
    the tensors that require grad it read (its *boundary*: arguments, parameters), with placeholder output
    gradients; a replay then gives its outputs one node that runs the recorded backward (``CompiledBackward``)."""
    boundary: list[Any] = []
    seen: set[int] = set()
    for pos, leaf in enumerate(args):
        if isinstance(leaf, Tensor) and leaf._requires_grad and id(leaf) not in seen and id(leaf._data) in rec.slot_of:
            seen.add(id(leaf))
            boundary.append((("arg", pos), leaf))
    for entry in rec.watched.values():
        t = entry[0]
        if t._requires_grad and id(t) not in seen:
            seen.add(id(t))
            boundary.append((("tensor", t), t))
    rec.aot = True
    rec.aot_split = len(rec.steps)
    seeds = []
    for t in outs:
        g = _new_tensor(t._device.xp.ones_like(t._data), t._device)
        s = rec._new_slot(g._data, t._device)
        rec.aot_seeds.append(s)
        rec.steps.append(Step("grad_in", out=s))
        seeds.append(g)
    try:
        grads = ag.run_backward(outs, seeds, True, False, capture=[b[1] for b in boundary])
    finally:
        rec.aot = False
    if rec.reason is not None:
        return
    assert grads is not None
    for g in grads:
        if g is None:
            rec.aot_grads.append(None)
            continue
        s = rec.slot_of.get(id(g._data))
        if s is None:
            rec.give_up("a gradient of the compiled forward that no recorded step made")
        rec.aot_grads.append(s)
    rec.aot_inputs = [b[0] for b in boundary]


def _loaded_backends() -> list[Any]:
    from .._registry import _state

    return [b for b in _state.backends.values() if b.loaded]


def _rng_state() -> Any:
    from .._registry import get_rng_state

    return get_rng_state()


def _set_rng_state(state: Any) -> None:
    from .._registry import set_rng_state

    set_rng_state(state)


def compile(  # noqa: A001
    model: Callable[..., Any] | None = None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: Any = None,
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    disable: bool = False,
) -> Any:
    """Compile ``model`` (a function or a Module) into a :class:`CompiledFunction`; usable as ``@compile``.

    ``dynamic=True`` (symbolic shapes) is not supported: each new shape is traced and cached, up to
    ``CACHE_SIZE_LIMIT`` plans. ``backend``, ``mode`` and ``options`` are accepted for PyTorch's signature;
    plans always run on the tensors' own backend.
    """
    if dynamic:
        raise NotImplementedError(
            "lucid.compile(dynamic=True): symbolic shapes are not supported; leave dynamic unset and each new "
            f"shape is traced and cached (up to {CACHE_SIZE_LIMIT} plans per function)"
        )
    if model is None:
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable)  # fmt: skip
    if disable:
        return model
    if not callable(model):
        raise TypeError(f"compile: expected a function or a Module, got {type(model).__name__}")
    return CompiledFunction(model, fullgraph=fullgraph, backend=backend)


def explain(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """Run ``fn(*args, **kwargs)`` once, recorded, and say what was captured, where values were read (the
    guards: a graph break in PyTorch's words) or why it cannot be captured. A :class:`CompiledFunction` (or a
    compiled module) already called reports its cache instead, without running."""
    target = getattr(fn, "_compiled_call", fn)
    if isinstance(target, CompiledFunction) and target.cache:
        return target.explain()
    cf = CompiledFunction(getattr(fn, "_call_impl", fn))
    cf(*args, **kwargs)
    return cf.explain()


def reset() -> None:
    """Forget the plans of every compiled function alive (``torch.compiler.reset``): each records again."""
    for cf in list(_LIVE):
        cf.reset()
