"""A plan: the steps of one recorded run (:mod:`._capture`) generated into one Python function and replayed.

The function is straight-line code, one statement group per step, every native array a local variable::

    c7 = _new(K3); c7.device = K4; c7.xp = K5
    v8 = K6(c7, v2, v5)                       # Matmul.forward on the arrays, no Tensor, no node
    if type(v8) is not K7: v8 = K8(v8)        # NumPy's 0-d results become arrays, as the engine makes them
    ...
    g = _bw(c7, K9, (v2, v5), (v8,), (v20,))  # Matmul's backward_raw on the replayed ctx

so a replay costs each op's own ``forward`` (and ``backward_raw``) plus a few attribute stores: no argument
loops, no device checks, no graph, no version counters. Constants (classes, devices, Python values, arrays made
from Python data) are the function's globals ``K0, K1, ...``.
"""

from __future__ import annotations

import itertools
import re
import weakref
from typing import Any

from .. import _autograd as ag
from .._tensor import Tensor, _new_tensor
from ._capture import Recorder, Step, _Const, _const_key, _same, _Templ


class AbandonError(Exception):
    """A value guard failed during replay: the call must run eagerly (``after_call``: too late for that)."""

    after_call = False


class _ReplayState:
    __slots__ = ("args", "called", "copies")

    def __init__(self, args: list[Any]) -> None:
        self.args = args
        self.copies: dict[int, tuple[Tensor, Any]] = {}  # slot -> (tensor, the copy the plan writes into)
        self.called = False


def _abandon(message: str, state: _ReplayState) -> AbandonError:
    exc = AbandonError(message)
    exc.after_call = state.called
    return exc


def _write_back(state: _ReplayState) -> None:
    """Put the values of copies the plan wrote into back into their tensors' memory (or rebind them)."""
    for t, copy in state.copies.values():
        backend = t._device.backend
        write = getattr(backend.__class__, "inplace", None)
        if write is None or not write(backend, "copy", t._data, copy):
            t._set_data(copy)
    state.copies.clear()


def _copy_read(t: Tensor, slot: int, state: _ReplayState) -> Any:
    d = t._device.xp.asarray(t._data, copy=True)
    state.copies[slot] = (t, d)
    return d


def _read_grad(t: Tensor, state: _ReplayState) -> Any:
    g = t._grad
    if g is None:
        raise _abandon("a .grad the plan reads is None", state)
    return g._data


def _wrap(a: Any, device: Any, requires: bool) -> Tensor:
    t = _new_tensor(a, device)
    t._requires_grad = requires
    return t


def _copy_const(a: Any, device: Any) -> Any:
    return device.xp.asarray(a, copy=True)


_HELPERS = {
    "_new": object.__new__, "_ref": weakref.ref, "_bwt": ag._backward_wrapped, "_bwr": ag._backward_raw,
    "_wrap": _wrap, "_abandon": _abandon, "_write_back": _write_back, "_copy_read": _copy_read,
    "_read_grad": _read_grad, "_same": _same, "_new_tensor": _new_tensor, "_fot": ag._forward_on_tensors,
    "_copy_const": _copy_const,
}  # fmt: skip


class CompiledBackward(ag.Function):
    """The node a replayed forward gives the outputs that need a graph: its backward is the recorded one, run on the
    replay's saved arrays (each op's ``backward_raw`` on its replayed ``ctx``); gradients go to the boundary tensors
    (the arguments and parameters that require grad), which the engine accumulates as usual."""

    native = True
    differentiable = True

    @staticmethod
    def forward(ctx: Any, *args: Any) -> Any:  # pragma: no cover - made by a replay, never applied
        raise RuntimeError("CompiledBackward is made by a compiled function's replay, not applied")

    @staticmethod
    def backward_raw(ctx: Any, *gys: Any) -> Any:
        xp = ctx.xp
        filled = tuple(xp.zeros(shape, dtype=dtype) if g is None else g for g, (shape, dtype) in zip(gys, ctx.like))
        return ctx.plan._bwd(ctx.saved, filled, _ReplayState([]))

    @staticmethod
    def backward(ctx: Any, *gys: Any) -> Any:
        raise RuntimeError(
            "lucid.compile: a gradient of a gradient (create_graph=True) through a compiled function's output is not "
            "supported; call the function eagerly for higher-order gradients"
        )


def _attach(plan: Plan, inputs: tuple[Any, ...], outs: list[Tensor], saved: Any) -> None:
    """Give ``outs`` one :class:`CompiledBackward` node over ``inputs`` (as ``Function.apply`` gives its outputs)."""
    if not outs:
        return
    node = object.__new__(CompiledBackward)
    dev = outs[0]._device
    node.device, node.xp = dev, dev.xp
    node.inputs = inputs
    gen = 0
    boxed = False
    for x in inputs:
        n = x._node
        if n is not None and n.generation >= gen:
            gen = n.generation + 1
        if x._box is not None:
            boxed = True
    node.plan, node.saved = plan, saved
    node.like = [(tuple(t._data.shape), t._data.dtype) for t in outs]
    ag.link_outputs(node, inputs, outs, gen, boxed)


class Plan:
    """A recorded run as one generated function (see the module docstring); ``replay`` runs it."""

    def __init__(self, rec: Recorder, out_spec: Any, out_tree: Any, guard_attrs: list[tuple[Any, str, Any]]) -> None:
        self.steps = rec.steps
        self.out_spec = out_spec  # per output leaf: ("s", slot, device, requires_grad) or ("c", value)
        self.out_tree = out_tree
        self.guard_attrs = guard_attrs
        self.watched = [
            (e[0], tuple(e[0]._data.shape), e[0]._data.dtype, e[0]._requires_grad) for e in rec.watched.values()
        ]
        self.guards = [s for s in self.steps if s.kind == "guard"]
        self.random = rec.random_steps
        self.consts = dict(rec.consts)
        self.aot = rec.aot_split is not None  # a forward whose outputs need a graph: forward and backward functions
        self.aot_inputs = rec.aot_inputs
        self.source, self._fn, self._bwd = _generate(
            rec, out_spec, rec.mutated if self.guards else set(), rec.aot_split
        )
        self.backend_fn: Any = None  # a backend's compiled form of the pure plan (lucid_compile_plan), if any
        self._offer(rec, out_spec)

    def _offer(self, rec: Recorder, out_spec: Any) -> None:
        """Offer the plan, as a pure function, to the backends' ``lucid_compile_plan`` hook."""
        pure = _pure(rec, out_spec)
        if pure is None:
            return
        device, fn, inputs, outs = pure
        from .._registry import plugin_manager

        taken = plugin_manager.hook.lucid_compile_plan(backend=device.backend, pure=fn)
        if taken is None:
            return
        self.backend_fn = taken
        self.backend_name = device.backend.name
        self._pure_inputs = [
            (s.kind, s.fields.get("pos"), s.fields.get("obj"), s.fields.get("grad_none")) for s in inputs
        ]
        self._pure_outs = outs
        self._pure_writes = [s for s in rec.steps if s.kind in ("set_data", "set_grad")]
        self._grads = _grad_touched(rec.steps)

    def _replay_backend(self, flat_args: list[Any]) -> list[Any]:
        """Replay through the backend's compiled pure function: read the inputs, call it, write, wrap."""
        st = _ReplayState(flat_args)
        arrays = []
        for kind, pos, obj, grad_none in self._pure_inputs:
            if kind == "arg":
                arrays.append(flat_args[pos]._data)
            elif kind == "read":
                if id(obj) in self._grads and (obj._grad is None) is not grad_none:
                    raise _abandon("a .grad changed from what the plan expects", st)
                arrays.append(obj._data)
            else:
                arrays.append(_read_grad(obj, st))
        results = self.backend_fn(*arrays)
        by_slot = dict(zip(self._pure_outs, results))
        for w in self._pure_writes:
            f = w.fields
            if w.kind == "set_data":
                f["obj"]._set_data(by_slot[f["src"]])
            else:
                f["obj"]._grad = None if f["src"] is None else _new_tensor(by_slot[f["src"]], f["dev"])
        return [sp[1] if sp[0] == "c" else _new_tensor(by_slot[sp[1]], sp[2]) for sp in self.out_spec]

    def summary(self) -> str:
        kinds: dict[str, int] = {}
        for s in self.steps:
            kinds[s.kind] = kinds.get(s.kind, 0) + 1
        text = ", ".join(f"{n} {k}" for k, n in kinds.items())
        if self.backend_fn is not None:
            text += f"; run by the {self.backend_name} backend's compiler (lucid_compile_plan)"
        guards = "; ".join(f"value read at {g.where}" for g in self.guards)
        return text + (f"; guards: {guards}" if guards else "")

    def same_as(self, other: Plan) -> bool:
        """Whether two recorded runs made the same plan: the same steps on the same slots, the same constants."""
        return self.difference(other) is None

    def difference(self, other: Plan) -> str | None:
        """The first difference between two plans, in words (None when they agree)."""
        if len(self.steps) != len(other.steps):
            return f"{len(self.steps)} steps, then {len(other.steps)} (Python control flow changed between calls)"
        for i, (a, b) in enumerate(zip(self.steps, other.steps)):
            why = _step_difference(a, b, self.consts, other.consts, self.steps)
            if why is not None:
                return f"step {i} ({a!r}): {why}"
        if self._out_key() != other._out_key():
            return "the outputs differ (a Python value returned changed between calls)"
        return None

    def _out_key(self) -> Any:
        return [(s[0], s[1]) if s[0] == "s" else ("c", _const_key(s[1])) for s in self.out_spec]

    def valid(self) -> bool:
        """The guards on watched tensors (same shapes and dtypes) and on attributes read while tracing."""
        for t, shape, dtype, requires in self.watched:
            d = t._data
            if d.dtype != dtype or tuple(d.shape) != shape or t._requires_grad is not requires:
                return False
        for obj, name, value in self.guard_attrs:
            if getattr(obj, name, None) != value:
                return False
        return True

    def replay(self, flat_args: list[Any]) -> list[Any]:
        """Run the plan on the flattened arguments; the output leaves (with their graph: ``CompiledBackward``)."""
        if self.backend_fn is not None:
            return self._replay_backend(flat_args)
        if not self.aot:
            return self._fn(flat_args, _ReplayState(flat_args))
        outs, saved = self._fn(flat_args, _ReplayState(flat_args))
        inputs = tuple(flat_args[b[1]] if b[0] == "arg" else b[1] for b in self.aot_inputs)
        graph = [t for t, sp in zip(outs, self.out_spec) if sp[0] == "s" and sp[3]]
        _attach(self, inputs, graph, saved)
        return outs


def _arg(a: Any, k: Any) -> str:
    """The expression of one op argument: a slot's local, a constant's global, a template filled with slots."""
    if isinstance(a, _Const):
        return k(a.value)
    if isinstance(a, _Templ):
        return f"{k(a.fill)}(({', '.join(f'v{s}' for s in a.slots)},))"
    return f"v{a[0]}"


_NAME = re.compile(r"\b[vc]\d+\b")


class _Namer:
    """The generated function's globals: each constant, class, device, bound method once, as ``K<n>``."""

    def __init__(self) -> None:
        self.g: dict[str, Any] = dict(_HELPERS)
        self.names: dict[Any, str] = {}
        self.counter = itertools.count()

    def __call__(self, value: Any) -> str:
        if hasattr(value, "__self__") and hasattr(value, "__func__"):  # a bound method: one name per (object, function)
            key: Any = (id(value.__self__), id(value.__func__))
        else:
            key = id(value)
        name = self.names.get(key)
        if name is None or (not isinstance(key, tuple) and self.g[name] is not value):
            name = self.names[key] = f"K{next(self.counter)}"
            self.g[name] = value
        return name


def _generate(rec: Recorder, out_spec: Any, copy_reads: set[int], split: int | None = None) -> tuple[str, Any, Any]:
    """The plan's source and function(s) (see the module docstring).

    With ``split`` (the index of the first backward step of a compiled forward whose outputs need a graph), two
    functions: ``forward(args, st) -> (outputs, saved)`` and ``backward(saved, gys, st) -> input gradients``."""
    k = _Namer()
    grads = _grad_touched(rec.steps)
    groups = [_emit(step, rec, k, copy_reads, grads) for step in rec.steps]
    outs = ", ".join(k(sp[1]) if sp[0] == "c" else f"_new_tensor(v{sp[1]}, {k(sp[2])})" for sp in out_spec)
    if split is None:
        body = _with_deletes(groups, [["    if st.copies: _write_back(st)", f"    return [{outs}]"]])
        source = "def replay(args, st):\n" + body
        return source, _compile(source, k.g, "replay"), None
    fwd, bwd = groups[:split], groups[split:]
    ret = ", ".join("None" if s is None else f"v{s}" for s in rec.aot_grads)
    bwd_tail = [[f"    return ({ret}{',' if ret else ''})"]]
    used_by_bwd = sorted({n for grp in bwd + bwd_tail for line in grp for n in _NAME.findall(line)} & _defined(fwd))
    saved = ", ".join(used_by_bwd)
    fsrc = "def forward(args, st):\n" + _with_deletes(
        fwd, [["    if st.copies: _write_back(st)", f"    return [{outs}], ({saved}{',' if saved else ''})"]]
    )
    unpack = [f"    {saved}{',' if len(used_by_bwd) == 1 else ''} = saved"] if saved else []
    gys = [f"    v{s} = gys[{i}]" for i, s in enumerate(rec.aot_seeds)]
    bsrc = "def backward(saved, gys, st):\n" + "\n".join(unpack + gys) + "\n" + _with_deletes(bwd, bwd_tail)
    source = fsrc + "\n" + bsrc
    return source, _compile(fsrc, k.g, "forward"), _compile(bsrc, k.g, "backward")


#: the step kinds a pure plan (offered to a backend's ``lucid_compile_plan`` hook) may have
_PURE = frozenset({"op", "backward", "add", "arg", "read", "read_grad", "const", "set_data", "set_grad"})


def _pure(rec: Recorder, out_spec: Any) -> tuple[Any, Any, list[Step], list[Any]] | None:
    """The plan as a pure function of native arrays, for a backend to compile: ``(backend, pure, inputs, outputs)``
    where ``inputs`` are the steps that read arrays (arguments, outside tensors, grads) and ``outputs`` the output
    leaves' slots then the written tensors' (None where the plan does not qualify: one device, no AOT backward,
    only the kinds in ``_PURE``, every write after the last op)."""
    if rec.aot_split is not None or not rec.steps or any(s.kind not in _PURE for s in rec.steps):
        return None
    devices = {id(d): d for d in rec.devices.values() if d is not None}
    if len(devices) != 1:
        return None
    (device,) = devices.values()
    kinds = [s.kind for s in rec.steps]
    last_compute = max((i for i, kd in enumerate(kinds) if kd in ("op", "backward", "add")), default=-1)
    if any(kd in ("set_data", "set_grad") and i < last_compute for i, kd in enumerate(kinds)):
        return None
    k = _Namer()
    inputs = [s for s in rec.steps if s.kind in ("arg", "read", "read_grad")]
    writes = [s for s in rec.steps if s.kind in ("set_data", "set_grad") and s.fields["src"] is not None]
    body = [_emit(s, rec, k, set(), set()) for s in rec.steps if s.kind in ("op", "backward", "add", "const")]
    outs = [sp[1] for sp in out_spec if sp[0] == "s"] + [s.fields["src"] for s in writes]
    params = ", ".join(f"v{s.fields['out']}" for s in inputs)
    ret = ", ".join(f"v{o}" for o in outs)
    source = f"def pure({params}):\n" + _with_deletes(body, [[f"    return ({ret}{',' if ret else ''})"]])
    try:
        fn = _compile(source, k.g, "pure")
    except SyntaxError:  # more than 255 arguments on an old Python, or the like: no offer
        return None
    return device, fn, inputs, outs


def _defined(groups: list[list[str]]) -> set[str]:
    """The locals the groups use (straight-line code: each is assigned before its first use)."""
    return {n for grp in groups for line in grp for n in _NAME.findall(line)}


def _with_deletes(groups: list[list[str]], tail: list[list[str]]) -> str:
    """The groups' lines, each local deleted after the group that uses it last (as eager frees an array once
    nothing holds it: peak memory and the allocator's reuse stay as eager's)."""
    allg = groups + tail
    last: dict[str, int] = {}
    for i, grp in enumerate(allg):
        for line in grp:
            for n in _NAME.findall(line):
                last[n] = i
    dying: dict[int, list[str]] = {}
    for n, i in last.items():
        if i < len(groups):
            dying.setdefault(i, []).append(n)
    lines: list[str] = []
    for i, grp in enumerate(allg):
        lines.extend(grp)
        if i in dying:
            lines.append("    del " + ", ".join(sorted(dying[i])))
    return "\n".join(lines) + "\n"


def _compile(source: str, g: dict[str, Any], name: str) -> Any:
    code = compile(source, f"<lucid.compile {name}>", "exec")
    exec(code, g)  # the source is generated from the recorded steps, never from user text
    return g[name]


def _grad_touched(steps: list[Step]) -> set[int]:
    """Ids of the outside tensors whose ``.grad`` the plan reads or sets (only those guard on it being None)."""
    return {id(s.fields["obj"]) for s in steps if s.kind in ("set_grad", "read_grad")}


def _emit(step: Step, rec: Recorder, k: Any, copy_reads: set[int], grads: set[int]) -> list[str]:
    """The lines of one step."""
    lines: list[str] = []
    emit = lines.append
    f = step.fields
    kind = step.kind
    if kind == "op":
        cls, c, outs = f["cls"], f["ctx"], f["outs"]
        spec = f["args"]
        in_dev = next((a[2] for a in spec if type(a) is tuple), rec.devices[outs[0]])
        out_dev = rec.devices[outs[0]]
        emit(f"    c{c} = _new({k(cls)}); c{c}.device = {k(in_dev)}; c{c}.xp = {k(in_dev.xp)}")
        kw = f", **{k(f['kwargs'])}" if f["kwargs"] else ""
        if cls.native:
            args = ", ".join(_arg(a, k) for a in spec)
            call = f"{k(cls.forward)}(c{c}{', ' if args else ''}{args}{kw})"
        else:
            call = f"_fot({k(cls)}, c{c}, ({_wrapped(spec, k)},), {k(f['kwargs'])})"
        indent = "    "
        if in_dev.context is not None:
            emit(f"    with {k(in_dev.context)}():")
            indent = "        "
        at, canon = k(out_dev.array_type), k(out_dev.backend.canonical)
        if f["tuple_out"]:
            emit(f"{indent}_o = {call}")
            for i, s in enumerate(outs):
                emit(f"{indent}v{s} = _o[{i}]")
        else:
            emit(f"{indent}v{outs[0]} = {call}")
        for s in outs:
            emit(f"    if type(v{s}) is not {at}: v{s} = {canon}(v{s})")
    elif kind == "backward":
        op = f["op"]
        cls, c = op.fields["cls"], f["ctx"]
        spec, oouts = op.fields["args"], op.fields["outs"]
        in_dev = next((a[2] for a in spec if type(a) is tuple), rec.devices[oouts[0]])
        emit(f"    c{c}.inputs = ({_wrapped(spec, k)},); c{c}._versions = None")
        ws = ", ".join(f"_new_tensor(v{s}, {k(rec.devices[s])})" for s in oouts)
        emit(f"    _w = ({ws},); c{c}.outputs = tuple(map(_ref, _w))")
        gys = [("None" if s is None else f"v{s}") for s in f["gys"]]
        n = len(oouts)
        buf = ", ".join(f"{g}, _w[{i}]" for i, g in enumerate(gys))
        if cls.backward_raw is not None and in_dev.context is None:
            emit(f"    _g = {k(cls.backward_raw)}(c{c}, {', '.join(gys)})")
            emit(f"    if _g is NotImplemented: _g = _bwt(c{c}, [{buf}], {n})")
        else:
            emit(f"    _g = _bwr(c{c}, [{buf}], {n})")
        emit("    if type(_g) is not tuple: _g = (_g,)")
        for i, s in enumerate(f["gxs"]):
            if s is not None:
                emit(f"    v{s} = _g[{i}]")
        emit("    del _w, _g")
    elif kind == "grad_in":
        pass  # the backward function's prologue binds it
    elif kind == "add":
        dev = rec.devices[f["out"]]
        o = f["out"]
        emit(f"    v{o} = v{f['a']} + v{f['b']}")
        emit(f"    if type(v{o}) is not {k(dev.array_type)}: v{o} = {k(dev.backend.canonical)}(v{o})")
    elif kind == "arg":
        emit(f"    v{f['out']} = args[{f['pos']}]._data")
    elif kind == "const":
        o = f["out"]
        if o in rec.mutated:
            emit(f"    v{o} = _copy_const({k(rec.consts[o])}, {k(rec.devices[o])})")
        else:
            emit(f"    v{o} = {k(rec.consts[o])}")
    elif kind == "read":
        t, o = k(f["obj"]), f["out"]
        if id(f["obj"]) in grads:
            want = "True" if f["grad_none"] else "False"
            why = "a .grad was set where the plan expects none" if f["grad_none"] else "a .grad the plan reads is None"
            emit(f"    if ({t}._grad is None) is not {want}: raise _abandon({why!r}, st)")
        emit(f"    v{o} = _copy_read({t}, {o}, st)" if o in copy_reads else f"    v{o} = {t}._data")
    elif kind == "read_grad":
        emit(f"    v{f['out']} = _read_grad({k(f['obj'])}, st)")
    elif kind == "set_data":
        emit("    if st.copies: _write_back(st)")
        emit(f"    {k(f['obj'])}._set_data(v{f['src']})")
    elif kind == "set_grad":
        t = k(f["obj"])
        if f["src"] is None:
            emit(f"    {t}._grad = None")
        else:
            emit(f"    {t}._grad = _new_tensor(v{f['src']}, {k(f['dev'])})")
    elif kind == "inplace":
        b = f["backend"]
        other = f"v{f['src']}" if f["src"] is not None else k(f["other"])
        emit(f"    if not {k(b.__class__.inplace)}({k(b)}, {f['op']!r}, v{f['target']}, {other}, {k(f['alpha'])}, "
             f"into_view={f['into_view']}): raise _abandon('an in-place write was refused', st)")  # fmt: skip
    elif kind == "check":
        wrapped = _wrapped(f["args"], k)
        emit(f"    {k(f['fn'])}({wrapped}{',' if wrapped else ''} **{k(f['kwargs'])})")
    elif kind == "eval":
        b = f["backend"]
        emit(f"    {k(b.__class__.eval)}({k(b)}, {', '.join(f'v{x}' for x in f['srcs'])})")
    elif kind == "scatter":
        emit(f"    v{f['out']} = {k(f['info'].scatter)}({k(f['device'])}, v{f['base']}, v{f['src']})")
    elif kind == "draw":
        b = f["backend"]
        emit(f"    v{f['out']} = {k(getattr(b.__class__, f['name']))}({k(b)}, *{k(f['args'])}, **{k(f['kwargs'])})")
    elif kind == "guard":
        b = f["backend"]
        msg = f"the value read at {step.where} changed"
        emit(f"    if not _same({k(getattr(b.__class__, f['how']))}({k(b)}, v{f['src']}), {k(f['value'])}): "
             f"raise _abandon({msg!r}, st)")  # fmt: skip
    elif kind == "call":
        emit("    if st.copies: _write_back(st)")
        if not f["idempotent"]:
            emit("    st.called = True")
        emit(f"    {k(f['fn'])}(*{k(f['args'])}, **{k(f['kwargs'])})")
    else:  # pragma: no cover - every kind the recorder makes is above
        raise AssertionError(kind)
    return lines


def _wrapped(spec: tuple[Any, ...], k: Any) -> str:
    """An op's arguments as its ``forward`` on tensors (and its backward, as ``ctx.inputs``) sees them."""
    parts = []
    for a in spec:
        if isinstance(a, (_Const, _Templ)):
            parts.append(_arg(a, k))
        elif a[1]:
            parts.append(f"_wrap(v{a[0]}, {k(a[2])}, True)")
        else:
            parts.append(f"_new_tensor(v{a[0]}, {k(a[2])})")
    return ", ".join(parts)


def _chain_key(info: Any) -> Any:
    """A view recipe by value: each step's type and fields."""
    out = []
    for st in info.chain:
        slots = [n for c in type(st).__mro__ for n in getattr(c, "__slots__", ())]
        out.append((type(st).__name__, tuple(_const_key(getattr(st, n, None)) for n in slots)))
    return tuple(out)


def _step_difference(
    a: Step, b: Step, ca: dict[int, Any], cb: dict[int, Any], ca_steps: list[Step] | None = None
) -> str | None:
    """Why step ``b`` of one run is not step ``a`` of the other, or None."""
    if a.kind != b.kind:
        return f"then {b!r}"
    fa, fb = a.fields, b.fields
    if a.kind == "op":
        if fa["cls"] is not fb["cls"]:
            return f"then {fb['cls'].__name__}"
        if fa["outs"] != fb["outs"]:
            return "outputs wired differently"
        for x, y in zip(fa["args"], fb["args"]):
            if type(x) is not type(y):
                return "a tensor argument became a constant"
            if isinstance(x, _Templ):
                if _const_key(x) != _const_key(y):
                    return "an index made of tensors changed"
            elif isinstance(x, _Const):
                if _const_key(x.value) != _const_key(y.value):
                    return (
                        f"a Python value changed between calls ({x.value!r}, then {y.value!r}); pass it as an argument"
                    )
            elif x[:2] != y[:2]:
                return "arguments wired differently"
        if {n: _const_key(v) for n, v in fa["kwargs"].items()} != {n: _const_key(v) for n, v in fb["kwargs"].items()}:
            return f"keywords changed between calls ({fa['kwargs']!r}, then {fb['kwargs']!r})"
        return None
    if a.kind == "const":
        if _const_key(ca.get(fa["out"])) != _const_key(cb.get(fb["out"])):
            return "a tensor made inside the function changed between calls (computed outside the recorded ops?)"
        return None
    if a.kind in ("read", "read_grad", "set_data", "set_grad"):
        if fa.get("obj") is not fb.get("obj") or fa.get("out") != fb.get("out") or fa.get("src") != fb.get("src"):
            return "a different tensor from outside"
        if fa.get("grad_none") != fb.get("grad_none") and id(fa.get("obj")) in _grad_touched(ca_steps):
            return "a .grad was None in one call and set in the other"
        return None
    if a.kind == "call":
        return None if fa["fn"] is fb["fn"] and fa["args"] == fb["args"] else "a different opaque call"
    if a.kind == "guard":
        return None if fa["src"] == fb["src"] and fa["how"] == fb["how"] else "a different value read"
    if a.kind == "draw":
        return None if fa["name"] == fb["name"] and repr(fa["args"]) == repr(fb["args"]) else "a different draw"
    if a.kind == "check":
        if fa["fn"] is not fb["fn"] or _const_key(fa["kwargs"]) != _const_key(fb["kwargs"]):
            return "a different check"
        for x, y in zip(fa["args"], fb["args"]):
            if type(x) is not type(y) or (type(x) is tuple and x[:2] != y[:2]):
                return "a check of different tensors"
            if isinstance(x, _Const) and _const_key(x.value) != _const_key(y.value):
                return f"a check's Python value changed ({x.value!r}, then {y.value!r})"
        return None
    if a.kind == "eval":
        return None if fa["srcs"] == fb["srcs"] else "a different eval"
    if a.kind == "scatter":
        same = all(fa[n] == fb[n] for n in ("base", "src", "out")) and _chain_key(fa["info"]) == _chain_key(fb["info"])
        return None if same else "a different write through a view"
    if a.kind == "backward":
        same = all(fa[n] == fb[n] for n in ("ctx", "gys", "gxs", "tup")) and fa["cls"] is fb["cls"]
        return None if same else "gradients wired differently"
    keys = [n for n in fa if n not in ("backend",)]
    if any(_const_key(fa[n]) != _const_key(fb.get(n)) for n in keys):
        return "different arguments"
    return None
