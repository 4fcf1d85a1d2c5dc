"""Batching rules: how each op runs once on physical tensors whose batch axis is first (``vmap``'s engine).

A rule gets the op's ``Function`` class, the arguments ``apply`` received (wrappers at ``level`` and plain or
lower-level tensors, which are unbatched at this level), its keyword arguments, the level and its batch size,
and returns the op's physical output(s), batch axis first. Most ops fall in a few categories, so the table
:data:`RULES` at the end declares each op by its category:

- ``ELEMENTWISE``: broadcasting ops; a batched argument of lower rank than the result is padded with unit axes
  after its batch axis, so broadcasting aligns the example's axes.
- ``axes(i)``: the argument at position ``i`` names axes of the first argument (an int, a tuple, or None for
  all): each is shifted past the batch axis.
- ``TRAILING``: ops on the last axes that broadcast over leading ones (linalg, ``tril``): the physical tensor
  goes through as it is.
- ``FOLD``: nn kernels on (N, ...) inputs (pooling, im2col): the batch axis is merged into N and split out after.
- shape ops, products, indexing and a few nn kernels have their own rule; ``DECOMPOSE`` rules compose the op
  from other ops on the wrappers (their nodes are the graph: the op keeps state from its forward in ``ctx``).
- ``LOOP``: PyTorch's slow fallback: the op runs once per example, with PyTorch's performance warning.
- ``NOT_BATCHABLE``: ops whose output shape depends on the values (``nonzero``, ``unique``): PyTorch raises too.

An op missing from the table raises ``RuntimeError`` naming it (a custom ``Function`` included, as PyTorch's
``autograd.Function`` without ``vmap`` support does).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ._vmap import BatchedTensor, _Logical, _warn_fallback


class Rule:
    """A batching rule: ``run(cls, args, kwargs, level, size)``; ``decomposes`` when it returns wrappers whose
    graph it built from other ops; ``inherited`` when subclasses of the op share it."""

    __slots__ = ("decomposes", "inherited", "kind", "run")

    def __init__(self, run: Callable[..., Any], kind: str, decomposes: bool = False, inherited: bool = False):
        self.run = run
        self.kind = kind
        self.decomposes = decomposes
        self.inherited = inherited

    def __repr__(self) -> str:
        return f"<batching rule {self.kind}>"


class Composed:
    """A rule's result made of other ops on the wrappers: their nodes are the graph (``apply`` records none)."""

    __slots__ = ("out",)

    def __init__(self, out: Any) -> None:
        self.out = out


def _is_b(a: Any, level: int) -> bool:
    return type(a) is BatchedTensor and a._level == level


def _reshape(p: Tensor, shape: tuple[int, ...]) -> Tensor:
    from ..ops.manipulation import Reshape

    return Reshape.apply(p, tuple(shape))


def _permute(p: Tensor, axes: tuple[int, ...]) -> Tensor:
    from ..ops.manipulation import PermuteDims

    return PermuteDims.apply(p, tuple(axes))


def _pad(p: Tensor, n: int) -> Tensor:
    """``p`` (batch first) with ``n`` unit axes after the batch axis."""
    if n <= 0:
        return p
    s = tuple(p.shape)
    return _reshape(p, (s[0], *(1,) * n, *s[1:]))


def _expand(a: Any, size: int) -> Tensor:
    """An unbatched tensor as a physical batch of ``size`` equal examples (a broadcast view)."""
    from ..ops.manipulation import BroadcastTo

    s = tuple(a.shape)
    return BroadcastTo.apply(_reshape(a, (1, *s)), (size, *s))


def _phys(a: Any, level: int, size: int) -> Tensor:
    """The physical tensor of ``a`` at ``level`` (unbatched ones broadcast to the batch)."""
    return a._phys if _is_b(a, level) else _expand(a, size)


def _shift(ax: Any, ndim: int) -> Any:
    """Logical axes (int, tuple or None for all of ``ndim``) as physical ones."""
    if ax is None:
        return tuple(range(1, ndim + 1))
    if isinstance(ax, tuple):
        return tuple(a + 1 if a >= 0 else a for a in ax)
    return ax + 1 if ax >= 0 else ax


# -- categories ----------------------------------------------------------------------------------------------------


def _elementwise(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    rank = 0
    for a in args:
        if isinstance(a, Tensor):
            n = len(a._data.shape)
            if n > rank:
                rank = n
    new = []
    for a in args:
        if _is_b(a, level):
            new.append(_pad(a._phys, rank - len(a._data.shape)))
        else:
            new.append(a)
    return cls.apply(*new, **kwargs)


def _trailing(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    new = [a._phys if _is_b(a, level) else a for a in args]
    if not _is_b(args[0], level):
        return _loop(cls, args, kwargs, level, size)
    for a in args[1:]:
        if isinstance(a, Tensor):  # two operands of a linear-algebra op: run per example
            return _loop(cls, args, kwargs, level, size)
    return cls.apply(*new, **kwargs)


def axes(pos: int, flatten_none: bool = False) -> Rule:
    """The rule of an op whose argument ``pos`` names axes of its first argument."""

    def run(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
        x = args[0]
        if any(_is_b(a, level) for a in args[1:]) and isinstance(args[1], Tensor):
            return _loop(cls, args, kwargs, level, size)
        if not _is_b(x, level):
            return _loop(cls, args, kwargs, level, size)
        nd = x.ndim
        ax = args[pos]
        new = list(args)
        new[0] = x._phys
        if ax is None and flatten_none:
            # the op flattens: flatten each example, run along axis 1, restore keepdims' shape
            new[0] = _reshape(x._phys, (size, -1))
            new[pos] = 1
            out = cls.apply(*new, **kwargs)
            keep = len(args) > pos + 1 and args[pos + 1] is True
            if keep and not isinstance(out, tuple):
                out = _reshape(out, (size, *(1,) * nd))
            return out
        new[pos] = _shift(ax, nd)
        return cls.apply(*new, **kwargs)

    return Rule(run, f"axes({pos})")


def _roll_rule(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    x, shift, axis = args
    if axis is None:  # rolls the flattened example
        out = cls.apply(_reshape(x._phys, (size, -1)), shift, 1)
        return _reshape(out, (size, *x.shape))
    return cls.apply(x._phys, shift, _shift(axis, x.ndim))


def _fold(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    """Merge the batch axis into each batched argument's first axis (N); the outputs' first axis splits again."""
    new = []
    n = None
    for a in args:
        if _is_b(a, level):
            s = tuple(a._phys.shape)
            n = s[1]
            new.append(_reshape(a._phys, (size * s[1], *s[2:])))
        elif isinstance(a, Tensor) and a is args[0]:
            return _loop(cls, args, kwargs, level, size)
        else:
            new.append(a)
    out = cls.apply(*new, **kwargs)

    def split(o: Tensor) -> Tensor:
        s = tuple(o.shape)
        return _reshape(o, (size, s[0] // size, *s[1:])) if n is not None else o

    return tuple(split(o) for o in out) if type(out) is tuple else split(out)


def _loop(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    """PyTorch's fallback: run the op per example and stack the results (with its performance warning)."""
    from ..ops.manipulation import stack

    _warn_fallback(cls.__name__)
    outs = []
    for i in range(size):
        outs.append(cls.apply(*[_example(a, level, i) for a in args], **kwargs))
    if type(outs[0]) is tuple:
        return tuple(stack([o[j] for o in outs], axis=0) for j in range(len(outs[0])))
    return stack(outs, axis=0)


def _example(a: Any, level: int, i: int) -> Any:
    if _is_b(a, level):
        return a._phys[i]
    if type(a) is _Logical and a.level == level:
        p = a.phys[i]
        return p._data
    if type(a) is tuple:
        return tuple(_example(k, level, i) for k in a)
    return a


def _not_batchable(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    raise RuntimeError(
        f"vmap: {cls.__name__} is not supported under vmap: the shape of its output depends on the values of its "
        "input (data-dependent output shape). Move it out of the vmapped function"
    )


def no_rule(cls: type) -> Rule:
    """The rule of an op without one: an error naming it."""

    def run(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
        raise RuntimeError(
            f"vmap: {cls.__name__} has no batching rule (a custom Function needs its own; ops of lucid_core are "
            "listed in lucid_core.func._batching_rules.RULES). Call it outside vmap, or loop over the examples"
        )

    return Rule(run, "none")


# -- shape ops -----------------------------------------------------------------------------------------------------


def _reshape_rule(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    x, shape = args
    return cls.apply(x._phys, (size, *shape))


def _permute_rule(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    x, perm = args
    nd = x.ndim
    return cls.apply(x._phys, (0, *[(p % nd) + 1 for p in perm]))


def _broadcast_rule(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    x, shape = args
    return cls.apply(_pad(x._phys, len(shape) - x.ndim), (size, *shape))


def _concat_rule(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    axis, *xs = args
    return cls.apply(_shift(axis, xs[0].ndim), *[_phys(x, level, size) for x in xs])


def _einsum_rule(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    spec, *xs = args
    if "->" not in spec:
        return _loop(cls, args, kwargs, level, size)
    ins, out = spec.replace(" ", "").split("->")
    letter = next(c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba" if c not in spec)
    parts = ins.split(",")
    new = [letter + p if _is_b(x, level) else p for p, x in zip(parts, xs)]
    phys = [x._phys if _is_b(x, level) else x for x in xs]
    return cls.apply(",".join(new) + "->" + letter + out, *phys)


def _matmul_rule(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    a, b = args
    ba, bb = _is_b(a, level), _is_b(b, level)
    ra, rb = a.ndim, b.ndim
    if ba and not bb and rb == 2 and ra in (1, 2):  # the common cases need no reshape: (B,k)@(k,n), (B,m,k)@(k,n)
        return cls.apply(a._phys, b)
    if ba and not bb and rb == 1:
        return cls.apply(a._phys, b)  # (B, ..., m, k) @ (k,) -> (B, ..., m); (B, k) @ (k,) -> (B,)
    # general case: vectors as matrices, batched operands padded to the result's batch rank
    pa = a._phys if ba else a
    pb = b._phys if bb else b
    if ra == 1:
        pa = _reshape(pa, (size, 1, pa.shape[-1]) if ba else (1, pa.shape[-1]))
    if rb == 1:
        pb = _reshape(pb, (size, pb.shape[-1], 1) if bb else (pb.shape[-1], 1))
    la = max(ra, 2) - 2
    lb = max(rb, 2) - 2
    lead = max(la, lb)
    if ba:
        pa = _pad(pa, lead - la)
    if bb:
        pb = _pad(pb, lead - lb)
    if ba and bb and pa.shape[-1] == 1:
        # a contraction of length 1 is an outer product (per-example weight gradients: (m, 1) @ (1, n)): one
        # broadcast multiply, where a stack of matrix products would make one BLAS call per example
        from ..ops.elementwise import Multiply

        out = Multiply.apply(pa, pb)
    else:
        out = cls.apply(pa, pb)
    s = tuple(out.shape)
    if ra == 1 and rb == 1:
        return _reshape(out, (size,))
    if ra == 1:
        return _reshape(out, (*s[:-2], s[-1]))
    if rb == 1:
        return _reshape(out, s[:-1])
    return out


# -- indexing ------------------------------------------------------------------------------------------------------

#: ops whose key (a tuple of natives) may hold a batched index: dispatch looks inside it
KEYED = frozenset({"GetItem", "IndexAdd", "SetItem"})


def key_level(args: tuple[Any, ...]) -> int:
    """The highest level of a batched index in the key of an indexing op (-1 if none)."""
    level = -1
    for a in args:
        if type(a) is tuple:
            for k in a:
                if type(k) is _Logical and k.level > level:
                    level = k.level
    return level


def _basic_key(key: Any, level: int) -> tuple[Any, ...] | None:
    """The physical key (a batch slice first) when ``key`` can index the physical tensor directly, else None."""
    if type(key) is not tuple:
        key = (key,)
    positions = []
    for i, k in enumerate(key):
        if type(k) is _Logical:
            if k.level == level:
                return None
            positions.append(i)
        elif not (k is None or k is Ellipsis or isinstance(k, slice)):
            positions.append(i)  # ints and index arrays: NumPy's advanced indices when arrays are present
    arrays = any(not isinstance(key[i], int) for i in positions)
    if arrays and positions and positions[-1] - positions[0] + 1 != len(positions):
        return None  # separated advanced indices put their axes first: not the batch's place
    return (slice(None), *key)


def _is_array(k: Any) -> bool:
    return not (k is None or k is Ellipsis or isinstance(k, (slice, int)))


def _advanced_key(key: Any, nd: int, level: int, size: int, xp: Any) -> tuple[tuple[Any, ...], int, int] | None:
    """The physical key of a key with index arrays, some batched: a batch ``arange`` first, batched arrays by their
    physical values. Returns (key, rank of the broadcast index, dims before it in the example's result), the last
    being where the index's axes go (PyTorch's and NumPy's rule: in place when the arrays are adjacent, else
    first), or None for keys this rule does not take (bool masks)."""
    key = key if type(key) is tuple else (key,)
    if any(k is Ellipsis for k in key):  # spell the ellipsis out: positions must be known
        i = key.index(Ellipsis)
        used = sum(1 for k in key if k is not None and k is not Ellipsis)
        key = (*key[:i], *(slice(None),) * (nd - used), *key[i + 1 :])
    arrays = []
    for k in key:
        if type(k) is _Logical:
            if "bool" in str(k.dtype):
                return None
            arrays.append(len(k.shape))
        elif _is_array(k):
            if "bool" in str(getattr(k, "dtype", "")):
                return None
            arrays.append(len(k.shape))
    rank = max(arrays) if arrays else 0
    adv = [i for i, k in enumerate(key) if type(k) is _Logical or _is_array(k) or isinstance(k, int)]
    adjacent = adv[-1] - adv[0] + 1 == len(adv)
    before = sum(1 for k in key[: adv[0]] if k is None or isinstance(k, slice)) if adjacent else 0
    new: list[Any] = [xp.reshape(xp.arange(size), (size, *(1,) * rank))]
    for k in key:
        if type(k) is _Logical and k.level == level:
            p = k.phys._data
            if len(k.shape) < rank:
                p = xp.reshape(p, (size, *(1,) * (rank - len(k.shape)), *k.shape))
            new.append(p)
        else:
            new.append(k)
    return tuple(new), rank, before


def _getitem_rule(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    x, key, advanced = args
    if _is_b(x, level):
        pk = _basic_key(key, level)
        if pk is not None:
            return cls.apply(x._phys, pk, advanced)
    plan = _advanced_key(key, x.ndim, level, size, x._device.xp)
    if plan is None:
        return _loop(cls, args, kwargs, level, size)
    pk, rank, before = plan
    out = cls.apply(_phys(x, level, size), pk, True)
    if before:  # the index's axes belong after ``before`` sliced axes
        nd = out.ndim
        perm = (0, *range(rank + 1, rank + 1 + before), *range(1, rank + 1), *range(rank + 1 + before, nd))
        out = _permute(out, perm)
    return out


def _index_add_rule(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    values, key, advanced, shape = args
    if _is_b(values, level):
        pk = _basic_key(key, level)
        if pk is not None:
            target = _target_shape(shape, key)
            return cls.apply(_pad(values._phys, target - values.ndim), pk, advanced, (size, *shape))
    plan = _advanced_key(key, len(shape), level, size, values._device.xp)
    if plan is None:
        return _loop(cls, args, kwargs, level, size)
    pk, rank, before = plan
    pv = _phys(values, level, size)
    if before:
        nd = pv.ndim
        perm = (0, *range(before + 1, before + 1 + rank), *range(1, before + 1), *range(rank + 1 + before, nd))
        pv = _permute(pv, perm)
    return cls.apply(pv, pk, True, (size, *shape))


def _target_shape(shape: tuple[int, ...], key: Any) -> int:
    """The rank of ``zeros(shape)[key]`` for a basic key (or one advanced group) without computing it."""
    ranks = 0
    consumed = 0
    adv_rank = None
    for k in key if type(key) is tuple else (key,):
        if k is None:
            ranks += 1
        elif k is Ellipsis:
            continue
        elif isinstance(k, slice):
            ranks += 1
            consumed += 1
        elif isinstance(k, int):
            consumed += 1
        else:
            nd = len(k.shape)
            adv_rank = nd if adv_rank is None else max(adv_rank, nd)
            consumed += 1
    rest = len(shape) - consumed
    return ranks + rest + (adv_rank or 0)


def _setitem_rule(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    x, key, advanced, value = args
    pk = _basic_key(key, level)
    if pk is None:
        return _loop(cls, args, kwargs, level, size)
    px = _phys(x, level, size)
    if _is_b(value, level):
        target = _target_shape(tuple(x.shape), key)
        value = _pad(value._phys, target - value.ndim)
    return cls.apply(px, pk, advanced, value)


def _overwrite_rule(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    target, value = args
    pt = _phys(target, level, size)
    if _is_b(value, level):
        value = _pad(value._phys, target.ndim - value.ndim)
    return cls.apply(pt, value)


# -- nn kernels ----------------------------------------------------------------------------------------------------


def _linear_rule(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    x, w, b = args
    if _is_b(x, level) and not _is_b(w, level) and not _is_b(b, level) and x.ndim >= 1:
        return cls.apply(x._phys, w, b)  # (B, ..., in) rows through the one 2-D product
    # a batched weight (ensembles): the product and the sum, each batched
    from ..ops import manipulation as _m
    from ..ops import products as _p

    y = _p.matmul(x, _m.matrix_transpose(w))
    return Composed(y if b is None else y + b)


def _conv_rule(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    """conv(x, w, ...), conv_bias(x, w, b, ...), conv_input_grad(gy, w, ...): a batched data argument folds into
    N; batched weights use groups (each example's filters see only that example's channels)."""
    data, w = args[0], args[1]
    rest = list(args[2:])
    bias = None
    if cls.__name__ == "_ConvBias":
        bias, rest = rest[0], rest[1:]
    if _is_b(w, level) or _is_b(bias, level) or not _is_b(data, level):
        return _loop(cls, args, kwargs, level, size)
    s = tuple(data._phys.shape)
    folded = _reshape(data._phys, (size * s[1], *s[2:]))
    new = [folded, w] + ([bias] if cls.__name__ == "_ConvBias" else []) + rest
    out = cls.apply(*new)
    o = tuple(out.shape)
    return _reshape(out, (size, s[1], *o[1:]))


def _conv_weight_grad_rule(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    """Per-example weight gradients in one call: the batch goes into the channels, ``groups`` times ``size``."""
    x, gy, kernel, stride, dilation, pads, groups = args
    px, pg = _phys(x, level, size), _phys(gy, level, size)
    sx, sg = tuple(px.shape), tuple(pg.shape)  # (B, N, C, ...), (B, N, O, ...)
    xs = _reshape(_permute(px, (1, 0, *range(2, len(sx)))), (sx[1], size * sx[2], *sx[3:]))
    gs = _reshape(_permute(pg, (1, 0, *range(2, len(sg)))), (sg[1], size * sg[2], *sg[3:]))
    out = cls.apply(xs, gs, kernel, stride, dilation, pads, groups * size)  # (B*O, C/groups, k...)
    o = tuple(out.shape)
    return _reshape(out, (size, o[0] // size, *o[1:]))


def _channel_sum_rule(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    from ..ops.reduction import Sum

    (g,) = args
    nd = g.ndim
    return Sum.apply(g._phys, (1, *range(3, nd + 1)), False, None)


def _cross_entropy_rule(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    """cross_entropy of (N, C) logits and (N,) indices, composed of batchable ops (the op keeps its
    log-probabilities in ``ctx``, which a per-example backward cannot read)."""
    from ..ops import creation as _c
    from ..ops import elementwise as _e
    from ..ops import manipulation as _m
    from ..ops import reduction as _r

    x, target, ignore_index, reduction, smoothing = args
    logp = x - _r.logsumexp(x, axis=-1, keepdims=True)
    classes = _c.arange(x.shape[-1], device=x.device)
    onehot = _m.astype(_e.equal(_m.expand_dims(target, axis=-1), classes), x.dtype)
    loss = -_r.sum(logp * onehot, axis=-1)
    if smoothing:
        loss = (1.0 - smoothing) * loss - smoothing * _r.mean(logp, axis=-1)
    w = _m.astype(_e.not_equal(target, ignore_index), x.dtype)
    loss = loss * w
    if reduction == "none":
        return loss
    total = _r.sum(loss)
    if reduction == "sum":
        return total
    return total / _r.sum(w)


def _layer_norm_rule(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    """layer_norm over the last axis (the op keeps its mean and rstd in ``ctx``): composed of batchable ops."""
    from ..ops import elementwise as _e
    from ..ops import reduction as _r

    x, w, b, eps = args
    mu = _r.mean(x, axis=-1, keepdims=True)
    d = x - mu
    var = _r.mean(d * d, axis=-1, keepdims=True)
    y = d / _e.sqrt(var + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def _passthrough(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    """An identity on its tensors (nn hooks' node): the physical tensors go through."""
    return cls.apply(*[_phys(a, level, size) if isinstance(a, Tensor) else a for a in args], **kwargs)


def _unstack_rule(cls: Any, args: tuple[Any, ...], kwargs: dict[str, Any], level: int, size: int) -> Any:
    from ..ops import manipulation as _m

    (x,) = args
    p = _m.moveaxis(x._phys, 1, 0)
    return tuple(p[i] for i in range(p.shape[0]))


# -- the table -----------------------------------------------------------------------------------------------------

ELEMENTWISE = Rule(_elementwise, "elementwise")
TRAILING = Rule(_trailing, "trailing")
FOLD = Rule(_fold, "fold")
LOOP = Rule(_loop, "loop")
NOT_BATCHABLE = Rule(_not_batchable, "not batchable")
PASSTHROUGH = Rule(_passthrough, "passthrough")


def _rule(fn: Callable[..., Any], kind: str) -> Rule:
    return Rule(fn, kind)


def _decompose(fn: Callable[..., Any], kind: str) -> Rule:
    return Rule(fn, kind, decomposes=True)


_ELEMENTWISE_OPS = (
    # lucid_core.ops.elementwise
    "Abs Acos Acosh Add Asin Asinh Atan Atan2 Atanh BitwiseAnd BitwiseLeftShift BitwiseOr BitwiseRightShift "
    "BitwiseXor Bitwise_invert Ceil Clip Conj Copysign Cos Cosh Divide Equal Erf Exp Expm1 Floor FloorDivide "
    "Greater GreaterEqual Hypot Isfinite Isinf Isnan Less LessEqual Log Log10 Log1p Log2 Logaddexp LogicalAnd "
    "LogicalOr LogicalXor Logical_not Maximum Minimum Multiply Negative NotEqual Pow Relu ReluGrad Remainder Round "
    "Sigmoid SigmoidGrad Sign Signbit Sin Sinh Sqrt Square Subtract Tan Tanh TanhGrad Trunc Where "
    # complex, manipulation, reduction, utility
    "Real Imag Astype Clone ToDevice SqrtOfVariance NextAfter "
    # lucid_core.special
    "Special_airy_ai Special_bessel_j0 Special_bessel_j1 Special_bessel_y0 Special_bessel_y1 Special_digamma "
    "Special_erfc Special_erfcx Special_erfinv Special_gammaln Special_i0 Special_i0e Special_i1 Special_i1e "
    "Special_log_ndtr Special_modified_bessel_k0 Special_modified_bessel_k1 Special_ndtri "
    "Special_scaled_modified_bessel_k0 Special_scaled_modified_bessel_k1 _Gammainc _Polygamma _Zeta "
    # lucid_nn element-wise kernels
    "_Gelu _GeluGrad _XLogX _BinaryCrossEntropy"
).split()

_TRAILING_OPS = "Tril Triu Cholesky Det Eig Eigh Eigvals Inv LU MatrixRank Pinv QR SVD Slogdet".split()

#: PyTorch's slow fallback (per example, with its warning): two-operand linalg, scatter-like writes, attention
_LOOP_OPS = (
    "Solve Searchsorted _Permute _Scatter WriteView _OverlapAdd _Attention _AttentionGrad _PackedAttention "
    "_PackedAttentionGrad _CrossMapLRN2d _IndexCrossEntropyGrad _LayerNormGrad"
).split()

#: op name -> its batching rule (Function classes are looked up by name along their MRO)
RULES: dict[str, Rule] = {
    **dict.fromkeys(_ELEMENTWISE_OPS, ELEMENTWISE),
    **dict.fromkeys(_TRAILING_OPS, TRAILING),
    # reductions and ops along axes
    **dict.fromkeys(
        ("Sum", "Max", "Min", "Prod", "Logsumexp", "AllOp", "AnyOp", "_Norm2", "_PNorm", "_FirstMax"), axes(1)
    ),
    **dict.fromkeys(("Flip", "CumulativeSum", "CumulativeProd", "Argsort", "Sort", "Split"), axes(1)),
    **dict.fromkeys(("_Softmax", "_LogSoftmax"), axes(1)),
    **dict.fromkeys(("Argmax", "Argmin"), axes(1, flatten_none=True)),
    "Roll": _rule(_roll_rule, "roll"),
    "Cross": axes(2),
    "_C2C": axes(3),
    "_R2C": axes(2),
    "_C2R": axes(2),
    # shape ops
    "Reshape": _rule(_reshape_rule, "reshape"),
    "PermuteDims": _rule(_permute_rule, "permute"),
    "BroadcastTo": _rule(_broadcast_rule, "broadcast"),
    "Concat": _rule(_concat_rule, "concat"),
    "_Unstack": _rule(_unstack_rule, "unstack"),
    # products
    "Matmul": _rule(_matmul_rule, "matmul"),
    "Einsum": _rule(_einsum_rule, "einsum"),
    # indexing
    "GetItem": _rule(_getitem_rule, "getitem"),
    "IndexAdd": _rule(_index_add_rule, "index_add"),
    "SetItem": _rule(_setitem_rule, "setitem"),
    "Overwrite": _rule(_overwrite_rule, "overwrite"),
    # nn kernels
    "_Linear": _rule(_linear_rule, "linear"),
    "_Conv": _rule(_conv_rule, "conv"),
    "_ConvBias": _rule(_conv_rule, "conv"),
    "_ConvInputGrad": _rule(_conv_rule, "conv"),
    "_ConvWeightGrad": _rule(_conv_weight_grad_rule, "conv_weight_grad"),
    "_ChannelSum": _rule(_channel_sum_rule, "channel_sum"),
    **dict.fromkeys(("_AvgPool", "_TileMax", "_TileMaxGrad", "Im2col", "Col2im"), FOLD),
    "_IndexCrossEntropy": _decompose(_cross_entropy_rule, "cross_entropy"),
    "_LayerNorm": _decompose(_layer_norm_rule, "layer_norm"),
    "_BackwardHookIdentity": PASSTHROUGH,
    **dict.fromkeys(_LOOP_OPS, LOOP),
    # data-dependent output shapes
    **dict.fromkeys(("Nonzero", "_Unique"), NOT_BATCHABLE),
}
