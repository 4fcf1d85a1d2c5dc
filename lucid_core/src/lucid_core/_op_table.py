"""One declarative table of PyTorch's ops: each op declared once, its method, ``name_`` and free function made from it.

An :class:`OpEntry` names the op as PyTorch does, the ``lucid_core`` function that holds its math (with
PyTorch's signature: ``dim=``, ``keepdim=``; the standard's ``axis=``/``keepdims=`` stay in the
namespace), and which forms exist: the ``Tensor`` method, the in-place method ``name_``, the free
function of the ``lucid`` face (``lucid.name(input, ..., out=None)``) and its aliases. :func:`install`
puts the methods on :class:`Tensor` when ``lucid_core`` loads; :func:`face_functions` hands the face its
functions. Following PyTorch's ``native_functions.yaml`` (and the original Lucid's ``OpEntry``), adding an
op is one line here plus its math in ``lucid_core.ops``.

The generated forms are thin: a method is the function itself; an in-place method computes the result
out of place and writes it with ``Tensor._apply_inplace`` (so views, versions and autograd behave as in
PyTorch: a leaf that requires grad refuses, a write through a view lands in its base); a free function
checks its first argument and, given ``out=``, writes the result into ``out`` (:func:`write_out`).
"""

# ruff: noqa: A002 - PyTorch names the first argument ``input``
from __future__ import annotations

__all__ = ["OPS", "TORCH_FREE_INPLACE", "OpEntry", "face_functions", "install", "write_out"]

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import _tensor_methods as _tm
from . import _tensor_operators as _to
from ._grad_mode import _mode
from ._tensor import Tensor
from .ops import elementwise as _e
from .ops import extended as _x
from .ops import manipulation as _m
from .ops import products as _p

#: ``inplace=HAND``: the ``name_`` method exists, hand-written (a fast path or special logic), and is only listed
HAND = "hand"


@dataclass(frozen=True, slots=True)
class OpEntry:
    """One PyTorch op and the forms it has.

    Args:
        name: PyTorch's name (``Tensor.name`` and ``torch.name``).
        fn: the ``lucid_core`` function with the math, called as ``fn(input, *args, **kwargs)`` with
            PyTorch's arguments.
        method: whether ``Tensor.name`` exists.
        function: whether the face has ``lucid.name``.
        inplace: whether ``Tensor.name_`` exists: True generates it, :data:`HAND` lists a hand-written one.
        out: whether ``lucid.name`` takes ``out=``.
        aliases: PyTorch's other names for the same op; each has the same forms.
        tensor_first: whether the first argument must be a Tensor (``broadcast_shapes`` takes shapes).
    """

    name: str
    fn: Callable[..., Any]
    method: bool = True
    function: bool = True
    inplace: bool | str = False
    out: bool = False
    aliases: tuple[str, ...] = ()
    tensor_first: bool = True

    @property
    def names(self) -> tuple[str, ...]:
        """The op's name and its aliases."""
        return (self.name, *self.aliases)


def _ew(name: str, fn: Callable[..., Any], *aliases: str, inplace: bool | str = True, out: bool = True,
        tensor_first: bool = True) -> OpEntry:  # fmt: skip
    """An element-wise op: method, in-place method, function with ``out=`` (unless told otherwise).

    ``tensor_first=False`` where PyTorch takes a number first too (``torch.pow(2, x)``).
    """
    return OpEntry(name, fn, True, True, inplace, out, aliases, tensor_first)


def _fn(name: str, fn: Callable[..., Any], *aliases: str, out: bool = False, tensor_first: bool = False) -> OpEntry:
    """A free function only (no method): ``broadcast_shapes``, ``atleast_2d``, ``tril_indices``..."""
    return OpEntry(name, fn, False, True, False, out, aliases, tensor_first)


def _meth(name: str, fn: Callable[..., Any], *aliases: str, inplace: bool | str = False) -> OpEntry:
    """A method only (PyTorch has no ``torch.name``): ``view``, ``new_zeros``, ``type_as``..."""
    return OpEntry(name, fn, True, False, inplace, False, aliases)


def _op(name: str, fn: Callable[..., Any], *aliases: str, out: bool = True, inplace: bool | str = False) -> OpEntry:
    """A method and a function (a reduction, a shape op, a product...); ``out=`` unless told otherwise."""
    return OpEntry(name, fn, True, True, inplace, out, aliases)


OPS: tuple[OpEntry, ...] = (
    # -- element-wise, unary ----------------------------------------------------------------------------------------
    _ew("exp", _e.exp),
    _ew("expm1", _e.expm1),
    _ew("log", _e.log),
    _ew("log1p", _e.log1p),
    _ew("log2", _e.log2),
    _ew("log10", _e.log10),
    _ew("sqrt", _e.sqrt),
    _ew("rsqrt", _e.rsqrt),
    _ew("square", _e.square),
    _ew("abs", _e.abs, "absolute"),
    _ew("sign", _e.sign),
    _ew("sgn", _x.sgn),
    _ew("sin", _e.sin),
    _ew("cos", _e.cos),
    _ew("tan", _e.tan),
    _ew("asin", _e.asin, "arcsin"),
    _ew("acos", _e.acos, "arccos"),
    _ew("atan", _e.atan, "arctan"),
    _ew("sinh", _e.sinh),
    _ew("cosh", _e.cosh),
    _ew("tanh", _e.tanh),
    _ew("asinh", _e.asinh, "arcsinh"),
    _ew("acosh", _e.acosh, "arccosh"),
    _ew("atanh", _e.atanh, "arctanh"),
    _ew("sigmoid", _e.sigmoid),
    _ew("relu", _e.relu, out=False),
    _ew("floor", _e.floor),
    _ew("ceil", _e.ceil),
    _ew("round", _e.round),
    _ew("trunc", _e.trunc, "fix"),
    _ew("frac", _x.frac),
    _ew("reciprocal", _e.reciprocal),
    _ew("neg", _e.negative, "negative"),
    _ew("positive", _e.positive, inplace=False, out=False),
    _ew("erf", _e.erf),
    _ew("deg2rad", _x.deg2rad),
    _ew("rad2deg", _x.rad2deg),
    _ew("nan_to_num", _x.nan_to_num),
    _ew("angle", _x.angle, inplace=False),
    _ew("bitwise_not", _x.bitwise_not),
    _ew("logical_not", _e.logical_not),
    _ew("isnan", _e.isnan, inplace=False, out=False),
    _ew("isinf", _e.isinf, inplace=False, out=False),
    _ew("isfinite", _e.isfinite, inplace=False, out=False),
    _ew("isposinf", _x.isposinf, inplace=False),
    _ew("isneginf", _x.isneginf, inplace=False),
    _ew("isreal", _x.isreal, inplace=False, out=False),
    _ew("signbit", _e.signbit, inplace=False),
    # -- element-wise, binary ------------------------------------------------------------------------------------------
    _ew("add", _tm.add, inplace=HAND),
    _ew("sub", _tm.sub, "subtract", inplace=HAND),
    _ew("mul", _e.multiply, "multiply", inplace=HAND),
    _ew("div", _tm.div, "divide", inplace=HAND),
    _ew("true_divide", _x.true_divide),
    _ew("floor_divide", _e.floor_divide),
    _ew("pow", _e.pow, tensor_first=False),
    _ew("float_power", _x.float_power, tensor_first=False),
    _ew("remainder", _e.remainder, tensor_first=False),
    _ew("fmod", _x.fmod),
    _ew("atan2", _e.atan2, "arctan2"),
    _ew("hypot", _e.hypot),
    _ew("copysign", _e.copysign),
    _ew("heaviside", _x.heaviside),
    _ew("ldexp", _x.ldexp),
    _ew("logaddexp", _e.logaddexp, inplace=False),
    _ew("logaddexp2", _x.logaddexp2, inplace=False),
    _ew("maximum", _e.maximum, inplace=False),
    _ew("minimum", _e.minimum, inplace=False),
    _ew("fmax", _x.fmax, inplace=False),
    _ew("fmin", _x.fmin, inplace=False),
    _ew("eq", _e.equal),
    _ew("ne", _e.not_equal, "not_equal"),
    _ew("lt", _e.less, "less"),
    _ew("le", _e.less_equal, "less_equal"),
    _ew("gt", _e.greater, "greater"),
    _ew("ge", _e.greater_equal, "greater_equal"),
    _ew("logical_and", _e.logical_and),
    _ew("logical_or", _e.logical_or),
    _ew("logical_xor", _e.logical_xor),
    _ew("bitwise_and", _e.bitwise_and, tensor_first=False),
    _ew("bitwise_or", _e.bitwise_or, tensor_first=False),
    _ew("bitwise_xor", _e.bitwise_xor, tensor_first=False),
    _ew("bitwise_left_shift", _e.bitwise_left_shift, tensor_first=False),
    _ew("bitwise_right_shift", _e.bitwise_right_shift, tensor_first=False),
    _ew("clamp", _to.clip, "clip", inplace=HAND),
    _ew("clamp_min", _x.clamp_min),
    _ew("clamp_max", _x.clamp_max),
    _ew("lerp", _x.lerp),
    _ew("addcmul", _x.addcmul),
    _ew("addcdiv", _x.addcdiv),
    # -- products ------------------------------------------------------------------------------------------------------
    _op("matmul", _p.matmul),
    _op("mm", _p.matmul),
    _op("bmm", _p.matmul),
    _op("mv", _x.mv),
    _op("dot", _x.dot),
    _op("vdot", _x.vdot),
    _op("inner", _x.inner),
    _op("outer", _p.outer),
    _op("kron", _x.kron),
    _op("addmm", _x.addmm, inplace=True),
    _op("addmv", _x.addmv, inplace=True),
    _op("addbmm", _x.addbmm, inplace=True),
    _op("baddbmm", _x.baddbmm, inplace=True),
    _op("addr", _x.addr, inplace=True),
    _fn("tensordot", _x.tensordot, out=True, tensor_first=True),
    # -- reductions ----------------------------------------------------------------------------------------------------
    _op("sum", _tm.sum),
    _op("nansum", _x.nansum),
    _op("mean", _tm.mean),
    _op("nanmean", _x.nanmean),
    _op("prod", _tm.prod),
    _op("var", _tm.var),
    _op("std", _tm.std),
    _fn("var_mean", _x.var_mean, tensor_first=True),
    _fn("std_mean", _x.std_mean, tensor_first=True),
    _op("all", _tm.all),
    _op("any", _tm.any),
    _op("logsumexp", _tm.logsumexp),
    _op("amax", _tm.amax),
    _op("amin", _tm.amin),
    _op("aminmax", _x.aminmax, out=False),
    _op("max", _tm.max, out=False),
    _op("min", _tm.min, out=False),
    _op("argmax", _tm.argmax),
    _op("argmin", _tm.argmin),
    _op("median", _x.median, out=False),
    _op("nanmedian", _x.nanmedian, out=False),
    _op("kthvalue", _x.kthvalue, out=False),
    _op("quantile", _x.quantile),
    _op("nanquantile", _x.nanquantile),
    _op("cumsum", _tm.cumsum, inplace=True),
    _op("cumprod", _tm.cumprod, inplace=True),
    _op("cummax", _x.cummax, out=False),
    _op("cummin", _x.cummin, out=False),
    _op("logcumsumexp", _x.logcumsumexp),
    _op("norm", _tm.norm),
    _op("dist", _tm.dist, out=False),
    _op("renorm", _tm.renorm, inplace=True),
    _op("count_nonzero", _tm.count_nonzero, out=False),
    _op("trace", _x.trace, out=False),
    _op("cov", _x.cov, out=False),
    _op("corrcoef", _x.corrcoef, out=False),
    _fn("trapezoid", _x.trapezoid, "trapz", tensor_first=True),
    _fn("cumulative_trapezoid", _x.cumulative_trapezoid, tensor_first=True),
    # -- sorting and searching ----------------------------------------------------------------------------------------
    _op("sort", _tm.sort, out=False),
    _op("argsort", _tm.argsort, out=False),
    _op("msort", _x.msort),
    _op("topk", _tm.topk, out=False),
    _op("argwhere", _x.argwhere, out=False),
    _op("nonzero", _x.nonzero, out=False),
    _op("bincount", _x.bincount, out=False),
    _op("histc", _x.histc),
    _fn("bucketize", _x.bucketize, out=True),
    _op("unique_consecutive", _x.unique_consecutive, out=False),
    _op("isclose", _x.isclose, out=False),
    _op("allclose", _x.allclose, out=False),
    _op("equal", _x.equal, out=False),
    _op("is_nonzero", _x.is_nonzero, out=False),
    _op("is_same_size", _x.is_same_size, out=False),
    # -- shapes and views ---------------------------------------------------------------------------------------------
    _meth("dim", _tm.dim, "ndimension"),
    _meth("nelement", _tm.nelement),
    _fn("numel", Tensor.numel, tensor_first=True),
    _meth("reshape", _tm.reshape),
    _meth("view", _tm.view),
    _meth("view_as", _tm.view_as),
    _meth("reshape_as", _tm.reshape_as),
    _meth("contiguous", _tm.contiguous),
    _meth("is_contiguous", _tm.is_contiguous),
    _meth("stride", _tm.stride),
    _meth("storage_offset", _tm.storage_offset),
    _meth("element_size", _tm.element_size),
    _meth("untyped_storage", _tm.untyped_storage),
    _meth("data_ptr", _tm.data_ptr),
    _meth("_is_view", _tm._is_view),
    _op("narrow", _tm.narrow, out=False),
    _op("select", _tm.select, out=False),
    _op("tensor_split", _tm.tensor_split, out=False),
    _op("movedim", _tm.movedim, "moveaxis", out=False),
    _op("diagonal", _tm.diagonal, out=False),
    _meth("unfold", _tm.unfold),
    _op("as_strided", _tm.as_strided, out=False),
    _op("flatten", _tm.flatten, out=False),
    _op("unflatten", _tm.unflatten, out=False),
    _op("ravel", _x.ravel, out=False),
    _op("permute", _tm.permute, out=False),
    _op("transpose", _tm.transpose, "swapdims", "swapaxes", out=False),
    _op("t", _tm.t, out=False),
    _op("squeeze", _tm.squeeze, out=False),
    _op("unsqueeze", _tm.unsqueeze, out=False),
    _meth("expand", _tm.expand),
    _meth("expand_as", _tm.expand_as),
    _meth("repeat", _tm.repeat),
    _op("broadcast_to", _x.broadcast_to, out=False),
    _op("tile", _x.tile, out=False),
    _op("repeat_interleave", _x.repeat_interleave, out=False),
    _op("split", _tm.split, out=False),
    _op("chunk", _tm.chunk, out=False),
    _op("unbind", _tm.unbind, out=False),
    _op("vsplit", _tm.vsplit, out=False),
    _op("hsplit", _tm.hsplit, out=False),
    _op("dsplit", _tm.dsplit, out=False),
    _meth("flip", _tm.flip),
    _meth("roll", _tm.roll),
    _op("fliplr", _x.fliplr, out=False),
    _op("flipud", _x.flipud, out=False),
    _op("rot90", _x.rot90, out=False),
    _op("tril", _x.tril, inplace=True),
    _op("triu", _x.triu, inplace=True),
    _op("diff", _x.diff, out=False),
    _op("diag", _tm.diag),
    _op("diag_embed", _x.diag_embed, out=False),
    _op("diagflat", _x.diagflat, out=False),
    _op("take", _x.take),
    _op("take_along_dim", _x.take_along_dim),
    _fn("atleast_1d", _x.atleast_1d),
    _fn("atleast_2d", _x.atleast_2d),
    _fn("atleast_3d", _x.atleast_3d),
    _fn("column_stack", _x.column_stack, out=True),
    _fn("row_stack", _x.row_stack, out=True),
    _fn("dstack", _x.dstack, out=True),
    _fn("block_diag", _x.block_diag),
    _fn("cartesian_prod", _x.cartesian_prod),
    _fn("combinations", _x.combinations, tensor_first=True),
    _fn("broadcast_tensors", _x.broadcast_tensors),
    _fn("broadcast_shapes", _tm.broadcast_shapes),
    _fn("tril_indices", _x.tril_indices),
    _fn("triu_indices", _x.triu_indices),
    # -- indexing -----------------------------------------------------------------------------------------------------
    _op("gather", _tm.gather),
    _op("scatter", _tm.scatter, inplace=True),
    _op("scatter_add", _tm.scatter_add, inplace=True),
    _op("scatter_reduce", _tm.scatter_reduce, inplace=True),
    _op("index_select", _tm.index_select),
    _op("index_add", _tm.index_add, inplace=True),
    _op("index_fill", _x.index_fill, inplace=True, out=False),
    _op("index_copy", _tm.index_copy, inplace=True),
    _op("index_put", _tm.index_put, inplace=True, out=False),
    _op("masked_fill", _tm.masked_fill, inplace=True, out=False),
    _op("masked_select", _tm.masked_select),
    _op("masked_scatter", _tm.masked_scatter, inplace=True, out=False),
    _meth("where", _tm.where),
    # -- dtypes, devices, activations ---------------------------------------------------------------------------------
    _meth("type_as", _tm.type_as),
    _meth("half", _tm.half),
    _meth("bfloat16", _tm.bfloat16),
    _op("is_floating_point", _tm.is_floating_point, out=False),
    _op("is_complex", _tm.is_complex, out=False),
    _op("softmax", _tm.softmax, out=False),
    _op("log_softmax", _tm.log_softmax, out=False),
    _meth("cuda", _tm.cuda),
    _meth("cpu", _tm.cpu),
    _meth("new_zeros", _tm.new_zeros),
    _meth("new_ones", _tm.new_ones),
    _meth("new_empty", _tm.new_empty),
    _meth("new_full", _tm.new_full),
    _meth("new_tensor", _tm.new_tensor),
    _meth("normal_", _tm.normal_),
    _meth("uniform_", _tm.uniform_),
    _meth("byte", _tm.byte),
    _meth("char", _tm.char),
    _meth("short", _tm.short),
    _meth("cfloat", _tm.cfloat),
    _meth("cdouble", _tm.cdouble),
    _op("is_signed", _tm.is_signed, out=False),
    _op("get_device", _tm.get_device, out=False),
    _op("conj", _tm.conj, out=False),
    _op("conj_physical", _tm.conj_physical, inplace=True),
    _op("resolve_conj", _tm.resolve_conj, out=False),
    _op("resolve_neg", _tm.resolve_neg, out=False),
    _op("is_conj", _tm.is_conj, out=False),
    _op("is_neg", _tm.is_neg, out=False),
    _op("adjoint", _tm.adjoint, out=False),
    _meth("sum_to_size", _tm.sum_to_size),
    _op("split_with_sizes", _tm.split_with_sizes, out=False),
    _meth("dim_order", _tm.dim_order),
    _meth("apply_", _tm.apply_),
    _meth("map_", _tm.map_),
    _meth("exponential_", _tm.exponential_),
    _meth("geometric_", _tm.geometric_),
    _meth("log_normal_", _tm.log_normal_),
    _meth("cauchy_", _tm.cauchy_),
    _meth("random_", _tm.random_),
    _meth("bernoulli_", _tm.bernoulli_),
)


# -- the forms ---------------------------------------------------------------------------------------------------------
_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def _castable(src: Any, dst: Any) -> bool:
    """PyTorch's ``can_cast`` for writing results: never to a lower category (complex > float > integer > bool)."""
    return _CATEGORY[src.kind] <= _CATEGORY[dst.kind]


def _fitted(result: Tensor, like: Tensor, opname: str) -> Tensor:
    """``result`` in ``like``'s dtype for an in-place write; a result that the dtype cannot hold raises."""
    if result.dtype is like.dtype:
        return result
    if not _castable(result.dtype, like.dtype):
        raise RuntimeError(
            f"{opname}: result type {result.dtype.name} can't be cast to the desired output type {like.dtype.name}"
        )
    return _m.astype(result, like.dtype)


def _inplace(fn: Callable[..., Any], opname: str) -> Callable[..., Tensor]:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return self._apply_inplace(
            lambda t: _fitted(fn(t, *args, **kwargs), t, opname), opname, *args, *kwargs.values()
        )

    method.__name__ = method.__qualname__ = opname
    method.__doc__ = f"In-place ``{opname[:-1]}``: writes the result into this tensor (its views see it)."
    return method


def write_out(out: Any, result: Any, name: str) -> Any:
    """Write ``result`` into ``out`` as PyTorch's ``out=`` does, and return ``out``.

    The result is cast to ``out``'s dtype where PyTorch allows it (never to a lower category: a float result
    into an integer ``out`` raises). An ``out`` of another shape is resized: silently when it is empty,
    with PyTorch's deprecation warning otherwise. ``out=`` is outside autograd: with grad mode on, a result
    or an ``out`` that requires grad raises, as in PyTorch.
    """
    if isinstance(result, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise TypeError(f"{name}(): out must be a tuple of {len(result)} tensors")
        for o, r in zip(out, result):
            write_out(o, r, name)
        return out
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if not isinstance(result, Tensor):
        raise TypeError(f"{name}(): out= is not supported for a result of type {type(result).__name__}")
    if _mode.enabled and (result._requires_grad or out._requires_grad):
        raise RuntimeError(
            f"{name}(): functions with out=... arguments don't support automatic differentiation, but one of the "
            "arguments requires grad."
        )
    if not _castable(result.dtype, out.dtype):
        raise RuntimeError(f"result type {result.dtype.name} can't be cast to the desired output type {out.dtype.name}")
    if out.shape != result.shape:
        if out.size:
            warnings.warn(
                f"An output with one or more elements was resized since it had shape {list(out.shape)}, which does "
                f"not match the required output shape {list(result.shape)}. This behavior is deprecated, as in "
                "PyTorch: pass an empty out tensor instead.",
                UserWarning,
                stacklevel=3,
            )
        if out._view is not None:
            raise RuntimeError(f"{name}(): cannot resize out=, a view of another tensor, to shape {result.shape}")
        value = result if result.dtype is out.dtype else _m.astype(result, out.dtype)
        if value._device is not out._device:
            value = _m.to_device(value, out._device)
        out._set_data(value._data)
        return out
    out.copy_(result)
    return out


def _function(entry: OpEntry, name: str) -> Callable[..., Any]:
    fn = entry.fn
    if entry.out and getattr(fn, "Function", None) is not None:  # a one-argument core op (checks its input)

        def function(input: Any, *, out: Any = None) -> Any:
            if out is None:
                return fn(input)
            return write_out(out, fn(input), name)

    elif entry.out:
        if entry.tensor_first:

            def function(input: Any, *args: Any, out: Any = None, **kwargs: Any) -> Any:
                if not isinstance(input, Tensor):
                    raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
                result = fn(input, *args, **kwargs)
                return result if out is None else write_out(out, result, name)

        else:

            def function(*args: Any, out: Any = None, **kwargs: Any) -> Any:
                result = fn(*args, **kwargs)
                return result if out is None else write_out(out, result, name)

    elif entry.tensor_first:

        def function(input: Any, *args: Any, **kwargs: Any) -> Any:
            if not isinstance(input, Tensor):
                raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
            return fn(input, *args, **kwargs)

    else:
        return fn
    function.__name__ = function.__qualname__ = name
    function.__module__ = "lucid"
    function.__doc__ = fn.__doc__
    function.__wrapped__ = fn  # type: ignore[attr-defined]
    return function


def install() -> None:
    """Put every entry's method and in-place method on :class:`Tensor` (once, when ``lucid_core`` loads)."""
    for entry in OPS:
        for name in entry.names:
            if entry.method:
                setattr(Tensor, name, entry.fn)
            if entry.inplace is True:
                setattr(Tensor, name + "_", _inplace(entry.fn, name + "_"))
            elif entry.inplace == HAND and name != entry.name:
                setattr(Tensor, name + "_", getattr(Tensor, entry.name + "_"))


#: PyTorch 2.13's free in-place functions (``torch.abs_(x)``, ``torch.sigmoid_(x)``...), from
#: ``[n for n in dir(torch) if n.endswith("_") and not n.startswith("_")]``. :func:`face_functions` makes each
#: one whose ``Tensor`` method ``name_`` is declared in a table (this one, or ``lucid_core.special``'s).
#: ``resize_as_sparse_`` is left out with the rest of the sparse layouts (``scripts/torch_api_surface.py``).
TORCH_FREE_INPLACE = frozenset({
    "abs_", "acos_", "acosh_", "addmv_", "alpha_dropout_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
    "arctanh_", "as_strided_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "celu_", "clamp_", "clamp_max_",
    "clamp_min_", "clip_", "conj_physical_", "cos_", "cosh_", "deg2rad_", "detach_", "dropout_", "embedding_renorm_",
    "erf_", "erfc_", "exp2_", "exp_", "expm1_", "feature_alpha_dropout_", "feature_dropout_", "fill_", "fix_",
    "floor_", "frac_", "gcd_", "i0_", "index_put_", "lcm_", "ldexp_", "log10_", "log1p_", "log2_", "log_", "logit_",
    "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_", "relu_", "resize_as_", "round_",
    "rrelu_", "rsqrt_", "selu_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_",
    "threshold_", "trunc_", "xlogy_", "zero_",
})  # fmt: skip


def _free_inplace(name: str) -> Callable[..., Tensor]:
    """``lucid.name_(input, ...)``: the in-place method ``input.name_(...)`` as a free function (PyTorch's)."""
    method = getattr(Tensor, name)

    def function(input: Any, *args: Any, **kwargs: Any) -> Tensor:
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
        return method(input, *args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__module__ = "lucid"
    function.__doc__ = f"In-place ``{name[:-1]}`` of ``input`` (``input.{name}(...)``); returns ``input``."
    return function


def face_functions() -> dict[str, Callable[..., Any]]:
    """The ``lucid`` face's free functions, by name (``out=`` where the entry says so; ``name_`` as PyTorch has)."""
    from . import special

    out = {name: _function(entry, name) for entry in OPS if entry.function for name in entry.names}
    declared = {name for entry in OPS if entry.inplace for name in entry.names} | set(special.TORCH_FUNCTIONS)
    for name in sorted(declared):
        if name + "_" in TORCH_FREE_INPLACE and hasattr(Tensor, name + "_"):
            out[name + "_"] = _free_inplace(name + "_")
    return out
