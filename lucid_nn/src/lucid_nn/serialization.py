"""Checkpoints in the safetensors format: no pickle, atomic writes, PyTorch-compatible key names.

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
from collections.abc import Mapping
from typing import Any

import safetensors

import lucid_core as lc
from lucid_core import Tensor

from .module import Module

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
    data: bytes | bytearray, code: str, shape: list[int], device: Any, key: str, path: str
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


def save(
    obj: Module | Mapping[str, Tensor], path: str | os.PathLike[str], metadata: dict[str, str] | None = None
) -> None:
    """Write a module's state dict (or a dict of tensors) to ``path`` as safetensors, atomically.

    The bytes go to a temporary file in the same directory, which replaces ``path`` only once
    complete: a failure at any point leaves any earlier file at ``path`` untouched.

    Args:
        obj: a Module (its ``state_dict()`` is saved) or a mapping of names to tensors.
        path: the file to write.
        metadata: optional string-to-string annotations stored in the header.
    """
    tensors = obj.state_dict() if isinstance(obj, Module) else obj
    if not isinstance(tensors, Mapping):
        raise TypeError(f"save: expected a Module or a dict of tensors, got {type(obj).__name__}")
    if metadata is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise TypeError("save: metadata must map strings to strings")
    path = os.fspath(path)
    data = _serialize(tensors, metadata)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".safetensors", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
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


def _read(path: str | os.PathLike[str]) -> tuple[str, bytes]:
    path = os.fspath(path)
    with open(path, "rb") as f:
        return path, f.read()


def load(path: str | os.PathLike[str], device: Any = None) -> dict[str, Tensor]:
    """Read a safetensors file into a dict of tensors on ``device`` (the default device if None).

    Files written by ``safetensors.torch.save_file(model.state_dict(), ...)`` load too.
    """
    path, data = _read(path)
    try:
        items = safetensors.deserialize(data)
    except Exception as exc:  # noqa: BLE001 - safetensors raises its own error types; re-raise one clear error
        raise ValueError(f"load: {path} is not a valid safetensors file (corrupt or truncated?): {exc}") from None
    out: dict[str, Tensor] = {}
    for key, info in items:
        out[key] = _tensor_from_bytes(info["data"], info["dtype"], list(info["shape"]), device, key, path)
    return out


def load_metadata(path: str | os.PathLike[str]) -> dict[str, str]:
    """The ``metadata`` dict stored in a safetensors file's header (empty if none)."""
    path, data = _read(path)
    try:
        (n,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8 : 8 + n])
    except (struct.error, ValueError) as exc:
        raise ValueError(f"load_metadata: {path} is not a valid safetensors file: {exc}") from None
    return dict(header.get("__metadata__", {}))
