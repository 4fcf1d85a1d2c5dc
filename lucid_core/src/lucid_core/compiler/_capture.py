"""Capture: one eager run of a function, recorded as a plan of op calls on native arrays; and the plan's replay.

**Recording.** While a :class:`Recorder` is installed (``_autograd._trace``), every outermost op (a
:class:`~lucid_core.Function` applied from user code, not from inside another op) runs eagerly as usual and is
also written down: its class, which *slots* its tensor arguments came from, its constants and keywords, and
the slots its outputs went to. A slot is one native array of the run. The backward engine reports each node
it runs (the node is the op's own ``ctx``, so its backward is recorded against the op's slot) and each sum of
two gradients; the backend reports in-place writes into memory (``Backend.inplace``), random draws and reads
of values (``to_list``, ``to_numpy``). An array an op consumes that no recorded step made is classified once:

- an argument of the compiled function (its position in the flattened arguments),
- a tensor that existed before the call (a parameter, a buffer, a closure's tensor: read at replay, by
  identity), or the ``.grad`` of one,
- a tensor the function made from Python data (``zeros``, ``tensor([...])``, the seed of backward): a
  constant of the plan (copied at each replay if the plan writes into it).

Each tensor that existed before the call is *watched*: at the end of the run, and before every opaque call
(an optimizer's ``step``, ``zero_grad``, a scheduler's ``step``: :func:`opaque`), the recorder compares its
data and ``.grad`` with what they were and records the rebinding as a write step.

**Replay** (:class:`Plan`) runs the steps as a flat list of closures over one list of arrays: each op's
``forward`` (a fresh ``ctx``, no Tensor, no graph node), each node's ``backward_raw`` on that ``ctx``, the sums,
the writes, the draws (the generator advances exactly as eagerly), and the opaque calls themselves. A read of
a value becomes a *value guard*: at replay the value is read again and compared; a different value abandons
the replay before anything outside it changed (the plan writes into copies of what it mutates when it holds
value guards), and the call runs eagerly instead.

What cannot be captured (a hook on an intermediate gradient, ``create_graph=True``, a post-accumulate hook,
a node from outside the run) makes the recorder give up: the run still finishes eagerly, the reason is kept,
and the function is called eagerly from then on (``explain`` shows why).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

from .. import _autograd as ag
from .. import _tensor as tmod
from .._tensor import Tensor

_new = object.__new__
_LUCID_PREFIXES = ("lucid_core", "lucid_nn", "lucid_optim", "lucid_data", "lucid_distributed", "lucid", "lucid_backend")


class UncapturableError(Exception):
    """Raised inside the recorder when the run does something a plan cannot replay (the run continues eagerly)."""


class GraphBreakError(Exception):
    """A read of a tensor's value under ``fullgraph=True``: a plan needs the value, so the graph would break."""


def user_line() -> str:
    """``file:line`` of the innermost frame outside Lucid's own packages (where a user's code did something)."""
    f = sys._getframe(1)
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        top = mod.split(".")[0]
        if not (top in _LUCID_PREFIXES or top.startswith("lucid_backend")):
            return f"{f.f_code.co_filename}:{f.f_lineno} ({f.f_code.co_name})"
        f = f.f_back
    return "<unknown>"


# -- the steps of a plan (symbolic: explain() prints them, Plan turns them into closures) ------------------


class Step:
    """One step of a plan; ``kind`` names it, the rest is kind-specific."""

    __slots__ = ("fields", "kind", "where")

    def __init__(self, kind: str, where: str = "", **fields: Any) -> None:
        self.kind = kind
        self.where = where
        self.fields = fields

    def __repr__(self) -> str:
        f = self.fields
        if self.kind == "op":
            return f"op {f['cls'].__name__} {f['args']} -> {f['outs']}"
        if self.kind == "backward":
            return f"backward {f['cls'].__name__} of op@{f['ctx']} {f['gys']} -> {f['gxs']}"
        return f"{self.kind} " + " ".join(f"{k}={v!r}" for k, v in f.items() if k not in ("fn", "obj"))


class Recorder:
    """Records one eager run (see the module docstring); ``reason`` is set when it had to give up."""

    def __init__(self, fullgraph: bool) -> None:
        self.fullgraph = fullgraph
        self.steps: list[Step] = []
        self.n = 0  # slots used
        self.slot_of: dict[int, int] = {}  # id(native array) -> slot
        self.keep: list[Any] = []  # every array and tensor seen, alive until the end (ids stay unique)
        self.devices: dict[int, Any] = {}  # slot -> device
        self.ctx_slot: dict[int, int] = {}  # id(ctx) -> slot of the ctx
        self.op_of_ctx: dict[int, Step] = {}
        self.thread = threading.get_ident()
        self._depth = 0  # >0 while inside a recorded unit (an op's forward or backward, an opaque call)
        self.born: set[int] = set()  # ids of tensors made during the run
        self.args: dict[int, int] = {}  # id(tensor) -> position among the flattened arguments
        self.watched: dict[int, list[Any]] = {}  # id(tensor) -> [tensor, data bound, grad data bound]
        self.consts: dict[int, Any] = {}  # slot -> the constant array (tensors made from Python data)
        self.mutated: set[int] = set()  # slots of roots written in place
        self.root: dict[int, int] = {}  # slot -> slot of the array it is a memory view of
        self.reads = 0
        self.reason: str | None = None
        self.where: str | None = None
        self.random_steps = 0
        self.attrs: dict[tuple[int, str], tuple[Any, str, Any]] = {}
        # a forward whose outputs need a graph: its backward is recorded after the run (record_backward)
        self.aot = False
        self.aot_split: int | None = None  # index of the first backward step
        self.aot_seeds: list[int] = []  # slots of the output gradients the backward function takes
        self.aot_grads: list[int | None] = []  # slots of the gradients it returns, one per boundary tensor
        self.aot_inputs: list[Any] = []  # the boundary tensors: ("arg", position) or ("tensor", t)

    @property
    def depth(self) -> int:
        """How deep inside a recorded unit the tracing thread is; other threads always count as inside one (their
        ops run eagerly and are never recorded: a loader thread's work is not the compiled function's)."""
        return self._depth if threading.get_ident() == self.thread else 1

    @depth.setter
    def depth(self, value: int) -> None:
        if threading.get_ident() == self.thread:
            self._depth = value

    # -- slots ------------------------------------------------------------------------------------
    def _new_slot(self, arr: Any, device: Any) -> int:
        s = self.n
        self.n += 1
        self.slot_of[id(arr)] = s
        self.keep.append(arr)
        self.devices[s] = device
        return s

    def give_up(self, reason: str) -> None:
        """Stop recording for ``reason`` (the first one is kept); under ``fullgraph`` raise it."""
        if self.reason is None:
            self.reason = reason
            self.where = user_line()
        raise UncapturableError(reason)

    def slot(self, t: Tensor) -> int:
        """The slot of ``t``'s array, classifying an array no step made (see the module docstring)."""
        arr = t._data
        s = self.slot_of.get(id(arr))
        if s is not None:
            return s
        self.keep.append(t)
        dev = t._device
        pos = self.args.get(id(t))
        if pos is not None:
            s = self._new_slot(arr, dev)
            self.steps.append(Step("arg", pos=pos, out=s))
            return s
        if id(t) in self.born:
            if t._view is not None:
                self.give_up("a view recomputed after a write was read again")
            s = self._new_slot(arr, dev)
            self.consts[s] = arr
            self.steps.append(Step("const", out=s))
            return s
        if t._box is not None and t._box.pinned is not None:
            self.give_up("a tensor in shared memory (share_memory_)")
        entry = self.watched.get(id(t))
        if entry is not None and entry[1] is not arr:
            self.give_up(f"a {t.dtype.name} tensor {t.shape} from outside was given values no recorded op made")
        owner = self._owner_of_grad(t)
        s = self._new_slot(arr, dev)
        if owner is not None:
            self.steps.append(Step("read_grad", obj=owner, out=s))
        else:
            if t._view is not None and not getattr(t._view, "alias", True):
                self.give_up("a view from outside the function that is a copy of its base")
            self.watch(t)
            self.steps.append(Step("read", obj=t, out=s, grad_none=t._grad is None,
                                   after_call=any(x.kind == "call" for x in self.steps)))  # fmt: skip
        return s

    def _owner_of_grad(self, g: Tensor) -> Tensor | None:
        for entry in self.watched.values():
            t = entry[0]
            if t._grad is g:
                return t
        return None

    def watch(self, t: Tensor) -> None:
        if id(t) not in self.watched:
            gd = t._grad
            self.watched[id(t)] = [t, t._data, None if gd is None else gd._data]

    def flush(self) -> None:
        """Record how watched tensors were rebound since the last flush (their data, their ``.grad``)."""
        for entry in self.watched.values():
            t, data, gdata = entry
            if t._data is not data:
                if t._view is not None:
                    self.give_up("a write through a view of a tensor from outside the function")
                s = self.slot_of.get(id(t._data))
                if s is None:
                    self.give_up(f"a {t.dtype.name} tensor {t.shape} from outside was given values no op made")
                self.steps.append(Step("set_data", obj=t, src=s))
                entry[1] = t._data
            g = t._grad
            now = None if g is None else g._data
            if now is not gdata:
                if now is None:
                    self.steps.append(Step("set_grad", obj=t, src=None))
                else:
                    s = self.slot_of.get(id(now))
                    if s is None:
                        self.give_up("a .grad was set to values no op made")
                    self.steps.append(Step("set_grad", obj=t, src=s, dev=g._device))
                entry[2] = now

    def rewatch(self) -> None:
        """After an opaque call: forget what watched tensors held (later uses read them again)."""
        for entry in self.watched.values():
            t = entry[0]
            self.slot_of.pop(id(entry[1]), None)
            if entry[2] is not None:
                self.slot_of.pop(id(entry[2]), None)
            entry[1] = t._data
            entry[2] = None if t._grad is None else t._grad._data
            self.slot_of.pop(id(entry[1]), None)
            if entry[2] is not None:
                self.slot_of.pop(id(entry[2]), None)

    def arg_spec(self, a: Any) -> Any:
        if isinstance(a, Tensor):
            if type(a) is not Tensor and hasattr(a, "_phys"):
                self.give_up("a vmap-batched tensor")
            return (self.slot(a), a._requires_grad, a._device)
        if isinstance(a, (list, tuple)):
            if any(isinstance(x, Tensor) for x in a):
                self.give_up("an op took a list of tensors as one argument")
            slots: list[int] = []
            template = self._template(a, slots)
            if slots:  # native arrays made in the run inside a constant (an index tensor, unwrapped): slots
                return _Templ(template, tuple(slots))
        elif _is_native(a) and id(a) in self.slot_of:
            return _Templ(_SlotRef(0), (self.slot_of[id(a)],))
        return _Const(a)

    def _template(self, a: Any, slots: list[int]) -> Any:
        if isinstance(a, (list, tuple)):
            items = [self._template(x, slots) for x in a]
            return type(a)(items) if type(a) in (list, tuple) else a
        if _is_native(a):
            s = self.slot_of.get(id(a))
            if s is not None:
                slots.append(s)
                return _SlotRef(len(slots) - 1)
        return a

    def index_key(self, native_key: Any, x: Tensor, key: Any) -> Any:
        """``ops.indexing._native_key``: index tensors get their slots before they are unwrapped into the key."""
        if not self.depth and self.reason is None:
            try:
                for k in key if isinstance(key, tuple) else (key,):
                    if isinstance(k, Tensor):
                        self.slot(k)
            except UncapturableError:
                pass
        return native_key(x, key)

    # -- what the engine and the backends report ---------------------------------------------------
    def apply(self, cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run op ``cls`` eagerly and record it (called by ``Function.apply`` at depth 0)."""
        if self.reason is not None:
            return self._eager(cls, args, kwargs)
        try:
            spec = tuple(self.arg_spec(a) for a in args)
        except UncapturableError:
            return self._eager(cls, args, kwargs)
        for v in kwargs.values():
            if isinstance(v, Tensor):
                self.reason = self.reason or f"{cls.__name__} took a tensor as a keyword"
                self.where = self.where or user_line()
                return self._eager(cls, args, kwargs)
        out = self._eager(cls, args, kwargs)
        outs = out if type(out) is tuple else (out,)
        oslots = []
        for t in outs:
            s = self._new_slot(t._data, t._device)
            v = t._view
            if v is not None and getattr(v, "alias", False):
                src = self.slot_of.get(id(v.base._data))
                if src is not None:
                    self.root[s] = self.root.get(src, src)
            oslots.append(s)
        node = outs[0]._node
        cslot = self.n
        self.n += 1
        step = Step("op", cls=cls, args=spec, kwargs=dict(kwargs), outs=tuple(oslots), tuple_out=type(out) is tuple,
                    ctx=cslot)  # fmt: skip
        if node is not None and all(t._node is node for t in outs):
            self.op_of_ctx[id(node)] = step
            self.keep.append(node)
        self.steps.append(step)
        return out

    def _eager(self, cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        self.depth += 1
        try:
            return cls.apply(*args, **kwargs)
        finally:
            self.depth -= 1

    def seed(self, g: Tensor, raw: bool) -> None:
        """The engine's seed gradient (``ones_like`` of the output, or the ``gradient=`` given): give it a slot."""
        if self.depth or self.reason is not None:
            return
        try:
            self.slot(g)
        except UncapturableError:
            pass

    def higher_order(self) -> None:
        """Backward with ``create_graph=True`` (or with first-order raw gradients switched off): not captured."""
        if self.reason is None:
            try:
                self.give_up("backward with create_graph=True (higher-order gradients)")
            except UncapturableError:
                pass

    def backward(self, node: Any, buf: list[Any], n_out: int) -> tuple[Any, ...]:
        """Run ``node``'s backward on native gradients (``buf``) and record it."""
        if self.depth:
            return node_backward(node, buf, n_out)
        if self.reason is None:
            try:
                op = self.op_of_ctx.get(id(node))
                if op is None:
                    if self.aot:  # the graph before the compiled call: its own backward runs, not this one
                        return (None,) * len(node.inputs)
                    self.give_up(f"backward through {type(node).__name__}, made outside the compiled function")
                if (ag._post_hooks or ag._leaf_hooks) and _hooked_leaf(node.inputs):
                    self.give_up("gradient hooks on leaves (register_hook / post-accumulate hooks, e.g. DDP)")
                if node._out_hooks is not None or node._retain:
                    self.give_up("a hook or retain_grad() on an intermediate tensor's gradient")
                gys = []
                for i in range(n_out):
                    g = buf[2 * i]
                    if g is None:
                        gys.append(None)
                        continue
                    s = self.slot_of.get(id(g))
                    if s is None:
                        if isinstance(g, Tensor):
                            self.give_up("a gradient reached a node as a Tensor (a hook or retain_grad)")
                        self.give_up("a gradient no recorded step made")
                    gys.append(s)
            except UncapturableError:
                pass
        self.depth += 1
        try:
            gxs = node_backward(node, buf, n_out)
        finally:
            self.depth -= 1
        if self.reason is None:
            tup = type(gxs) is tuple
            outs = []
            for g in gxs if tup else (gxs,):
                if g is None:
                    outs.append(None)
                else:
                    outs.append(self._new_slot(g, node.device))
            self.steps.append(Step("backward", cls=type(node), ctx=op.fields["ctx"], op=op, gys=tuple(gys),
                                   gxs=tuple(outs), tup=tup))  # fmt: skip
        return gxs

    def add(self, a: Any, b: Any) -> Any:
        """A sum of two native gradients in the engine."""
        out = a + b
        if self.reason is None and not self.depth and not isinstance(a, Tensor):
            sa, sb = self.slot_of.get(id(a)), self.slot_of.get(id(b))
            if sa is None or sb is None:
                try:
                    self.give_up("a gradient sum of arrays no recorded step made")
                except UncapturableError:
                    return out
            dev = self.devices[sa]
            if type(out) is not dev.array_type:
                out = dev.backend.canonical(out)
            s = self._new_slot(out, dev)
            self.steps.append(Step("add", a=sa, b=sb, out=s))
        return out

    def before_write(self, t: Tensor, other: Any) -> None:
        """A tensor's own memory is about to be written (``Tensor._write``): give it (and its operand) a slot."""
        if self.depth or self.reason is not None:
            return
        try:
            self.slot(t)
            if isinstance(other, Tensor):
                self.slot(other)
        except UncapturableError:
            pass

    def check(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A value check (``traced_check``): recorded as a call the replay makes again; its reads are not guards."""
        if self.reason is None:
            try:
                spec = tuple(self.arg_spec(a) for a in args)
                if any(isinstance(v, Tensor) for v in kwargs.values()):
                    self.give_up(f"{fn.__name__} took a tensor as a keyword")
                self.steps.append(Step("check", fn=fn, args=spec, kwargs=dict(kwargs)))
            except UncapturableError:
                pass
        self.depth += 1
        try:
            return fn(*args, **kwargs)
        finally:
            self.depth -= 1

    def view_put(self, put: Any, t: Tensor, data: Any) -> None:
        """A write of new values through view ``t`` (``_views.put``); a scatter into a new storage array is recorded."""
        if self.depth or self.reason is not None:
            return put(t, data)
        box = t._box
        try:
            base = self.slot(t._view.base) if t._view.base._data is box.data else self.slot_of.get(id(box.data))
            src = self.slot_of.get(id(data))
            if base is None or src is None:
                self.give_up("a write through a view of values no recorded op made")
        except UncapturableError:
            return put(t, data)
        old = box.data
        put(t, data)
        if box.data is not old:
            out = self._new_slot(box.data, t._device)
            self.mutated.add(self.root.get(base, base))
            v = t._view
            info = type(v)(None, v.chain, v.track, v.no_grad, v.alias, v.multi)  # the recipe, not the tensor
            self.steps.append(Step("scatter", info=info, device=t._device, base=base, src=src, out=out))

    def inplace(self, backend: Any, op: str, target: Any, other: Any, alpha: Any, into_view: bool) -> bool:
        """The backend's write into ``target``'s memory, recorded."""
        done = backend.__class__.inplace(backend, op, target, other, alpha, into_view=into_view)
        if done and not self.depth and self.reason is None:
            st = self.slot_of.get(id(target))
            so = self.slot_of.get(id(other)) if not isinstance(other, (int, float, complex)) else None
            if st is None or (so is None and not isinstance(other, (int, float, complex))):
                try:
                    self.give_up("an in-place write into an array no recorded step made")
                except UncapturableError:
                    return done
            self.mutated.add(self.root.get(st, st))
            self.steps.append(Step("inplace", op=op, target=st, other=other if so is None else None, src=so,
                                   alpha=alpha, into_view=into_view, backend=backend))  # fmt: skip
        return done

    def draw(self, backend: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A random draw from a backend's generator, recorded (replay draws again: the stream advances as eagerly)."""
        out = getattr(backend.__class__, name)(backend, *args, **kwargs)
        if not self.depth and self.reason is None and out is not None:
            device = kwargs.get("device")
            if device is None:
                device = next((a for a in args if a.__class__.__name__ == "Device"), None)
            self.random_steps += 1
            s = self._new_slot(out, device)
            self.steps.append(Step("draw", backend=backend, name=name, args=args, kwargs=kwargs, out=s))
        elif self.depth and out is not None:
            self.keep.append(out)
        return out

    def evaluate(self, backend: Any, arrays: tuple[Any, ...]) -> Any:
        """``lucid_core.eval`` inside the function (a lazy backend computes there): recorded, so replays compute."""
        out = backend.__class__.eval(backend, *arrays)
        if not self.depth and self.reason is None:
            try:
                if out is not None:
                    self.give_up(f"the {backend.name} backend's eval hands back new arrays (a lazy graph to rebind)")
                slots = [self.slot_of.get(id(a)) for a in arrays]
                if any(s is None for s in slots):
                    self.give_up("an eval of arrays no recorded step made")
                self.steps.append(Step("eval", backend=backend, srcs=tuple(slots)))
            except UncapturableError:
                pass
        return out

    def reseed(self, backend: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``manual_seed`` or a ``generator=`` draw inside the function: replayed draws would use the wrong stream."""
        if not self.depth and self.reason is None:
            try:
                self.give_up("the random state was set inside the function (manual_seed, or a draw with generator=)")
            except UncapturableError:
                pass
        return getattr(backend.__class__, name)(backend, *args, **kwargs)

    def read(self, backend: Any, how: str, array: Any) -> Any:
        """A read of values into Python (``item``, ``bool``, ``tolist``, ``numpy``): a value guard, or a break."""
        value = getattr(backend.__class__, how)(backend, array)
        if self.depth or self.reason is not None:
            return value
        where = user_line()
        if self.fullgraph:
            raise GraphBreakError(
                f"lucid.compile(fullgraph=True): {where} reads a tensor's value into Python (a data-dependent "
                "graph break); compute it with tensor ops (e.g. lucid.where) or drop fullgraph=True"
            )
        s = self.slot_of.get(id(array))
        if s is None:
            try:
                self.give_up("a value read from an array no recorded step made")
            except UncapturableError:
                return value
        self.reads += 1
        self.steps.append(Step("guard", where, how=how, src=s, value=_snapshot(value), backend=backend))
        return value

    def opaque(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], idempotent: bool = False
               ) -> Any:  # fmt: skip
        """An opaque call (``opaque``): flushed state before, the call itself recorded, watched state re-read after."""
        if self.depth or self.reason is not None:
            self.depth += 1
            try:
                return fn(*args, **kwargs)
            finally:
                self.depth -= 1
        try:
            self.flush()
            for a in (*args, *kwargs.values()):
                if isinstance(a, Tensor):
                    self.give_up(f"{getattr(fn, '__qualname__', fn)} took a tensor argument")
        except UncapturableError:
            self.depth += 1
            try:
                return fn(*args, **kwargs)
            finally:
                self.depth -= 1
        self.steps.append(Step("call", fn=fn, args=args, kwargs=kwargs, name=getattr(fn, "__qualname__", str(fn)),
                               idempotent=idempotent))  # fmt: skip
        self.depth += 1
        try:
            out = fn(*args, **kwargs)
        finally:
            self.depth -= 1
        if isinstance(out, Tensor) or (out is not None and not isinstance(out, (int, float, bool, str))):
            try:
                self.give_up(f"{getattr(fn, '__qualname__', fn)} returned a value a plan would have to replay")
            except UncapturableError:
                return out
        self.rewatch()
        return out


def _hooked_leaf(inputs: Any) -> bool:
    """Whether one of a node's inputs is a leaf with a gradient hook (``register_hook``, post-accumulate hooks)."""
    for x in inputs or ():
        if isinstance(x, Tensor) and x._node is None and x._requires_grad:
            for table in (ag._leaf_hooks, ag._post_hooks):
                entry = table.get(id(x))
                if entry is not None and entry[0]() is x and entry[1]:
                    return True
    return False


def _is_native(a: Any) -> bool:
    """Whether ``a`` is a backend's array (not a Tensor, not a Python value)."""
    return (
        not isinstance(a, (Tensor, int, float, complex, bool, str, type(None)))
        and hasattr(a, "shape")
        and hasattr(a, "dtype")
    )


class _SlotRef:
    """The i-th array of a template's slots."""

    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i

    def __repr__(self) -> str:
        return f"<slot {self.i}>"


class _Templ:
    """A constant argument holding arrays of the run (``_SlotRef`` where they go); ``fill`` rebuilds it."""

    __slots__ = ("slots", "template")

    def __init__(self, template: Any, slots: tuple[int, ...]) -> None:
        self.template = template
        self.slots = slots

    def fill(self, arrays: tuple[Any, ...]) -> Any:
        return _fill(self.template, arrays)

    def __repr__(self) -> str:
        return f"{self.template!r}@{self.slots}"


def _fill(t: Any, arrays: tuple[Any, ...]) -> Any:
    if type(t) is _SlotRef:
        return arrays[t.i]
    if type(t) in (list, tuple):
        return type(t)(_fill(x, arrays) for x in t)
    return t


class _Const:
    """A constant argument of an op (not a tensor)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


def _snapshot(value: Any) -> Any:
    copy = getattr(value, "copy", None)
    return copy() if callable(copy) and not isinstance(value, (int, float, complex, bool)) else value


def _const_key(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_const_key(x) for x in v))
    if isinstance(v, dict):
        return ("dict", tuple((n, _const_key(x)) for n, x in v.items()))
    if isinstance(v, _Templ):
        return ("templ", _const_key(v.template), v.slots)
    if type(v) is _SlotRef:
        return ("ref", v.i)
    if isinstance(v, slice):
        return ("slice", v.start, v.stop, v.step)
    if hasattr(v, "shape") and hasattr(v, "dtype"):  # a native array: its dtype, shape and bytes
        try:
            data = v.tobytes() if hasattr(v, "tobytes") else bytes(memoryview(v))
        except (TypeError, ValueError, BufferError):
            data = repr(v)
        return ("array", str(v.dtype), tuple(v.shape), data)
    try:
        hash(v)
        return v
    except TypeError:
        return repr(v)


def _same(a: Any, b: Any) -> bool:
    """Whether two values read from tensors are the same (lists, numbers, NumPy arrays: dtype, shape, bits)."""
    if type(a) is not type(b):
        return False
    if hasattr(a, "shape") and hasattr(a, "dtype"):
        return _const_key(a) == _const_key(b)
    if isinstance(a, float) and a != a:
        return b != b
    return a == b


# -- installation: the hooks the engine, the tensor and the backends call while recording -------------------


class _Installed:
    """Installs a recorder into the engine and the loaded backends for one run; uninstalls on exit."""

    def __init__(self, rec: Recorder, backends: list[Any]) -> None:
        self.rec = rec
        self.backends = backends
        self.saved: list[tuple[Any, str, Any]] = []

    def __enter__(self) -> Recorder:
        rec = self.rec
        if ag._trace is not None:
            raise RuntimeError("lucid.compile: a compiled function was called while another one is being traced")
        ag._trace = rec
        init = tmod._init_slots
        self.saved.append((tmod, "_init_slots", init))
        born, keep = rec.born, rec.keep

        def init_slots(t: Tensor, data: Any, device: Any) -> None:
            init(t, data, device)
            born.add(id(t))
            keep.append(t)

        tmod._init_slots = init_slots
        self.saved.append((tmod, "_write_hook", None))
        tmod._write_hook = rec.before_write
        from ..ops import indexing

        nk = indexing._native_key
        self.saved.append((indexing, "_native_key", nk))
        indexing._native_key = lambda x, key: rec.index_key(nk, x, key)
        views = tmod._VIEWS
        put = views.put
        self.saved.append((views, "put", put))
        views.put = lambda t, data: rec.view_put(put, t, data)
        from .. import _tensor_operators as tops

        self.saved.append((tops, "_init_slots", tops._init_slots))
        tops._init_slots = init_slots
        for b in self.backends:
            inst = b.__dict__
            if getattr(b.__class__, "inplace", None) is not None and "inplace" not in inst:
                self._patch(b, "inplace", lambda op, target, other, alpha=1, into_view=False, _b=b:
                            rec.inplace(_b, op, target, other, alpha, into_view))  # fmt: skip
            for name in _DRAWS:
                if hasattr(b.__class__, name) and name not in inst:
                    self._patch(b, name, lambda *a, _b=b, _n=name, **k: rec.draw(_b, _n, a, k))
            if "eval" not in inst:
                self._patch(b, "eval", lambda *arrays, _b=b: rec.evaluate(_b, arrays))
            for name in ("seed", "set_rng_state"):
                if name not in inst:
                    self._patch(b, name, lambda *a, _b=b, _n=name, **kw: rec.reseed(_b, _n, a, kw))
            for how in ("to_list", "to_numpy", "to_bytes"):
                if how not in inst:
                    self._patch(b, how, lambda array, _b=b, _h=how: rec.read(_b, _h, array))
        return rec

    def _patch(self, obj: Any, name: str, fn: Any) -> None:
        self.saved.append((obj, name, _ABSENT))  # an instance attribute over the class's method: deleted after
        setattr(obj, name, fn)

    def __exit__(self, *exc: object) -> None:
        ag._trace = None
        for obj, name, old in reversed(self.saved):
            if old is _ABSENT:
                try:
                    delattr(obj, name)
                except AttributeError:
                    pass
            else:
                setattr(obj, name, old)


_ABSENT = object()

_DRAWS = (
    "random_uniform", "random_normal", "random_integers", "random_uniform_range", "random_normal_scaled",
    "random_permutation", "random_multinomial",
)  # fmt: skip


def node_backward(node: Any, buf: list[Any], n_out: int) -> Any:
    """A node's gradients on native arrays, as the engine's first-order path computes them."""
    fn = node.backward_raw
    if fn is not None and node.device.context is None:
        gxs = fn(node, buf[0]) if n_out == 1 else fn(node, *buf[0::2])
        if gxs is NotImplemented:
            gxs = ag._backward_wrapped(node, buf, n_out)
        return gxs
    return ag._backward_raw(node, buf, n_out)
