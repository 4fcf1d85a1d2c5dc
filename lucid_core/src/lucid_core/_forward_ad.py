"""Forward-mode AD: dual levels, dual tensors and the tangent step every op takes when a level is active.

PyTorch's ``torch.autograd.forward_ad``: inside ``with dual_level():``, ``make_dual(p, t)`` gives a tensor whose
values are ``p`` and whose tangent is ``t``; every op applied to it computes its output's tangent right after its
output (``Function.apply`` calls :func:`push_tangents`), by the op's ``jvp`` rule, written in Lucid ops (so the
tangent is differentiable again and nested transforms compose); ``unpack_dual`` reads it back.

Tangents live on the tensor object, in a ``_tangents`` slot (``{level: tangent}``; unset on most tensors). Levels
nest (``func.jvp(func.jvp(f))``): while the tangent of level ``L`` is computed, levels ``>= L`` are masked, so the
rule's ops carry only the outer (lower) levels' tangents and a mixed derivative is stored exactly once, in the
inner tangent's outer tangent (JAX's tracer nesting). With no level active an op pays one list check.
"""

from __future__ import annotations

__all__ = ["dual_level", "make_dual", "unpack_dual", "UnpackedDualTensor", "enter_dual_level", "exit_dual_level"]

import itertools
import sys
import weakref
from typing import Any, NamedTuple

from . import _autograd, _tensor

#: the active dual levels, innermost last (the list ``Function.apply`` checks: empty means forward mode is off)
levels: list[int] = _tensor._fw_levels
_counter = itertools.count(1)


class _State:
    """Levels at or above ``limit`` are masked (while a level's tangents are being computed)."""

    limit: float = float("inf")


_state = _State()


def enter_dual_level() -> int:
    """Open a new (innermost) dual level and return its id (PyTorch's ``enter_dual_level``)."""
    level = next(_counter)
    levels.append(level)
    return level


def exit_dual_level(*, level: int | None = None) -> None:
    """Close ``level`` (the innermost by default); tangents of a closed level are ignored from then on."""
    if not levels:
        raise RuntimeError("exit_dual_level: no dual level is active")
    if level is None:
        level = levels[-1]
    if level not in levels:
        raise RuntimeError(f"exit_dual_level: level {level} is not active (active levels: {levels})")
    levels.remove(level)


class dual_level:  # noqa: N801 - PyTorch's name
    """Context manager of one dual level: ``with dual_level(): y = f(make_dual(x, v)); unpack_dual(y).tangent``."""

    def __enter__(self) -> int:
        self.level = enter_dual_level()
        return self.level

    def __exit__(self, *exc: object) -> None:
        exit_dual_level(level=self.level)


def _current(level: int | None, name: str) -> int:
    if level is None:
        if not levels:
            raise RuntimeError(f"{name}: no forward-AD level is active; call it inside `with dual_level():`")
        return levels[-1]
    if level not in levels:
        raise RuntimeError(f"{name}: dual level {level} is not active (active levels: {levels})")
    return level


def tangents_of(t: Any) -> dict[int, Any] | None:
    """The ``{level: tangent}`` of ``t`` (None when it has none)."""
    return getattr(t, "_tangents", None)


def set_tangent(t: Any, level: int, tangent: Any) -> None:
    """Attach ``tangent`` to ``t`` at ``level`` (replacing one there)."""
    tg = getattr(t, "_tangents", None)
    if tg is None:
        t._tangents = {level: tangent}
    else:
        tg = dict(tg)  # tangent dicts are shared by aliases: never mutate one in place
        tg[level] = tangent
        t._tangents = tg


def make_dual(tensor: Any, tangent: Any, *, level: int | None = None) -> Any:
    """A tensor with ``tensor``'s values (differentiably: an alias op) and ``tangent`` at ``level``."""
    from ._tensor import Tensor
    from .ops import manipulation as _m

    level = _current(level, "make_dual")
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError(
            f"make_dual: expected a Tensor primal and a Tensor tangent, got {type(tensor).__name__} and "
            f"{type(tangent).__name__}"
        )
    if tangent.shape != tensor.shape:
        raise ValueError(f"make_dual: tangent has shape {tangent.shape} but the primal has shape {tensor.shape}")
    if tensor.dtype.kind not in "fc":
        raise ValueError(f"make_dual: the primal must be floating point or complex, got {tensor.dtype.name}")
    if tangent.dtype != tensor.dtype:
        raise ValueError(f"make_dual: tangent dtype {tangent.dtype.name} differs from the primal's {tensor.dtype.name}")
    if tangent.device != tensor.device:
        raise ValueError(f"make_dual: tangent is on {tangent.device} but the primal is on {tensor.device}")
    prev = _state.limit
    _state.limit = level  # the alias carries the outer levels' tangents, not this level's old one
    try:
        out = _m.Reshape.apply(tensor, tuple(tensor.shape))
    finally:
        _state.limit = prev
    set_tangent(out, level, tangent)
    return out


class UnpackedDualTensor(NamedTuple):
    """What :func:`unpack_dual` returns: the primal and the tangent (None when there is none)."""

    primal: Any
    tangent: Any


def unpack_dual(tensor: Any, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor`` at ``level``: the primal keeps the other levels' tangents."""
    from ._tensor import Tensor
    from .ops import manipulation as _m

    if not isinstance(tensor, Tensor):
        raise TypeError(f"unpack_dual: expected a Tensor, got {type(tensor).__name__}")
    if level is None and not levels:
        return UnpackedDualTensor(tensor, None)
    level = _current(level, "unpack_dual")
    tg = tangents_of(tensor)
    tangent = None if tg is None else tg.get(level)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    prev = _state.limit
    _state.limit = level
    try:
        primal = _m.Reshape.apply(tensor, tuple(tensor.shape))
    finally:
        _state.limit = prev
    return UnpackedDualTensor(primal, tangent)


# -- the tangent step of every op ------------------------------------------------------------------------


def push_tangents(cls: type, ctx: Any, args: tuple[Any, ...], kwargs: dict[str, Any], outs: tuple[Any, ...]) -> None:
    """After ``cls`` made ``outs`` from ``args``: give the outputs their tangents at every active level
    that an input carries (no-op when none does). Called by ``Function.apply`` and its fast paths."""
    from ._tensor import Tensor

    limit = _state.limit
    present: set[int] | None = None
    for a in args:
        if isinstance(a, Tensor):
            tg = getattr(a, "_tangents", None)
            if tg:
                for lv in tg:
                    if lv < limit and lv in levels:
                        if present is None:
                            present = set()
                        present.add(lv)
    if present is None:
        return
    rule = cls.jvp
    if not cls.differentiable and rule is None:
        if any(o.dtype.kind in "fc" for o in outs):
            raise RuntimeError(
                f"{cls.__name__.lower()}: no forward-mode (jvp) rule: the op has no derivative, and a tangent reached "
                "its floating-point output"
            )
        return  # comparisons, indices: no tangent, as no gradient
    if rule is None and not cls.linear:
        raise RuntimeError(
            f"{cls.__name__.lower()}: no forward-mode (jvp) rule is defined for this op, so a tangent cannot pass "
            "through it; give its Function a `jvp(ctx, *tangents)` staticmethod (or `linear = True`)"
        )
    _bind(ctx, args, outs)
    for lv in sorted(present):
        tans = tuple(_tangent_at(a, lv) for a in args)
        _state.limit = lv
        try:
            res = linear_jvp(ctx, cls, tans, kwargs) if rule is None else rule(ctx, *tans)
        finally:
            _state.limit = limit
        if type(res) is not tuple and not isinstance(res, list):
            res = (res,)
        if len(res) != len(outs):
            raise RuntimeError(f"{cls.__name__}.jvp returned {len(res)} tangents for {len(outs)} outputs")
        for o, t in zip(outs, res):
            if t is not None and o.dtype.kind in "fc":
                set_tangent(o, lv, _fit(t, o, cls))


def saved_values_suffice(*tensors: Any) -> bool:
    """Whether a jvp rule may read values its forward kernel saved (statistics, attention weights) as constants:
    none of ``tensors`` carries a tangent of an outer level and no graph is recorded through them, so nothing
    will differentiate those values again. Otherwise the rule recomputes them in Lucid ops."""
    from ._grad_mode import _mode

    limit = _state.limit
    for t in tensors:
        if t is None:
            continue
        if _mode.enabled and t._requires_grad:
            return False
        tg = getattr(t, "_tangents", None)
        if tg and any(lv < limit and lv in levels for lv in tg):
            return False
    return True


def _tangent_at(a: Any, level: int) -> Any:
    tg = getattr(a, "_tangents", None)
    return None if tg is None else tg.get(level)


def _bind(ctx: Any, args: tuple[Any, ...], outs: tuple[Any, ...]) -> None:
    """Give a node that is not in the reverse graph the inputs and outputs its rules read."""
    if getattr(ctx, "inputs", None) is None:
        ctx.inputs = args
        ctx.generation = 0
        ctx._retain = False
        ctx._versions = None
        ctx.outputs = [weakref.ref(o) for o in outs]


def _fit(t: Any, o: Any, cls: type) -> Any:
    """A rule's tangent as ``o``'s tangent: its dtype, broadcast to its shape."""
    from ._tensor import Tensor
    from .ops import manipulation as _m

    if not isinstance(t, Tensor):
        raise TypeError(f"{cls.__name__}.jvp returned a {type(t).__name__}; expected a Tensor or None")
    if t._data.dtype != o._data.dtype:
        t = _m.astype(t, o.dtype)
    if t.shape != o.shape:
        t = _m.broadcast_to(t, o.shape)
    return t


def _is_operand(a: Any) -> bool:
    from ._tensor import Tensor

    return isinstance(a, Tensor) and a.dtype.kind in "fc"


def linear_jvp(ctx: Any, cls: type, tangents: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The rule of a linear op (``linear = True``): the op itself on the tangents, its other arguments kept.

    Floating-point Tensor arguments are the operands (zeros where one has no tangent); everything else
    (shapes, axes, integer index tensors) is a parameter. Only for ops whose every operand is a Tensor.
    """
    from .ops import creation as _c

    args = ctx.inputs
    if all(t is None for t in tangents):
        return None
    sub = tuple((t if t is not None else _c.zeros_like(a)) if _is_operand(a) else a for a, t in zip(args, tangents))
    return cls.apply(*sub, **kwargs)


def jvp_from_vjp(ctx: Any, *tangents: Any) -> Any:
    """A jvp rule derived from the op's (linear in the cotangent) backward: ``J v = d/du <J^T u, v>``.

    Exact for real dtypes, at the cost of one backward and one backward of it; used for ops whose
    derivative is not a few element-wise products (linear algebra, sorting, special functions).
    Complex tangents raise, as the backward's conjugate convention does not transpose to ``J v``.
    """
    from ._autograd import grad
    from ._grad_mode import _mode
    from ._tensor import Tensor, _new_tensor
    from .ops import creation as _c
    from .ops import reduction as _r

    cls = type(ctx)
    name = cls.__name__.lower()
    for t in tangents:
        if t is not None and t.dtype.kind == "c":
            raise RuntimeError(f"{name}: no forward-mode (jvp) rule for complex tangents")
    outs = [r() for r in ctx.outputs]
    if any(o is None for o in outs):
        raise RuntimeError(f"{name}: an output died before its tangent was computed")
    was = _mode.enabled
    _mode.enabled = True
    try:
        stand = []
        for a, t in zip(ctx.inputs, tangents):
            if isinstance(a, Tensor) and t is not None and not a._requires_grad:
                s = _new_tensor(a._data, a._device)  # a leaf that needs grad, so backward computes for it
                s._requires_grad = True
                tg = getattr(a, "_tangents", None)
                if tg is not None:
                    s._tangents = tg
                stand.append(s)
            else:
                stand.append(a)
        node = object.__new__(cls)
        for slot in ("device", "xp", "generation", "_retain", "_saved", "_versions", "outputs"):
            try:
                setattr(node, slot, getattr(ctx, slot))
            except AttributeError:
                pass
        node.__dict__.update(ctx.__dict__)
        node.inputs = tuple(stand)
        node._versions = None
        us = []
        for o in outs:
            u = _c.zeros_like(o)
            u._requires_grad = o.dtype.kind in "fc"
            us.append(u)
        gxs = cls.backward(node, *us)
        if type(gxs) is not tuple:
            gxs = (gxs,)
        total = None
        for gx, t in zip(gxs, tangents):
            if gx is None or t is None:
                continue
            term = _r.sum(gx * t)
            total = term if total is None else total + term
        wanted = [u for u in us if u._requires_grad]
        if total is None or not total._requires_grad:
            return tuple(None for _ in outs)
        res = list(grad(total, wanted, create_graph=True, allow_unused=True))
        out_t = []
        for u in us:
            out_t.append(res.pop(0) if u._requires_grad else None)
    finally:
        _mode.enabled = was
    graph = was and (
        any(isinstance(a, Tensor) and a._requires_grad for a in ctx.inputs)
        or any(t is not None and t._requires_grad for t in tangents)
    )
    if not graph:  # the stand-in leaves' graph is the rule's own: nothing outside can reach it
        out_t = [None if t is None else _detached(t) for t in out_t]
    return tuple(out_t)


def _detached(t: Any) -> Any:
    d = t.detach()
    tg = getattr(t, "_tangents", None)
    if tg is not None:
        d._tangents = tg
    return d


def after_inplace(target: Any, result: Any, opname: str) -> None:
    """After an in-place write of ``result`` into ``target``: ``target`` takes ``result``'s tangents."""
    tr = getattr(result, "_tangents", None)
    if not tr and getattr(target, "_tangents", None) is None:
        return
    if target._view is not None and tr:
        raise RuntimeError(
            f"{opname}: forward-mode AD does not follow in-place writes through a view; write into the base "
            "tensor, or use the out-of-place op"
        )
    target._tangents = tr if tr else None


def involved(*xs: Any) -> bool:
    """Whether forward mode is on and one of ``xs`` carries a tangent (in-place writes then take the slow path)."""
    if not levels:
        return False
    return any(getattr(x, "_tangents", None) for x in xs)


def add_tangents(*ts: Any) -> Any:
    """The sum of the tangents that are not None (None when all are): the tangent of a sum of terms."""
    total = None
    for t in ts:
        if t is not None:
            total = t if total is None else total + t
    return total


_autograd._push_tangents = push_tangents
_tensor._FWD = sys.modules[__name__]
