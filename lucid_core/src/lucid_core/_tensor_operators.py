"""Tensor's constructor, operators, in-place writes and Array API methods: attached once the ops exist.

``_tensor.py`` defines the :class:`~lucid_core.Tensor` class with its data, graph slots and the
machinery of writes, and imports no op. Everything a tensor does by calling an op (``x + y``,
``x[i]``, ``x += 1``, ``x.to(device)``, ``x.backward()``, and ``Tensor(data)`` itself, which is
``asarray``) is defined here and put on the class by :func:`attach`, called once from
``lucid_core/__init__.py`` through :func:`lucid_core._tensor_methods.attach` (DeZero's
``setup_variable()``). So imports in the core only go down: dtypes and backend contract, registry,
Tensor, autograd, ops, then these methods. :class:`Parameter` lives here too: its constructor is ops.
"""

from __future__ import annotations

__all__ = ["Parameter", "attach"]

from collections.abc import Callable
from typing import Any

from ._autograd import apply_binary, register_post_accumulate_grad_hook, register_tensor_hook, run_backward
from ._dtypes import DType
from ._tensor import Tensor, _init_slots
from ._typing import DeviceLike, DTypeLike
from .ops import creation as _c
from .ops import elementwise as _e
from .ops import indexing as _i
from .ops import manipulation as _m
from .ops import products as _p
from .ops._helpers import binop, rbinop


# -- construction ---------------------------------------------------------------------------------------
def _init(
    self: Tensor, data: Any, dtype: DTypeLike = None, device: DeviceLike = None, requires_grad: bool = False
) -> None:
    """``Tensor(data, dtype, device, requires_grad)``: :func:`lucid_core.asarray` of ``data``."""
    src = _c.asarray(data, dtype=dtype, device=device)
    _init_slots(self, src._data, src._device)
    if requires_grad:
        self.requires_grad = True


class Parameter(Tensor):
    """A leaf tensor that is a model's learnable weight: requires grad by default.

    ``Parameter(tensor)`` shares the tensor's values; modules find their parameters by this type.
    """

    __slots__ = ()

    def __init__(
        self, data: Any = None, requires_grad: bool = True, *, dtype: DTypeLike = None, device: DeviceLike = None
    ) -> None:
        if data is None:
            src = _c.empty((0,), device=device)
        elif isinstance(data, Tensor):
            src = data.detach()
            if dtype is not None or device is not None:
                src = src.to(device, dtype)
        else:
            src = _c.asarray(data, dtype=dtype, device=device)
            if dtype is None and src.dtype.kind not in "fc" and requires_grad:
                raise RuntimeError(
                    f"Parameter: only floating-point data can require grad, got {src.dtype.name}; pass "
                    "dtype=lucid_core.float32 or requires_grad=False"
                )
        _init_slots(self, src._data, src._device)
        self.requires_grad = requires_grad

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__


# -- Array API methods ---------------------------------------------------------------------------------
def _T(self: Tensor) -> Tensor:  # noqa: N802
    """The transpose of a 2-D tensor."""
    if self.ndim != 2:
        raise ValueError(f"Tensor.T needs a 2-D tensor, got {self.ndim}-D; use mT or permute_dims for batches")
    return _m.permute_dims(self, (1, 0))


def _mT(self: Tensor) -> Tensor:  # noqa: N802
    """The last two axes swapped (a batch of matrices transposed)."""
    if self.ndim < 2:
        raise ValueError(f"Tensor.mT needs at least 2 dimensions, got {self.ndim}")
    return _m.matrix_transpose(self)


def clone(self: Tensor) -> Tensor:
    """A copy with its own storage, recorded in the graph."""
    return _m.clone(self)


def to(self: Tensor, device: DeviceLike | DType = None, dtype: DTypeLike = None, *, copy: bool = False) -> Tensor:
    """Move to ``device`` and/or cast to ``dtype`` (``x.to("mlx")``, ``x.to(lucid_core.float64)``).

    The move is an op in the graph: gradients flow back across it.
    """
    if isinstance(device, DType):
        device, dtype = None, device
    out = self
    if dtype is not None and dtype is not self.dtype:
        out = _m.astype(out, dtype)
    if device is not None:
        out = _m.to_device(out, device)
    if copy and out is self:
        out = self.clone()
    return out


def to_device(self: Tensor, device: DeviceLike, /, *, stream: Any = None) -> Tensor:
    """Array API spelling of ``to(device)``."""
    return _m.to_device(self, device)


def astype(self: Tensor, dtype: DTypeLike, copy: bool = True) -> Tensor:
    """Alias of :func:`lucid_core.astype`."""
    return _m.astype(self, dtype, copy=copy)


def clip(self: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """Alias of :func:`lucid_core.clip` (``clamp`` too)."""
    return _e.clip(self, min, max)


def _getitem(self: Tensor, key: Any) -> Tensor:
    return _i.getitem(self, key)


def _setitem(self: Tensor, key: Any, value: Any) -> None:
    _i.setitem(self, key, value)


# -- autograd ------------------------------------------------------------------------------------------
def register_hook(self: Tensor, hook: Callable[[Tensor], Tensor | None]) -> Any:
    """Call ``hook(grad)`` each time this tensor's gradient is computed; returns a handle with ``remove()``.

    A Tensor returned by the hook replaces the gradient (for later hooks, ``retain_grad``, ``.grad`` of a
    leaf and everything upstream); None keeps it. Hooks run in the order they were registered, once per
    backward with the gradient summed over every use of the tensor.
    """
    return register_tensor_hook(self, hook)


def _post_accumulate_grad_hook(self: Tensor, hook: Callable[[Tensor], None]) -> Any:
    """Call ``hook(self)`` each backward, right after this leaf's ``.grad`` is fully accumulated.

    Returns a handle whose ``remove()`` unregisters the hook (PyTorch's semantics; DDP uses it to
    start a bucket's all-reduce while the rest of backward runs).
    """
    return register_post_accumulate_grad_hook(self, hook)


def backward(self: Tensor, gradient: Any = None, retain_graph: bool | None = None, create_graph: bool = False) -> None:
    """Accumulate d(self)/d(leaf) into every leaf's ``.grad``; frees the graph unless ``retain_graph``."""
    run_backward([self], [gradient], create_graph if retain_graph is None else retain_graph, create_graph)


# -- operators -----------------------------------------------------------------------------------------
#: ``x <op> y`` -> the op it calls (the reflected ``y <op> x`` calls it with the operands swapped)
_BINARY_OPERATORS: dict[str, Callable[..., Tensor]] = {
    "add": _e.add, "sub": _e.subtract, "mul": _e.multiply, "truediv": _e.divide, "floordiv": _e.floor_divide,
    "mod": _e.remainder, "pow": _e.pow, "matmul": _p.matmul, "and": _e.bitwise_and, "or": _e.bitwise_or,
    "xor": _e.bitwise_xor, "lshift": _e.bitwise_left_shift, "rshift": _e.bitwise_right_shift,
}  # fmt: skip
#: operators whose Function is called directly for same-dtype tensors and Python numbers (the hot path of
#: training code: ``binop`` skips operand normalisation); reflected too where listed in _FAST_REFLECTED
_FAST: dict[str, Any] = {"add": _e.Add, "sub": _e.Subtract, "mul": _e.Multiply, "pow": _e.Pow}
_FAST_REFLECTED = ("add", "sub", "mul")
_COMPARISONS: dict[str, Callable[..., Tensor]] = {
    "eq": _e.equal, "ne": _e.not_equal, "lt": _e.less, "le": _e.less_equal, "gt": _e.greater, "ge": _e.greater_equal,
}  # fmt: skip
_UNARY_OPERATORS: dict[str, Callable[..., Tensor]] = {"neg": _e.negative, "abs": _e.abs, "invert": _e.bitwise_invert}


def _operator(fn: Callable[..., Tensor]) -> Callable[[Tensor, Any], Tensor]:
    def method(self: Tensor, other: Any) -> Tensor:
        return fn(self, other)

    return method


def _reflected(fn: Callable[..., Tensor]) -> Callable[[Tensor, Any], Tensor]:
    def method(self: Tensor, other: Any) -> Tensor:
        return fn(other, self)

    return method


def _fast(cls: Any) -> Callable[[Tensor, Any], Tensor]:
    def method(self: Tensor, other: Any) -> Tensor:
        # binop's two fast cases inline (a float tensor and a Python number; two tensors of one dtype)
        t = type(other)
        if t is float or t is int:
            if self._data.dtype in self._device.float_natives:
                return apply_binary(cls, self, other)
        elif (t is Tensor or t is Parameter) and self._device is other._device:
            da = self._data.dtype
            db = other._data.dtype
            if da is db or da == db:
                return apply_binary(cls, self, other)
        return binop(cls, self, other)

    return method


def _fast_reflected(cls: Any) -> Callable[[Tensor, Any], Tensor]:
    def method(self: Tensor, other: Any) -> Tensor:
        return rbinop(cls, other, self)

    return method


def _truediv(self: Tensor, other: Any) -> Tensor:
    if self._data.dtype in self._device.float_natives:  # true division of floats keeps the dtype: fast path
        return binop(_e.Divide, self, other)
    return _e.divide(self, other)


def _pos(self: Tensor) -> Tensor:
    return self


# -- in-place writes -----------------------------------------------------------------------------------
# Every in-place operator and method ends in Tensor._apply_inplace (or the Tensor._write fast path, where
# the backend can write into the array's own memory): see _tensor.py.

#: ``x <op>= y``: (operator symbol, the backend's in-place write op or None, the PyTorch method name or None)
_INPLACE: dict[str, tuple[str, str | None, str | None]] = {
    "add": ("+=", "add", None), "sub": ("-=", "subtract", None), "mul": ("*=", "multiply", "mul_"),
    "truediv": ("/=", "divide", "div_"), "floordiv": ("//=", None, None), "mod": ("%=", None, None),
    "pow": ("**=", None, None), "matmul": ("@=", None, None), "and": ("&=", None, None), "or": ("|=", None, None),
    "xor": ("^=", None, None), "lshift": ("<<=", None, None), "rshift": (">>=", None, None),
}  # fmt: skip


def _inplace(fn: Callable[..., Tensor], write: str | None, opname: str, symbol: str) -> Callable[[Tensor, Any], Tensor]:
    def method(self: Tensor, other: Any) -> Tensor:
        if write is not None and self._write(write, other):
            return self
        return self._apply_inplace(lambda t: fn(t, other), opname, other)

    method.__name__ = opname
    method.__doc__ = f"``self {symbol} other`` in place."
    return method


def _scaled(other: Any, alpha: Any) -> Any:
    return other if alpha == 1 else _e.multiply(other, alpha)


def add_(self: Tensor, other: Any, alpha: Any = 1) -> Tensor:
    """``self += alpha * other`` in place (in the tensor's own memory where the backend allows)."""
    if self._write("add", other, alpha):
        return self
    return self._apply_inplace(lambda t: _e.add(t, _scaled(other, alpha)), "add_", other)


def sub_(self: Tensor, other: Any, alpha: Any = 1) -> Tensor:
    """``self -= alpha * other`` in place."""
    if self._write("subtract", other, alpha):
        return self
    return self._apply_inplace(lambda t: _e.subtract(t, _scaled(other, alpha)), "sub_", other)


def clamp_(self: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """Clip to [min, max], in place."""
    return self._apply_inplace(lambda t: _e.clip(t, min, max), "clamp_", min, max)


def copy_(self: Tensor, src: Any) -> Tensor:
    """Overwrite the values with ``src`` (broadcast, cast and moved to this tensor), in place.

    Differentiable with respect to ``src``, as in PyTorch; a write into a detached view (as
    ``state_dict()`` hands out) lands in the tensor it views.
    """
    src = _c.asarray(src, device=self._device) if not isinstance(src, Tensor) else src
    if src._device is not self._device:
        src = _m.to_device(src, self._device)
    if src.dtype is not self.dtype:
        src = _m.astype(src, self.dtype)
    if src.shape != self.shape:
        try:
            fits = _m.broadcast_shapes(src.shape, self.shape) == self.shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"copy_: a source of shape {src.shape} does not broadcast to shape {self.shape}")
    if self._write("copy", src):
        return self
    return self._apply_inplace(lambda t: _i.Overwrite.apply(t, src), "copy_", src)


def _fill(self: Tensor, value: Any, opname: str) -> Tensor:
    if type(value) in (int, float) and self._write("copy", value):
        return self
    return self._apply_inplace(lambda t: _i.Overwrite.apply(t, value), opname)


def zero_(self: Tensor) -> Tensor:
    """Set every element to 0, in place."""
    return _fill(self, 0, "zero_")


def fill_(self: Tensor, value: Any) -> Tensor:
    """Set every element to ``value`` (a number or a 0-d tensor), in place."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_: the value must be a number or a 0-d tensor, got shape {value.shape}")
        return self.copy_(value)
    return _fill(self, value, "fill_")


_METHODS = (clone, to, to_device, astype, clip, backward, register_hook, add_, sub_, clamp_, copy_, zero_, fill_)


def attach() -> None:
    """Put the constructor, operators, in-place writes and Array API methods on :class:`Tensor` (once)."""
    Tensor.__init__ = _init  # type: ignore[method-assign]
    for fn in _METHODS:
        setattr(Tensor, fn.__name__, fn)
    Tensor.register_post_accumulate_grad_hook = _post_accumulate_grad_hook  # type: ignore[attr-defined]
    Tensor.T = property(_T, doc=_T.__doc__)  # type: ignore[attr-defined]
    Tensor.mT = property(_mT, doc=_mT.__doc__)  # type: ignore[attr-defined]
    Tensor.__getitem__ = _getitem  # type: ignore[attr-defined]
    Tensor.__setitem__ = _setitem  # type: ignore[attr-defined]
    for name, fn in _BINARY_OPERATORS.items():
        cls = _FAST.get(name)
        setattr(Tensor, f"__{name}__", _operator(fn) if cls is None else _fast(cls))
        reflected = _fast_reflected(cls) if name in _FAST_REFLECTED else _reflected(fn)
        setattr(Tensor, f"__r{name}__", reflected)
        symbol, write, method = _INPLACE[name]
        setattr(Tensor, f"__i{name}__", _inplace(fn, write, symbol, symbol))
        if method is not None:
            setattr(Tensor, method, _inplace(fn, write, method, symbol))
    Tensor.__truediv__ = _truediv  # type: ignore[method-assign]
    for name, fn in _COMPARISONS.items():
        setattr(Tensor, f"__{name}__", _operator(fn))
    for name, fn in _UNARY_OPERATORS.items():
        setattr(Tensor, f"__{name}__", fn)
    Tensor.__pos__ = _pos  # type: ignore[attr-defined]
