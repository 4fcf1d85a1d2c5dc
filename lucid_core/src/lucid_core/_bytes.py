"""Tensors from raw bytes (checkpoint loading)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _dtypes as dt
from ._registry import default_device, resolve_device
from ._tensor import Tensor, _new_tensor
from ._typing import DeviceLike, DTypeLike


def frombuffer(
    buffer: Any, /, *, dtype: DTypeLike, shape: tuple[int, ...] | None = None, device: DeviceLike = None
) -> Tensor:
    """A tensor of ``dtype`` read from little-endian raw bytes (copied), e.g. a safetensors payload.

    ``shape`` defaults to 1-D; the byte count must match ``prod(shape) * itemsize`` exactly.
    """

    d = dt.as_dtype(dtype)
    data = memoryview(buffer).cast("B")
    n_items, rem = divmod(len(data), d.itemsize)
    if rem:
        raise ValueError(f"frombuffer: {len(data)} bytes is not a multiple of {d.name}'s item size {d.itemsize}")
    shp = (n_items,) if shape is None else tuple(int(s) for s in shape)
    expected = d.itemsize
    for s in shp:
        expected *= s
    if expected != len(data):
        raise ValueError(
            f"frombuffer: shape {shp} of {d.name} needs {expected} bytes, but the buffer holds {len(data)}"
        )
    dev = default_device() if device is None else resolve_device(device)
    return _new_tensor(dev.backend.from_bytes(data, d, shp, dev), dev)


def fromreader(
    read_into: Callable[[memoryview], None],
    /,
    *,
    dtype: DTypeLike,
    shape: tuple[int, ...],
    device: DeviceLike = None,
) -> Tensor:
    """A tensor of ``dtype`` and ``shape`` whose raw little-endian bytes ``read_into(view)`` writes.

    ``read_into`` gets one writable byte ``memoryview`` of exactly ``prod(shape) * itemsize`` bytes
    and must fill it (a file's ``readinto`` in a loop): checkpoint loaders read straight into the
    tensor's memory, without holding the file's bytes a second time.
    """
    d = dt.as_dtype(dtype)
    shp = tuple(int(s) for s in shape)
    if any(s < 0 for s in shp):
        raise ValueError(f"fromreader: shape {shp} has a negative dimension")
    dev = default_device() if device is None else resolve_device(device)
    return _new_tensor(dev.backend.from_reader(read_into, d, shp, dev), dev)
