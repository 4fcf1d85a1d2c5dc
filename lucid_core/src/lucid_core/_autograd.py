"""Define-by-run autograd: the Function node and the iterative backward engine (grad mode re-exported).

An op is a :class:`Function` whose ``forward`` computes the value and whose ``backward``,
written with Lucid ops, computes the gradient (so gradients of gradients come for free). A
node holds its inputs strongly and its outputs weakly, so a graph is freed as soon as nothing
refers to its result. Backward walks nodes by decreasing generation with a heap: no recursion,
each node once, however deep or branched the graph.

In-place writes are checked with a version counter (as in PyTorch): a node records the version
of each input that had been written or viewed before (``_versions``; None means all at 0), and
backward refuses a saved tensor whose version moved since, rather than computing a wrong number.
"""

from __future__ import annotations

__all__ = ["Function", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "grad", "backward"]

import functools
import heapq
import weakref
from collections.abc import Sequence
from typing import Any

from ._grad_mode import _mode, enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from ._tensor import Tensor, _fw_levels, _init_slots, _new_tensor
from .backend import Device

#: ``Function.saves_inputs`` of a binary op whose gradient for each input reads only the other input
CROSSWISE = "crosswise"


class Function:
    """A differentiable op: ``forward`` and ``backward`` side by side, used through ``apply``.

    Subclass it for a custom op::

        class Cube(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, gy):
                (x,) = ctx.saved_tensors
                return gy * 3 * x ** 2

        y = Cube.apply(x)

    ``forward`` receives Tensors (without graph) and returns a Tensor or a tuple of them;
    ``backward`` receives one gradient per output and returns one per input (None where an
    input needs none). Built-in ops set ``native = True`` and receive native arrays instead,
    which skips a wrapper per op; their ``backward`` is written in Lucid ops all the same.
    """

    __slots__ = (
        "__dict__", "__weakref__", "_retain", "_saved", "_versions", "device", "generation", "inputs", "outputs", "xp",
    )  # fmt: skip

    native: bool = False
    differentiable: bool = True
    #: whether ``backward`` reads its tensor inputs' values (built-in ops only; a custom Function
    #: declares what it needs with ``save_for_backward``). False for ops whose gradient depends on
    #: shapes alone (add, reshape, indexing): an in-place write to their inputs is then harmless.
    #: ``CROSSWISE`` for a binary op whose gradient for each input reads only the other input (multiply,
    #: matmul): a write to an input whose partner needs no gradient is then harmless, as in PyTorch.
    saves_inputs: bool | str = True
    #: versions of outputs that are not fresh (an in-place op's output is the written tensor)
    _out_versions: dict[int, int] | None = None
    #: a built-in op's first-order gradient on native arrays, ``backward_raw(ctx, *gys) -> grads``: the same
    #: numbers as ``backward`` (tests check every one bit for bit), without a Tensor or a graph node per
    #: gradient op. Backward uses it when no graph of the gradient is wanted (``create_graph=False``); it may
    #: return ``NotImplemented`` (complex gradients, rare shapes) to hand the node to ``backward``.
    backward_raw: Any = None
    #: forward mode: ``jvp(ctx, *tangents) -> tangent(s) of the outputs`` (one tangent or None per argument,
    #: written in Lucid ops); None with ``linear = False`` means the op has no rule (a tangent reaching it raises)
    jvp: Any = None
    #: a linear op's rule is the op itself applied to the tangents, its other arguments kept (_forward_ad)
    linear: bool = False

    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        """Compute the op's value(s) from its arguments; ``ctx`` carries what backward needs."""
        raise NotImplementedError("a Function subclass must define forward(ctx, *args)")

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        """One gradient per input (None where not needed), from one gradient per output."""
        raise NotImplementedError("a Function subclass must define backward(ctx, *grads)")

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep tensors for backward (read them back from ``ctx.saved_tensors``).

        Saved inputs and outputs come back connected to the graph, so a backward written
        with them is differentiable again (higher-order gradients of custom Functions).
        """
        self._saved = tensors

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        """What ``save_for_backward`` kept, connected to the graph."""
        saved = getattr(self, "_saved", ())
        if saved and self.inputs is not None:
            for s in saved:
                if isinstance(s, Tensor):
                    for i, a in enumerate(self.inputs):
                        if a is s:
                            _check_version(self, a, i)
                            break
        return tuple(self.output(s.index) if isinstance(s, _SavedOutput) else s for s in saved)

    @property
    def needs_input_grad(self) -> tuple[bool, ...]:
        """For each input, whether a gradient is wanted for it."""
        return tuple([isinstance(a, Tensor) and a._requires_grad for a in self.inputs])

    def output(self, index: int = 0) -> Tensor:
        """The ``index``-th output tensor (alive while backward runs through this node)."""
        t = self.outputs[index]()
        if t is None:
            raise RuntimeError(f"{type(self).__name__}: output {index} is no longer alive")
        b = t._box
        if b is not None:
            ov = self._out_versions
            expected = 0 if ov is None else ov.get(index, 0)
            if b.version != expected:
                raise _modified_error(self, t, f"output {index}", b.version, expected)
        return t

    @property
    def name(self) -> str:
        """The op's name (its class name)."""
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{type(self).__name__}Backward>"

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run the op on ``args`` (Tensors and constants) and record it for backward."""
        if _trace is not None and not _trace.depth:  # lucid_core.compiler is recording: it runs the op and notes it
            return _trace.apply(cls, args, kwargs)
        if _vmap_dispatch is not None:  # inside vmap: an op with a batched argument runs by its batching rule
            res = _vmap_dispatch(cls, args, kwargs)
            if res is not None:
                return _batched_result(cls, args, kwargs, res)
        # the hot path of every op: one pass over the arguments, no helper calls
        device = None
        requires = False
        boxed = False
        gen = 0
        raw = []
        for a in args:
            if isinstance(a, Tensor):
                if a._box is not None:
                    boxed = True
                d = a._device
                if d is not device:
                    if device is None:
                        device = d
                    else:
                        _mixed_devices(cls, device, d)
                if a._requires_grad:
                    requires = True
                    n = a._node
                    if n is not None and n.generation >= gen:
                        gen = n.generation + 1
                raw.append(a._data)
            else:
                raw.append(a)
        if device is None:
            raise TypeError(f"{cls.__name__}: expected at least one Tensor argument")
        ctx = _new(cls)
        ctx.device = device
        ctx.xp = device.xp
        if device.context is not None:
            with device.context():
                out = cls.forward(ctx, *raw, **kwargs) if cls.native else _forward_on_tensors(cls, ctx, args, kwargs)
        elif cls.native:
            out = cls.forward(ctx, *raw, **kwargs) if kwargs else cls.forward(ctx, *raw)
        else:
            out = _forward_on_tensors(cls, ctx, args, kwargs)
        device = ctx.device  # an op may place its result elsewhere (to_device)
        requires = requires and _mode.enabled and cls.differentiable
        if type(out) is tuple:
            outs = _wrap_outputs(ctx, args, out, device, requires, gen, boxed)
            if _fw_levels:
                _push_tangents(cls, ctx, args, kwargs, outs)
            return outs
        if type(out) is not device.array_type:
            out = device.backend.canonical(out)
        t = _new_tensor(out, device)
        if requires:
            ctx.inputs = args
            ctx.generation = gen
            ctx._retain = False
            ctx._versions = _versions(args) if boxed else None
            t._node = ctx
            t._requires_grad = True
            ctx.outputs = (weakref.ref(t),)
        if _fw_levels:
            _push_tangents(cls, ctx, args, kwargs, (t,))
        return t


_new = object.__new__

#: forward mode's tangent step, ``lucid_core._forward_ad.push_tangents`` (set when that module loads; called only
#: while a dual level is open, ``_fw_levels`` non-empty: the one check every op pays)
_push_tangents: Any = None

#: the recorder of ``lucid_core.compiler`` while a compiled function is traced (None otherwise: one more check
#: per op; the ops run as usual and the recorder notes them, the backward engine reports its nodes and sums)
_trace: Any = None


def traced_check(fn: Any) -> Any:
    """Mark ``fn`` as a check of tensors' values that returns nothing or raises (index bounds, probabilities).

    A compiled function's plan then calls it again on every replay, so the error is raised as eagerly, instead
    of recording the values it read as guards (a bound that moves with the data would abandon every replay)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        rec = _trace
        if rec is None or rec.depth:
            return fn(*args, **kwargs)
        return rec.check(fn, args, kwargs)

    return wrapper


#: ``lucid_core.func._vmap.dispatch`` while a vmap is active (None otherwise: the one check each op pays)
_vmap_dispatch: Any = None
#: the module ``lucid_core.func._vmap``, set when it loads (it sits above this module)
_vmap: Any = None


def _batched_result(cls: type[Function], args: tuple[Any, ...], kwargs: dict[str, Any], res: tuple[Any, bool]) -> Any:
    """Finish an op that vmap's batching rule computed: record its node on the wrappers ``apply`` received and
    returns (unless the rule composed it of other ops, whose nodes are the graph), then the forward-mode step.

    The node's backward runs on wrappers (Lucid ops, dispatched by the rules again), never ``backward_raw``,
    which reads native arrays."""
    out, composed = res
    if composed:
        return out
    outs = out if type(out) is tuple else (out,)
    device = None
    requires = False
    boxed = False
    gen = 0
    for a in args:
        if isinstance(a, Tensor):
            if device is None:
                device = a._device
            if a._box is not None:
                boxed = True
            if a._requires_grad:
                requires = True
                n = a._node
                if n is not None and n.generation >= gen:
                    gen = n.generation + 1
    ctx = _new(cls)
    ctx.device = outs[0]._device if device is None else device
    ctx.xp = ctx.device.xp
    if requires and _mode.enabled and cls.differentiable:
        ctx.backward_raw = None
        link_outputs(ctx, args, outs, gen, boxed)
    if _fw_levels:
        _push_tangents(cls, ctx, args, kwargs, outs)
    return out


def apply_unary(cls: type[Function], x: Tensor) -> Tensor:
    """``cls.apply(x)`` for a built-in (native) op of one Tensor: the same node and result, without packing
    ``*args`` or looping over them (the hot path of unary ops; tests compare it with ``apply``)."""
    device = x._device
    if device.context is not None or _vmap_dispatch is not None or _trace is not None:
        return cls.apply(x)
    ctx = _new(cls)
    ctx.device = device
    ctx.xp = device.xp
    out = cls.forward(ctx, x._data)  # one array: the unary ops have one output
    if type(out) is not device.array_type:
        out = device.backend.canonical(out)
    t = _new_tensor(out, device)
    if x._requires_grad and _mode.enabled and cls.differentiable:
        n = x._node
        ctx.inputs = (x,)
        ctx.generation = 0 if n is None else n.generation + 1
        ctx._retain = False
        b = x._box
        ctx._versions = None if b is None else (b.version,)
        t._node = ctx
        t._requires_grad = True
        ctx.outputs = (weakref.ref(t),)
    if _fw_levels:
        _push_tangents(cls, ctx, (x,), {}, (t,))
    return t


def apply_binary(cls: type[Function], a: Tensor, b: Any) -> Tensor:
    """``cls.apply(a, b)`` for a built-in (native) op of a Tensor and a Tensor or a number, as
    :func:`apply_unary` (the hot path of arithmetic operators)."""
    device = a._device
    tb = isinstance(b, Tensor)
    if (
        device.context is not None
        or (tb and b._device is not device)
        or _vmap_dispatch is not None
        or _trace is not None
    ):
        return cls.apply(a, b)  # apply reports mixed devices (and dispatches batched arguments under vmap)
    ctx = _new(cls)
    ctx.device = device
    ctx.xp = device.xp
    out = cls.forward(ctx, a._data, b._data if tb else b)
    if type(out) is not device.array_type:
        out = device.backend.canonical(out)
    t = _new_tensor(out, device)
    ra = a._requires_grad
    rb = tb and b._requires_grad
    if (ra or rb) and _mode.enabled and cls.differentiable:
        gen = 0
        if ra and a._node is not None:
            gen = a._node.generation + 1
        if rb and b._node is not None and b._node.generation >= gen:
            gen = b._node.generation + 1
        ctx.inputs = (a, b)
        ctx.generation = gen
        ctx._retain = False
        ctx._versions = _versions((a, b)) if a._box is not None or (tb and b._box is not None) else None
        t._node = ctx
        t._requires_grad = True
        ctx.outputs = (weakref.ref(t),)
    if _fw_levels:
        _push_tangents(cls, ctx, (a, b), {}, (t,))
    return t


class _SavedOutput:
    """Placeholder for a saved output: resolved through the node's weak output reference."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _versions(args: tuple[Any, ...]) -> tuple[int, ...]:
    """The version of each argument now (0 for non-tensors and never-written tensors)."""
    out = []
    for a in args:
        b = a._box if isinstance(a, Tensor) else None
        out.append(0 if b is None else b.version)
    return tuple(out)


def _check_version(node: Function, x: Tensor, i: int) -> None:
    """Refuse input ``i`` of ``node`` if it was written in place after ``node`` recorded it."""
    b = x._box
    if b is not None:
        vers = node._versions
        expected = 0 if vers is None else vers[i]
        if b.version != expected:
            raise _modified_error(node, x, f"input {i}", b.version, expected)


def _check_saved_inputs(node: Function) -> None:
    ins = node.inputs
    crosswise = node.saves_inputs == CROSSWISE
    for i, x in enumerate(ins):
        if isinstance(x, Tensor) and x._box is not None:
            if crosswise:  # input i is read only for the other input's gradient
                other = ins[1 - i]
                if not (isinstance(other, Tensor) and other._requires_grad):
                    continue
            _check_version(node, x, i)


def _modified_error(node: Function, t: Tensor, which: str, version: int, expected: int) -> RuntimeError:
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an in-place operation: "
        f"the {t.dtype.name} tensor of shape {t.shape} saved as {which} of {type(node).__name__}Backward "
        f"is at version {version}; expected version {expected} instead. Hint: write after backward, or "
        "write into a .clone() of it"
    )


def _forward_on_tensors(cls: type[Function], ctx: Function, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run a user Function's forward on graph-free tensors; return native arrays."""
    detached = [_new_tensor(a._data, a._device) if isinstance(a, Tensor) else a for a in args]
    prev = _mode.enabled
    _mode.enabled = False
    try:
        out = cls.forward(ctx, *detached, **kwargs)
    finally:
        _mode.enabled = prev
    outs = out if isinstance(out, tuple) else (out,)
    saved = getattr(ctx, "_saved", None)
    if saved:
        # map saved graph-free stand-ins back to the real inputs and outputs
        by_id = {id(d): a for d, a in zip(detached, args) if isinstance(a, Tensor)}
        out_ids = {id(o): i for i, o in enumerate(outs)}
        ctx._saved = tuple(_SavedOutput(out_ids[id(s)]) if id(s) in out_ids else by_id.get(id(s), s) for s in saved)
    natives = tuple(_unwrap(o, cls) for o in outs)
    return natives if isinstance(out, tuple) else natives[0]


def _wrap_outputs(
    ctx: Function, args: tuple[Any, ...], out: tuple[Any, ...], device: Device, requires: bool, gen: int, boxed: bool
) -> tuple[Tensor, ...]:
    canonical = device.backend.canonical
    outs = tuple(_new_tensor(canonical(o), device) for o in out)
    if requires:
        link_outputs(ctx, args, outs, gen, boxed)
    return outs


def link_outputs(ctx: Function, inputs: tuple[Any, ...], outs: Sequence[Tensor], gen: int, boxed: bool) -> None:
    """Make ``ctx`` the node of several outputs ``outs`` over ``inputs`` at generation ``gen`` (``boxed``: some
    input was written or viewed, so their versions are recorded): what ``apply`` does for a tuple result."""
    ctx.inputs = inputs
    ctx.generation = gen
    ctx._retain = False
    ctx._versions = _versions(inputs) if boxed else None
    refs = []
    for i, t in enumerate(outs):
        t._node = ctx
        t._out_idx = i
        t._requires_grad = True
        refs.append(weakref.ref(t))
    ctx.outputs = tuple(refs)


def _unwrap(o: Any, cls: type) -> Any:
    if not isinstance(o, Tensor):
        raise TypeError(f"{cls.__name__}.forward must return Tensors, got {type(o).__name__}")
    return o._data


def _mixed_devices(cls: type, a: Any, b: Any) -> None:
    raise RuntimeError(
        f"{cls.__name__.lower()}: tensors are on different devices ({a} and {b}); "
        f"move one with .to('{a}') or .to('{b}')"
    )


# -- the backward engine -------------------------------------------------------------------


def _seed_grad(t: Tensor, g: Any) -> Tensor:
    if g is None:
        if t.ndim != 0 and t.size != 1:
            raise RuntimeError(
                f"backward: grad can be implicitly created only for a scalar output, but the output has shape "
                f"{t.shape}; pass gradient= (a tensor of that shape)"
            )
        if type(t) is not Tensor and hasattr(t, "_phys"):  # a vmap wrapper: ones per example
            return _vmap.ones_like_batched(t)
        return _new_tensor(t._device.xp.ones_like(t._data), t._device)
    if not isinstance(g, Tensor):
        g = Tensor(g, dtype=t.dtype, device=t._device)
    if g.shape != t.shape:
        raise RuntimeError(f"backward: gradient has shape {g.shape} but the output has shape {t.shape}")
    if g._device is not t._device:
        raise RuntimeError(f"backward: gradient is on {g.device} but the output is on {t.device}")
    return g


def run_backward(
    outputs: Sequence[Tensor],
    grad_outputs: Sequence[Any],
    retain_graph: bool,
    create_graph: bool,
    capture: Sequence[Tensor] | None = None,
) -> list[Tensor | None] | None:
    """Backpropagate from ``outputs``; accumulate into leaves' ``.grad``, or return grads of ``capture``.

    Nodes wait in a heap ordered by decreasing generation, so every node runs once, after all
    the nodes that consume its outputs. ``pending[node]`` holds, per output, the summed
    gradient and the output tensor itself (kept alive while the node's backward runs).
    """
    heap: list[tuple[int, int, Function]] = []
    # leaves with post-accumulate hooks: how many graph edges still may bring them a gradient
    edges = _count_hooked_edges(outputs) if _post_hooks and capture is None else None
    fed: set[int] = set()
    pending: dict[Function, list[Any]] = {}
    captured: dict[int, Tensor] = {}
    capture_ids = None if capture is None else {id(t): t for t in capture}
    handed: set[int] = set()  # data arrays already given to a leaf (never alias two .grad)
    counter = 0
    heappush = heapq.heappush
    heappop = heapq.heappop
    raw = not create_graph and _raw_enabled[0]  # gradients travel as native arrays (no Tensor, no node)
    if _vmap_dispatch is not None:  # per-example gradients travel as vmap wrappers: never as native arrays
        raw = raw and not _vmap.batched_backward(outputs, grad_outputs, capture)

    hooked_leaves: dict[int, list[Any]] = {}

    # raw, without capture or post-accumulate hooks: a leaf's gradients are summed as arrays and reach .grad
    # once, after the graph (PyTorch's AccumulateGrad adds the summed gradient to .grad the same way)
    leaf_sums: dict[int, list[Any]] | None = {} if raw and capture_ids is None and edges is None else None

    def deliver_leaf(x: Tensor, gx: Any, now: bool = False) -> None:
        if leaf_sums is not None and not now:
            if gx.shape != x._data.shape:
                _check_leaf_shape(x, gx)
            w = leaf_sums.get(id(x))
            if w is None:
                leaf_sums[id(x)] = [x, gx]
            else:
                w[1] = w[1] + gx if _trace is None else _trace.add(w[1], gx)
            return
        if raw:
            gx = _wrap(gx, x._device)
        if capture_ids is None:
            _accumulate_leaf(x, gx, handed)
        elif id(x) in capture_ids:
            prev = captured.get(id(x))
            captured[id(x)] = gx if prev is None else prev + gx

    def route(x: Any, gx: Tensor | None, version: int | None) -> None:
        """Send gradient ``gx`` to tensor ``x`` as it was at ``version`` (None: now): into its node's
        pending slot, or to the leaf. A tensor written in place in the graph since then has a new
        node; the edge still belongs to the stand-in that kept the old one."""
        nonlocal counter
        if gx is None or not isinstance(x, Tensor):
            return
        b = x._box
        if b is not None and b.ghosts is not None and version is not None and version != b.version:
            x = b.resolve(x, version)
            if x is None:
                return
        if not x._requires_grad:
            return
        xn = x._node
        if xn is None:
            if _leaf_hooks and id(x) in _leaf_hooks and (capture_ids is None or id(x) in capture_ids):
                # a hooked leaf sees its gradient once, summed over every use: wait for all of them
                if raw:
                    gx = _wrap(gx, x._device)
                w = hooked_leaves.get(id(x))
                hooked_leaves[id(x)] = [x, gx if w is None else w[1] + gx]
            else:
                deliver_leaf(x, gx)
                if edges is not None:
                    fed.add(id(x))
            return
        b = pending.get(xn)
        i = x._out_idx << 1
        if b is None:
            b = pending[xn] = [None, None] * len(xn.outputs)
            counter += 1
            heappush(heap, (-xn.generation, counter, xn))
            b[i] = gx
        else:
            prev = b[i]
            b[i] = gx if prev is None else (prev + gx if _trace is None else _trace.add(prev, gx))
        b[i + 1] = x

    prev_mode = _mode.enabled
    _mode.enabled = create_graph
    try:
        for t, g in zip(outputs, grad_outputs):
            if not t._requires_grad:
                raise RuntimeError(
                    "backward: the tensor does not require grad and has no grad_fn; "
                    "did you create it under no_grad() or from tensors that do not require grad?"
                )
            g = _seed_grad(t, g)
            if _trace is not None:
                _trace.seed(g, raw)
            handed.add(id(g._data))
            route(t, g._data if raw else g, None)
        if edges:
            _edges_done(outputs, edges, fed)
        nxt = None  # a node that skips the heap: the last one found (a chain needs no heap at all)
        while heap or nxt is not None:
            if nxt is None:
                node = heappop(heap)[2]
            elif heap and -heap[0][0] > nxt.generation:  # a later node came first: nxt waits its turn
                counter += 1
                heappush(heap, (-nxt.generation, counter, nxt))
                node = heappop(heap)[2]
                nxt = None
            else:
                node = nxt
                nxt = None
            buf = pending.pop(node)
            ins = node.inputs
            if ins is None:
                raise RuntimeError(
                    "backward: trying to backward through the graph a second time (its saved values were "
                    "freed after the first backward); pass retain_graph=True to the first backward"
                )
            n_out = len(buf) >> 1
            if capture_ids is not None or node._retain or node._out_hooks is not None:
                if raw:
                    _wrap_buf(buf)  # hooks and retain_grad see Tensors
                if node._out_hooks is not None:
                    _run_output_hooks(node._out_hooks, buf)
                if capture_ids is not None or node._retain:
                    _observe(buf, n_out, capture_ids, captured, create_graph)
                if raw:
                    for i in range(0, len(buf), 2):
                        if buf[i] is not None:
                            buf[i] = buf[i]._data
            if node.saves_inputs and node.native:
                for x in ins:  # inline: most inputs were never written or viewed (no box)
                    if isinstance(x, Tensor) and x._box is not None:
                        _check_saved_inputs(node)
                        break
            if _trace is not None and raw:
                gxs = _trace.backward(node, buf, n_out)
            elif raw:
                fn = node.backward_raw
                if fn is not None and node.device.context is None:
                    gxs = fn(node, buf[0]) if n_out == 1 else fn(node, *buf[0::2])  # buf holds arrays
                    if gxs is NotImplemented:
                        gxs = _backward_wrapped(node, buf, n_out)
                else:
                    gxs = _backward_raw(node, buf, n_out)
            else:
                if _trace is not None and not _trace.depth:
                    _trace.higher_order()
                gxs = node.backward(node, buf[0]) if n_out == 1 else node.backward(node, *buf[0::2])
            del buf  # the outputs may die now
            if type(gxs) is not tuple:
                gxs = (gxs,)
            if len(gxs) != len(ins):
                raise RuntimeError(
                    f"{type(node).__name__}.backward returned {len(gxs)} gradients for {len(ins)} inputs"
                )
            if not retain_graph:
                node.inputs = None
            vers = node._versions
            if vers is None:
                for x, gx in zip(ins, gxs):
                    if gx is None:
                        continue
                    # route() inlined for the common case: an unwritten tensor made by a node
                    if isinstance(x, Tensor) and x._box is None and x._requires_grad:
                        xn = x._node
                        if xn is not None:
                            b = pending.get(xn)
                            i = x._out_idx << 1
                            if b is None:
                                b = pending[xn] = [None, None] * len(xn.outputs)
                                if nxt is None:
                                    nxt = xn
                                else:
                                    counter += 1
                                    heappush(heap, (-xn.generation, counter, xn))
                                b[i] = gx
                            else:
                                prev = b[i]
                                b[i] = gx if prev is None else (prev + gx if _trace is None else _trace.add(prev, gx))
                            b[i + 1] = x
                            continue
                    route(x, gx, 0)
            else:
                for x, gx, v in zip(ins, gxs, vers):
                    route(x, gx, v)
            if edges:
                _edges_done(ins, edges, fed)
        if edges:  # leaves whose remaining edges came from nodes that never ran (no gradient reached them)
            alive = [entry[0]() for entry in map(_post_hooks.get, list(edges)) if entry is not None]
            _edges_done(alive, edges, fed, final=True)
        if leaf_sums:
            for x, gx in leaf_sums.values():
                _accumulate_leaf(x, _wrap(gx, x._device), handed)
        for x, gx in hooked_leaves.values():  # leaves come after every node, as in generation order
            entry = _leaf_hooks.get(id(x))
            deliver_leaf(x, _call_hooks(entry[1], gx) if entry is not None and entry[0]() is x else gx, now=True)
            post = _post_hooks.get(id(x)) if capture_ids is None else None
            if post is not None and post[0]() is x:  # its .grad arrived only now: its post-accumulate hooks too
                for hook in list(post[1].values()):
                    hook(x)
    finally:
        _mode.enabled = prev_mode
    if capture is None:
        return None
    return [captured.get(id(t)) for t in capture]


#: whether first-order backward runs ``backward_raw`` where an op has one (tests switch it off to compare)
_raw_enabled = [True]


def _wrap(g: Any, device: Device) -> Tensor:
    """A native gradient as a graph-free Tensor (Tensors pass through)."""
    if g is None or isinstance(g, Tensor):
        return g
    if type(g) is not device.array_type:
        g = device.backend.canonical(g)
    t = _new(Tensor)
    _init_slots(t, g, device)
    return t


def _wrap_buf(buf: list[Any]) -> None:
    """Turn a node's pending native gradients into Tensors, in place (each on its output's device)."""
    for i in range(0, len(buf), 2):
        if buf[i] is not None and not isinstance(buf[i], Tensor):
            buf[i] = _wrap(buf[i], buf[i + 1]._device)


def _backward_raw(node: Function, buf: list[Any], n_out: int) -> tuple[Any, ...]:
    """A node's input gradients as native arrays: its ``backward_raw`` (in the device's context), or
    ``backward`` on wrapped Tensors."""
    fn = node.backward_raw
    if fn is not None:
        with node.device.context():
            gxs = fn(node, *buf[0::2])
        if gxs is not NotImplemented:
            return gxs
    return _backward_wrapped(node, buf, n_out)


def _backward_wrapped(node: Function, buf: list[Any], n_out: int) -> tuple[Any, ...]:
    """``backward`` (in Lucid ops) on the native gradients wrapped as Tensors; native results."""
    _wrap_buf(buf)
    gxs = node.backward(node, buf[0]) if n_out == 1 else node.backward(node, *buf[0::2])
    if type(gxs) is not tuple:
        gxs = (gxs,)
    return tuple(_unwrap_grad(g, node, i) for i, g in enumerate(gxs))


def _unwrap_grad(g: Any, node: Function, i: int) -> Any:
    if g is None:
        return None
    if isinstance(g, Tensor):
        return g._data
    raise TypeError(
        f"{type(node).__name__}.backward returned a {type(g).__name__} for input {i}; expected a Tensor or None"
    )


def _observe(buf: list[Any], n_out: int, capture_ids: Any, captured: dict[int, Tensor], create_graph: bool) -> None:
    """Record the gradients of a node's outputs for retain_grad() and for grad()'s non-leaf inputs."""
    for i in range(n_out):
        g, t = buf[2 * i], buf[2 * i + 1]
        if t is None:
            continue
        if t._retains_grad:  # accumulates over backward calls, as a leaf's .grad does (PyTorch's retain_grad)
            g_ = g if create_graph else g.detach()
            t.grad = g_.clone() if t.grad is None else t.grad + g_  # a copy: never alias a gradient in flight
        if capture_ids is not None and id(t) in capture_ids:
            captured[id(t)] = g


def _check_leaf_shape(x: Tensor, g: Any) -> None:
    if tuple(g.shape) != tuple(x._data.shape):
        raise RuntimeError(
            f"autograd: gradient of shape {tuple(g.shape)} reached a leaf of shape {x.shape} "
            "(an op's backward did not reduce a broadcast); please report this"
        )


def _accumulate_leaf(x: Tensor, gx: Tensor, handed: set[int]) -> None:
    if gx._data.shape != x._data.shape:
        _check_leaf_shape(x, gx._data)
    if not _mode.enabled:
        gx = _new_tensor(gx._data, gx._device) if gx._node is not None else gx
    if x.grad is None:
        if id(gx._data) in handed:
            gx = gx.clone() if _mode.enabled else gx.detach().clone()
        handed.add(id(gx._data))
        x.grad = gx
    else:
        x.grad = x.grad + gx


def backward(
    tensors: Tensor | Sequence[Tensor],
    grad_tensors: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
) -> None:
    """Accumulate into the leaves' ``.grad`` the gradients of ``tensors`` (PyTorch's ``autograd.backward``)."""
    if isinstance(tensors, Tensor):
        tensors = [tensors]
        grad_tensors = [grad_tensors]
    tensors = list(tensors)
    grads = [None] * len(tensors) if grad_tensors is None else list(grad_tensors)
    if len(grads) != len(tensors):
        raise ValueError(f"backward: got {len(grads)} gradients for {len(tensors)} tensors")
    run_backward(tensors, grads, create_graph if retain_graph is None else retain_graph, create_graph)


def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Any = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool = False,
) -> tuple[Tensor | None, ...]:
    """The gradients of ``outputs`` with respect to ``inputs``, returned rather than stored in ``.grad``.

    With ``create_graph=True`` the result is itself differentiable (for higher-order gradients).
    """
    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    ins = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    for i, t in enumerate(ins):
        if not isinstance(t, Tensor):
            raise TypeError(f"grad: inputs[{i}] is a {type(t).__name__}, expected a Tensor")
        if not t._requires_grad:
            raise RuntimeError(f"grad: inputs[{i}] does not require grad")
    if grad_outputs is None:
        gos: list[Any] = [None] * len(outs)
    elif isinstance(grad_outputs, Tensor):
        gos = [grad_outputs]
    else:
        gos = list(grad_outputs)
    if len(gos) != len(outs):
        raise ValueError(f"grad: got {len(gos)} grad_outputs for {len(outs)} outputs")
    res = run_backward(outs, gos, create_graph if retain_graph is None else retain_graph, create_graph, capture=ins)
    assert res is not None
    for i, r in enumerate(res):
        if r is None and not allow_unused:
            raise RuntimeError(
                f"grad: inputs[{i}] was not used to compute the outputs; pass allow_unused=True to get None for it"
            )
    return tuple(res)


# -- tensor hooks (Tensor.register_hook) ----------------------------------------------------------
# A non-leaf tensor's hooks live on the node that made it, per output index (as in PyTorch), so they go
# with the graph. A leaf's hooks live in ``_leaf_hooks``, keyed by id(tensor), so the hot path of every
# op stays untouched; a weakref callback drops the entry when the leaf dies. The engine calls them on the
# summed gradient of a tensor, before retain_grad() records it, as PyTorch does.

Function._out_hooks = None  # {output index: {handle id: hook}}, set by register_tensor_hook
_leaf_hooks: dict[int, tuple[weakref.ref[Tensor], dict[int, Any]]] = {}


class TensorHookHandle:
    """Returned by ``Tensor.register_hook``; ``handle.remove()`` takes the hook out again."""

    _next_id = 0

    def __init__(self, hooks: dict[int, Any]) -> None:
        self._hooks = hooks  # the tensor's hook table only, never the tensor
        self.id = TensorHookHandle._next_id
        TensorHookHandle._next_id += 1

    def remove(self) -> None:
        """Unregister the hook (a no-op when already removed or when the tensor is gone)."""
        self._hooks.pop(self.id, None)

    def __enter__(self) -> TensorHookHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def register_tensor_hook(t: Tensor, hook: Any) -> TensorHookHandle:
    """Call ``hook(grad)`` whenever the gradient of ``t`` is computed; a Tensor it returns replaces the gradient."""
    if not callable(hook):
        raise TypeError(f"register_hook: expected a callable taking the gradient, got {type(hook).__name__}")
    if not t._requires_grad:
        raise RuntimeError("register_hook: cannot register a hook on a tensor that doesn't require gradient")
    node = t._node
    if node is not None:
        if node._out_hooks is None:
            node._out_hooks = {}
        table = node._out_hooks.setdefault(t._out_idx, {})
    else:
        key = id(t)
        entry = _leaf_hooks.get(key)
        if entry is None or entry[0]() is not t:
            entry = _leaf_hooks[key] = (weakref.ref(t, lambda _, key=key, table=_leaf_hooks: table.pop(key, None)), {})
        table = entry[1]
    handle = TensorHookHandle(table)
    table[handle.id] = hook
    return handle


def _run_output_hooks(hooks: dict[int, dict[int, Any]], buf: list[Any]) -> None:
    """Pass each output gradient in a node's pending ``buf`` through that output's hooks, in place."""
    for i, table in hooks.items():
        if table and buf[2 * i] is not None:
            buf[2 * i] = _call_hooks(table, buf[2 * i])


def _call_hooks(table: dict[int, Any], g: Tensor) -> Tensor:
    """``g`` passed through the hooks in registration order (each sees the previous one's result)."""
    for hook in list(table.values()):
        new = hook(g)
        if new is None:
            continue
        if not isinstance(new, Tensor):
            raise TypeError(f"tensor hook {hook!r} returned a {type(new).__name__}; expected a Tensor or None")
        if new.shape != g.shape or new.dtype != g.dtype or new._device is not g._device:
            raise RuntimeError(
                f"tensor hook {hook!r} changed the gradient from shape {g.shape}, {g.dtype}, {g.device} to "
                f"{new.shape}, {new.dtype}, {new.device}; a hook must return a gradient like the one it got"
            )
        g = new
    return g


# -- post-accumulate-grad hooks (Tensor.register_post_accumulate_grad_hook) --------------------
# Kept outside Tensor's slots: leaf id -> (weak ref to the leaf, {handle id: hook}). Backward counts,
# before it starts, the graph edges that lead to each hooked leaf, and calls the leaf's hooks once
# the last of them has been processed, so a hook sees the fully accumulated ``.grad`` (PyTorch's
# AccumulateGrad semantics) while the rest of backward is still to run (DDP overlaps on this).

_post_hooks: dict[int, tuple[weakref.ref[Tensor], dict[int, Any]]] = {}


def register_post_accumulate_grad_hook(t: Tensor, hook: Any) -> TensorHookHandle:
    """Call ``hook(t)`` after backward has accumulated ``t.grad`` (``t`` a leaf that requires grad)."""
    if not callable(hook):
        raise TypeError(f"register_post_accumulate_grad_hook: hook must be callable, got {type(hook).__name__}")
    if t._node is not None:
        raise RuntimeError(
            "register_post_accumulate_grad_hook: post accumulate grad hooks cannot be registered on non-leaf tensors"
        )
    if not t._requires_grad:
        raise RuntimeError(
            "register_post_accumulate_grad_hook: cannot register a hook on a tensor that does not require grad"
        )
    key = id(t)
    entry = _post_hooks.get(key)
    if entry is None or entry[0]() is not t:
        entry = _post_hooks[key] = (weakref.ref(t, lambda _, k=key, table=_post_hooks: table.pop(k, None)), {})
    handle = TensorHookHandle(entry[1])
    entry[1][handle.id] = hook
    return handle


def _count_hooked_edges(outputs: Sequence[Tensor]) -> dict[int, int]:
    """For each hooked leaf reachable from ``outputs``, the number of graph edges that lead into it."""
    edges: dict[int, int] = {}
    seen: set[int] = set()
    stack: list[Any] = []
    for t in outputs:
        if t._node is None:
            if id(t) in _post_hooks and _post_hooks[id(t)][1]:
                edges[id(t)] = edges.get(id(t), 0) + 1
        elif id(t._node) not in seen:
            seen.add(id(t._node))
            stack.append(t._node)
    while stack:
        for x in stack.pop().inputs or ():
            if not isinstance(x, Tensor) or not x._requires_grad:
                continue
            n = x._node
            if n is None:
                if id(x) in _post_hooks and _post_hooks[id(x)][1]:
                    edges[id(x)] = edges.get(id(x), 0) + 1
            elif id(n) not in seen:
                seen.add(id(n))
                stack.append(n)
    return edges


def _edges_done(xs: Sequence[Any], edges: dict[int, int], fed: set[int], final: bool = False) -> None:
    """Count down the edges into hooked leaves; at zero, run the leaf's hooks if a gradient reached it."""
    for x in xs:
        k = id(x)
        left = edges.get(k)
        if left is None or not isinstance(x, Tensor):
            continue
        if left > 1 and not final:
            edges[k] = left - 1
            continue
        del edges[k]
        if k in fed:
            for hook in list(_post_hooks[k][1].values()):
                hook(x)
