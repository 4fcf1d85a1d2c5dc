"""``default_collate``: turn a list of samples into one batch with the samples' own structure."""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import lucid_core as lc

__all__ = ["default_collate", "default_convert"]


def _stack_tensors(batch: Sequence[Any]) -> lc.Tensor:
    ref = batch[0]
    for i, t in enumerate(batch):
        if not isinstance(t, lc.Tensor):
            raise TypeError(f"default_collate: sample 0 is a Tensor but sample {i} is a {type(t).__name__}")
        if t.shape != ref.shape:
            raise ValueError(
                f"default_collate: cannot stack samples of different shapes: sample 0 has {ref.shape}, "
                f"sample {i} has {t.shape}; pad them or pass a collate_fn"
            )
        if t.device != ref.device:
            raise ValueError(
                f"default_collate: samples are on different devices: sample 0 on {ref.device}, sample {i} on "
                f"{t.device}; move the dataset to one device (TensorDataset.to(device))"
            )
    # lucid_core.stack, not a backend's: the batch stays on the samples' device and backend
    return lc.stack(list(batch), axis=0)


def _number_batch(batch: Sequence[Any]) -> lc.Tensor:
    for i, x in enumerate(batch):
        if not isinstance(x, numbers.Number):
            raise TypeError(f"default_collate: sample 0 is a number but sample {i} is a {type(x).__name__}")
    if all(isinstance(x, bool) for x in batch):
        return lc.asarray(list(batch), dtype=lc.bool)
    if all(isinstance(x, numbers.Integral) for x in batch):
        return lc.asarray([int(x) for x in batch], dtype=lc.int64)
    if all(isinstance(x, numbers.Real) for x in batch):
        return lc.asarray([float(x) for x in batch], dtype=lc.float32)
    return lc.asarray([complex(x) for x in batch])


def _is_native_array(x: Any) -> bool:
    return hasattr(x, "__array_namespace__") or hasattr(x, "__dlpack__")


def default_collate(batch: Sequence[Any]) -> Any:
    """Collate a list of samples into a batch, recursively by the type of the first sample.

    Tensors (and native arrays) are stacked along a new first axis with ``lucid_core.stack``, keeping their
    device; Python numbers become a tensor (bools ``bool``, ints ``int64``, floats ``float32``) on the default
    device; dicts collate per key; tuples and lists are transposed with ``zip(*batch)`` and collated per field
    (a tuple gives a tuple, a namedtuple the same namedtuple, a list a list); strings and any other objects
    are returned as a list.
    """
    if len(batch) == 0:
        raise ValueError("default_collate: the batch is empty")
    elem = batch[0]
    if isinstance(elem, lc.Tensor):
        return _stack_tensors(batch)
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, numbers.Number):
        return _number_batch(batch)
    if _is_native_array(elem):
        return _stack_tensors([lc.asarray(x) if _is_native_array(x) else x for x in batch])
    if isinstance(elem, Mapping):
        keys = list(elem)
        for i, d in enumerate(batch):
            if not isinstance(d, Mapping) or set(d) != set(keys):
                got = sorted(map(str, d)) if isinstance(d, Mapping) else type(d).__name__
                raise ValueError(
                    f"default_collate: sample 0 is a mapping with keys {sorted(map(str, keys))}, sample {i} has {got}"
                )
        out = {k: default_collate([d[k] for d in batch]) for k in keys}
        try:
            return type(elem)(out)
        except TypeError:
            return out
    if isinstance(elem, Sequence):
        n = len(elem)
        for i, s in enumerate(batch):
            if not isinstance(s, Sequence) or isinstance(s, (str, bytes)) or len(s) != n:
                got = f"length {len(s)}" if isinstance(s, Sequence) else f"a {type(s).__name__}"
                raise ValueError(
                    f"default_collate: every sample must have the same structure; sample 0 has length {n}, "
                    f"sample {i} has {got}"
                )
        fields = [default_collate(list(column)) for column in zip(*batch, strict=True)]
        if isinstance(elem, tuple):
            return type(elem)(*fields) if hasattr(elem, "_fields") else tuple(fields)
        if isinstance(elem, list):
            return fields
        try:
            return type(elem)(fields)
        except TypeError:
            return fields
    return list(batch)


def default_convert(data: Any) -> Any:
    """Turn native arrays into tensors, recursively through mappings and sequences, without batching.

    What a loader with ``batch_size=None`` does to each sample: tensors, numbers and strings stay as they are.
    """
    if isinstance(data, (lc.Tensor, str, bytes, numbers.Number)):
        return data
    if _is_native_array(data):
        return lc.asarray(data)
    if isinstance(data, Mapping):
        out = {k: default_convert(v) for k, v in data.items()}
        try:
            return type(data)(out)
        except TypeError:
            return out
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(v) for v in data))
    if isinstance(data, Sequence):
        items = [default_convert(v) for v in data]
        try:
            return type(data)(items)
        except TypeError:
            return items
    return data
