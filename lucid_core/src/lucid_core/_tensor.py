"""The Tensor: a native array of some backend, its device, and the node that made it.

This module imports no op and no autograd engine (only the dtypes, the backend contract, grad mode
and the printer below it). What a tensor does by calling ops -- ``Tensor(data)``, operators, indexing,
in-place writes, ``backward`` and the PyTorch-style methods -- is attached to the class when
``lucid_core`` loads, by ``_tensor_operators.attach`` and ``_tensor_methods.attach`` (DeZero's
``setup_variable()``); the in-place machinery those writes end in (``_apply_inplace``, ``_write``)
lives here, beside the storage it updates.
"""

from __future__ import annotations

__all__ = ["Tensor"]

import bisect
import sys
import weakref
from collections.abc import Callable
from typing import Any

from . import _dtypes as _dt
from ._dtypes import DType
from ._format import tensor_repr
from ._grad_mode import _mode
from .backend import Device, evaluate


class _Storage:
    """What a tensor shares with its views and ``detach()`` aliases: PyTorch's storage and version counter.

    ``data`` is the storage's array: the base's data, of which each view's array is a function (its
    recipe, :mod:`lucid_core._views`). ``version`` counts the in-place writes to any of them; a node that
    saved a tensor for backward compares it with the version it recorded and refuses a changed one.
    ``views`` holds weak references to every tensor sharing the storage: a write that produces a new
    array (immutable libraries: MLX, JAX; or a rebinding write on any backend) rebinds the aliases and
    recomputes the views, so every op keeps reading ``t._data`` directly. ``ghosts`` lists, per tensor
    and per write recorded in the graph, the tensor as it was before (``(version, weakref,
    requires_grad)``), so the graph edges made before the write keep pointing at the old history.
    """

    __slots__ = ("address", "data", "ghosts", "pinned", "version", "views")

    def __init__(self, data: Any, version: int = 0) -> None:
        self.data = data
        self.version = version
        self.views: list[Any] = []
        self.ghosts: dict[int, list[tuple[int, Any, bool]]] | None = None
        self.address: int | None = None
        # shared memory (``share_memory_``): the backend's ``inplace``, through which every new array is
        # copied into the storage's memory instead of replacing it, so other processes keep seeing it
        self.pinned: Callable[..., bool] | None = None

    def add_view(self, t: Tensor) -> None:
        views = self.views
        if len(views) >= 8:
            views[:] = [r for r in views if r() is not None]
        views.append(weakref.ref(t))
        ghosts = self.ghosts
        if ghosts is not None:
            ghosts.pop(id(t), None)  # a dead tensor's entries, if ``t`` reuses its id

    def rebind(self, data: Any) -> None:
        """Make ``data`` the storage's array: the aliases take it, the views recompute theirs from it.

        ``data`` may be the current array, written in place: then only views that are not memory views of
        it (copies: gathers, reshapes NumPy had to copy; every view on an immutable library) recompute.
        """
        if self.pinned is not None and data is not self.data:
            if tuple(data.shape) == tuple(self.data.shape) and self.pinned("copy", self.data, data, 1, into_view=True):
                data = self.data
            else:  # a new shape (``set_``, ``resize_``): the memory cannot hold it, so the storage stops being shared
                self.pinned = None
        same = data is self.data
        self.data = data
        for r in self.views:
            t = r()
            if t is None:
                continue
            v = t._view
            if v is None:
                t._data = data
            elif not (same and v.alias):
                dev = t._device
                t._data = v.apply(dev, data)
                v.alias = dev.backend.view_of(t._data, data) if dev.backend.views_alias else False

    def add_ghost(self, t: Tensor, ghost: Tensor) -> None:
        """Record ``ghost`` as ``t`` before the write now being made (at the current version).

        Held weakly: the write's node keeps it alive as its input while that graph lives. Entries
        whose graph is gone can only raise; runs of them are merged now and then, so a tensor
        written in every training step keeps a short list.
        """
        table = self.ghosts
        if table is None:
            table = self.ghosts = {}
        ghosts = table.get(id(t))
        if ghosts is None:
            ghosts = table[id(t)] = []
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
        assert self.ghosts is not None
        ghosts = self.ghosts.get(id(t))
        if ghosts is None:
            return t
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
        "__weakref__", "_box", "_data", "_device", "_ghosts", "_grad", "_node", "_out_idx", "_requires_grad",
        "_retains_grad", "_tangents", "_view",
    )  # fmt: skip  # _tangents (forward mode, {level: tangent}) is set only on dual tensors
    __array_priority__ = 1000  # NumPy defers `ndarray <op> Tensor` to us

    # -- basic properties ----------------------------------------------------------------------
    @property
    def dtype(self) -> DType:
        """The Lucid dtype of the elements."""
        return self._device.backend.lucid_dtype(self._data.dtype)

    @property
    def device(self) -> Device:
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
        box = self._box = _Storage(value._data, (0 if old is None else old.version) + 1)
        box.views.append(weakref.ref(self))
        self._data = value._data
        self._device = value._device
        self._view = None

    @property
    def grad(self) -> Tensor | None:
        """The gradient accumulated by backward (None until one arrives)."""
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}"
                )
            if value._data.shape != self._data.shape and tuple(value._data.shape) != tuple(self._data.shape):
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of size "
                    f"'{list(self.shape)}'. Please ensure that the gradient and the tensor are the same size"
                )
            if value._data.dtype != self._data.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{value.dtype.name}' to a tensor with dtype "
                    f"'{self.dtype.name}'. The gradient must match the tensor's dtype"
                )
            if value._device is not self._device:
                raise RuntimeError(
                    f"attempting to assign a gradient on {value.device} to a tensor on {self.device}; "
                    "move it first with .to()"
                )
        self._grad = value

    @property
    def _version(self) -> int:
        """How many in-place writes this tensor's data has had (PyTorch's ``t._version``)."""
        b = self._box
        return 0 if b is None else b.version

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

    @property
    def retains_grad(self) -> bool:
        """True when :meth:`retain_grad` was called on this non-leaf tensor (False on leaves, as PyTorch)."""
        return self._retains_grad and self._node is not None

    def detach(self) -> Tensor:
        """A tensor with no graph that shares this tensor's data: a write to either lands in both.

        It also shares the version counter, so writing through it into a tensor that backward still
        needs is caught (PyTorch's detached tensors behave the same way). Not a view (``_is_view()`` is
        False, as in PyTorch), though views taken from it are views of it.
        """
        t = _new_tensor(self._data, self._device)
        b = self._storage()
        t._box = b
        v = self._view
        if v is not None:
            t._view = type(v)(v.base, v.chain, False, False, v.alias)
        b.add_view(t)
        return t

    def detach_(self) -> Tensor:
        """Cut this tensor from its graph, in place."""
        self._node = None
        self._requires_grad = False
        return self

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
        # the package namespace itself (always imported before a Tensor can exist); looked up, not
        # imported, since the package sits above this module
        return sys.modules["lucid_core"]

    def eval(self) -> Tensor:
        """Compute a lazy tensor now (a no-op on eager backends); returns self."""
        evaluate((self,))  # a lazy backend may hand back a new array (dask's persist): rebound here
        return self

    def float(self) -> Tensor:
        """Cast to float32."""
        return self.astype(_dt.float32)

    def double(self) -> Tensor:
        """Cast to float64."""
        return self.astype(_dt.float64)

    def long(self) -> Tensor:
        """Cast to int64."""
        return self.astype(_dt.int64)

    def int(self) -> Tensor:
        """Cast to int32."""
        return self.astype(_dt.int32)

    def bool(self) -> Tensor:
        """Cast to bool."""
        return self.astype(_dt.bool)

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
        return tensor_repr(self)

    __str__ = __repr__

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        """A copy with its own storage, the same type (Parameter stays Parameter), device and flags."""
        if self._node is not None:
            raise RuntimeError("deepcopy: only leaf tensors can be deep-copied; use .detach().clone()")
        out = object.__new__(type(self))
        _init_slots(out, self._device.xp.asarray(self._data, copy=True), self._device)
        out._requires_grad = self._requires_grad
        out._grad = None if self._grad is None else self._grad.__deepcopy__(memo)
        memo[id(self)] = out
        return out

    def __getstate__(self) -> Any:
        raise TypeError("Tensors are not pickled; save them with lucid_nn.save (safetensors)")

    # -- in-place writes ---------------------------------------------------------------------------
    # Every in-place method and operator ends in `_apply_inplace` (or the `_write` fast path): the
    # write lands in this tensor's storage, so its base, its aliases and every view of them see it, and
    # bumps the shared version. Writes through views are in lucid_core._views (attached below as _VIEWS).
    def _storage(self) -> _Storage:
        """This tensor's storage box, made on first need (most tensors are never written or viewed)."""
        b = self._box
        if b is None:
            b = self._box = _Storage(self._data)
            b.views.append(weakref.ref(self))
        return b

    def share_memory_(self) -> Tensor:
        """Move this tensor's storage into shared memory (PyTorch's ``share_memory_``); a no-op if it is there.

        The whole storage moves, so its base, aliases and views stay one storage; later writes land in the
        shared memory, which processes forked afterwards (or given the tensor through
        ``lucid.multiprocessing``) see. Backends whose arrays cannot live there (MLX) raise.
        """
        b = self._storage()
        if b.pinned is not None:
            return self
        backend = self._device.backend
        if backend.share_memory is None or backend.inplace is None:
            raise RuntimeError(
                f"share_memory_: the {backend.name} backend's arrays cannot be placed in shared memory (its library "
                "manages its own buffers); move the tensor to the CPU first: t.to('cpu').share_memory_()"
            )
        b.rebind(backend.share_memory(b.data))
        b.pinned = backend.inplace
        return self

    def is_shared(self) -> bool:
        """Whether this tensor's storage is in shared memory (after ``share_memory_``)."""
        return self._box is not None and self._box.pinned is not None

    def _put(self, data: Any) -> None:
        """Store ``data`` as this tensor's new values (into its storage: base, aliases, views), uncounted."""
        b = self._storage()
        if self._view is None:
            if data is not self._data or len(b.views) > 1:
                b.rebind(data)
        else:
            _VIEWS.put(self, data)

    def _set_data(self, data: Any) -> None:
        """Store ``data`` as the new values of this tensor and of everything sharing its storage; count the write."""
        self._put(data)
        self._box.version += 1

    def _apply_inplace(self, fn: Callable[[Tensor], Tensor], opname: str, *operands: Any) -> Tensor:
        """Write ``fn(self)`` into this tensor: the one path of every in-place method and operator.

        Outside the graph the values are replaced (every alias and view sees them). When the write
        belongs in the graph (grad mode, and this tensor or an operand requires grad), it is recorded
        as PyTorch does: ``fn`` runs on a stand-in for the tensor as it was, which the edges made
        earlier keep using, and this tensor becomes the op's output (its ``grad_fn``); a write through a
        view rebases its base's history instead (``lucid_core._views.write_in_graph``).
        """
        v = self._view
        if v is not None:
            _VIEWS.check_writable(self, opname)
        if _mode.enabled and (self._requires_grad or any(isinstance(o, Tensor) and o._requires_grad for o in operands)):
            if v is not None and v.track:
                return _VIEWS.write_in_graph(self, fn, opname)
            if self._requires_grad and self._node is None:
                raise RuntimeError(
                    f"{opname}: a leaf tensor that requires grad cannot be modified in place "
                    "(wrap the update in `with lucid_core.no_grad():`)"
                )
            ghost = self._ghost()
            if _fw_levels and getattr(self, "_tangents", None):
                ghost._tangents = self._tangents
            result = fn(ghost)
            self._check_fits(result, opname)
            if result._requires_grad:
                self._become(ghost, result)
                if _fw_levels:
                    _FWD.after_inplace(self, result, opname)
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
        if _fw_levels:
            _FWD.after_inplace(self, result, opname)
        return self

    def _check_fits(self, result: Tensor, opname: str) -> None:
        if result._data.__class__ is not self._data.__class__ and hasattr(result, "_phys"):
            _VMAP.check_inplace(self, result, opname)  # a vmap wrapper's values cannot land in an unbatched tensor
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
            g._box = _Storage(self._data, b.version)
            g._box.views.append(weakref.ref(g))
        return g

    def _become(self, ghost: Tensor, result: Tensor, written: Any = None) -> None:
        """Take over ``result``'s values and graph position; ``ghost`` keeps the old ones for older edges.

        The differentiable views of this tensor take its new history too (``written``: the view written
        through, with the ghost made for it, when the write came through one).
        """
        b = self._storage()
        before = b.version
        views = _VIEWS.hand_over_views(self, written) if len(b.views) > 1 else None
        self._hand_over(ghost)
        self._put(result._data)
        b.version = before + 1
        self._take_node(result, before + 1)
        if views:
            _VIEWS.retake_views(self, views)

    def _hand_over(self, ghost: Tensor | None) -> None:
        """Before a write in the graph: the edges made to this tensor so far now belong to ``ghost``.

        This tensor holds its ghosts (``_ghosts``; the storage's table only finds them by version): the nodes
        with edges to its older versions hold this tensor, so a ghost lives exactly as long as an edge may
        lead to it, whichever node of a backward pass runs first. Ghosts of freed graphs are dropped as
        the list grows.
        """
        if ghost is None:
            return
        if self._node is not None:
            _replace_output(self._node, self._out_idx, ghost)
        self._box.add_ghost(self, ghost)
        try:
            held = self._ghosts
        except AttributeError:  # the first write in the graph: the slot is set only here
            held = self._ghosts = []
        if len(held) >= 8 and not len(held) & (len(held) - 1):
            held[:] = [g for g in held if g._node is not None and g._node.inputs is not None]
        held.append(ghost)

    def _take_node(self, result: Tensor, version: int) -> None:
        """Become the output of ``result``'s node (whose values this tensor now holds) at ``version``."""
        node = result._node
        self._node = node
        self._out_idx = result._out_idx
        self._requires_grad = True
        _replace_output(node, result._out_idx, self)
        node._out_versions = {result._out_idx: version}
        if self._retains_grad:
            node._retain = True

    def _write(self, op: str, other: Any, alpha: Any = 1) -> bool:
        """Update this tensor's own memory (``self op= other * alpha``) where the backend can.

        True when done (and counted as a write). Only outside the graph, with an operand of this
        tensor's device and dtype (or a Python number of a fitting kind), and for a view only where its
        array is a memory view of its storage's; otherwise the caller takes :meth:`_apply_inplace`.
        """
        write = self._device.backend.inplace
        if write is None or (_fw_levels and _FWD.involved(self, other)):
            return False  # (a tangent must follow the write: the op path computes it)
        if _write_hook is not None:  # lucid_core.compiler is recording: it gives the target and operand their slots
            _write_hook(self, other)
        if op == "divide" and self._data.dtype not in self._device.float_natives:
            return False  # true division of an integer tensor makes floats: not a write into its memory
        if _mode.enabled and self._requires_grad:
            return False
        if isinstance(other, Tensor):
            if other._device is not self._device or other._data.dtype != self._data.dtype:
                return False
            if other._data.__class__ is not self._data.__class__:
                return False  # a vmap wrapper: the write goes through _apply_inplace, which checks it
            if _mode.enabled and other._requires_grad:
                return False
            other = other._data
        elif type(other) is float:
            if self._data.dtype not in self._device.float_natives:
                return False
        elif type(other) is not int:
            return False
        v = self._view
        if v is None:
            if not write(op, self._data, other, alpha):
                return False
            b = self._storage()
        else:
            if not v.alias or _VIEWS.overlaps(self):
                return False
            if not write(op, self._data, other, alpha, into_view=True):
                return False
            b = self._box
        if len(b.views) > 1:
            b.rebind(b.data)  # memory written: views that are copies recompute
        b.version += 1
        return True


#: the recorder's ``before_write`` while lucid_core.compiler traces a function (None otherwise)
_write_hook: Any = None

#: lucid_core._views, set when it loads (it sits above this module: it needs the autograd engine)
_VIEWS: Any = None
#: lucid_core.func._vmap, set when it loads (only its wrappers reach the code that uses it)
_VMAP: Any = None

#: the open forward-mode dual levels, innermost last (lucid_core._forward_ad owns them; empty: forward mode is off)
_fw_levels: list[int] = []
#: lucid_core._forward_ad, set when it loads (it sits above this module: its rules are ops)
_FWD: Any = None


def _init_slots(t: Tensor, data: Any, device: Device) -> None:
    """Give ``t`` its slots: ``data`` on ``device``, no graph, no storage box, no grad (the one place they are set)."""
    t._data = data
    t._device = device
    t._box = None
    t._node = None
    t._out_idx = 0
    t._requires_grad = False
    t._retains_grad = False
    t._grad = None
    t._view = None


def _new_tensor(data: Any, device: Device) -> Tensor:
    """Wrap a native array without any checks (the fast path every op takes)."""
    t = object.__new__(Tensor)
    _init_slots(t, data, device)
    return t


def shared_tensor(data: Any, device: Device, cls: type[Tensor] = Tensor, requires_grad: bool = False) -> Tensor:
    """A leaf tensor of type ``cls`` over ``data``, an array in shared memory that another process made.

    Its storage is marked shared (``is_shared()``), so its writes stay in that memory.
    """
    t = object.__new__(cls)
    _init_slots(t, data, device)
    t._requires_grad = bool(requires_grad)
    t._storage().pinned = device.backend.inplace
    return t


def check_tensor(x: Any, name: str) -> Tensor:
    """``x`` if it is a Tensor, else a TypeError naming the function ``name`` and the type received.

    The one spelling of the "expected a Tensor" check every op and extension makes on its input.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type(x).__name__}")
    return x


def _replace_output(node: Any, index: int, t: Tensor) -> None:
    """Make ``t`` the ``index``-th output of ``node`` (held weakly, as every output is)."""
    outs = list(node.outputs)
    outs[index] = weakref.ref(t)
    node.outputs = outs
