"""``vmap``: vectorise a function over a batch dimension by batching rules (PyTorch 2.13's ``torch.vmap``).

Inside ``vmap`` the function sees :class:`BatchedTensor` wrappers: each holds its *physical* tensor (the batch
axis first) and reports the *logical*, per-example shape, dtype and device. ``Function.apply`` (and its unary and
binary fast paths) hand every op with a wrapped argument to :func:`dispatch`, which runs the op's batching rule
(``_batching_rules.RULES``): the op runs once on the physical tensors (axes shifted, ranks padded, matmul with a
batch axis...), so the vectorised function makes as many kernel calls as the unbatched one. The node of the op
is then recorded on the wrappers, so reverse mode inside ``vmap`` (``vmap(grad(f))``) differentiates
per example: the backward formulas run on wrappers and dispatch through the same rules. The physical call keeps
its own graph too, which is what a gradient taken outside (``grad(vmap(f))``) follows.

Levels nest as in functorch: ``vmap(vmap(f))`` wraps a wrapper; an op is dispatched at the highest level among
its arguments and the physical call dispatches the lower levels again.
"""

from __future__ import annotations

__all__ = ["BatchedTensor", "vmap"]

import functools
import sys
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from .. import _autograd
from .. import _tensor as _tensor_module
from .._tensor import Tensor, _init_slots
from ..ops import random as _random

_RANDOMNESS = ("error", "different", "same")


class _Level:
    """One active ``vmap``: its nesting index, batch size and randomness mode."""

    __slots__ = ("index", "randomness", "size")

    def __init__(self, index: int, size: int, randomness: str) -> None:
        self.index = index
        self.size = size
        self.randomness = randomness


#: the active vmap levels, outermost first
_levels: list[_Level] = []

_DATA_DEPENDENT = (
    "vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow. We don't support "
    "that yet, please shout over at https://github.com/pytorch/functorch/issues/257 ."
)


def _data_dependent(*_: Any, **__: Any) -> Any:
    raise RuntimeError(_DATA_DEPENDENT)


class _Logical:
    """What a :class:`BatchedTensor` holds as its native array: the per-example shape and the dtype only.

    Code that reads ``t._data.shape`` or ``.dtype`` sees the logical values; any computation on it (``item()``,
    ``bool()``, NumPy conversion, a kernel called outside ``Function.apply``) raises PyTorch's vmap error
    rather than computing on the physical array.
    """

    __slots__ = ("dtype", "level", "phys", "shape")
    base = None  # NumPy's ``view.base`` protocol: never a view of another array

    def __init__(self, phys: Tensor, level: int) -> None:
        self.shape = tuple(phys._data.shape[1:])
        self.dtype = phys._data.dtype
        self.phys = phys
        self.level = level

    @property
    def ndim(self) -> int:
        return len(self.shape)

    __array__ = __bool__ = __float__ = __int__ = __index__ = __complex__ = _data_dependent
    __iter__ = __getitem__ = __setitem__ = __dlpack__ = _data_dependent
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _data_dependent
    __lt__ = __le__ = __gt__ = __ge__ = _data_dependent


class BatchedTensor(Tensor):
    """A tensor seen per example inside ``vmap``: ``_phys`` has the batch axis first, at vmap level ``_level``.

    ``shape``, ``ndim``, ``len()``, ``dtype`` and ``device`` are the logical (per-example) ones; ops dispatch
    through batching rules. Reading values (``item()``, ``bool()``, ``numpy()``, ``tolist()``) raises, as data-
    dependent control flow does under PyTorch's vmap.
    """

    __slots__ = ("_level", "_phys")

    # -- values cannot be read per example ---------------------------------------------------------------------
    item = tolist = numpy = tobytes = __array__ = __dlpack__ = _data_dependent
    __bool__ = __float__ = __int__ = __index__ = __complex__ = _data_dependent

    def __repr__(self) -> str:
        return f"BatchedTensor(lvl={self._level}, bdim=0, value=\n{self._phys!r}\n)"

    __str__ = __repr__

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        raise RuntimeError("vmap: deepcopy of a batched tensor inside vmap is not supported; use .clone()")

    def detach(self) -> Tensor:
        """A wrapper of the detached physical tensor (no graph at any level)."""
        return _wrap(self._phys.detach(), self._level)

    def eval(self) -> Tensor:
        self._phys.eval()
        return self

    @property
    def native(self) -> Any:
        raise RuntimeError(_DATA_DEPENDENT)

    def _write(self, op: str, other: Any, alpha: Any = 1) -> bool:
        return False  # never the raw fast path: the write goes through _apply_inplace

    def _apply_inplace(self, fn: Callable[[Tensor], Tensor], opname: str, *operands: Any) -> Tensor:
        """An in-place op on a batched tensor: computed per example, written into the physical tensor."""
        result = fn(self)
        self._check_fits(result, opname)
        phys = _materialize(result, self._level, self._phys)
        p = self._phys
        p._apply_inplace(lambda _t: phys, opname, phys)
        self._data = _Logical(p, self._level)
        if result._requires_grad and result._node is not None:  # the write belongs in the per-example graph
            node = result._node
            self._node = node
            self._out_idx = result._out_idx
            self._requires_grad = True
            outs = list(node.outputs)
            outs[result._out_idx] = weakref.ref(self)
            node.outputs = outs
        return self


def _wrap(phys: Tensor, level: int) -> BatchedTensor:
    """``phys`` (batch axis first) as a wrapper at ``level``."""
    t = object.__new__(BatchedTensor)
    _init_slots(t, _Logical(phys, level), phys._device)
    t._phys = phys
    t._level = level
    return t


def _materialize(t: Any, level: int, like: Tensor) -> Tensor:
    """The physical tensor of ``t`` at ``level`` (batch first), broadcast to ``like``'s physical shape."""
    from ..ops import manipulation as _m

    if type(t) is BatchedTensor and t._level == level:
        p = t._phys
    else:
        p = _m.expand_dims(t, axis=0) if isinstance(t, Tensor) else t
    if isinstance(p, Tensor) and tuple(p.shape) != tuple(like.shape):
        p = _m.broadcast_to(p, tuple(like.shape))
    return p


def ones_like_batched(t: BatchedTensor) -> BatchedTensor:
    """Ones of ``t``'s logical shape as a wrapper (backward's seed for a batched output)."""
    from ..ops import creation as _c

    p = t._phys
    inner = ones_like_batched(p) if type(p) is BatchedTensor else _c.ones_like(p)
    return _wrap(inner, t._level)


def check_inplace(target: Tensor, result: Tensor, opname: str) -> None:
    """Refuse writing a batched value into a tensor that is not batched at that level (PyTorch's message)."""
    if type(result) is BatchedTensor and (type(target) is not BatchedTensor or target._level < result._level):
        raise RuntimeError(
            f"vmap: {opname}(self, *extra_args) is not possible because there exists a Tensor `other` in extra_args "
            "that has more elements than `self`. This happened due to `other` being vmapped over but `self` not "
            "being vmapped over in a vmap. Please try to use out-of-place operators instead of "
            f"{opname}(self, *extra_args). If said operator is being called inside the PyTorch framework, please "
            "file a bug report instead."
        )


def batched_backward(outputs: Any, grad_outputs: Any, capture: Any) -> bool:
    """Whether a backward pass starts from wrappers: batched outputs, or batched gradients of them (``vmap`` of a
    vjp). Then gradients travel as wrappers, not native arrays.

    ``backward()`` of a wrapper (accumulating into ``.grad``) is refused, as PyTorch does."""
    batched = any(type(t) is BatchedTensor for t in outputs)
    if batched and capture is None:
        raise RuntimeError(
            "vmap: backward() called inside torch.vmap. This is not supported, please call backward() outside "
            "torch.vmap or instead use torch.func.grad inside torch.vmap"
        )
    return batched or any(type(g) is BatchedTensor for g in grad_outputs)


# -- dispatch ------------------------------------------------------------------------------------------------------


def dispatch(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, bool] | None:
    """Run op ``cls`` by its batching rule when an argument is batched: ``(outputs, recorded)``, else None.

    ``recorded`` is True when the rule composed the result from other ops (their nodes are the graph);
    otherwise ``apply`` records ``cls``'s node on the wrappers it received and returns.
    """
    level = -1
    for a in args:
        if type(a) is BatchedTensor and a._level > level:
            level = a._level
    if level < 0:
        if cls.__name__ not in _rules.KEYED:
            return None
        level = _rules.key_level(args)
        if level < 0:
            return None
    rule = _rule_for(cls)
    size = _size_at(level, args)
    out = rule.run(cls, args, kwargs, level, size)
    if rule.decomposes:
        return out, True
    if type(out) is _rules.Composed:
        return out.out, True
    if type(out) is tuple:
        return tuple(_wrap(o, level) for o in out), False
    return _wrap(out, level), False


def _size_at(level: int, args: tuple[Any, ...]) -> int:
    for lv in _levels:
        if lv.index == level:
            return lv.size
    for a in args:  # a wrapper that outlived its vmap (its graph is replayed by a later backward)
        if type(a) is BatchedTensor and a._level == level:
            return a._phys.shape[0]
    raise RuntimeError(f"vmap: no batch size known for level {level}")


@functools.cache
def _rule_for(cls: type) -> Any:
    for c in cls.__mro__:
        rule = _rules.RULES.get(c.__name__)
        if rule is not None and (c is cls or rule.inherited):
            return rule
    return _rules.no_rule(cls)


# -- randomness ----------------------------------------------------------------------------------------------------


def _draw_batched(device: Any, draw: Callable[..., Any], shape: tuple[int, ...], *rest: Any) -> Tensor:
    """A random draw made while vmap is active, as the active levels' ``randomness`` modes say.

    "error" raises; "same" draws once (the per-example shape); "different" draws one sample per example of
    that level: the draw gets a leading axis per such level (outermost first) and is wrapped at each.
    """
    from .._tensor import _new_tensor

    different = []
    for lv in _levels:
        if lv.randomness == "error":
            raise RuntimeError(
                "vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                "'different' randomness flags on vmap or perform the randomness operation out of vmap"
            )
        if lv.randomness == "different":
            different.append(lv)
    t: Tensor = _new_tensor(draw((*[lv.size for lv in different], *shape), *rest), device)
    for lv in different:  # a higher level's wrapper holds the lower levels' wrappers
        t = _wrap(t, lv.index)
    return t


# -- in_dims / out_dims pytrees ------------------------------------------------------------------------------------


def _flatten(tree: Any) -> tuple[list[Any], Any]:
    """Leaves of a pytree (tuples, lists, dicts; anything else is a leaf) and a spec to rebuild it."""
    if isinstance(tree, (tuple, list)) and not hasattr(tree, "_fields"):
        leaves: list[Any] = []
        specs = []
        for v in tree:
            lv, sp = _flatten(v)
            leaves.extend(lv)
            specs.append((len(lv), sp))
        return leaves, (type(tree), specs)
    if isinstance(tree, tuple):  # a namedtuple
        leaves = []
        specs = []
        for v in tree:
            lv, sp = _flatten(v)
            leaves.extend(lv)
            specs.append((len(lv), sp))
        return leaves, (type(tree), specs)
    if isinstance(tree, dict):
        leaves = []
        specs = []
        keys = list(tree.keys())
        for k in keys:
            lv, sp = _flatten(tree[k])
            leaves.extend(lv)
            specs.append((len(lv), sp))
        return leaves, (dict, keys, specs)
    return [tree], None


def _unflatten(leaves: list[Any], spec: Any) -> Any:
    if spec is None:
        return leaves[0]
    if spec[0] is dict:
        _, keys, specs = spec
        out = {}
        i = 0
        for k, (n, sp) in zip(keys, specs):
            out[k] = _unflatten(leaves[i : i + n], sp)
            i += n
        return out
    kind, specs = spec
    items = []
    i = 0
    for n, sp in specs:
        items.append(_unflatten(leaves[i : i + n], sp))
        i += n
    if kind is list:
        return items
    if kind is tuple:
        return tuple(items)
    return kind(*items)  # namedtuple


def _broadcast_dims(dims: Any, tree: Any, what: str) -> list[Any]:
    """One dim per leaf of ``tree``: ``dims`` is an int/None for all of it, or a prefix tree of ``tree``."""
    if dims is None or isinstance(dims, int):
        return [dims] * len(_flatten(tree)[0])
    if isinstance(dims, (tuple, list)):
        if not isinstance(tree, (tuple, list)) or len(dims) != len(tree):
            raise ValueError(
                f"vmap: {what} is not compatible with the structure of the inputs: {what}={dims!r} has "
                f"{len(dims)} entries but the value it describes is {type(tree).__name__}"
                + (f" of length {len(tree)}" if isinstance(tree, (tuple, list)) else "")
            )
        out: list[Any] = []
        for d, t in zip(dims, tree):
            out.extend(_broadcast_dims(d, t, what))
        return out
    if isinstance(dims, dict):
        if not isinstance(tree, dict) or set(dims) != set(tree):
            raise ValueError(f"vmap: {what}={dims!r} does not match the keys of the value it describes")
        out = []
        for k in tree:
            out.extend(_broadcast_dims(dims[k], tree[k], what))
        return out
    raise ValueError(f"vmap: {what} must be an int, None or a (nested) tuple/list/dict of them, got {dims!r}")


def _batch_input(x: Any, d: Any, level: int) -> Any:
    from ..ops import manipulation as _m

    if d is None:
        return x
    if not isinstance(x, Tensor):
        raise ValueError(
            f"vmap: Got in_dim={d} for an input but the input is of type {type(x).__name__}. We cannot vmap over "
            "non-Tensor arguments, please use None as the respective in_dim"
        )
    nd = x.ndim
    if not -nd <= d < nd:
        raise ValueError(
            f"vmap: Got in_dim={d} for some input, but that input is a Tensor of dimensionality {nd} so expected "
            f"in_dim to satisfy -{nd} <= in_dim < {nd}."
        )
    d %= nd
    phys = x if d == 0 else _m.moveaxis(x, d, 0)
    return _wrap(phys, level)


def _unbatch_output(y: Any, d: Any, level: int, size: int) -> Any:
    from ..ops import manipulation as _m

    if not isinstance(y, Tensor):
        raise ValueError(
            f"vmap: `{getattr(y, '__name__', type(y).__name__)}` must only return Tensors, got type "
            f"{type(y).__name__}. Did you mean to set out_dims= to None for output?"
        )
    batched = type(y) is BatchedTensor and y._level == level
    if d is None:
        if batched:
            raise ValueError(
                "vmap: Can not return a BatchedTensor when out_dim is None (the output is batched over the vmapped "
                "dimension)"
            )
        return y
    p = y._phys if batched else _m.broadcast_to(_m.expand_dims(y, axis=0), (size, *y.shape))
    nd = p.ndim
    if not -nd <= d < nd:
        raise ValueError(f"vmap: out_dim={d} is out of range for an output of {nd - 1} dimensions per example")
    d %= nd
    return p if d == 0 else _m.moveaxis(p, 0, d)


def _batch_size(args: list[Any], dims: list[Any]) -> int:
    sizes = set()
    for x, d in zip(args, dims):
        if d is None:
            continue
        if not isinstance(d, int):
            raise ValueError(f"vmap: in_dims must hold ints or None, got {d!r}")
        if not isinstance(x, Tensor):
            raise ValueError(
                f"vmap: Got in_dim={d} for an input but the input is of type {type(x).__name__}. We cannot vmap "
                "over non-Tensor arguments, please use None as the respective in_dim"
            )
        nd = x.ndim
        if not -nd <= d < nd:
            raise ValueError(
                f"vmap: Got in_dim={d} for some input, but that input is a Tensor of dimensionality {nd} so "
                f"expected in_dim to satisfy -{nd} <= in_dim < {nd}."
            )
        sizes.add(x.shape[d])
    if not sizes:
        raise ValueError(
            "vmap: at least one input must be a Tensor with a batch dimension (in_dims are all None, or no Tensor "
            "was given)"
        )
    if len(sizes) > 1:
        raise ValueError(
            f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes {sorted(sizes)} "
            "for the mapped dimension"
        )
    return sizes.pop()


def _enter(level: _Level) -> None:
    _levels.append(level)
    _autograd._vmap_dispatch = dispatch
    _random._batched_draw = _draw_batched


def _exit() -> None:
    _levels.pop()
    if not _levels:
        _autograd._vmap_dispatch = None
        _random._batched_draw = None


def _run(func: Callable[..., Any], flat: list[Any], dims: list[Any], spec: Any, kwargs: dict[str, Any],
         out_dims: Any, randomness: str, size: int) -> Any:  # fmt: skip
    level = _Level(len(_levels) + 1 if not _levels else _levels[-1].index + 1, size, randomness)
    _enter(level)
    try:
        batched = [_batch_input(x, d, level.index) for x, d in zip(flat, dims)]
        args = _unflatten(batched, spec)
        out = func(*args, **kwargs)
        leaves, ospec = _flatten(out)
        odims = _broadcast_dims(out_dims, out, "out_dims")
        res = [_unbatch_output(y, d, level.index, size) for y, d in zip(leaves, odims)]
    finally:
        _exit()
    return _unflatten(res, ospec)


def vmap(
    func: Callable[..., Any],
    in_dims: Any = 0,
    out_dims: Any = 0,
    randomness: str = "error",
    *,
    chunk_size: int | None = None,
) -> Callable[..., Any]:
    """``func`` vectorised over a batch axis of its inputs (PyTorch 2.13's ``torch.vmap``).

    Args:
        func: takes tensors (or pytrees of them: tuples, lists, dicts) and returns tensors (or pytrees).
        in_dims: the batch axis of each positional input: an int, None (not batched), or a tree matching
            the arguments' structure (a prefix of it).
        out_dims: where the batch axis goes in each output (an int, None for an unbatched output, or a tree).
        randomness: random ops inside ``func``: "error" raises, "different" draws per example, "same" draws
            once for the whole batch.
        chunk_size: run the batch in chunks of this many examples (one vectorised call per chunk); None runs
            it whole.
    """
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    if not callable(func):
        raise RuntimeError(f"vmap: Expected `func` to be a callable, got {type(func).__name__}")

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if isinstance(in_dims, (tuple, list)):
            if len(in_dims) != len(args):
                raise ValueError(
                    f"vmap(in_dims={in_dims!r}, ...)(<inputs>): in_dims is not compatible with the structure of "
                    f"`inputs`. in_dims has structure of length {len(in_dims)} but inputs has {len(args)} arguments"
                )
        elif in_dims is not None and not isinstance(in_dims, int):
            raise ValueError(f"vmap: in_dims must be an int, None or a tuple of them, got {in_dims!r}")
        flat, spec = _flatten(tuple(args))
        dims = _broadcast_dims(in_dims if not isinstance(in_dims, list) else tuple(in_dims), tuple(args), "in_dims")
        size = _batch_size(flat, dims)
        if chunk_size is None or chunk_size >= size:
            return _run(func, flat, dims, spec, kwargs, out_dims, randomness, size)
        return _chunked(func, flat, dims, spec, kwargs, out_dims, randomness, size, chunk_size)

    return wrapped


def _chunked(func: Callable[..., Any], flat: list[Any], dims: list[Any], spec: Any, kwargs: dict[str, Any],
             out_dims: Any, randomness: str, size: int, chunk: int) -> Any:  # fmt: skip
    """vmap over consecutive chunks of the batch, concatenated along each output's out_dim."""
    from ..ops import manipulation as _m

    pieces = []
    for start in range(0, size, chunk):
        stop = min(start + chunk, size)
        part = []
        for x, d in zip(flat, dims):
            if d is None:
                part.append(x)
            else:
                key = [slice(None)] * x.ndim
                key[d % x.ndim] = slice(start, stop)
                part.append(x[tuple(key)])
        pieces.append(_run(func, part, dims, spec, kwargs, out_dims, randomness, stop - start))
    leaves0, ospec = _flatten(pieces[0])
    odims = _broadcast_dims(out_dims, pieces[0], "out_dims")
    per_piece = [_flatten(p)[0] for p in pieces]
    res = []
    for i, d in enumerate(odims):
        if d is None:
            res.append(leaves0[i])
        else:
            res.append(_m.concat([pp[i] for pp in per_piece], axis=d))
    return _unflatten(res, ospec)


def _warn_fallback(name: str) -> None:
    warnings.warn(
        f"There is a performance drop because we have not yet implemented the batching rule for {name}. Please "
        "file us an issue on GitHub so that we can prioritize its implementation.",
        UserWarning,
        stacklevel=4,
    )


from . import _batching_rules as _rules  # noqa: E402  (the rules use the wrappers above)

_autograd._vmap = _tensor_module._VMAP = sys.modules[__name__]  # the engine's hooks find this module here
