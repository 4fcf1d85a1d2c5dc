"""``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``linearize``, ``jacrev``, ``jacfwd``, ``hessian``: torch.func's.

Reverse mode runs the ordinary tape (``lucid_core.grad``) on aliases of the differentiated arguments; forward
mode pushes true tangents through the ops (:mod:`lucid_core._forward_ad`). Each transform returns plain tensors
that still carry whatever an enclosing transform tracks (its graph, its tangents), so transforms nest and
compose in any order: ``grad(grad(f))``, ``jacrev(jacfwd(f))``, ``jvp(grad(f))``, ``hessian`` = ``jacfwd(jacrev)``.

Jacobians are built from basis vectors: ``jacrev`` maps the vector-Jacobian product over the rows of the identity,
``jacfwd`` the forward pass, with ``vmap`` (``chunk_size`` rows at a time for ``jacrev``); where ``vmap`` is absent
or cannot batch an op of the function they loop, one product per basis vector, with the same numbers.
"""

from __future__ import annotations

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian"]

import functools
from collections.abc import Callable
from typing import Any

from .. import _autograd
from .. import _forward_ad as fwd
from .._tensor import Tensor
from ..ops import creation as _c
from ..ops import manipulation as _m
from . import _pytree as pt

_depth = [0]  # how many transforms are running (an inner one keeps the graph an outer one differentiates)


def _argnums(argnums: int | tuple[int, ...], n: int, name: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise RuntimeError(f"{name}: argnums must be non-empty")
    for a in nums:
        if not isinstance(a, int) or isinstance(a, bool):
            raise RuntimeError(f"{name}: argnums must be an int or a tuple of ints, got {argnums!r}")
        if not -n <= a < n:
            raise RuntimeError(f"{name}: got argnums={argnums!r} but only {n} positional inputs")
    out = tuple(a % n for a in nums)
    if len(set(out)) != len(out):
        raise RuntimeError(f"{name}: argnums must be unique, got {argnums!r}")
    return out


def _check_leaf(x: Any, name: str, what: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise ValueError(f"{name}: expected {what} to be a Tensor (or a pytree of them), got {type(x).__name__}")
    if x.dtype.kind not in "fc":
        raise RuntimeError(f"{name}: only floating point and complex inputs can be differentiated, got {x.dtype.name}")
    return x


def _track(x: Tensor) -> Tensor:
    """An alias of ``x`` that backward computes a gradient for; it keeps ``x``'s graph and tangents."""
    y = _m.Reshape.apply(x, tuple(x.shape))
    if not y._requires_grad:
        y._requires_grad = True  # a leaf of this transform's tape
    return y


def _keep_graph(leaves: list[Any]) -> bool:
    """Whether the result must stay differentiable: an enclosing transform or tape tracks it."""
    if fwd.levels or _depth[0] > 1:
        return True
    return any(isinstance(x, Tensor) and x._requires_grad for x in leaves)


def _release(t: Any, keep: bool) -> Any:
    """``t`` as a transform hands it back: detached at the top level (tangents kept), as it is inside another."""
    if keep or not isinstance(t, Tensor) or not t._requires_grad:
        return t
    d = t.detach()
    tg = getattr(t, "_tangents", None)
    if tg is not None:
        d._tangents = tg
    return d


def _zeros_if_none(g: Any, like: Tensor) -> Tensor:
    return _c.zeros_like(like) if g is None else g


class _Nested:
    def __enter__(self) -> None:
        _depth[0] += 1

    def __exit__(self, *exc: object) -> None:
        _depth[0] -= 1


def _split_aux(out: Any, has_aux: bool, name: str) -> tuple[Any, Any]:
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(
            f"{name}(f, ...)(*args): output of function f should be a tuple: (output, aux) if has_aux is True"
        )
    return out


def _vjp_at(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], nums: tuple[int, ...],
            has_aux: bool, name: str) -> tuple[Any, Callable[[Any], Any], Any, bool]:  # fmt: skip
    """Run ``func`` with ``args[nums]`` tracked: (output, vjp_fn returning one tree per tracked arg, aux, keep)."""
    args = list(args)
    specs, ins = [], []
    for i in nums:
        leaves, spec = pt.flatten(args[i])
        leaves = [_check_leaf(x, name, f"argument {i}") for x in leaves]
        specs.append((spec, len(leaves)))
        ins.extend(leaves)
    keep = _keep_graph(ins)
    tracked = [_track(x) for x in ins]
    pos = 0
    for i, (spec, n) in zip(nums, specs):
        args[i] = pt.unflatten(tracked[pos : pos + n], spec)
        pos += n
    with _autograd.enable_grad():
        out, aux = _split_aux(func(*args, **kwargs), has_aux, name)
    out_leaves, out_spec = pt.flatten(out)
    for o in out_leaves:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{name}: expected f(*primals) to return only tensors, got {type(o).__name__}")

    def vjp_fn(cotangents: Any) -> tuple[Any, ...]:
        ct_leaves, ct_spec = pt.flatten(cotangents)
        if not pt.same_structure(ct_spec, out_spec):
            raise RuntimeError(
                f"{name}: expected cotangents of the structure {pt.describe(out_spec)} (the output's), got "
                f"{pt.describe(ct_spec)}"
            )
        outs, gos = [], []
        for o, c in zip(out_leaves, ct_leaves):
            if not isinstance(c, Tensor):
                raise RuntimeError(f"{name}: cotangents must be Tensors, got {type(c).__name__}")
            if c.shape != o.shape:
                raise RuntimeError(f"{name}: cotangent of shape {c.shape} for an output of shape {o.shape}")
            if o._requires_grad:
                outs.append(o)
                gos.append(c)
        cg = keep or any(c._requires_grad for c in gos) or bool(fwd.levels)
        grads: list[Any] = [None] * len(tracked)
        if outs:
            with _autograd.enable_grad():
                grads = list(_autograd.grad(outs, tracked, gos, retain_graph=True, create_graph=cg, allow_unused=True))
        grads = [_release(_zeros_if_none(g, x), cg) for g, x in zip(grads, ins)]
        res, p = [], 0
        for spec, n in specs:
            res.append(pt.unflatten(grads[p : p + n], spec))
            p += n
        return tuple(res)

    return out, vjp_fn, aux, keep


def grad_and_value(
    func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """``func``'s gradient with respect to ``args[argnums]`` and its value: ``(grad, value)`` (``((grad, (value,
    aux))`` with ``has_aux``); ``func`` must return a one-element Tensor."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums(argnums, len(args), "grad_and_value")
        with _Nested():
            out, vjp_fn, aux, keep = _vjp_at(func, args, kwargs, nums, has_aux, "grad_and_value")
            if not isinstance(out, Tensor):
                raise RuntimeError(
                    f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out).__name__}"
                )
            if out.numel() != 1:
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor with "
                    f"{out.ndim} dims. Maybe you wanted to use the vjp or jacrev APIs instead?"
                )
            grads = vjp_fn(_c.ones_like(out))
        g = grads[0] if isinstance(argnums, int) else grads
        value = _release(out, keep)
        if has_aux:
            return g, (value, pt.tree_map(lambda a: _release(a, keep), aux))
        return g, value

    return wrapper


def grad(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """The gradient of ``func`` (returning a one-element Tensor) with respect to ``args[argnums]``.

    ``argnums`` a tuple gives a tuple of gradients; ``has_aux=True``: ``func`` returns ``(output, aux)`` and the
    transformed function ``(grad, aux)``. Composes with every other transform (``grad(grad(f))``, ``jvp(grad(f))``).
    """
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> Any:
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` gives one vector-Jacobian product per primal (a tuple);
    with ``has_aux`` also ``aux``. ``vjp_fn`` may be called many times."""
    with _Nested():
        out, vjp_fn, aux, keep = _vjp_at(func, primals, {}, tuple(range(len(primals))), has_aux, "vjp")
    rel = pt.tree_map(lambda t: _release(t, keep), out)

    def wrapped(cotangents: Any, *, retain_graph: bool = True, create_graph: bool | None = None) -> tuple[Any, ...]:
        with _Nested():
            return vjp_fn(cotangents)

    if has_aux:
        return rel, wrapped, pt.tree_map(lambda a: _release(a, keep), aux)
    return rel, wrapped


def jvp(func: Callable[..., Any], primals: Any, tangents: Any, *, strict: bool = False, has_aux: bool = False) -> Any:
    """``(func(*primals), J v)`` by forward mode: the tangents are pushed through the ops with the values.

    ``primals`` and ``tangents`` are tuples of the same structure (pytrees of Tensors); with ``has_aux`` the
    result has ``aux`` third.
    """
    if not isinstance(primals, tuple):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be valid to call f(*primals)."
        )
    p_leaves, p_spec = pt.flatten(primals)
    t_leaves, t_spec = pt.flatten(tangents)
    if not isinstance(tangents, tuple) or not pt.same_structure(p_spec, t_spec):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals and tangents to have the same python structure. For example, "
            f"if primals is a tuple of 3 tensors, tangents also must be. Got primals {pt.describe(p_spec)} and "
            f"tangents {pt.describe(t_spec)}"
        )
    for p, t in zip(p_leaves, t_leaves):
        _check_leaf(p, "jvp", "primals")
        if not isinstance(t, Tensor):
            raise RuntimeError(f"jvp: expected tangents to be Tensors, got {type(t).__name__}")
        if p.shape != t.shape:
            raise RuntimeError(f"jvp: a tangent of shape {t.shape} was given for a primal of shape {p.shape}")
    level = fwd.enter_dual_level()
    try:
        with _Nested():
            duals = [fwd.make_dual(p, t if t.dtype == p.dtype else _m.astype(t, p.dtype), level=level)
                     for p, t in zip(p_leaves, t_leaves)]  # fmt: skip
            out, aux = _split_aux(func(*pt.unflatten(duals, p_spec)), has_aux, "jvp")
            o_leaves, o_spec = pt.flatten(out)
            prim, tan = [], []
            for o in o_leaves:
                if not isinstance(o, Tensor):
                    raise RuntimeError(f"jvp: expected f(*primals) to return only tensors, got {type(o).__name__}")
                p, t = fwd.unpack_dual(o, level=level)
                prim.append(p)
                tan.append(_c.zeros_like(p) if t is None else t)
            aux_out = None
            if has_aux:
                aux_out = pt.tree_map(
                    lambda a: fwd.unpack_dual(a, level=level).primal if isinstance(a, Tensor) else a, aux
                )
    finally:
        fwd.exit_dual_level(level=level)
    res = (pt.unflatten(prim, o_spec), pt.unflatten(tan, o_spec))
    return (*res, aux_out) if has_aux else res


def linearize(func: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is ``J v`` at ``primals``, by forward mode.

    Each call reruns ``func`` with the tangents (torch.func traces it once instead; the numbers are the same).
    """
    out = func(*primals)

    def jvp_fn(*tangents: Any) -> Any:
        return jvp(func, primals, tangents)[1]

    return out, jvp_fn


def _chunk(chunk_size: int | None) -> None:
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"jacrev: `chunk_size` should be greater than 0, got {chunk_size!r}")


def _blocks(per_arg: list[tuple[Any, int]], flat_blocks: list[Any], int_argnums: bool) -> Any:
    """One output leaf's Jacobian blocks (flat over the tracked leaves) as the argnums' trees."""
    res, p = [], 0
    for spec, n in per_arg:
        res.append(pt.unflatten(flat_blocks[p : p + n], spec))
        p += n
    return res[0] if int_argnums else tuple(res)


def jacrev(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, *, has_aux: bool = False,
           chunk_size: int | None = None, _preallocate_and_copy: bool = False) -> Callable[..., Any]:  # fmt: skip
    """The Jacobian of ``func`` with respect to ``args[argnums]`` by reverse mode (one VJP per output element).

    Each block has shape ``output.shape + input.shape``; pytrees of outputs and inputs give trees of blocks.
    """
    _chunk(chunk_size)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums(argnums, len(args), "jacrev")
        with _Nested():
            out, vjp_fn, aux, keep = _vjp_at(func, args, kwargs, nums, has_aux, "jacrev")
            o_leaves, o_spec = pt.flatten(out)
            per_arg = [(pt.flatten(args[i])[1], len(pt.flatten(args[i])[0])) for i in nums]
            ins = [x for i in nums for x in pt.flatten(args[i])[0]]
            jac_leaves = []
            for k, o in enumerate(o_leaves):
                blocks = _jacrev_vmapped(vjp_fn, o_leaves, o_spec, k, ins, chunk_size)
                if blocks is not None:
                    jac_leaves.append(_blocks(per_arg, [_release(b, keep) for b in blocks], isinstance(argnums, int)))
                    continue
                rows: list[list[Any]] = [[] for _ in ins]
                flat_o = _m.reshape(_c.zeros_like(o), (-1,))
                for e in range(o.numel()):
                    basis = _c.zeros_like(flat_o)
                    basis = _one_hot_like(basis, e)
                    cts = [_m.reshape(basis, o.shape) if j == k else _c.zeros_like(q) for j, q in enumerate(o_leaves)]
                    grads = vjp_fn(pt.unflatten(cts, o_spec))
                    flat = [g for tree in grads for g in pt.flatten(tree)[0]]
                    for r, g in zip(rows, flat):
                        r.append(g)
                blocks = []
                for r, x in zip(rows, ins):
                    if r:
                        blk = _m.reshape(_m.stack(r), tuple(o.shape) + tuple(x.shape))
                    else:
                        blk = _c.zeros(tuple(o.shape) + tuple(x.shape), dtype=x.dtype, device=x.device)
                    blocks.append(_release(blk, keep))
                jac_leaves.append(_blocks(per_arg, blocks, isinstance(argnums, int)))
        jac = pt.unflatten(jac_leaves, o_spec)
        return (jac, pt.tree_map(lambda a: _release(a, keep), aux)) if has_aux else jac

    return wrapper


def _vmap() -> Any:
    """``vmap`` when the batching module is present (None otherwise: the Jacobians loop)."""
    try:
        from ._vmap import vmap
    except ImportError:  # pragma: no cover - only while the batching module is absent
        return None
    return vmap if _use_vmap[0] else None


#: whether jacrev/jacfwd try ``vmap`` over the basis first (tests switch it off to check the loop)
_use_vmap = [True]


def _eye_rows(n: int, like: Tensor) -> Tensor:
    from ..ops import creation

    return creation.eye(n, dtype=like.dtype, device=like.device)


def _chunks(n: int, chunk_size: int | None) -> list[tuple[int, int]]:
    step = n if chunk_size is None else chunk_size
    return [(i, min(i + step, n)) for i in range(0, n, max(step, 1))]


def _jacrev_vmapped(vjp_fn: Callable[[Any], Any], o_leaves: list[Any], o_spec: Any, k: int, ins: list[Tensor],
                    chunk_size: int | None) -> list[Tensor] | None:  # fmt: skip
    """Output leaf ``k``'s Jacobian blocks by ``vmap(vjp_fn)`` over the basis of its cotangents (None: loop)."""
    vmap = _vmap()
    o = o_leaves[k]
    n = o.numel()
    if vmap is None or n == 0 or chunk_size == 1:
        return None
    eye = _eye_rows(n, o)
    parts: list[list[Tensor]] = [[] for _ in ins]
    try:
        for lo, hi in _chunks(n, chunk_size):
            m = hi - lo
            basis = _m.reshape(eye[lo:hi], (m, *o.shape))
            cts = [
                basis if j == k else _m.broadcast_to(_c.zeros_like(q), (m, *q.shape)) for j, q in enumerate(o_leaves)
            ]
            grads = vmap(vjp_fn)(pt.unflatten(cts, o_spec))
            flat = [g for tree in grads for g in pt.flatten(tree)[0]]
            for p_, g in zip(parts, flat):
                p_.append(g)
    except Exception:  # noqa: BLE001 - an op vmap cannot batch: the loop below gives the same numbers
        return None
    return [_m.reshape(_m.concat(p_, axis=0) if len(p_) > 1 else p_[0], tuple(o.shape) + tuple(x.shape))
            for p_, x in zip(parts, ins)]  # fmt: skip


def _one_hot_like(z: Tensor, e: int) -> Tensor:
    """``z`` (zeros, 1-D) with a one at ``e``, out of place (so an enclosing transform's tangents stay right)."""
    from ..ops import indexing as _i

    return _i.SetItem.apply(z, (e,), False, 1.0)


def jacfwd(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable[..., Any]:  # fmt: skip
    """The Jacobian of ``func`` with respect to ``args[argnums]`` by forward mode (one JVP per input element).

    Blocks and structure as :func:`jacrev`. ``randomness`` ("error", "different", "same") is vmap's and is checked
    only (no random draws are batched here).
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"jacfwd: randomness must be 'error', 'different' or 'same', got {randomness!r}")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums = _argnums(argnums, len(args), "jacfwd")
        per_arg = [(pt.flatten(args[i])[1], len(pt.flatten(args[i])[0])) for i in nums]
        ins = [_check_leaf(x, "jacfwd", "an input") for i in nums for x in pt.flatten(args[i])[0]]

        def call(*xs: Any) -> Any:
            full, p = list(args), 0
            for i, (spec, n) in zip(nums, per_arg):
                full[i] = pt.unflatten(list(xs[p : p + n]), spec)
                p += n
            return func(*full, **kwargs)

        keep = bool(fwd.levels) or _depth[0] > 0 or any(x._requires_grad for x in ins)
        with _Nested():
            fast = _jacfwd_vmapped(call, ins, per_arg, has_aux, isinstance(argnums, int), keep)
        if fast is not None:
            return fast
        columns: list[list[list[Any]]] = [[] for _ in ins]  # [input leaf][element] -> flat output tangents
        out = aux = None
        o_spec = None
        with _Nested():
            for j, x in enumerate(ins):
                for e in range(x.numel()):
                    ts = tuple(
                        _m.reshape(_one_hot_like(_m.reshape(_c.zeros_like(q), (-1,)), e), q.shape) if i == j
                        else _c.zeros_like(q) for i, q in enumerate(ins)
                    )  # fmt: skip
                    res = jvp(call, tuple(ins), ts, has_aux=has_aux)
                    o, t = res[0], res[1]
                    if out is None:
                        out, aux = o, (res[2] if has_aux else None)
                    t_leaves, o_spec = pt.flatten(t)
                    columns[j].append(t_leaves)
            if out is None:  # every input is empty: one plain call for the output's structure
                res = call(*ins)
                out, aux = _split_aux(res, has_aux, "jacfwd")
            o_leaves, o_spec = pt.flatten(out)
            jac_leaves = []
            for k, o in enumerate(o_leaves):
                blocks = []
                for j, x in enumerate(ins):
                    cols = [c[k] for c in columns[j]]
                    if cols:
                        blk = _m.reshape(_m.stack(cols, axis=-1), tuple(o.shape) + tuple(x.shape))
                    else:
                        blk = _c.zeros(tuple(o.shape) + tuple(x.shape), dtype=o.dtype, device=o.device)
                    blocks.append(_release(blk, keep))
                jac_leaves.append(_blocks(per_arg, blocks, isinstance(argnums, int)))
        jac = pt.unflatten(jac_leaves, o_spec)
        return (jac, pt.tree_map(lambda a: _release(a, keep), aux)) if has_aux else jac

    return wrapper


def _jacfwd_vmapped(call: Callable[..., Any], ins: list[Tensor], per_arg: list[tuple[Any, int]], has_aux: bool,
                    int_argnums: bool, keep: bool) -> Any:  # fmt: skip
    """``jacfwd`` by one ``vmap`` of ``jvp`` over the identity's rows (None: the caller loops)."""
    vmap = _vmap()
    sizes = [x.numel() for x in ins]
    total = sum(sizes)
    if vmap is None or total == 0 or any(x._requires_grad for x in ins):
        # an enclosing reverse mode (jacrev(jacfwd(f))) would differentiate through vmap's graph: the loop instead
        return None
    eye = _eye_rows(total, ins[0])
    basis, lo = [], 0
    for x, n in zip(ins, sizes):
        basis.append(_m.reshape(_m.astype(eye[:, lo : lo + n], x.dtype), (total, *x.shape)))
        lo += n
    try:
        res = call(*ins)
        out, aux = _split_aux(res, has_aux, "jacfwd")
        o_leaves, o_spec = pt.flatten(out)

        def tangents(*ts: Any) -> Any:
            r = jvp(call, tuple(ins), ts, has_aux=has_aux)
            return r[1]

        tans = vmap(tangents)(*basis)
    except Exception:  # noqa: BLE001 - an op vmap cannot batch: the loop gives the same numbers
        return None
    t_leaves = pt.flatten(tans)[0]
    jac_leaves = []
    for o, t in zip(o_leaves, t_leaves):
        blocks, lo = [], 0
        nd = o.ndim
        for x, n in zip(ins, sizes):
            part = t[lo : lo + n]  # (n, *o.shape)
            lo += n
            moved = _m.permute_dims(part, (*range(1, nd + 1), 0))
            blocks.append(_release(_m.reshape(moved, tuple(o.shape) + tuple(x.shape)), keep))
        jac_leaves.append(_blocks(per_arg, blocks, int_argnums))
    jac = pt.unflatten(jac_leaves, o_spec)
    return (jac, pt.tree_map(lambda a: _release(a, keep), aux)) if has_aux else jac


def hessian(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    """The Hessian of a scalar ``func`` with respect to ``args[argnums]``: ``jacfwd(jacrev(func))``."""
    return jacfwd(jacrev(func, argnums), argnums)
