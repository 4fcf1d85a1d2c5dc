"""Whole Python objects in checkpoints (``lucid.save(model, f)``), with PyTorch 2.13's ``weights_only`` rules.

What :func:`lucid_nn.save` cannot describe as nested dicts/lists of tensors (a Module object, an optimizer
object, a NumPy array, any class) is pickled, with every tensor left out of the pickle: the pickle names
each one by a persistent id, and the tensors themselves are stored as raw bytes with their dtype and
shape in the same safetensors file (so a file saved on NumPy loads on MLX, and the pickle never holds a
backend's array). The pickle is one more entry of that file (a ``uint8`` "tensor"), so saving stays
atomic and loading keeps its checks.

Loading follows ``torch.load``: ``weights_only=True`` (the default) unpickles only an allow-list of
globals (containers, Lucid's dtypes and devices, and what :func:`add_safe_globals` or the
:func:`safe_globals` context added) and refuses any other global, before importing it, with PyTorch's
message naming the global and how to allow it; ``weights_only=False`` loads anything (run it only on files
you trust: unpickling runs code).
"""

from __future__ import annotations

__all__ = [
    "add_safe_globals", "clear_safe_globals", "dump", "get_safe_globals",
    "load_pickled", "safe_globals", "unsafe_globals",
]  # fmt: skip

import contextlib
import io
import pickle
import pickletools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import lucid_core as lc
from lucid_core import Tensor

from ._checkpoint_errors import CheckpointError, UnsafeCheckpointError

#: the name of the safetensors entry that holds the pickle
PICKLE_KEY = "__lucid_pickle__"
_PROTOCOL = 4

# -- the allow-list ---------------------------------------------------------------------------------------------
# what ``weights_only=True`` accepts without being asked: PyTorch's default list, in Lucid's terms
_DEFAULT_ALLOWED = {
    "collections.OrderedDict", "collections.Counter", "builtins.set", "builtins.frozenset", "builtins.bytearray",
    "builtins.complex", "_codecs.encode", f"{__name__}._device", f"{__name__}._dtype", f"{__name__}._layout",
}  # fmt: skip

_marked_safe: list[Any] = []  # what add_safe_globals / safe_globals added, in order


def _global_name(obj: Any) -> str:
    """``module.qualname`` of a class or function, as a pickle names it."""
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[1], str):
        return obj[1]
    module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(name, str):
        raise TypeError(
            f"safe_globals: expected classes or functions (or (object, 'module.name') pairs), got {obj!r:.60}"
        )
    return f"{module}.{name}"


def add_safe_globals(safe_globals: Iterable[Any]) -> None:
    """Allow these classes/functions (or ``(obj, "module.name")`` pairs) when loading with ``weights_only=True``."""
    items = list(safe_globals)
    for obj in items:
        _global_name(obj)  # checks it
    _marked_safe.extend(items)


def get_safe_globals() -> list[Any]:
    """What :func:`add_safe_globals` (and any active :func:`safe_globals` context) allowed, in order."""
    return list(_marked_safe)


def clear_safe_globals() -> None:
    """Forget every global :func:`add_safe_globals` allowed."""
    _marked_safe.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: Iterable[Any]) -> Iterator[None]:
    """Allow these globals for ``weights_only=True`` loads inside the ``with`` block only."""
    before = list(_marked_safe)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _marked_safe[:] = before


def _allowed() -> set[str]:
    return _DEFAULT_ALLOWED | {_global_name(o) for o in _marked_safe}


# -- small rebuilds the pickle names (allowed by default) -----------------------------------------------------
def _device(name: str) -> lc.Device:
    return lc.resolve_device(name)


def _dtype(name: str) -> lc.DType:
    d = getattr(lc, name, None)
    if not isinstance(d, lc.DType):
        raise pickle.UnpicklingError(f"the checkpoint names the dtype {name!r}, which this Lucid does not have")
    return d


def _layout(name: str) -> Any:
    from lucid_core import _format

    return getattr(_format, name)


# -- saving -------------------------------------------------------------------------------------------------
class _Pickler(pickle.Pickler):
    """Pickles ``obj`` with each tensor replaced by a persistent id naming it in ``tensors``."""

    def __init__(self, fh: io.BytesIO) -> None:
        super().__init__(fh, protocol=_PROTOCOL)
        self.tensors: dict[str, Tensor] = {}
        self._names: dict[int, str] = {}

    def persistent_id(self, obj: Any) -> Any:
        if not isinstance(obj, Tensor):
            return None
        name = self._names.get(id(obj))
        if name is None:
            name = self._names[id(obj)] = f"t{len(self.tensors)}"
            self.tensors[name] = obj
        cls = type(obj)
        kind = "tensor" if cls is Tensor else "parameter" if cls is lc.Parameter else (cls.__module__, cls.__qualname__)
        return ("lucid.tensor", name, kind, bool(obj.requires_grad))

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, lc.Device):
            return _device, (str(obj),)
        if isinstance(obj, lc.DType):
            return _dtype, (obj.name,)
        if type(obj).__name__ == "Layout" and type(obj).__module__ == "lucid_core._format":
            return _layout, (obj.name,)
        return NotImplemented


def dump(obj: Any) -> tuple[bytes, dict[str, Tensor]]:
    """``obj``'s pickle (tensors left out) and the tensors it names, by name."""
    buf = io.BytesIO()
    p = _Pickler(buf)
    try:
        p.dump(obj)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        raise TypeError(f"save: cannot pickle the object: {exc}") from exc
    return buf.getvalue(), p.tensors


# -- loading ------------------------------------------------------------------------------------------------
def _refusal(name: str, file: str) -> UnsafeCheckpointError:
    """PyTorch 2.13's weights-only refusal for the global ``name`` (the same shape, Lucid's names)."""
    return UnsafeCheckpointError(
        f"Weights only load failed ({file}). This file can still be loaded, to do so you have two options, do "
        "those steps only if you trust the source of the checkpoint. \n\t(1) Re-running `lucid.load` with "
        "`weights_only` set to `False` will likely succeed, but it can result in arbitrary code execution. Do it "
        "only if you got the file from a trusted source.\n\t(2) Alternatively, to load with `weights_only=True` "
        "please check the recommended steps in the following error message.\n\tWeightsUnpickler error: "
        f"Unsupported global: GLOBAL {name} was not an allowed global by default. Please use "
        f"`lucid.serialization.add_safe_globals([{name}])` or the `lucid.serialization.safe_globals([{name}])` "
        "context manager to allowlist this global if you trust this class/function."
    )


class _Unpickler(pickle.Unpickler):
    """Unpickles what :func:`dump` wrote, the tensors coming from ``tensors``; restricted when ``weights_only``."""

    def __init__(self, fh: io.BytesIO, tensors: Mapping[str, Tensor], weights_only: bool, file: str) -> None:
        super().__init__(fh)
        self._tensors = tensors
        self._made: dict[str, Tensor] = {}
        self._allowed = _allowed() if weights_only else None
        self._file = file

    def find_class(self, module: str, name: str) -> Any:
        if self._allowed is not None and f"{module}.{name}" not in self._allowed:
            raise _refusal(f"{module}.{name}", self._file)  # before anything is imported
        return super().find_class(module, name)

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and len(pid) == 4 and pid[0] == "lucid.tensor" and pid[1] in self._tensors):
            raise pickle.UnpicklingError(
                f"the checkpoint's pickle names the tensor {pid!r:.80}, which it does not hold"
            )
        _, key, kind, grad = pid
        made = self._made.get(key)
        if made is not None:
            return made
        t = self._tensors[key]
        if kind == "parameter":
            t = lc.Parameter(t, requires_grad=bool(grad))
        else:
            if isinstance(kind, tuple):  # a Tensor subclass: its class goes through the allow-list too
                cls = self.find_class(*kind)
                if isinstance(cls, type) and issubclass(cls, lc.Parameter):
                    t = cls(t, requires_grad=bool(grad))
            if grad and not t.requires_grad and t.dtype.kind in "fc":
                t.requires_grad_(True)
        self._made[key] = t
        return t


def load_pickled(raw: bytes, tensors: Mapping[str, Tensor], weights_only: bool, file: str) -> Any:
    """The object :func:`dump` pickled, with its tensors taken from ``tensors``."""
    try:
        return _Unpickler(io.BytesIO(raw), tensors, weights_only, file).load()
    except UnsafeCheckpointError:
        raise
    except (pickle.UnpicklingError, EOFError) as exc:
        raise CheckpointError(f"load: {file} is damaged: unpickling its object failed: {exc}") from exc


def unsafe_globals(raw: bytes) -> list[str]:
    """The globals a pickle names that ``weights_only=True`` would refuse now, in order of first use."""
    allowed, out = _allowed(), []
    memo: dict[int, Any] = {}
    last: list[Any] = []  # the values pushed most recently (strings; None for anything else)
    for op, arg, _ in pickletools.genops(raw):
        name = None
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8"):
            last.append(arg)
        elif op.name == "MEMOIZE":
            memo[len(memo)] = last[-1] if last else None
        elif op.name in ("BINPUT", "LONG_BINPUT", "PUT"):
            memo[int(arg)] = last[-1] if last else None
        elif op.name in ("BINGET", "LONG_BINGET", "GET"):
            last.append(memo.get(int(arg)))
        elif op.name == "GLOBAL":
            name = str(arg).replace(" ", ".")
            last.append(None)
        elif op.name == "STACK_GLOBAL":
            if len(last) >= 2 and isinstance(last[-2], str) and isinstance(last[-1], str):
                name = f"{last[-2]}.{last[-1]}"
            last.append(None)
        else:
            last.append(None)
        if name is not None and name not in allowed and name not in out:
            out.append(name)
    return out
