"""Checkpoints in the safetensors format: no pickle, atomic writes, PyTorch-compatible key names.

``save``/``load`` have the shape of ``torch.save``/``torch.load`` and also store nested objects (an
optimizer's state dict, a training checkpoint dict) by describing the nesting in the header's metadata.

Only safetensors' framework-free byte API (``serialize`` / ``deserialize``) is used; tensors travel
as raw little-endian bytes (``Tensor.tobytes`` / ``lucid_core.frombuffer``).
"""

from __future__ import annotations

__all__ = ["save", "load", "load_metadata"]

import contextlib
import ctypes
import json
import os
import struct
import tempfile
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

import safetensors

import lucid_core as lc
from lucid_core import Tensor

from .module import Module

#: Where :func:`load` puts tensors: a device (or its name; None: where each was saved), a dict from saved device
#: names to targets, or a callable ``fn(tensor, saved_device_name)`` returning the tensor to use (or None).
MapLocation = lc.DeviceLike | Mapping[str, lc.DeviceLike] | Callable[[Tensor, str | None], Tensor | None]

# lucid dtype name -> safetensors header code
_DTYPES: dict[str, str] = {
    "bool": "BOOL", "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64", "uint8": "U8", "uint16": "U16",
    "uint32": "U32", "uint64": "U64", "float16": "F16", "float32": "F32", "float64": "F64",
}  # fmt: skip
_FROM_CODE = {code: name for name, code in _DTYPES.items()}


def _tensor_bytes(t: Tensor, key: str) -> bytes:
    """The tensor's values as C-ordered little-endian bytes."""
    if t.dtype.name not in _DTYPES:
        raise TypeError(f"save: tensor {key!r} has dtype {t.dtype.name}, which safetensors checkpoints do not support")
    return t.detach().tobytes()


def _tensor_from_bytes(
    data: bytes | bytearray, code: str, shape: list[int], device: lc.DeviceLike, key: str, path: str
) -> Tensor:
    if code not in _FROM_CODE:
        raise ValueError(f"load: {path}: tensor {key!r} has dtype {code}, which Lucid cannot load")
    try:
        return lc.frombuffer(data, dtype=getattr(lc, _FROM_CODE[code]), shape=tuple(shape), device=device)
    except ValueError as exc:
        raise ValueError(f"load: {path}: tensor {key!r}: {exc}") from None


def _serialize(tensors: Mapping[str, Tensor], metadata: dict[str, str] | None) -> bytes:
    raw: dict[str, tuple[str, list[int], bytearray]] = {}
    for key, t in tensors.items():
        if not isinstance(key, str):
            raise TypeError(f"save: state-dict keys must be strings, got {type(key).__name__}")
        if not isinstance(t, Tensor):
            raise TypeError(f"save: value for {key!r} is a {type(t).__name__}, expected a Tensor")
        raw[key] = (t.dtype.name, list(t.shape), bytearray(_tensor_bytes(t, key)))
    if hasattr(safetensors, "TensorSpec"):
        # safetensors >= 0.8 takes raw pointers; the bytearrays in ``raw`` stay alive until serialize returns
        keep = []
        specs = {}
        for key, (dtype, shape, buf) in raw.items():
            holder = (ctypes.c_char * max(len(buf), 1)).from_buffer(buf if buf else bytearray(1))
            keep.append(holder)
            specs[key] = safetensors.TensorSpec(
                dtype=dtype, shape=shape, data_ptr=ctypes.addressof(holder), data_len=len(buf)
            )
        out = safetensors.serialize(specs, metadata=metadata)
        del keep
        return bytes(out)
    tensor_dict = {k: {"dtype": d, "shape": s, "data": bytes(b)} for k, (d, s, b) in raw.items()}
    return bytes(safetensors.serialize(tensor_dict, metadata=metadata))


# -- nesting: how save/load store dicts, lists, tuples and scalars around the tensors ---------------------
# A flat ``{name: Tensor}`` dict (a state dict) is stored as plain safetensors, readable by any safetensors
# reader (``safetensors.torch.load_file`` gives PyTorch the same dict). Anything else is stored as its
# tensors, named by their dotted path (``optimizer.state.0.exp_avg``), plus a JSON tree in the header's
# metadata under ``"lucid"``: a tensor is {"t": name}, a dict {"d": [[key, node], ...]} (keys keep their
# type: str, int, float, bool or None; {"o": ...} for an OrderedDict), a list {"l": [...]}, a tuple {"u": [...]}, and int, float, bool,
# str and None are themselves. The same entry records the device each tensor came from, for map_location.
_META_KEY = "lucid"
_SCALARS = (bool, int, float, str, type(None))
_SUPPORTED = "Tensors, dicts (str/int/float/bool/None keys), lists, tuples, int, float, bool, str and None"


def _is_flat(obj: Any) -> bool:
    return isinstance(obj, Mapping) and all(isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items())


def _path_name(path: list[Any]) -> str:
    return ".".join(str(p) for p in path) or "tensor"


class _Encoder:
    """Walks a nested object, naming each distinct tensor once and building the JSON tree."""

    def __init__(self) -> None:
        self.tensors: dict[str, Tensor] = {}
        self.by_id: dict[int, str] = {}  # one tensor stored once, however often it appears (as torch.save)

    def name_for(self, t: Tensor, path: list[Any]) -> str:
        if id(t) in self.by_id:
            return self.by_id[id(t)]
        name = base = _path_name(path)
        n = 1
        while name in self.tensors:
            name = f"{base}#{n}"
            n += 1
        self.tensors[name] = t
        self.by_id[id(t)] = name
        return name

    def encode(self, obj: Any, path: list[Any]) -> Any:
        if isinstance(obj, Tensor):
            return {"t": self.name_for(obj, path)}
        if isinstance(obj, _SCALARS):
            return obj
        if isinstance(obj, Mapping):
            items = []
            for k, v in obj.items():
                if not isinstance(k, _SCALARS):
                    raise TypeError(
                        f"save: cannot store a dict key of type {type(k).__name__} at {_where(path)}; "
                        f"keys must be str, int, float, bool or None"
                    )
                items.append([k, self.encode(v, [*path, k])])
            return {"o": items} if isinstance(obj, OrderedDict) else {"d": items}
        if isinstance(obj, (list, tuple)):
            nodes = [self.encode(v, [*path, i]) for i, v in enumerate(obj)]
            return {"u": nodes} if isinstance(obj, tuple) else {"l": nodes}
        raise TypeError(
            f"save: cannot store a {type(obj).__module__}.{type(obj).__qualname__} at {_where(path)}; checkpoints "
            f"are safetensors (no pickle) and hold {_SUPPORTED}. Save a Module's state_dict() rather than the Module "
            "object's attributes, and convert other arrays with lucid_core.asarray"
        )


def _where(path: list[Any]) -> str:
    return "obj" + "".join(f"[{p!r}]" for p in path)


def _decode(node: Any, tensors: Mapping[str, Tensor]) -> Any:
    if not isinstance(node, dict):
        return node
    if "t" in node:
        return tensors[node["t"]]
    if "d" in node:
        return {k: _decode(v, tensors) for k, v in node["d"]}
    if "o" in node:
        return OrderedDict((k, _decode(v, tensors)) for k, v in node["o"])
    if "l" in node:
        return [_decode(v, tensors) for v in node["l"]]
    if "u" in node:
        return tuple(_decode(v, tensors) for v in node["u"])
    raise ValueError(f"load: unknown node {node!r} in the checkpoint's structure")


def save(obj: Any, f: str | os.PathLike[str] | BinaryIO, metadata: dict[str, str] | None = None) -> None:
    """Write ``obj`` to ``f`` as safetensors (no pickle), atomically; PyTorch's ``torch.save`` for Lucid.

    ``obj`` may be a Module (its ``state_dict()`` is saved), a state dict, or any nesting of dicts, lists
    and tuples holding tensors and plain ``int``/``float``/``bool``/``str``/``None`` values, such as
    ``{"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}``. A flat dict of tensors
    gives a plain safetensors file that PyTorch's ``safetensors.torch.load_file`` reads. Anything else
    raises a TypeError naming the object and where it sits.

    A path is written through a temporary file in the same directory that replaces ``f`` only once
    complete, so a failure at any point leaves an earlier file at ``f`` untouched. A binary file object
    (with ``write``) receives the bytes directly.

    Args:
        obj: what to save.
        f: a path, or a binary file object.
        metadata: optional string-to-string annotations stored in the header (see :func:`load_metadata`).
    """
    if isinstance(obj, Module):
        obj = obj.state_dict()
    if metadata is not None:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise TypeError("save: metadata must map strings to strings")
        if _META_KEY in metadata:
            raise ValueError(f"save: the metadata key {_META_KEY!r} is reserved for the checkpoint's structure")
    enc = _Encoder()
    if _is_flat(obj):
        tensors = dict(obj)
        info: dict[str, Any] = {}
    else:
        info = {"tree": enc.encode(obj, [])}
        tensors = enc.tensors
    devices: dict[str, list[str]] = {}
    for key, t in tensors.items():
        devices.setdefault(str(t.device), []).append(key)
    info["devices"] = devices
    data = _serialize(tensors, {**(metadata or {}), _META_KEY: json.dumps(info)})
    if hasattr(f, "write"):
        f.write(data)
        return
    _write_atomic(os.fspath(f), data)


def _write_atomic(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and ``os.replace`` (all or nothing)."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".safetensors", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _file_mode(path))  # mkstemp makes 0600 files; give the usual permissions
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _file_mode(path: str) -> int:
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _read(f: str | os.PathLike[str] | BinaryIO) -> tuple[str, bytes]:
    if hasattr(f, "read"):
        return getattr(f, "name", "<file object>"), f.read()
    path = os.fspath(f)
    with open(path, "rb") as fh:
        return path, fh.read()


def _header(data: bytes, path: str, who: str) -> dict[str, Any]:
    try:
        (n,) = struct.unpack("<Q", data[:8])
        return json.loads(data[8 : 8 + n])
    except (struct.error, ValueError) as exc:
        raise ValueError(f"{who}: {path} is not a valid safetensors file: {exc}") from None


def _target_device(map_location: MapLocation, saved: str | None, t: Tensor | None = None) -> Any:
    """Where a tensor saved from device ``saved`` goes (None: the default device)."""
    if map_location is None:
        if saved is None:
            return None
        try:
            return lc.resolve_device(saved)
        except Exception:  # noqa: BLE001 - an uninstalled backend: fall back to the default device
            warnings.warn(
                f"load: tensors were saved from {saved!r}, which is not available here; loading them onto "
                f"{lc.get_default_device()} (pass map_location= to choose)",
                stacklevel=4,
            )
            return None
    if isinstance(map_location, Mapping):
        return _target_device(map_location[saved], saved) if saved in map_location else _target_device(None, saved)
    return lc.resolve_device(map_location)


def load(
    f: str | os.PathLike[str] | BinaryIO,
    map_location: MapLocation = None,
    weights_only: bool = True,
    *,
    device: lc.DeviceLike = None,
) -> Any:
    """Read what :func:`save` wrote (or any safetensors file); PyTorch's ``torch.load`` for Lucid.

    A flat file (a state dict, or one written by ``safetensors.torch.save_file``) loads as a dict of
    tensors; a nested object comes back as it was saved (dicts with their key types, lists, tuples,
    scalars), with a tensor stored once per object that appeared several times.

    Args:
        f: a path, or a binary file object (with ``read``).
        map_location: where tensors go: None puts each back on the device it was saved from (the default
            device when that backend is not installed, with a warning, or when the file does not say); a
            device or a name (``"cpu"``, ``"mlx"``) puts them all there; a dict maps saved device names
            (``"mlx:gpu"``) to targets, others staying where they were; a callable ``fn(tensor, saved)``
            may return the tensor to use (or None to keep it on its saved device).
        weights_only: accepted for PyTorch compatibility; loading never runs pickle, so it is always
            weights-only.
        device: Lucid's earlier name for a single-device ``map_location``.
    """
    if device is not None:
        if map_location is not None:
            raise TypeError("load: give map_location or device, not both")
        map_location = device
    if not isinstance(weights_only, bool):
        raise TypeError(f"load: weights_only must be a bool, got {type(weights_only).__name__}")
    path, data = _read(f)
    try:
        items = safetensors.deserialize(data)
    except Exception as exc:  # noqa: BLE001 - safetensors raises its own error types; re-raise one clear error
        raise ValueError(f"load: {path} is not a valid safetensors file (corrupt or truncated?): {exc}") from None
    info = json.loads(_header(data, path, "load").get("__metadata__", {}).get(_META_KEY, "{}"))
    saved_on = {key: dev for dev, keys in info.get("devices", {}).items() for key in keys}
    tensors: dict[str, Tensor] = {}
    for key, meta in items:
        saved = saved_on.get(key)
        if callable(map_location) and not isinstance(map_location, (str, lc.Device)):
            t = _tensor_from_bytes(meta["data"], meta["dtype"], list(meta["shape"]), None, key, path)
            moved = map_location(t, saved)
            tensors[key] = moved if isinstance(moved, Tensor) else t.to(_target_device(None, saved) or t.device)
            continue
        dev = _target_device(map_location, saved)
        tensors[key] = _tensor_from_bytes(meta["data"], meta["dtype"], list(meta["shape"]), dev, key, path)
    if "tree" not in info:
        return tensors
    return _decode(info["tree"], tensors)


def load_metadata(f: str | os.PathLike[str] | BinaryIO) -> dict[str, str]:
    """The ``metadata`` dict given to :func:`save` (any safetensors file's header metadata; empty if none)."""
    path, data = _read(f)
    meta = dict(_header(data, path, "load_metadata").get("__metadata__", {}))
    meta.pop(_META_KEY, None)
    return meta
