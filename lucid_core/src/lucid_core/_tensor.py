"""The Tensor: a native array of some backend, its device, and the node that made it."""

from __future__ import annotations

__all__ = ["Tensor", "Parameter"]

import bisect
import weakref
from collections.abc import Callable
from typing import Any

from ._dtypes import DType


class _Storage:
    """What a tensor shares with its ``detach()`` views: PyTorch's storage and version counter, in one box.

    ``version`` counts the in-place writes to the data; a node that saved the tensor for backward
    compares it with the version it recorded and refuses a changed one. ``views`` holds weak
    references to every tensor sharing the data (the owner and its detached views): a write that
    produces a new native array (immutable libraries: MLX, JAX; or a rebinding write on any backend)
    rebinds them all, so every op keeps reading ``t._data`` directly. ``ghosts`` lists, per write
    recorded in the graph, the tensor as it was before (``(version, weakref, requires_grad)``), so
    the graph edges made before the write keep pointing at the old history.
    """

    __slots__ = ("ghosts", "version", "views")

    def __init__(self, version: int = 0) -> None:
        self.version = version
        self.views: list[Any] = []
        self.ghosts: list[tuple[int, Any, bool]] | None = None

    def add_view(self, t: Tensor) -> None:
        views = self.views
        if len(views) >= 8:
            views[:] = [r for r in views if r() is not None]
        views.append(weakref.ref(t))

    def rebind(self, data: Any) -> None:
        """Point every live tensor sharing this storage at ``data``."""
        for r in self.views:
            t = r()
            if t is not None:
                t._data = data

    def add_ghost(self, ghost: Tensor) -> None:
        """Record ``ghost`` as this tensor before the write now being made (at the current version).

        Held weakly: the write's node keeps it alive as its input while that graph lives. Entries
        whose graph is gone can only raise; runs of them are merged now and then, so a tensor
        written in every training step keeps a short list.
        """
        ghosts = self.ghosts
        if ghosts is None:
            ghosts = self.ghosts = []
        elif len(ghosts) >= 8 and not len(ghosts) & (len(ghosts) - 1):
            compact: list[tuple[int, Any, bool]] = []
            for before, ref, requires in ghosts:
                g = ref()
                if g is None or (g._node is not None and g._node.inputs is None):
                    if compact and compact[-1][1] is _gone and compact[-1][2] == requires:
                        compact[-1] = (before, _gone, requires)
                        continue
                    ref = _gone
                compact.append((before, ref, requires))
            ghosts[:] = compact
        ghosts.append((self.version, weakref.ref(ghost), ghost._requires_grad))

    def resolve(self, t: Tensor, version: int) -> Tensor | None:
        """The tensor that stood for ``t`` when a graph edge to it was made at ``version``."""
        ghosts = self.ghosts
        assert ghosts is not None
        i = bisect.bisect_left(ghosts, (version,))  # the first write made at or after that version
        if i == len(ghosts):
            return t
        g = ghosts[i][1]()
        if g is None and ghosts[i][2]:
            raise RuntimeError(
                "backward: a tensor used in this graph was modified in place afterwards inside another graph, "
                "and that graph has been freed; pass retain_graph=True to its backward"
            )
        return g


def _gone() -> None:
    """The reference of a ghost whose graph was freed."""
    return None


class Tensor:
    """An n-dimensional array on one device that can record the ops applied to it.

    Make tensors with :func:`lucid_core.asarray` / :func:`lucid_core.tensor` (or ``Tensor(data)``).
    Operators and attributes follow the Array API standard; the methods, which the standard does not
    define, follow PyTorch (``x.sum(dim=1)``, ``x.max(1)`` giving values and indices, ``x.size()``,
    ``x.view(...)``, ``x.to(device)``; ``axis=``/``keepdims=`` are accepted too).
    """

    __slots__ = (
        "__weakref__", "_box", "_data", "_device", "_node", "_out_idx", "_requires_grad", "_retains_grad", "grad",
    )  # fmt: skip
    __array_priority__ = 1000  # NumPy defers `ndarray <op> Tensor` to us

    def __init__(self, data: Any, dtype: DType | None = None, device: Any = None, requires_grad: bool = False) -> None:
        from .ops.creation import asarray

        src = asarray(data, dtype=dtype, device=device)
        self._data = src._data
        self._device = src._device
        self._box = None
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

    # ``size``: the element count as the Array API requires, an int that ``x.size()`` can also call
    # (PyTorch's shape); attached with the other PyTorch-style methods by _tensor_methods.py

    def numel(self) -> int:
        """Number of elements (PyTorch's name for ``size``)."""
        n = 1
        for s in self._data.shape:
            n *= s
        return n

    @property
    def data(self) -> Tensor:
        """This tensor's values outside the graph: a detached view that shares the data (writes land here)."""
        return self.detach()

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"Tensor.data must be set to a Tensor, got {type(value).__name__}")
        # new data, so a new storage: the views handed out before keep the old one (as in PyTorch),
        # and a graph that saved this tensor sees a new version rather than reading the new values
        old = self._box
        if old is not None:
            old.views = [r for r in old.views if r() is not self]
        box = self._box = _Storage((0 if old is None else old.version) + 1)
        box.views.append(weakref.ref(self))
        self._data = value._data
        self._device = value._device

    @property
    def _version(self) -> int:
        """How many in-place writes this tensor's data has had (PyTorch's ``t._version``)."""
        b = self._box
        return 0 if b is None else b.version

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
        """Keep ``.grad`` on this non-leaf tensor after backward (accumulating, after any hooks; no-op on leaves)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._node is None:
            return
        self._retains_grad = True
        self._node._retain = True

    # -- gradient hooks (register_hook) --------------------------------------------------------------
    def register_hook(self, hook: Any) -> Any:
        """Call ``hook(grad)`` each time this tensor's gradient is computed; returns a handle with ``remove()``.

        A Tensor returned by the hook replaces the gradient (for later hooks, ``retain_grad``, ``.grad`` of a
        leaf and everything upstream); None keeps it. Hooks run in the order they were registered, once per
        backward with the gradient summed over every use of the tensor.
        """
        from ._autograd import register_tensor_hook

        return register_tensor_hook(self, hook)

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
        """A view with no graph that shares this tensor's data: a write to either lands in both.

        The view also shares the version counter, so writing through it into a tensor that
        backward still needs is caught (PyTorch's detached views behave the same way).
        """
        t = _new_tensor(self._data, self._device)
        b = self._storage()
        t._box = b
        b.add_view(t)
        return t

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
        """A NumPy array of the values (no copy where the backend allows); needs NumPy installed."""
        if self._requires_grad:
            raise RuntimeError("numpy(): the tensor requires grad; call .detach().numpy()")
        try:
            return self._device.backend.to_numpy(self._data)
        except ModuleNotFoundError as exc:
            if exc.name != "numpy":
                raise
            raise ModuleNotFoundError(
                "numpy(): NumPy is not installed; install it with `pip install numpy` "
                "(tolist() and printing work without it)",
                name="numpy",
            ) from exc

    def tobytes(self) -> bytes:
        """The raw little-endian bytes of the values in C order (what safetensors stores)."""
        return self._device.backend.to_bytes(self._data)

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        arr = self._device.backend.to_numpy(self._data)
        return arr if dtype is None else arr.astype(dtype)

    def __dlpack__(
        self,
        /,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[Any, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """A DLPack capsule of the data (the standard's signature; forwarded to the native array)."""
        given = {"stream": stream, "max_version": max_version, "dl_device": dl_device, "copy": copy}
        # pass only what the caller set: older native arrays do not know the newer keywords
        return self._data.__dlpack__(**{k: v for k, v in given.items() if v is not None})

    def __dlpack_device__(self) -> Any:
        return self._data.__dlpack_device__()

    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        if api_version not in (None, "2022.12", "2023.12", "2024.12"):
            raise ValueError(f"lucid_core implements Array API 2024.12, not {api_version!r}")
        import lucid_core

        return lucid_core

    def eval(self) -> Tensor:
        """Compute a lazy tensor now (a no-op on eager backends); returns self."""
        from .backend import evaluate

        evaluate((self,))  # a lazy backend may hand back a new array (dask's persist): rebound here
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
        from ._format import tensor_repr

        return tensor_repr(self)

    __str__ = __repr__

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        """A copy with its own storage, the same type (Parameter stays Parameter), device and flags."""
        if self._node is not None:
            raise RuntimeError("deepcopy: only leaf tensors can be deep-copied; use .detach().clone()")
        out = object.__new__(type(self))
        out._data = self._device.xp.asarray(self._data, copy=True)
        out._device = self._device
        out._box = None
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

    # -- in-place writes ---------------------------------------------------------------------------
    # Every in-place method and operator ends in `_apply_inplace` (or the `_write` fast path): the
    # write lands in this tensor and in every detached view of it, and bumps the shared version.
    def _storage(self) -> _Storage:
        """This tensor's storage box, made on first need (most tensors are never written or viewed)."""
        b = self._box
        if b is None:
            b = self._box = _Storage()
            b.views.append(weakref.ref(self))
        return b

    def _set_data(self, data: Any) -> None:
        """Store ``data`` as the new value of this tensor and its views, and count the write."""
        b = self._storage()
        if data is not self._data:
            b.rebind(data)
        b.version += 1

    def _apply_inplace(self, fn: Callable[[Tensor], Tensor], opname: str, *operands: Any) -> Tensor:
        """Write ``fn(self)`` into this tensor: the one path of every in-place method and operator.

        Outside the graph the values are replaced (every detached view sees them). When the write
        belongs in the graph (grad mode, and this tensor or an operand requires grad), it is recorded
        as PyTorch does: ``fn`` runs on a stand-in for the tensor as it was, which the edges made
        earlier keep using, and this tensor becomes the op's output (its ``grad_fn``).
        """
        from ._autograd import _mode

        if _mode.enabled and (self._requires_grad or any(isinstance(o, Tensor) and o._requires_grad for o in operands)):
            if self._requires_grad and self._node is None:
                raise RuntimeError(
                    f"{opname}: a leaf tensor that requires grad cannot be modified in place "
                    "(wrap the update in `with lucid_core.no_grad():`)"
                )
            ghost = self._ghost()
            result = fn(ghost)
            self._check_fits(result, opname)
            if result._requires_grad:
                self._become(ghost, result)
                return self
            if self._requires_grad:
                raise RuntimeError(
                    f"{opname}: the result has no gradient, so it cannot replace the values of a tensor that "
                    "requires grad; write it under `with lucid_core.no_grad():` or into a .detach()"
                )
        else:
            result = fn(self)
            self._check_fits(result, opname)
        self._set_data(result._data)
        return self

    def _check_fits(self, result: Tensor, opname: str) -> None:
        if result._data.dtype != self._data.dtype:
            raise TypeError(
                f"{opname}: the result dtype {result.dtype.name} cannot be stored in place into a "
                f"{self.dtype.name} tensor"
            )
        if tuple(result._data.shape) != tuple(self._data.shape):
            raise ValueError(
                f"{opname}: result of shape {result.shape} cannot be stored in place into shape {self.shape}"
            )

    def _ghost(self) -> Tensor:
        """A stand-in for this tensor as it is now: same data, graph position and version."""
        g = _new_tensor(self._data, self._device)
        g._node = self._node
        g._out_idx = self._out_idx
        g._requires_grad = self._requires_grad
        b = self._box
        if b is not None and b.version:
            g._box = _Storage(b.version)
            g._box.views.append(weakref.ref(g))
        return g

    def _become(self, ghost: Tensor, result: Tensor) -> None:
        """Take over ``result``'s data and graph position; ``ghost`` keeps the old ones for older edges."""
        b = self._storage()
        before = b.version
        if self._node is not None:
            _replace_output(self._node, self._out_idx, ghost)
        b.add_ghost(ghost)
        b.version = before + 1
        b.rebind(result._data)
        node = result._node
        self._node = node
        self._out_idx = result._out_idx
        self._requires_grad = True
        _replace_output(node, result._out_idx, self)
        node._out_versions = {result._out_idx: before + 1}
        if self._retains_grad:
            node._retain = True

    def _write(self, op: str, other: Any, alpha: Any = 1) -> bool:
        """Update this tensor's own memory (``self op= other * alpha``) where the backend can.

        True when done (and counted as a write). Only outside the graph, with an operand of this
        tensor's device and dtype (or a Python number of a fitting kind); otherwise the caller
        takes :meth:`_apply_inplace`.
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
        if not write(op, self._data, other, alpha):
            return False
        self._storage().version += 1
        return True

    def __iadd__(self, other: Any) -> Tensor:
        if self._write("add", other):
            return self
        return self._apply_inplace(lambda t: _e.add(t, other), "+=", other)

    def __isub__(self, other: Any) -> Tensor:
        if self._write("subtract", other):
            return self
        return self._apply_inplace(lambda t: _e.subtract(t, other), "-=", other)

    def __imul__(self, other: Any) -> Tensor:
        if self._write("multiply", other):
            return self
        return self._apply_inplace(lambda t: _e.multiply(t, other), "*=", other)

    def __itruediv__(self, other: Any) -> Tensor:
        if self._data.dtype in self._device.float_natives and self._write("divide", other):
            return self
        return self._apply_inplace(lambda t: _e.divide(t, other), "/=", other)

    def __ifloordiv__(self, other: Any) -> Tensor:
        return self._apply_inplace(lambda t: _e.floor_divide(t, other), "//=", other)

    def __imod__(self, other: Any) -> Tensor:
        return self._apply_inplace(lambda t: _e.remainder(t, other), "%=", other)

    def __ipow__(self, other: Any) -> Tensor:
        return self._apply_inplace(lambda t: _e.pow(t, other), "**=", other)

    def __imatmul__(self, other: Any) -> Tensor:
        return self._apply_inplace(lambda t: _l.matmul(t, other), "@=", other)

    def __iand__(self, other: Any) -> Tensor:
        return self._apply_inplace(lambda t: _e.bitwise_and(t, other), "&=", other)

    def __ior__(self, other: Any) -> Tensor:
        return self._apply_inplace(lambda t: _e.bitwise_or(t, other), "|=", other)

    def __ixor__(self, other: Any) -> Tensor:
        return self._apply_inplace(lambda t: _e.bitwise_xor(t, other), "^=", other)

    def __ilshift__(self, other: Any) -> Tensor:
        return self._apply_inplace(lambda t: _e.bitwise_left_shift(t, other), "<<=", other)

    def __irshift__(self, other: Any) -> Tensor:
        return self._apply_inplace(lambda t: _e.bitwise_right_shift(t, other), ">>=", other)

    # PyTorch-style in-place methods (optimizers, init, state-dict loading)
    def copy_(self, src: Any) -> Tensor:
        """Overwrite the values with ``src`` (broadcast, cast and moved to this tensor), in place.

        Differentiable with respect to ``src``, as in PyTorch; a write into a detached view (as
        ``state_dict()`` hands out) lands in the tensor it views.
        """
        from .ops.creation import asarray

        src = asarray(src, device=self._device) if not isinstance(src, Tensor) else src
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
        return self._apply_inplace(lambda t: _Overwrite.apply(t, src), "copy_", src)

    def zero_(self) -> Tensor:
        """Set every element to 0, in place."""
        return self._fill(0, "zero_")

    def fill_(self, value: Any) -> Tensor:
        """Set every element to ``value`` (a number or a 0-d tensor), in place."""
        if isinstance(value, Tensor):
            if value.ndim != 0:
                raise RuntimeError(f"fill_: the value must be a number or a 0-d tensor, got shape {value.shape}")
            return self.copy_(value)
        return self._fill(value, "fill_")

    def _fill(self, value: Any, opname: str) -> Tensor:
        if type(value) in (int, float) and self._write("copy", value):
            return self
        return self._apply_inplace(lambda t: _Overwrite.apply(t, value), opname)

    def add_(self, other: Any, alpha: Any = 1) -> Tensor:
        """``self += alpha * other`` in place (in the tensor's own memory where the backend allows)."""
        if self._write("add", other, alpha):
            return self
        return self._apply_inplace(
            lambda t: _e.add(t, other if alpha == 1 else _e.multiply(other, alpha)), "add_", other
        )

    def sub_(self, other: Any, alpha: Any = 1) -> Tensor:
        """``self -= alpha * other`` in place."""
        if self._write("subtract", other, alpha):
            return self
        return self._apply_inplace(
            lambda t: _e.subtract(t, other if alpha == 1 else _e.multiply(other, alpha)), "sub_", other
        )

    def mul_(self, other: Any) -> Tensor:
        """``self *= other`` in place."""
        if self._write("multiply", other):
            return self
        return self._apply_inplace(lambda t: _e.multiply(t, other), "mul_", other)

    def div_(self, other: Any) -> Tensor:
        """``self /= other`` in place."""
        if self._write("divide", other):
            return self
        return self._apply_inplace(lambda t: _e.divide(t, other), "div_", other)

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        """Clip to [min, max], in place."""
        return self._apply_inplace(lambda t: _e.clip(t, min, max), "clamp_", min, max)

    # -- indexing ----------------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> Tensor:
        return _i.getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        _i.setitem(self, key, value)

    # -- method aliases: PyTorch-style methods (x.sum(dim=1), x.max(dim), x.size()...) are attached by
    # _tensor_methods.py when the package loads, so they live in one module apart from this class body
    def clip(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        """Alias of :func:`lucid_core.clip` (``clamp`` too)."""
        return _e.clip(self, min, max)


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
        self._box = None
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
    t._box = None
    t._node = None
    t._out_idx = 0
    t._requires_grad = False
    t._retains_grad = False
    t.grad = None
    return t


def _replace_output(node: Any, index: int, t: Tensor) -> None:
    """Make ``t`` the ``index``-th output of ``node`` (held weakly, as every output is)."""
    outs = list(node.outputs)
    outs[index] = weakref.ref(t)
    node.outputs = outs


from ._tensor_methods import attach as _attach_methods  # noqa: E402 - needs the ops above
from .ops import elementwise as _e  # noqa: E402 - the ops need Tensor defined first
from .ops import indexing as _i  # noqa: E402
from .ops import linalg as _l  # noqa: E402
from .ops import manipulation as _m  # noqa: E402
from .ops._helpers import binop as _binop  # noqa: E402
from .ops._helpers import rbinop as _rbinop  # noqa: E402
from .ops.indexing import Overwrite as _Overwrite  # noqa: E402

_attach_methods()
