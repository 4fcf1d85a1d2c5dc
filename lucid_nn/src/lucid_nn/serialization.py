"""Checkpoints in the safetensors format: no pickle, atomic streamed writes, PyTorch-compatible key names.

``save``/``load`` have the shape of ``torch.save``/``torch.load`` and also store nested objects (an
optimizer's state dict, a training checkpoint dict) by describing the nesting in the header's metadata.
``load`` also reads PyTorch's own ``torch.save`` files (zip or legacy pickle) without PyTorch, through a
restricted unpickler (``_torch_pickle``).

The safetensors layout is written and read here, tensor by tensor: saving streams each tensor's bytes
to the file in bounded pieces, loading reads each one straight into its tensor's memory
(``lucid_core.fromreader``), so neither holds the checkpoint a second time.
"""

from __future__ import annotations

__all__ = ["save", "load", "load_metadata", "CheckpointError", "UnsafeCheckpointError"]

import contextlib
import errno
import json
import math
import os
import re
import secrets
import socket
import struct
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

import lucid_core as lc
from lucid_core import Tensor

from ._checkpoint_errors import CheckpointError, UnsafeCheckpointError
from .module import Module

#: Where :func:`load` puts tensors: a device (or its name; None: where each was saved), a dict from saved device
#: names to targets, or a callable ``fn(tensor, saved_device_name)`` returning the tensor to use (or None).
MapLocation = lc.DeviceLike | Mapping[str, lc.DeviceLike] | Callable[[Tensor, str | None], Tensor | None]

# lucid dtype name -> safetensors header code
_DTYPES: dict[str, str] = {
    "bool": "BOOL", "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64", "uint8": "U8", "uint16": "U16",
    "uint32": "U32", "uint64": "U64", "float16": "F16", "bfloat16": "BF16", "float32": "F32", "float64": "F64",
}  # fmt: skip
_FROM_CODE = {code: name for name, code in _DTYPES.items()}
# codes of the safetensors format that no Lucid dtype holds (yet)
_FOREIGN_CODES = {"F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2", "C64": "complex64", "F8_E8M0": "float8_e8m0fnu"}
_ITEMSIZE = {"BOOL": 1, "I8": 1, "U8": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4}
_ITEMSIZE.update({"I64": 8, "U64": 8, "F64": 8})

_HEADER_LIMIT = 100_000_000  # bytes of JSON header, as the safetensors reference reader allows
_CHUNK_BYTES = 4 << 20  # the most of one tensor held as bytes at once while saving


def lucid_dtype(name: str) -> lc.DType | None:
    """Lucid's dtype called ``name`` (``"bfloat16"``), or None where this lucid_core has none."""
    d = getattr(lc, name, None)
    return d if isinstance(d, lc.DType) else None


# -- reading: a checkpoint's bytes, with random access -------------------------------------------------------
class _Source:
    """Random access to a checkpoint's bytes: a seekable binary file, or bytes already in memory."""

    def __init__(self, name: str, fh: BinaryIO | None = None, data: bytes | None = None) -> None:
        self.name = name
        self.fh = fh
        self._view = memoryview(data) if data is not None else None
        if fh is not None:
            self._base = fh.tell()
            self.size = fh.seek(0, os.SEEK_END) - self._base
        else:
            self._base = 0
            self.size = len(self._view) if self._view is not None else 0

    def read_at(self, offset: int, n: int) -> bytes:
        """Up to ``n`` bytes from ``offset`` (fewer at the end of the file)."""
        n = max(0, min(n, self.size - offset))
        if self._view is not None:
            return bytes(self._view[offset : offset + n])
        assert self.fh is not None
        self.fh.seek(self._base + offset)
        return self.fh.read(n)

    def fill(self, offset: int, out: memoryview) -> None:
        """Read exactly ``len(out)`` bytes from ``offset`` into ``out`` (CheckpointError if the file ends)."""
        if self._view is not None:
            if offset + len(out) > len(self._view):
                raise CheckpointError(f"{self.name} is not a valid safetensors file: truncated while reading")
            out[:] = self._view[offset : offset + len(out)]
            return
        assert self.fh is not None
        self.fh.seek(self._base + offset)
        fill_from(self.fh, out, self.name)

    def as_file(self) -> BinaryIO:
        """A seekable binary file positioned at the checkpoint's first byte (for zip/pickle readers)."""
        if self.fh is None:
            import io

            return io.BytesIO(self._view)  # type: ignore[arg-type]
        self.fh.seek(self._base)
        return self.fh


def fill_from(fh: BinaryIO, out: memoryview, name: str) -> None:
    """Fill ``out`` from ``fh``'s current position, in bounded reads (CheckpointError if it ends first)."""
    readinto = getattr(fh, "readinto", None)
    pos, n = 0, len(out)
    while pos < n:
        if readinto is not None:
            k = readinto(out[pos : min(n, pos + (64 << 20))])
        else:
            piece = fh.read(min(n - pos, 1 << 20))
            k = len(piece)
            out[pos : pos + k] = piece
        if not k:
            raise CheckpointError(f"{name} ended {n - pos} bytes early while a tensor was read (truncated?)")
        pos += k


@contextlib.contextmanager
def _opened(f: str | os.PathLike[str] | BinaryIO, who: str) -> Iterator[_Source]:
    if hasattr(f, "read"):
        name = str(getattr(f, "name", "<file object>"))
        seekable = getattr(f, "seekable", None)
        if seekable is not None and seekable():
            yield _Source(name, fh=f)  # type: ignore[arg-type]
        else:
            yield _Source(name, data=f.read())  # type: ignore[union-attr]
        return
    path = os.fspath(f)
    if os.path.isdir(path):
        inside = sorted(n for n in os.listdir(path) if n.endswith((".safetensors", ".pt", ".pth", ".bin")))
        hint = f"; it holds {', '.join(inside[:5])}" if inside else ""
        raise CheckpointError(f"{who}: {path} is a directory, not a checkpoint file: pass the file's path{hint}")
    with open(path, "rb") as fh:
        yield _Source(path, fh=fh)


def _sniff(src: _Source, who: str) -> str:
    """What the file is: ``"safetensors"``, ``"torch-zip"`` or ``"pickle"`` (or a CheckpointError saying what)."""
    head = src.read_at(0, 16)
    if not head:
        raise CheckpointError(f"{who}: {src.name} is empty (0 bytes), not a checkpoint (an interrupted copy or save?)")
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "torch-zip"
    # a safetensors header length can start with the byte a pickle starts with (640 is 80 02 ...), so first
    # ask whether the file reads as safetensors: a header length that fits, followed by a JSON object
    if len(head) > 8 and head[8:9] == b"{" and 8 + struct.unpack("<Q", head[:8])[0] <= src.size:
        return "safetensors"
    if head[:1] == b"\x80" and len(head) > 1 and 2 <= head[1] <= 5:
        return "pickle"
    if head.startswith(b"\x93NUMPY"):
        raise CheckpointError(
            f"{who}: {src.name} is a NumPy .npy file, not a checkpoint: read it with numpy.load and lucid_core.asarray"
        )
    if head.startswith(b"\x89HDF\r\n\x1a\n"):
        raise CheckpointError(
            f"{who}: {src.name} is an HDF5 file (Keras, h5py), not a safetensors or PyTorch checkpoint"
        )
    return "safetensors"


def _bad(src: _Source, who: str, detail: str) -> CheckpointError:
    return CheckpointError(f"{who}: {src.name} is not a valid safetensors file: {detail}")


@dataclass
class _Entry:
    key: str
    code: str
    shape: tuple[int, ...]
    begin: int
    end: int


def _read_header(src: _Source, who: str) -> tuple[dict[str, Any], int]:
    """The JSON header and where the data starts."""
    if src.size < 8:
        raise _bad(src, who, f"it is {src.size} bytes long, shorter than the 8-byte header length it must start with")
    (n,) = struct.unpack("<Q", src.read_at(0, 8))
    if n > _HEADER_LIMIT:
        raise _bad(src, who, f"its header length field says {n} bytes, more than safetensors allows ({_HEADER_LIMIT})")
    if 8 + n > src.size:
        raise _bad(src, who, f"truncated: the header needs {n} bytes but only {src.size - 8} follow its length field")
    try:
        header = json.loads(src.read_at(8, n).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _bad(src, who, f"its JSON header is damaged: {exc}") from None
    if not isinstance(header, dict):
        raise _bad(src, who, f"its JSON header is a {type(header).__name__}, expected an object")
    return header, 8 + n


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _entries(header: Mapping[str, Any], data_len: int, src: _Source, who: str) -> list[_Entry]:
    """Each tensor's header entry, checked against the format and against the data the file holds."""
    out = []
    meta = header.get("__metadata__", {})
    if meta is not None and not (
        isinstance(meta, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items())
    ):
        raise _bad(src, who, "its __metadata__ entry is not an object of strings")
    for key, spec in header.items():
        if key == "__metadata__":
            continue
        if not isinstance(spec, dict):
            raise _bad(src, who, f"the entry for tensor {key!r} is {spec!r:.60}, expected an object")
        code, shape, offsets = spec.get("dtype"), spec.get("shape"), spec.get("data_offsets")
        if not isinstance(code, str) or code not in _ITEMSIZE:
            if isinstance(code, str) and code in _FOREIGN_CODES:
                raise _bad(
                    src, who, f"tensor {key!r} has dtype {code} ({_FOREIGN_CODES[code]}), which Lucid does not support"
                )
            raise _bad(src, who, f"tensor {key!r} has dtype {code!r}; expected one of {', '.join(_ITEMSIZE)}")
        if code not in _FROM_CODE or lucid_dtype(_FROM_CODE[code]) is None:
            raise _bad(
                src,
                who,
                f"tensor {key!r} has dtype {code} ({_FROM_CODE.get(code, code)}), which Lucid does not support yet",
            )
        if not isinstance(shape, list) or not all(_is_int(s) and s >= 0 for s in shape):
            raise _bad(src, who, f"tensor {key!r} has shape {shape!r}, expected a list of non-negative integers")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_int(o) for o in offsets)):
            raise _bad(src, who, f"tensor {key!r} has data_offsets {offsets!r}, expected [begin, end]")
        begin, end = offsets
        if not 0 <= begin <= end:
            raise _bad(src, who, f"tensor {key!r} has data_offsets [{begin}, {end}], expected 0 <= begin <= end")
        need = math.prod(shape) * _ITEMSIZE[code]
        if end - begin != need:
            raise _bad(
                src, who, f"tensor {key!r} of shape {shape} and dtype {code} needs {need} bytes, but its "
                f"data_offsets [{begin}, {end}] span {end - begin}",
            )  # fmt: skip
        if end > data_len:
            raise _bad(
                src, who, f"truncated: tensor {key!r} spans bytes [{begin}, {end}) of the data, but the file holds "
                f"only {data_len} bytes of data",
            )  # fmt: skip
        out.append(_Entry(key, code, tuple(shape), begin, end))
    return out


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
                        f"save: cannot store a dict key of type {type(k).__name__} at {where(path)}; "
                        f"keys must be str, int, float, bool or None"
                    )
                items.append([k, self.encode(v, [*path, k])])
            return {"o": items} if isinstance(obj, OrderedDict) else {"d": items}
        if isinstance(obj, (list, tuple)):
            nodes = [self.encode(v, [*path, i]) for i, v in enumerate(obj)]
            return {"u": nodes} if isinstance(obj, tuple) else {"l": nodes}
        raise TypeError(
            f"save: cannot store a {type(obj).__module__}.{type(obj).__qualname__} at {where(path)}; checkpoints "
            f"are safetensors (no pickle) and hold {_SUPPORTED}. Save a Module's state_dict() rather than the Module "
            "object's attributes, and convert other arrays with lucid_core.asarray"
        )


def where(path: list[Any]) -> str:
    """``obj['model']['w'][0]``: where a value sits in a saved object, for messages."""
    return "obj" + "".join(f"[{p!r}]" for p in path)


def _decode(node: Any, tensors: Mapping[str, Tensor], path: list[Any], damaged: Callable[[str], Exception]) -> Any:
    """The object the JSON tree describes, checking each node (a damaged one raises naming where it is)."""
    if isinstance(node, _SCALARS):
        return node
    if not (isinstance(node, dict) and len(node) == 1):
        raise damaged(f"the structure entry at {where(path)} is {node!r:.80}, which is not a node Lucid writes")
    ((kind, body),) = node.items()
    if kind == "t":
        if not isinstance(body, str) or body not in tensors:
            raise damaged(f"the structure entry at {where(path)} names tensor {body!r}, which is not in the file")
        return tensors[body]
    if kind in ("d", "o") and isinstance(body, list):
        items = []
        for item in body:
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], _SCALARS)):
                raise damaged(f"the dict at {where(path)} has the item {item!r:.80}, expected [key, value]")
            items.append((item[0], _decode(item[1], tensors, [*path, item[0]], damaged)))
        return OrderedDict(items) if kind == "o" else dict(items)
    if kind in ("l", "u") and isinstance(body, list):
        values = [_decode(v, tensors, [*path, i], damaged) for i, v in enumerate(body)]
        return tuple(values) if kind == "u" else values
    raise damaged(f"the structure entry at {where(path)} is {node!r:.80}, which is not a node Lucid writes")


def _lucid_info(header: Mapping[str, Any], src: _Source, who: str) -> dict[str, Any]:
    """The ``"lucid"`` metadata entry (structure and devices), checked; {} for a plain safetensors file."""
    raw = (header.get("__metadata__") or {}).get(_META_KEY)
    if raw is None:
        return {}
    try:
        info = json.loads(raw)
    except ValueError as exc:
        raise CheckpointError(
            f"{who}: {src.name} is damaged: its {_META_KEY!r} structure entry is not JSON: {exc}"
        ) from None
    devices = info.get("devices", {}) if isinstance(info, dict) else None
    if not (
        isinstance(devices, dict)
        and all(
            isinstance(k, str) and isinstance(v, list) and all(isinstance(n, str) for n in v)
            for k, v in devices.items()
        )
    ):
        raise CheckpointError(f"{who}: {src.name} is damaged: its {_META_KEY!r} structure entry is malformed")
    return info


# -- saving -------------------------------------------------------------------------------------------------
def save(
    obj: Any,
    f: str | os.PathLike[str] | BinaryIO,
    metadata: dict[str, str] | None = None,
    *,
    pickle_objects: bool = False,
) -> None:
    """Write ``obj`` to ``f`` as safetensors (no pickle), atomically; PyTorch's ``torch.save`` for Lucid.

    ``obj`` may be a Module (its ``state_dict()`` is saved), a state dict, or any nesting of dicts, lists
    and tuples holding tensors and plain ``int``/``float``/``bool``/``str``/``None`` values, such as
    ``{"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}``. A flat dict of tensors
    gives a plain safetensors file that PyTorch's ``safetensors.torch.load_file`` reads. Anything else
    raises a TypeError naming the object and where it sits.

    Tensors are streamed to the file one at a time, in pieces of a few MiB, so saving holds little
    beyond the tensors themselves. A path is written through a temporary file beside it
    (``.<name>.lucid-tmp-<host>-<pid>-<random>``) that replaces ``f`` only once complete, so a failure
    or a killed process leaves an earlier file at ``f`` untouched; the next save into that directory
    removes temporaries that dead processes left behind. A binary file object (with ``write``) receives
    the bytes directly.

    Args:
        obj: what to save.
        f: a path, or a binary file object.
        metadata: optional string-to-string annotations stored in the header (see :func:`load_metadata`).
        pickle_objects: store what the nesting above cannot describe (a Module object itself, an optimizer,
            a NumPy array, any picklable object) as ``torch.save`` does, by pickling it with its tensors kept
            out of the pickle as raw bytes in the same file (:mod:`lucid_nn._pickled`; ``lucid.save`` sets it).
            Loading such a file follows ``torch.load``'s ``weights_only`` rules.
    """
    if isinstance(obj, Module) and not pickle_objects:
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
        try:
            info = {"tree": enc.encode(obj, [])}
            tensors = enc.tensors
        except TypeError:
            if not pickle_objects:
                raise
            from . import _pickled

            raw, tensors = _pickled.dump(obj)
            tensors[_pickled.PICKLE_KEY] = lc.frombuffer(raw, dtype=lc.uint8, shape=(len(raw),), device="cpu")
            info = {"pickle": _pickled.PICKLE_KEY}
    devices: dict[str, list[str]] = {}
    for key, t in tensors.items():
        devices.setdefault(str(t.device), []).append(key)
    info["devices"] = devices
    header, layout = _layout(tensors, {**(metadata or {}), _META_KEY: json.dumps(info)})
    if hasattr(f, "write"):
        f.write(header)
        _write_tensors(f.write, layout)  # type: ignore[union-attr]
        return
    _write_atomic(os.fspath(f), header, layout)


def _layout(tensors: Mapping[str, Tensor], metadata: dict[str, str]) -> tuple[bytes, list[tuple[str, Tensor, int]]]:
    """The header bytes, and the tensors in the order their data follows it.

    Data goes widest dtype first (as the safetensors library writes it), so each tensor starts aligned
    to its item size; the header lists tensors in the caller's order, which :func:`load` returns.
    """
    items = []
    for key, t in tensors.items():
        if not isinstance(key, str):
            raise TypeError(f"save: state-dict keys must be strings, got {type(key).__name__}")
        if not isinstance(t, Tensor):
            raise TypeError(f"save: value for {key!r} is a {type(t).__name__}, expected a Tensor")
        if t.dtype.name not in _DTYPES:
            raise TypeError(
                f"save: tensor {key!r} has dtype {t.dtype.name}, which safetensors checkpoints do not support"
            )
        items.append((key, t, math.prod(t.shape) * t.dtype.itemsize))
    order = sorted(range(len(items)), key=lambda i: -items[i][1].dtype.itemsize)
    spans: dict[int, tuple[int, int]] = {}
    offset = 0
    for i in order:
        spans[i] = (offset, offset + items[i][2])
        offset += items[i][2]
    header: dict[str, Any] = {"__metadata__": metadata}
    for i, (key, t, _) in enumerate(items):
        header[key] = {"dtype": _DTYPES[t.dtype.name], "shape": list(t.shape), "data_offsets": list(spans[i])}
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)  # the data starts 8-byte aligned
    return struct.pack("<Q", len(raw)) + raw, [items[i] for i in order]


def _tensor_chunks(t: Tensor) -> Iterator[bytes]:
    """The tensor's C-order little-endian bytes in pieces of at most about ``_CHUNK_BYTES``."""
    yield from _chunks(t.detach(), _CHUNK_BYTES)


def _chunks(t: Tensor, limit: int) -> Iterator[bytes]:
    nbytes = math.prod(t.shape) * t.dtype.itemsize
    if nbytes <= limit or t.ndim == 0:
        yield t.tobytes()
        return
    rows = t.shape[0]
    row = nbytes // rows
    if row > limit:
        for i in range(rows):
            yield from _chunks(t[i], limit)
        return
    step = limit // row
    for i in range(0, rows, step):
        yield t[i : i + step].tobytes()


def _write_tensors(write: Callable[[bytes], Any], layout: list[tuple[str, Tensor, int]]) -> None:
    for key, t, nbytes in layout:
        written = 0
        for piece in _tensor_chunks(t):
            write(piece)
            written += len(piece)
        if written != nbytes:
            raise RuntimeError(f"save: tensor {key!r} gave {written} bytes, expected {nbytes} (a backend's to_bytes)")


_TMP_MARK = ".lucid-tmp-"
_TMP_NAME = re.compile(r"^\..*\.lucid-tmp-(?P<host>[A-Za-z0-9_]*)-(?P<pid>[0-9]+)-[0-9a-f]{8}$")
_FOREIGN_TMP_AGE = 3600.0  # s: another machine's temporary this old is abandoned (a live save keeps writing)


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", socket.gethostname())[:40]


def _pid_alive(pid: int) -> bool:
    if os.name == "nt":  # os.kill(pid, 0) would not probe there; rely on the age rule instead
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, someone else's
        return True
    return True


def _remove_stale_temporaries(directory: str) -> None:
    """Delete temporaries that earlier saves into ``directory`` left when their process died (SIGKILL, power)."""
    host, now = _host(), time.time()
    try:
        entries = os.scandir(directory)
    except OSError:
        return
    with entries:
        for entry in entries:
            m = _TMP_NAME.match(entry.name)
            if m is None:
                continue
            with contextlib.suppress(OSError):
                if not entry.is_file(follow_symlinks=False):
                    continue
                if m["host"] == host:
                    stale = not _pid_alive(int(m["pid"])) or now - entry.stat().st_mtime > 24 * _FOREIGN_TMP_AGE
                else:
                    stale = now - entry.stat().st_mtime > _FOREIGN_TMP_AGE
                if stale:
                    os.unlink(entry.path)


def _os_error(exc: OSError, message: str, filename: str) -> OSError:
    """``exc`` re-said about the file the user named (not our temporary), keeping its errno and type."""
    if exc.errno is None:
        return exc
    return OSError(exc.errno, f"{message}: {exc.strerror}", filename)


def _write_atomic(path: str, header: bytes, layout: list[tuple[str, Tensor, int]]) -> None:
    """Write the checkpoint to ``path`` through a temporary file and ``os.replace`` (all or nothing)."""
    target = os.path.abspath(path)
    directory, base = os.path.split(target)
    if os.path.isdir(target):
        raise IsADirectoryError(
            errno.EISDIR,
            f"save: {path} is a directory; give a file path such as {os.path.join(path, 'model.safetensors')}",
            path,
        )
    if not os.path.isdir(directory):
        if os.path.exists(directory):
            raise NotADirectoryError(
                errno.ENOTDIR, f"save: cannot write {path}: {directory} is not a directory", directory
            )
        raise FileNotFoundError(
            errno.ENOENT,
            f"save: cannot write {path}: the directory {directory} does not exist (create it first)",
            directory,
        )
    _remove_stale_temporaries(directory)
    tmp = os.path.join(directory, f".{base[:160]}{_TMP_MARK}{_host()}-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    except OSError as exc:
        raise _os_error(exc, f"save: cannot write {path} (creating a temporary file in {directory})", path) from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(header)
            _write_tensors(fh.write, layout)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _file_mode(target))  # the temporary is 0600; give the usual permissions
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise _os_error(exc, f"save: writing {path} failed", path) from exc
        raise
    with contextlib.suppress(OSError, AttributeError):  # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _file_mode(path: str) -> int:
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


# -- loading ------------------------------------------------------------------------------------------------
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
                stacklevel=5,
            )
            return None
    if isinstance(map_location, Mapping):
        return _target_device(map_location[saved], saved) if saved in map_location else _target_device(None, saved)
    return lc.resolve_device(map_location)


def place(map_location: MapLocation, saved: str | None, build: Callable[[Any], Tensor]) -> Tensor:
    """The tensor ``build(device)`` makes, on the device ``map_location`` chooses for one saved on ``saved``."""
    if callable(map_location) and not isinstance(map_location, (str, lc.Device)):
        t = build(None)
        moved = map_location(t, saved)
        return moved if isinstance(moved, Tensor) else t.to(_target_device(None, saved) or t.device)
    return build(_target_device(map_location, saved))


def load(
    f: str | os.PathLike[str] | BinaryIO,
    map_location: MapLocation = None,
    weights_only: bool = True,
    *,
    device: lc.DeviceLike = None,
) -> Any:
    """Read what :func:`save` wrote, any safetensors file, or a PyTorch ``torch.save`` file; ``torch.load`` for Lucid.

    A flat file (a state dict, or one written by ``safetensors.torch.save_file``) loads as a dict of
    tensors in the saved order; a nested object comes back as it was saved (dicts with their key types,
    lists, tuples, scalars), with a tensor stored once per object that appeared several times. Each
    tensor is read straight from the file into its own memory, so loading holds the checkpoint once.

    A PyTorch checkpoint (``torch.save(model.state_dict(), "x.pt")``, zip or legacy format) is read
    without PyTorch by an unpickler that accepts only PyTorch's ``weights_only=True`` allow-list
    (tensors, dicts, lists, tuples, numbers, strings); any other global is refused, never imported.

    A file that cannot be read (damaged, truncated, empty, a directory, a refused pickle) raises
    :class:`CheckpointError`, a ValueError naming the file and what is wrong in it; a missing file
    raises FileNotFoundError.

    Args:
        f: a path, or a binary file object (with ``read``).
        map_location: where tensors go: None puts each back on the device it was saved from (the default
            device when that backend is not installed, with a warning, or when the file does not say); a
            device or a name (``"cpu"``, ``"mlx"``) puts them all there; a dict maps saved device names
            (``"mlx:gpu"``, ``"cuda:0"``) to targets, others staying where they were; a callable
            ``fn(tensor, saved)`` may return the tensor to use (or None to keep it on its saved device).
        weights_only: for a file holding a pickled object (``lucid.save(model, f)``): True (the default, as in
            PyTorch 2.13) unpickles only the allow-list (containers, Lucid dtypes and devices, and what
            ``lucid.serialization.add_safe_globals``/``safe_globals`` added) and refuses any other global
            with PyTorch's message; False unpickles anything (only for files you trust). State dicts and
            nested dicts of tensors never hold a pickle; a PyTorch file is always read weights-only.
        device: Lucid's earlier name for a single-device ``map_location``.
    """
    if device is not None:
        if map_location is not None:
            raise TypeError("load: give map_location or device, not both")
        map_location = device
    if not isinstance(weights_only, bool):
        raise TypeError(f"load: weights_only must be a bool, got {type(weights_only).__name__}")
    with _opened(f, "load") as src:
        kind = _sniff(src, "load")
        if kind != "safetensors":
            from . import _torch_pickle

            return _torch_pickle.load_torch(src.as_file(), src.name, kind == "torch-zip", map_location)
        return _load_safetensors(src, map_location, weights_only)


def _pickle_entry(entries: list[_Entry], info: Mapping[str, Any], src: _Source, data_start: int) -> bytes | None:
    """The pickle a file of pickled objects holds (None for any other file)."""
    key = info.get("pickle")
    if key is None:
        return None
    found = [e for e in entries if e.key == key and e.code == "U8"]
    if not isinstance(key, str) or not found:
        raise CheckpointError(f"load: {src.name} is damaged: its pickle entry {key!r:.40} is missing")
    e = found[0]
    return src.read_at(data_start + e.begin, e.end - e.begin)


def read_pickle(f: str | os.PathLike[str] | BinaryIO) -> bytes | None:
    """The pickle of a checkpoint written with ``pickle_objects`` (None for a file that holds none)."""
    with _opened(f, "load") as src:
        if _sniff(src, "load") != "safetensors":
            return None
        header, data_start = _read_header(src, "load")
        entries = _entries(header, src.size - data_start, src, "load")
        return _pickle_entry(entries, _lucid_info(header, src, "load"), src, data_start)


def _load_safetensors(src: _Source, map_location: MapLocation, weights_only: bool = True) -> Any:
    header, data_start = _read_header(src, "load")
    entries = _entries(header, src.size - data_start, src, "load")
    info = _lucid_info(header, src, "load")
    raw = _pickle_entry(entries, info, src, data_start)
    if raw is not None:
        entries = [e for e in entries if e.key != info["pickle"]]
    saved_on = {key: dev for dev, keys in info.get("devices", {}).items() for key in keys}
    tensors: dict[str, Any] = {e.key: None for e in entries}  # the header's order
    for e in sorted(entries, key=lambda e: e.begin):  # the file's order: one forward pass over the data

        def build(dev: Any, e: _Entry = e) -> Tensor:
            dtype = lucid_dtype(_FROM_CODE[e.code])
            return lc.fromreader(
                lambda out: src.fill(data_start + e.begin, out), dtype=dtype, shape=e.shape, device=dev
            )

        tensors[e.key] = place(map_location, saved_on.get(e.key), build)
    if raw is not None:
        from . import _pickled

        return _pickled.load_pickled(raw, tensors, weights_only, src.name)
    if "tree" not in info:
        return tensors

    def damaged(detail: str) -> CheckpointError:
        return CheckpointError(f"load: {src.name} is damaged: {detail}")

    return _decode(info["tree"], tensors, [], damaged)


def load_metadata(f: str | os.PathLike[str] | BinaryIO) -> dict[str, str]:
    """The ``metadata`` dict given to :func:`save` (any safetensors file's header metadata; empty if none)."""
    with _opened(f, "load_metadata") as src:
        if _sniff(src, "load_metadata") != "safetensors":
            raise CheckpointError(
                f"load_metadata: {src.name} is a PyTorch (pickle) checkpoint, which has no safetensors metadata"
            )
        header, data_start = _read_header(src, "load_metadata")
        _entries(header, src.size - data_start, src, "load_metadata")
    meta = dict(header.get("__metadata__") or {})
    meta.pop(_META_KEY, None)
    return meta
