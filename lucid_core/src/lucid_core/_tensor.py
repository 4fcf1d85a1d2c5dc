"""The Tensor: a native array of some backend, its device, and the node that made it."""

from __future__ import annotations

__all__ = ["Tensor", "Parameter"]

from typing import Any

from ._dtypes import DType


class Tensor:
    """An n-dimensional array on one device that can record the ops applied to it.

    Make tensors with :func:`lucid_core.asarray` / :func:`lucid_core.tensor` (or ``Tensor(data)``).
    The methods mirror the Array API standard, with PyTorch-style aliases
    (``x.sum(axis=1)``, ``x.reshape(...)``, ``x.to(device)``).
    """

    __slots__ = ("__weakref__", "_data", "_device", "_node", "_out_idx", "_requires_grad", "_retains_grad", "grad")
    __array_priority__ = 1000  # NumPy defers `ndarray <op> Tensor` to us

    def __init__(self, data: Any, dtype: DType | None = None, device: Any = None, requires_grad: bool = False) -> None:
        from .ops.creation import asarray

        src = asarray(data, dtype=dtype, device=device)
        self._data = src._data
        self._device = src._device
        self._node = None
        self._out_idx = 0
        self._requires_grad = False
        self._retains_grad = False
        self.grad: Tensor | None = None
        if requires_grad:
            self.requires_grad = True

    # -- basic properties ----------------------------------------------------------------------
    @property
    def dtype(self) -> DType:
        """The Lucid dtype of the elements."""
        return self._device.backend.lucid_dtype(self._data.dtype)

    @property
    def device(self) -> Any:
        """The :class:`~lucid_core.Device` holding the data."""
        return self._device

    @property
    def shape(self) -> tuple[int, ...]:
        """The size of each axis."""
        return tuple(self._data.shape)

    @property
    def ndim(self) -> int:
        """The number of axes."""
        return len(self._data.shape)

    @property
    def size(self) -> int:
        """The number of elements (a property, as in the Array API; PyTorch's ``numel()``)."""
        n = 1
        for s in self._data.shape:
            n *= s
        return n

    def numel(self) -> int:
        """Number of elements (PyTorch's name for ``size``)."""
        return self.size

    @property
    def data(self) -> Tensor:
        """This tensor's values, outside the graph (PyTorch's ``.data``)."""
        return self.detach()

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"Tensor.data must be set to a Tensor, got {type(value).__name__}")
        self._data = value._data
        self._device = value._device

    @property
    def T(self) -> Tensor:  # noqa: N802
        """The transpose of a 2-D tensor."""
        if self.ndim != 2:
            raise ValueError(f"Tensor.T needs a 2-D tensor, got {self.ndim}-D; use mT or permute_dims for batches")
        return _m.permute_dims(self, (1, 0))

    @property
    def mT(self) -> Tensor:  # noqa: N802
        """The last two axes swapped (a batch of matrices transposed)."""
        if self.ndim < 2:
            raise ValueError(f"Tensor.mT needs at least 2 dimensions, got {self.ndim}")
        return _m.matrix_transpose(self)

    @property
    def native(self) -> Any:
        """The backend's own array (shared, not copied)."""
        return self._data

    # -- autograd --------------------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        """Whether ops on this tensor are recorded for backward."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if value and self._node is None and self.dtype.kind not in "fc":
            raise RuntimeError(
                f"only floating-point and complex tensors can require grad, this one is {self.dtype.name}; "
                "cast it first with .astype(lucid_core.float32)"
            )
        if not value and self._node is not None:
            raise RuntimeError("requires_grad cannot be turned off on a non-leaf tensor; use .detach()")
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` in place and return self."""
        self.requires_grad = requires_grad
        return self

    @property
    def grad_fn(self) -> Any:
        """The Function that produced this tensor (None for leaves)."""
        return self._node

    @property
    def is_leaf(self) -> bool:
        """True for tensors made by the user rather than by an op (their ``.grad`` is kept)."""
        return self._node is None

    def retain_grad(self) -> None:
        """Keep ``.grad`` on this non-leaf tensor after backward."""
        if self._node is None:
            return
        self._retains_grad = True
        self._node._retain = True

    def register_post_accumulate_grad_hook(self, hook: Any) -> Any:
        """Call ``hook(self)`` each backward, right after this leaf's ``.grad`` is fully accumulated.

        Returns a handle whose ``remove()`` unregisters the hook (PyTorch's semantics; DDP uses it to
        start a bucket's all-reduce while the rest of backward runs).
        """
        from ._autograd import register_post_accumulate_grad_hook

        return register_post_accumulate_grad_hook(self, hook)

    def backward(self, gradient: Any = None, retain_graph: bool | None = None, create_graph: bool = False) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad``; frees the graph unless ``retain_graph``."""
        from ._autograd import run_backward

        run_backward([self], [gradient], create_graph if retain_graph is None else retain_graph, create_graph)

    def detach(self) -> Tensor:
        """A tensor with the same values and no graph (shares the native array)."""
        return _new_tensor(self._data, self._device)

    def detach_(self) -> Tensor:
        """Cut this tensor from its graph, in place."""
        self._node = None
        self._requires_grad = False
        return self

    def clone(self) -> Tensor:
        """A copy with its own storage, recorded in the graph."""
        return _m.clone(self)

    # -- conversion ------------------------------------------------------------------------------
    def item(self) -> Any:
        """The single value as a Python number."""
        if self.size != 1:
            raise ValueError(
                f"item(): only a one-element tensor converts to a Python scalar, this one has shape {self.shape}"
            )
        v = self._device.backend.to_list(self._data)
        while isinstance(v, list):
            v = v[0]
        return v

    def tolist(self) -> Any:
        """Nested Python lists of the values."""
        return self._device.backend.to_list(self._data)

    def numpy(self) -> Any:
        """A NumPy array of the values (no copy where the backend allows)."""
        if self._requires_grad:
            raise RuntimeError("numpy(): the tensor requires grad; call .detach().numpy()")
        return self._device.backend.to_numpy(self._data)

    def tobytes(self) -> bytes:
        """The raw little-endian bytes of the values in C order (what safetensors stores)."""
        return self._device.backend.to_bytes(self._data)

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        arr = self._device.backend.to_numpy(self._data)
        return arr if dtype is None else arr.astype(dtype)

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        return self._data.__dlpack_device__()

    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        if api_version not in (None, "2022.12", "2023.12", "2024.12"):
            raise ValueError(f"lucid_core implements Array API 2024.12, not {api_version!r}")
        import lucid_core

        return lucid_core

    def eval(self) -> Tensor:
        """Compute a lazy tensor now (a no-op on eager backends); returns self."""
        self._device.backend.eval(self._data)
        return self

    def to(self, device: Any = None, dtype: DType | None = None, *, copy: bool = False) -> Tensor:
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

    def to_device(self, device: Any, /, *, stream: Any = None) -> Tensor:
        """Array API spelling of ``to(device)``."""
        return _m.to_device(self, device)

    def astype(self, dtype: DType, copy: bool = True) -> Tensor:
        """Alias of :func:`lucid_core.astype`."""
        return _m.astype(self, dtype, copy=copy)

    def float(self) -> Tensor:
        """Cast to float32."""
        from ._dtypes import float32

        return _m.astype(self, float32)

    def double(self) -> Tensor:
        """Cast to float64."""
        from ._dtypes import float64

        return _m.astype(self, float64)

    def long(self) -> Tensor:
        """Cast to int64."""
        from ._dtypes import int64

        return _m.astype(self, int64)

    def int(self) -> Tensor:
        """Cast to int32."""
        from ._dtypes import int32

        return _m.astype(self, int32)

    def bool(self) -> Tensor:
        """Cast to bool."""
        from ._dtypes import bool as bool_

        return _m.astype(self, bool_)

    # -- Python protocol ---------------------------------------------------------------------------
    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Any:
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(
                f"the truth value of a tensor with {self.size} elements is ambiguous; use .any() or .all()"
            )
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.kind not in "iu":
            raise TypeError(f"only integer tensors can be used as an index, this one is {self.dtype.name}")
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        body = repr(self._device.backend.to_numpy(self._data))
        # NumPy's repr is "array(... , dtype=...)": keep the values only
        if body.startswith("array("):
            body = body[6:].rsplit(", dtype=", 1)[0].rstrip(")")
            body = body.replace("\n      ", "\n       ")
        extras = [f"dtype={self.dtype.name}", f"device={self._device}"]
        if self._node is not None:
            extras.append(f"grad_fn=<{type(self._node).__name__}Backward>")
        elif self._requires_grad:
            extras.append("requires_grad=True")
        return f"tensor({body}, {', '.join(extras)})"

    __str__ = __repr__

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        """A copy with its own storage, the same type (Parameter stays Parameter), device and flags."""
        if self._node is not None:
            raise RuntimeError("deepcopy: only leaf tensors can be deep-copied; use .detach().clone()")
        out = object.__new__(type(self))
        out._data = self._device.xp.asarray(self._data, copy=True)
        out._device = self._device
        out._node = None
        out._out_idx = 0
        out._requires_grad = self._requires_grad
        out._retains_grad = False
        out.grad = None if self.grad is None else self.grad.__deepcopy__(memo)
        memo[id(self)] = out
        return out

    def __getstate__(self) -> Any:
        raise TypeError("Tensors are not pickled; save them with lucid_nn.save (safetensors)")

    # -- arithmetic ------------------------------------------------------------------------------
    def __add__(self, other: Any) -> Tensor:
        return _binop(_e.Add, self, other)

    def __radd__(self, other: Any) -> Tensor:
        return _rbinop(_e.Add, other, self)

    def __sub__(self, other: Any) -> Tensor:
        return _binop(_e.Subtract, self, other)

    def __rsub__(self, other: Any) -> Tensor:
        return _rbinop(_e.Subtract, other, self)

    def __mul__(self, other: Any) -> Tensor:
        return _binop(_e.Multiply, self, other)

    def __rmul__(self, other: Any) -> Tensor:
        return _rbinop(_e.Multiply, other, self)

    def __truediv__(self, other: Any) -> Tensor:
        if self._data.dtype in self._device.float_natives:
            return _binop(_e.Divide, self, other)
        return _e.divide(self, other)

    def __rtruediv__(self, other: Any) -> Tensor:
        return _e.divide(other, self)

    def __floordiv__(self, other: Any) -> Tensor:
        return _e.floor_divide(self, other)

    def __rfloordiv__(self, other: Any) -> Tensor:
        return _e.floor_divide(other, self)

    def __mod__(self, other: Any) -> Tensor:
        return _e.remainder(self, other)

    def __rmod__(self, other: Any) -> Tensor:
        return _e.remainder(other, self)

    def __pow__(self, other: Any) -> Tensor:
        return _binop(_e.Pow, self, other)

    def __rpow__(self, other: Any) -> Tensor:
        return _e.pow(other, self)

    def __matmul__(self, other: Any) -> Tensor:
        return _l.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        return _l.matmul(other, self)

    def __neg__(self) -> Tensor:
        return _e.negative(self)

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return _e.abs(self)

    def __invert__(self) -> Tensor:
        return _e.bitwise_invert(self)

    def __and__(self, other: Any) -> Tensor:
        return _e.bitwise_and(self, other)

    def __rand__(self, other: Any) -> Tensor:
        return _e.bitwise_and(other, self)

    def __or__(self, other: Any) -> Tensor:
        return _e.bitwise_or(self, other)

    def __ror__(self, other: Any) -> Tensor:
        return _e.bitwise_or(other, self)

    def __xor__(self, other: Any) -> Tensor:
        return _e.bitwise_xor(self, other)

    def __rxor__(self, other: Any) -> Tensor:
        return _e.bitwise_xor(other, self)

    def __lshift__(self, other: Any) -> Tensor:
        return _e.bitwise_left_shift(self, other)

    def __rshift__(self, other: Any) -> Tensor:
        return _e.bitwise_right_shift(self, other)

    def __rlshift__(self, other: Any) -> Tensor:
        return _e.bitwise_left_shift(other, self)

    def __rrshift__(self, other: Any) -> Tensor:
        return _e.bitwise_right_shift(other, self)

    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        return _e.equal(self, other)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return _e.not_equal(self, other)

    def __lt__(self, other: Any) -> Tensor:
        return _e.less(self, other)

    def __le__(self, other: Any) -> Tensor:
        return _e.less_equal(self, other)

    def __gt__(self, other: Any) -> Tensor:
        return _e.greater(self, other)

    def __ge__(self, other: Any) -> Tensor:
        return _e.greater_equal(self, other)

    # in-place operators: true in-place outside the graph; on a leaf that requires grad, an error
    def _inplace(self, result: Tensor, opname: str) -> Tensor:
        from ._autograd import _mode

        if _mode.enabled and (self._requires_grad or result._requires_grad):
            if self._requires_grad and self._node is None:
                raise RuntimeError(
                    f"{opname}: a leaf tensor that requires grad cannot be modified in place "
                    "(wrap the update in `with lucid_core.no_grad():`)"
                )
            return result  # inside the graph: rebinding keeps every gradient correct
        if result._data.dtype != self._data.dtype:
            raise TypeError(
                f"{opname}: the result dtype {result.dtype.name} cannot be stored in place into a "
                f"{self.dtype.name} tensor"
            )
        if tuple(result._data.shape) != tuple(self._data.shape):
            raise ValueError(
                f"{opname}: result of shape {result.shape} cannot be stored in place into shape {self.shape}"
            )
        self._data = result._data
        return self

    def _write(self, op: str, other: Any, alpha: Any = 1) -> bool:
        """Update this tensor's own memory (``self op= other * alpha``) where the backend can.

        True when done. Only outside the graph, with an operand of this tensor's device and dtype
        (or a Python number of a fitting kind); otherwise the caller takes the rebinding path.
        """
        write = self._device.backend.inplace
        if write is None:
            return False
        from ._autograd import _mode

        if _mode.enabled and self._requires_grad:
            return False
        if isinstance(other, Tensor):
            if other._device is not self._device or other._data.dtype != self._data.dtype:
                return False
            if _mode.enabled and other._requires_grad:
                return False
            other = other._data
        elif type(other) is float:
            if self._data.dtype not in self._device.float_natives:
                return False
        elif type(other) is not int:
            return False
        return write(op, self._data, other, alpha)

    def __iadd__(self, other: Any) -> Tensor:
        if self._write("add", other):
            return self
        return self._inplace(_e.add(self, other), "+=")

    def __isub__(self, other: Any) -> Tensor:
        if self._write("subtract", other):
            return self
        return self._inplace(_e.subtract(self, other), "-=")

    def __imul__(self, other: Any) -> Tensor:
        if self._write("multiply", other):
            return self
        return self._inplace(_e.multiply(self, other), "*=")

    def __itruediv__(self, other: Any) -> Tensor:
        if self._data.dtype in self._device.float_natives and self._write("divide", other):
            return self
        return self._inplace(_e.divide(self, other), "/=")

    def __ifloordiv__(self, other: Any) -> Tensor:
        return self._inplace(_e.floor_divide(self, other), "//=")

    def __imod__(self, other: Any) -> Tensor:
        return self._inplace(_e.remainder(self, other), "%=")

    def __ipow__(self, other: Any) -> Tensor:
        return self._inplace(_e.pow(self, other), "**=")

    def __imatmul__(self, other: Any) -> Tensor:
        return self._inplace(_l.matmul(self, other), "@=")

    def __iand__(self, other: Any) -> Tensor:
        return self._inplace(_e.bitwise_and(self, other), "&=")

    def __ior__(self, other: Any) -> Tensor:
        return self._inplace(_e.bitwise_or(self, other), "|=")

    def __ixor__(self, other: Any) -> Tensor:
        return self._inplace(_e.bitwise_xor(self, other), "^=")

    def __ilshift__(self, other: Any) -> Tensor:
        return self._inplace(_e.bitwise_left_shift(self, other), "<<=")

    def __irshift__(self, other: Any) -> Tensor:
        return self._inplace(_e.bitwise_right_shift(self, other), ">>=")

    # PyTorch-style in-place methods used by optimizers and init
    def copy_(self, src: Any) -> Tensor:
        """Overwrite the values with ``src`` (broadcast and cast to this tensor's dtype), in place."""
        from .ops.creation import asarray

        src = asarray(src, device=self._device) if not isinstance(src, Tensor) else src
        if src._device is not self._device:
            src = _m.to_device(src.detach(), self._device)
        if src.dtype is not self.dtype:
            src = _m.astype(src.detach(), self.dtype)
        src = _m.broadcast_to(src.detach(), self.shape) if src.shape != self.shape else src.detach()
        return self._inplace(_m.clone(src), "copy_")

    def zero_(self) -> Tensor:
        """Set every element to 0, in place."""
        if self._write("copy", 0):
            return self
        from .ops.creation import zeros_like

        return self._inplace(zeros_like(self), "zero_")

    def fill_(self, value: Any) -> Tensor:
        """Set every element to ``value``, in place."""
        if type(value) in (int, float) and self._write("copy", value):
            return self
        from .ops.creation import full_like

        return self._inplace(full_like(self, value), "fill_")

    def add_(self, other: Any, alpha: Any = 1) -> Tensor:
        """``self += alpha * other`` in place (in the tensor's own memory where the backend allows)."""
        if self._write("add", other, alpha):
            return self
        return self._inplace(_e.add(self, other if alpha == 1 else _e.multiply(other, alpha)), "add_")

    def sub_(self, other: Any, alpha: Any = 1) -> Tensor:
        """``self -= alpha * other`` in place."""
        if self._write("subtract", other, alpha):
            return self
        return self._inplace(_e.subtract(self, other if alpha == 1 else _e.multiply(other, alpha)), "sub_")

    def mul_(self, other: Any) -> Tensor:
        """``self *= other`` in place."""
        if self._write("multiply", other):
            return self
        return self._inplace(_e.multiply(self, other), "mul_")

    def div_(self, other: Any) -> Tensor:
        """``self /= other`` in place."""
        if self._write("divide", other):
            return self
        return self._inplace(_e.divide(self, other), "div_")

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        """Clip to [min, max], in place."""
        return self._inplace(_e.clip(self, min, max), "clamp_")

    # -- indexing ----------------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> Tensor:
        return _i.getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        _i.setitem(self, key, value)

    # -- method aliases (Array API functions as methods, PyTorch style) ----------------------------
    def sum(self, axis: Any = None, keepdims: bool = False, *, dtype: Any = None) -> Tensor:
        """Alias of :func:`lucid_core.sum`."""
        return _r.sum(self, axis=axis, keepdims=keepdims, dtype=dtype)

    def mean(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        """Alias of :func:`lucid_core.mean`."""
        return _r.mean(self, axis=axis, keepdims=keepdims)

    def max(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        """Alias of :func:`lucid_core.max`."""
        return _r.max(self, axis=axis, keepdims=keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        """Alias of :func:`lucid_core.min`."""
        return _r.min(self, axis=axis, keepdims=keepdims)

    def prod(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        """Alias of :func:`lucid_core.prod`."""
        return _r.prod(self, axis=axis, keepdims=keepdims)

    def var(self, axis: Any = None, keepdims: bool = False, correction: float = 0.0) -> Tensor:
        """Alias of :func:`lucid_core.var`."""
        return _r.var(self, axis=axis, keepdims=keepdims, correction=correction)

    def std(self, axis: Any = None, keepdims: bool = False, correction: float = 0.0) -> Tensor:
        """Alias of :func:`lucid_core.std`."""
        return _r.std(self, axis=axis, keepdims=keepdims, correction=correction)

    def all(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        """Alias of :func:`lucid_core.all`."""
        return _r.all(self, axis=axis, keepdims=keepdims)

    def any(self, axis: Any = None, keepdims: bool = False) -> Tensor:
        """Alias of :func:`lucid_core.any`."""
        return _r.any(self, axis=axis, keepdims=keepdims)

    def argmax(self, axis: int | None = None, keepdims: bool = False) -> Tensor:
        """Alias of :func:`lucid_core.argmax`."""
        return _s.argmax(self, axis=axis, keepdims=keepdims)

    def argmin(self, axis: int | None = None, keepdims: bool = False) -> Tensor:
        """Alias of :func:`lucid_core.argmin`."""
        return _s.argmin(self, axis=axis, keepdims=keepdims)

    def reshape(self, *shape: Any) -> Tensor:
        """Alias of :func:`lucid_core.reshape`; takes ``reshape(2, 3)`` or ``reshape((2, 3))``."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return _m.reshape(self, shape)

    def view(self, *shape: Any) -> Tensor:
        """Alias of :meth:`reshape` (Lucid tensors have no views)."""
        return self.reshape(*shape)

    def flatten(self, start_axis: int = 0, end_axis: int = -1) -> Tensor:
        """Alias of :func:`lucid_core.flatten`."""
        return _m.flatten(self, start_axis, end_axis)

    def permute(self, *axes: Any) -> Tensor:
        """Alias of :func:`lucid_core.permute_dims`."""
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return _m.permute_dims(self, axes)

    def transpose(self, axis0: int, axis1: int) -> Tensor:
        """Swap two axes (alias of :func:`lucid_core.swapaxes`)."""
        return _m.swapaxes(self, axis0, axis1)

    def squeeze(self, axis: Any = None) -> Tensor:
        """Alias of :func:`lucid_core.squeeze`."""
        return _m.squeeze(self, axis)

    def unsqueeze(self, axis: int) -> Tensor:
        """Alias of :func:`lucid_core.expand_dims`."""
        return _m.expand_dims(self, axis=axis)

    def expand(self, *shape: Any) -> Tensor:
        """Broadcast to ``shape`` (-1 keeps an axis), as PyTorch's ``expand``."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = tuple(s if s != -1 else self.shape[i - len(shape) + self.ndim] for i, s in enumerate(shape))
        return _m.broadcast_to(self, shape)

    def exp(self) -> Tensor:
        """Alias of :func:`lucid_core.exp`."""
        return _e.exp(self)

    def log(self) -> Tensor:
        """Alias of :func:`lucid_core.log`."""
        return _e.log(self)

    def sqrt(self) -> Tensor:
        """Alias of :func:`lucid_core.sqrt`."""
        return _e.sqrt(self)

    def abs(self) -> Tensor:
        """Alias of :func:`lucid_core.abs`."""
        return _e.abs(self)

    def tanh(self) -> Tensor:
        """Alias of :func:`lucid_core.tanh`."""
        return _e.tanh(self)

    def sigmoid(self) -> Tensor:
        """Alias of :func:`lucid_core.sigmoid`."""
        return _e.sigmoid(self)

    def relu(self) -> Tensor:
        """Alias of :func:`lucid_core.relu`."""
        return _e.relu(self)

    def clip(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        """Alias of :func:`lucid_core.clip` (``clamp`` too)."""
        return _e.clip(self, min, max)

    clamp = clip

    def square(self) -> Tensor:
        """Alias of :func:`lucid_core.square`."""
        return _e.square(self)

    def pow(self, exponent: Any) -> Tensor:
        """Alias of :func:`lucid_core.pow`."""
        return _e.pow(self, exponent)

    def matmul(self, other: Any) -> Tensor:
        """Alias of :func:`lucid_core.matmul`."""
        return _l.matmul(self, other)

    def dim(self) -> int:
        """The number of axes (PyTorch's name for ``ndim``)."""
        return self.ndim


class Parameter(Tensor):
    """A leaf tensor that is a model's learnable weight: requires grad by default.

    ``Parameter(tensor)`` shares the tensor's values; modules find their parameters by this type.
    """

    __slots__ = ()

    def __init__(
        self, data: Any = None, requires_grad: bool = True, *, dtype: DType | None = None, device: Any = None
    ) -> None:
        from .ops.creation import asarray

        if data is None:
            from .ops.creation import empty

            src = empty((0,), device=device)
        elif isinstance(data, Tensor):
            src = data.detach()
            if dtype is not None or device is not None:
                src = src.to(device, dtype)
        else:
            src = asarray(data, dtype=dtype, device=device)
            if dtype is None and src.dtype.kind not in "fc" and requires_grad:
                raise RuntimeError(
                    f"Parameter: only floating-point data can require grad, got {src.dtype.name}; pass "
                    "dtype=lucid_core.float32 or requires_grad=False"
                )
        self._data = src._data
        self._device = src._device
        self._node = None
        self._out_idx = 0
        self._requires_grad = False
        self._retains_grad = False
        self.grad = None
        self.requires_grad = requires_grad

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__


def _new_tensor(data: Any, device: Any) -> Tensor:
    """Wrap a native array without any checks (the fast path every op takes)."""
    t = object.__new__(Tensor)
    t._data = data
    t._device = device
    t._node = None
    t._out_idx = 0
    t._requires_grad = False
    t._retains_grad = False
    t.grad = None
    return t


from .ops import elementwise as _e  # noqa: E402 - the ops need Tensor defined first
from .ops import indexing as _i  # noqa: E402
from .ops import linalg as _l  # noqa: E402
from .ops import manipulation as _m  # noqa: E402
from .ops import reduction as _r  # noqa: E402
from .ops import searching as _s  # noqa: E402
from .ops._helpers import binop as _binop  # noqa: E402
from .ops._helpers import rbinop as _rbinop  # noqa: E402
