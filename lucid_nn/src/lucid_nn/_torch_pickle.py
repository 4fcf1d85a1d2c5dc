"""PyTorch checkpoints (``torch.save``) read without PyTorch, through a restricted unpickler.

Two formats: the zip archive ``torch.save`` writes since 1.6 (``<archive>/data.pkl`` plus one raw
member ``<archive>/data/<key>`` per storage) and the legacy one (``_use_new_zipfile_serialization=False``:
a magic-number pickle, a protocol pickle, a system-info pickle, the object's pickle, the list of storage
keys, then each storage as an 8-byte element count and its bytes).

The unpickler resolves only the globals of PyTorch's ``weights_only=True`` allow-list, each to a small
stand-in defined here (a tensor rebuild records a pending tensor; ``torch.Size`` gives a tuple; a dtype
its name); any other global is refused with :class:`UnsafeCheckpointError`, before anything is imported
or called. Once the object is unpickled, each pending tensor is read from its storage's bytes straight
into a Lucid tensor, honouring its storage offset and strides.
"""

from __future__ import annotations

import codecs
import copy
import functools
import io
import math
import pickle
import struct
import zipfile
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

import lucid_core as lc
from lucid_core import Tensor

from ._checkpoint_errors import CheckpointError, UnsafeCheckpointError
from .serialization import MapLocation, fill_from, lucid_dtype, place, where

_MAGIC = 0x1950A86A20F9469CFC6C  # the legacy format's first pickle
_PROTOCOL = 1001

# storage class name -> element dtype (UntypedStorage: bytes, its tensors say their dtype)
_STORAGE_DTYPES = {
    "DoubleStorage": "float64", "FloatStorage": "float32", "HalfStorage": "float16", "BFloat16Storage": "bfloat16",
    "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16", "CharStorage": "int8",
    "ByteStorage": "uint8", "BoolStorage": "bool", "ComplexDoubleStorage": "complex128",
    "ComplexFloatStorage": "complex64", "QInt8Storage": "qint8", "QInt32Storage": "qint32", "QUInt8Storage": "quint8",
    "QUInt4x2Storage": "quint4x2", "QUInt2x4Storage": "quint2x4", "UntypedStorage": "uint8", "TypedStorage": "uint8",
}  # fmt: skip
_ITEMSIZES = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2, "int8": 1,
    "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8, "bool": 1, "complex64": 8, "complex128": 16,
}  # fmt: skip
# every dtype name torch pickles (``torch.float32`` is the global ``torch float32``); only _ITEMSIZES load
_TORCH_DTYPES = {
    *_ITEMSIZES, "complex32", "qint8", "qint32", "quint8", "quint4x2", "quint2x4", "float8_e4m3fn", "float8_e5m2",
    "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2", "bits1x8", "bits2x4", "bits4x2",
    "bits8", "bits16", "uint1", "uint2", "uint3", "uint4", "uint5", "uint6", "uint7", "int1", "int2", "int3",
    "int4", "int5", "int6", "int7",
}  # fmt: skip
_QSCHEMES = {"per_tensor_affine", "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric",
             "per_channel_affine_float_qparams"}  # fmt: skip


@dataclass(frozen=True)
class _StorageType:
    """Stands in for ``torch.FloatStorage`` and friends: only its element dtype matters."""

    name: str

    @property
    def dtype(self) -> str:
        return _STORAGE_DTYPES[self.name]


@dataclass(frozen=True)
class _TorchDType:
    """Stands in for ``torch.float32`` and the other dtype globals."""

    name: str


@dataclass(frozen=True)
class _Marker:
    """Stands in for an allowed global that a state dict only names (``torch.Tensor``, a qscheme)."""

    name: str


@dataclass
class _Storage:
    """A storage the pickle refers to: its key (the archive member or legacy key) and element dtype."""

    key: str
    dtype: str
    location: str
    numel: int
    byte_offset: int = 0  # legacy views into a root storage


@dataclass(eq=False)
class _Pending:
    """A tensor the pickle rebuilds, read once the whole object is unpickled."""

    storage: _Storage
    offset: int
    size: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str
    requires_grad: bool = False
    parameter: bool = False


class _UnsupportedError(Exception):
    """Raised by a stand-in for an allowed rebuild Lucid cannot represent (sparse, quantized, ...)."""


def _ints(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise _UnsupportedError(f"a tensor's {what} is {value!r:.60}, expected a tuple of integers")
    return tuple(value)


def _rebuild_tensor(storage: Any, storage_offset: Any, size: Any, stride: Any, dtype: str | None = None) -> _Pending:
    if not isinstance(storage, _Storage):
        raise _UnsupportedError(f"a tensor is rebuilt from {type(storage).__name__}, not from a storage")
    if not isinstance(storage_offset, int):
        raise _UnsupportedError(f"a tensor's storage offset is {storage_offset!r:.40}, expected an integer")
    return _Pending(storage, storage_offset, _ints(size, "size"), _ints(stride, "stride"), dtype or storage.dtype)


def _rebuild_tensor_v2(
    storage: Any,
    storage_offset: Any,
    size: Any,
    stride: Any,
    requires_grad: Any,
    backward_hooks: Any,
    metadata: Any = None,
) -> _Pending:
    p = _rebuild_tensor(storage, storage_offset, size, stride)
    p.requires_grad = bool(requires_grad)
    return p


def _rebuild_tensor_v3(
    storage: Any, storage_offset: Any, size: Any, stride: Any, requires_grad: Any, backward_hooks: Any,
    dtype: Any, metadata: Any = None,
) -> _Pending:  # fmt: skip
    if not isinstance(dtype, _TorchDType):
        raise _UnsupportedError(f"a tensor's dtype is {dtype!r:.40}, expected a torch dtype")
    p = _rebuild_tensor(storage, storage_offset, size, stride, dtype.name)
    p.requires_grad = bool(requires_grad)
    return p


def _rebuild_parameter(data: Any, requires_grad: Any, backward_hooks: Any, state: Any = None) -> Any:
    if isinstance(data, _Pending):
        data.parameter, data.requires_grad = True, bool(requires_grad)
    return data


def _rebuild_from_type_v2(func: Any, new_type: Any, args: Any, state: Any) -> Any:
    if not callable(func) or not isinstance(args, tuple):
        raise _UnsupportedError(f"_rebuild_from_type_v2 got {func!r:.40}, {args!r:.40}")
    if isinstance(new_type, _Marker) and new_type.name == "torch.nn.parameter.Parameter":
        return _rebuild_parameter(func(*args), True, None)
    return func(*args)


def _refuse(what: str) -> Callable[..., Any]:
    def rebuild(*args: Any, **kwargs: Any) -> Any:
        raise _UnsupportedError(f"it holds {what}, which Lucid cannot load")

    return rebuild


def _size(*args: Any) -> tuple[int, ...]:
    return tuple(*args)


def _device(kind: Any, index: Any = None) -> str:
    return str(kind) if index is None else f"{kind}:{index}"


def _bytearray(*args: Any) -> bytearray:
    if args and isinstance(args[0], int):  # bytearray(n) would allocate n bytes for a few bytes of pickle
        raise _UnsupportedError("its pickle asks for bytearray(<size>), which a checkpoint never needs")
    return bytearray(*args)


def _encode(obj: Any, encoding: str = "utf-8") -> bytes:
    if not isinstance(obj, str) or encoding not in ("latin1", "latin-1", "utf-8", "utf8"):
        raise _UnsupportedError(f"_codecs.encode({obj!r:.40}, {encoding!r})")
    return codecs.encode(obj, encoding)


_ALLOWED: dict[tuple[str, str], Any] = {
    ("collections", "OrderedDict"): OrderedDict,
    ("collections", "Counter"): Counter,
    ("builtins", "set"): set,
    ("builtins", "bytearray"): _bytearray,
    ("builtins", "complex"): complex,
    ("_codecs", "encode"): _encode,
    ("torch", "Size"): _size,
    ("torch", "device"): _device,
    ("torch", "Tensor"): _Marker("torch.Tensor"),
    ("torch.nn.parameter", "Parameter"): _Marker("torch.nn.parameter.Parameter"),
    ("torch.serialization", "_get_layout"): lambda name: _Marker(str(name)),
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("torch._utils", "_rebuild_device_tensor_from_cpu_tensor"): lambda data, dtype, device, requires_grad: data,
    ("torch._utils", "_rebuild_qtensor"): _refuse("a quantized tensor"),
    ("torch._utils", "_rebuild_sparse_tensor"): _refuse("a sparse tensor"),
    ("torch._utils", "_rebuild_nested_tensor"): _refuse("a nested tensor"),
    ("torch._utils", "_rebuild_meta_tensor_no_storage"): _refuse("a meta tensor (no data)"),
    ("torch._utils", "_rebuild_wrapper_subclass"): _refuse("a tensor subclass"),
    ("torch._utils", "_rebuild_device_tensor_from_numpy"): _refuse("a tensor rebuilt through NumPy"),
    ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
}
_ALLOWED.update({("torch", n): _TorchDType(n) for n in _TORCH_DTYPES})
_ALLOWED.update({("torch", n): _Marker(f"torch.{n}") for n in _QSCHEMES})
for _name in _STORAGE_DTYPES:
    for _module in ("torch", "torch.cuda", "torch.storage"):
        _ALLOWED[(_module, _name)] = _StorageType(_name)


class _Unpickler(pickle.Unpickler):
    """``pickle.Unpickler`` that resolves only the allow-list's globals, to the stand-ins above."""

    def __init__(self, fh: BinaryIO, name: str, storages: dict[str, _Storage] | None) -> None:
        super().__init__(fh, encoding="utf-8")
        self._name = name
        self._storages = storages

    def find_class(self, module: str, name: str) -> Any:
        found = _ALLOWED.get((module, name))
        if found is None:
            raise UnsafeCheckpointError(
                f"load: {self._name}: refused to load: its pickle names the global {module}.{name}, which is not "
                "in PyTorch's weights_only=True allow-list (tensors, dicts, lists, tuples, numbers, strings). "
                "Nothing was imported or run. If you trust the file, load it in PyTorch with "
                "torch.load(f, weights_only=False) and save its state_dict() with lucid-readable "
                "safetensors (safetensors.torch.save_file)"
            )
        # a fresh stand-in per lookup: the pickle's BUILD opcode can set attributes on what it names, and
        # must not change the shared table (or collections.Counter) for later loads
        if isinstance(found, (_StorageType, _TorchDType, _Marker)):
            return copy.copy(found)
        return found if isinstance(found, type) and found is not Counter else functools.partial(found)

    def persistent_load(self, pid: Any) -> Any:
        if self._storages is None or not isinstance(pid, tuple) or not pid:
            raise _UnsupportedError(f"its pickle refers to the persistent object {pid!r:.60}")
        kind = pid[0].decode("ascii") if isinstance(pid[0], bytes) else pid[0]
        if kind == "module":
            raise _UnsupportedError(
                "it stores a whole nn.Module object (torch.save(model)), not a state dict: in PyTorch, "
                "save model.state_dict() instead"
            )
        if kind != "storage" or len(pid) not in (5, 6):
            raise _UnsupportedError(f"its pickle refers to the persistent object {pid!r:.60}")
        storage_type, key, location, numel = pid[1:5]
        if not isinstance(storage_type, _StorageType) or not isinstance(numel, int):
            raise _UnsupportedError(f"its pickle describes a storage as {pid!r:.80}")
        location = location.decode("ascii") if isinstance(location, bytes) else str(location)
        root = self._storages.setdefault(str(key), _Storage(str(key), storage_type.dtype, location, numel))
        view = pid[5] if len(pid) == 6 else None
        if view is None:
            return root
        _view_key, offset, _view_size = view  # legacy: a view of a root storage, offsets in elements
        return _Storage(root.key, root.dtype, root.location, root.numel, offset * _ITEMSIZES.get(root.dtype, 1))


def _unpickle(fh: BinaryIO, name: str, storages: dict[str, _Storage] | None) -> Any:
    return _Unpickler(fh, name, storages).load()


# -- where each storage's bytes are -------------------------------------------------------------------------
class _ZipStorages:
    """Storages of the zip format: the raw member ``<archive>/data/<key>`` (stored, 64-byte aligned)."""

    def __init__(self, zf: zipfile.ZipFile, fh: BinaryIO, prefix: str, name: str) -> None:
        self.zf, self.fh, self.prefix, self.name = zf, fh, prefix, name

    def nbytes(self, key: str) -> int:
        return self._info(key).file_size

    def _info(self, key: str) -> zipfile.ZipInfo:
        try:
            return self.zf.getinfo(f"{self.prefix}data/{key}")
        except KeyError:
            raise CheckpointError(
                f"load: {self.name} is a damaged PyTorch checkpoint: its pickle refers to storage {key!r}, but the "
                f"archive has no member {self.prefix}data/{key}"
            ) from None

    def fill(self, key: str, offset: int, out: memoryview) -> None:
        info = self._info(key)
        if info.compress_type == zipfile.ZIP_STORED:
            # read the member's bytes in place (PyTorch stores them uncompressed), skipping its local header
            self.fh.seek(info.header_offset)
            local = self.fh.read(30)
            if len(local) != 30 or local[:4] != b"PK\x03\x04":
                raise CheckpointError(f"load: {self.name} is a damaged zip archive (member {info.filename})")
            name_len, extra_len = struct.unpack("<HH", local[26:30])
            self.fh.seek(info.header_offset + 30 + name_len + extra_len + offset)
            fill_from(self.fh, out, self.name)
            return
        with self.zf.open(info) as member:  # compressed (someone re-zipped it): decompress up to the tensor
            skip = offset
            while skip:
                skip -= len(member.read(min(skip, 1 << 20))) or skip
            fill_from(member, out, self.name)  # type: ignore[arg-type]


class _LegacyStorages:
    """Storages of the legacy format: each one's bytes follow its 8-byte element count, in key order."""

    def __init__(self, fh: BinaryIO, name: str, spans: dict[str, tuple[int, int]]) -> None:
        self.fh, self.name, self.spans = fh, name, spans

    def nbytes(self, key: str) -> int:
        return self.spans[key][1]

    def fill(self, key: str, offset: int, out: memoryview) -> None:
        self.fh.seek(self.spans[key][0] + offset)
        fill_from(self.fh, out, self.name)


# -- the two formats ----------------------------------------------------------------------------------------
def load_torch(fh: BinaryIO, name: str, is_zip: bool, map_location: MapLocation) -> Any:
    """The object a ``torch.save`` file holds, with Lucid tensors in place of PyTorch's."""
    storages: dict[str, _Storage] = {}
    try:
        obj, data = _read_zip(fh, name, storages) if is_zip else _read_legacy(fh, name, storages)
    except CheckpointError:
        raise
    except _UnsupportedError as exc:
        raise CheckpointError(f"load: {name} is a PyTorch checkpoint that Lucid cannot read: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - a damaged pickle raises anything (EOFError, TypeError, ...)
        raise CheckpointError(
            f"load: {name} is a damaged PyTorch checkpoint: unpickling it failed with {type(exc).__name__}: {exc}"
        ) from None
    return _materialize(obj, data, name, map_location)


def _read_zip(fh: BinaryIO, name: str, storages: dict[str, _Storage]) -> tuple[Any, _ZipStorages]:
    try:
        zf = zipfile.ZipFile(fh)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise CheckpointError(
            f"load: {name} is a damaged or truncated zip archive (a PyTorch checkpoint?): {exc}"
        ) from None
    names = zf.namelist()
    pickles = [n for n in names if n.endswith("data.pkl") and n.count("/") == 1]
    if not pickles:
        if any(n.endswith("/constants.pkl") for n in names):
            raise CheckpointError(
                f"load: {name} is a TorchScript archive (torch.jit.save), not a state dict: in PyTorch, "
                "save torch.jit.load(f).state_dict() with torch.save or safetensors"
            )
        raise CheckpointError(f"load: {name} is a zip archive but not a PyTorch checkpoint (it has no data.pkl)")
    prefix = pickles[0][: -len("data.pkl")]
    order = f"{prefix}byteorder"
    if order in names and zf.read(order).strip() not in (b"little", b""):
        raise CheckpointError(f"load: {name} was saved on a big-endian machine, which Lucid cannot read yet")
    with zf.open(pickles[0]) as pkl:
        obj = _unpickle(io.BytesIO(pkl.read()), name, storages)
    return obj, _ZipStorages(zf, fh, prefix, name)


def _read_legacy(fh: BinaryIO, name: str, storages: dict[str, _Storage]) -> tuple[Any, _LegacyStorages]:
    magic = _unpickle(fh, name, None)
    if magic != _MAGIC:
        raise CheckpointError(
            f"load: {name} is a Python pickle but not a PyTorch checkpoint; Lucid reads only torch.save state dicts "
            "and never unpickles other objects"
        )
    protocol = _unpickle(fh, name, None)
    if protocol != _PROTOCOL:
        raise CheckpointError(f"load: {name}: unknown PyTorch legacy protocol {protocol!r} (expected {_PROTOCOL})")
    sys_info = _unpickle(fh, name, None)
    if isinstance(sys_info, dict) and sys_info.get("little_endian") is False:
        raise CheckpointError(f"load: {name} was saved on a big-endian machine, which Lucid cannot read yet")
    obj = _unpickle(fh, name, storages)
    keys = _unpickle(fh, name, None)
    if not isinstance(keys, list):
        raise CheckpointError(f"load: {name} is a damaged PyTorch checkpoint: its storage list is {keys!r:.60}")
    spans: dict[str, tuple[int, int]] = {}
    for key in map(str, keys):
        head = fh.read(8)
        if len(head) != 8:
            raise CheckpointError(f"load: {name} is a truncated PyTorch checkpoint: storage {key!r} is missing")
        (count,) = struct.unpack("<q", head)
        root = storages.get(key)
        itemsize = _ITEMSIZES.get(root.dtype, 1) if root is not None else 1
        start = fh.tell()
        spans[key] = (start, count * itemsize)
        fh.seek(start + count * itemsize)
    end = fh.seek(0, io.SEEK_END)
    if spans and max(s + n for s, n in spans.values()) > end:
        raise CheckpointError(
            f"load: {name} is a truncated PyTorch checkpoint: its storages end past the end of the file"
        )
    return obj, _LegacyStorages(fh, name, spans)


# -- pending tensors -> Lucid tensors ----------------------------------------------------------------------
def _materialize(obj: Any, data: _ZipStorages | _LegacyStorages, name: str, map_location: MapLocation) -> Any:
    """Replace each pending tensor in ``obj`` (dicts and lists in place) by a Lucid tensor read from ``data``."""
    found: dict[int, tuple[_Pending, str]] = {}
    _collect(obj, [], found, set())
    done: dict[int, Tensor] = {}
    for pid, (p, at) in sorted(found.items(), key=lambda kv: (kv[1][0].storage.key, kv[1][0].offset)):
        done[pid] = _read_tensor(p, at, data, name, map_location)
    return _replace(obj, done, {})


def _collect(obj: Any, path: list[Any], found: dict[int, tuple[_Pending, str]], seen: set[int]) -> None:
    if isinstance(obj, _Pending):
        found.setdefault(id(obj), (obj, where(path)))
        return
    if id(obj) in seen or not isinstance(obj, (dict, list, tuple)):
        return
    seen.add(id(obj))
    items = obj.items() if isinstance(obj, dict) else enumerate(obj)
    for k, v in items:
        _collect(v, [*path, k], found, seen)


def _replace(obj: Any, done: dict[int, Tensor], memo: dict[int, Any]) -> Any:
    if isinstance(obj, _Pending):
        return done[id(obj)]
    if not isinstance(obj, (dict, list, tuple)):
        return obj
    if id(obj) in memo:
        return memo[id(obj)]
    if isinstance(obj, tuple):
        memo[id(obj)] = out = tuple(_replace(v, done, memo) for v in obj)
        return out
    memo[id(obj)] = obj
    keys = list(obj.keys()) if isinstance(obj, dict) else range(len(obj))
    for k in keys:
        obj[k] = _replace(obj[k], done, memo)
    return obj


def _read_tensor(
    p: _Pending, at: str, data: _ZipStorages | _LegacyStorages, name: str, map_location: MapLocation
) -> Tensor:
    """One tensor: its bytes read from the storage straight into Lucid memory (strided ones gathered)."""

    def fail(detail: str) -> CheckpointError:
        return CheckpointError(f"load: {name}: tensor {at} {detail}")

    dtype = lucid_dtype(p.dtype) if p.dtype in _ITEMSIZES else None
    if dtype is None:
        more = " yet; convert it in PyTorch first (tensor.float())" if p.dtype == "bfloat16" else ""
        raise fail(f"has dtype {p.dtype}, which Lucid does not support{more}")
    itemsize = _ITEMSIZES[p.dtype]
    if len(p.stride) != len(p.size) or any(s < 0 for s in p.size) or any(s < 0 for s in p.stride) or p.offset < 0:
        raise fail(
            f"has size {p.size}, stride {p.stride} and storage offset {p.offset}, which do not describe a tensor"
        )
    numel = math.prod(p.size)
    last = p.offset + sum((n - 1) * s for n, s in zip(p.size, p.stride, strict=True)) if numel else p.offset - 1
    start = p.storage.byte_offset + p.offset * itemsize
    span = (last + 1 - p.offset) * itemsize if numel else 0
    available = data.nbytes(p.storage.key)
    if numel and start + span > available:
        raise fail(
            f"(size {p.size}, stride {p.stride}, offset {p.offset}) reads up to byte {start + span} of its storage "
            f"{p.storage.key!r}, which holds {available} bytes (truncated or damaged)"
        )
    contiguous = all(
        st == math.prod(p.size[i + 1 :]) for i, (n, st) in enumerate(zip(p.size, p.stride, strict=True)) if n > 1
    )
    key = p.storage.key

    def build(dev: Any) -> Tensor:
        if contiguous:
            return lc.fromreader(lambda out: data.fill(key, start, out), dtype=dtype, shape=p.size, device=dev)
        flat = lc.fromreader(lambda out: data.fill(key, start, out), dtype=dtype, shape=(span // itemsize,), device=dev)
        index = lc.zeros((), dtype=lc.int64, device=flat.device)
        for n, st in zip(p.size, p.stride, strict=True):
            index = lc.expand_dims(index, axis=-1) + lc.arange(n, dtype=lc.int64, device=flat.device) * st
        return lc.reshape(lc.take(flat, lc.reshape(index, (-1,)), axis=0), p.size)

    t = place(map_location, p.storage.location, build)
    if p.parameter:
        return lc.Parameter(t, requires_grad=p.requires_grad)
    if p.requires_grad and lc.isdtype(t.dtype, ("real floating", "complex floating")):
        t.requires_grad_(True)
    return t
