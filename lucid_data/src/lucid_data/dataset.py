"""Datasets: the map-style ``Dataset`` and its wrappers, and the stream-style ``IterableDataset``."""

from __future__ import annotations

import bisect
import itertools
import operator
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import lucid_core as lc

__all__ = [
    "Dataset",
    "IterableDataset",
    "TensorDataset",
    "Subset",
    "ConcatDataset",
    "ChainDataset",
    "StackDataset",
]


def normalize_index(idx: Any, size: int, owner: str) -> int:
    """``idx`` as a non-negative int below ``size`` (negative counts from the end); IndexError otherwise."""
    try:
        i = operator.index(idx)
    except TypeError:
        raise TypeError(f"{owner}: indices must be integers, got {type(idx).__name__}") from None
    if not -size <= i < size:
        raise IndexError(f"{owner}: index {i} is out of range for a dataset of size {size}")
    return i + size if i < 0 else i


class Dataset(ABC):
    """A map-style dataset: ``len(ds)`` samples, ``ds[i]`` for ``0 <= i < len(ds)``. Subclass and define both."""

    @abstractmethod
    def __getitem__(self, index: int) -> Any: ...

    @abstractmethod
    def __len__(self) -> int: ...

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]


class IterableDataset(Dataset):
    """A stream of samples: define ``__iter__``. It has no indexing, and a length only if you define ``__len__``."""

    @abstractmethod
    def __iter__(self) -> Iterator[Any]: ...

    def __getitem__(self, index: int) -> Any:
        raise TypeError(f"{type(self).__name__} is an IterableDataset: iterate over it, it cannot be indexed")

    def __len__(self) -> int:
        raise TypeError(f"{type(self).__name__} is an IterableDataset without __len__: its length is unknown")

    def __add__(self, other: Dataset) -> ChainDataset:  # type: ignore[override]
        return ChainDataset([self, other])


def _as_tensor(obj: Any, i: int) -> lc.Tensor:
    t = obj if isinstance(obj, lc.Tensor) else lc.asarray(obj)  # a native array keeps its backend
    if t.ndim == 0:
        raise ValueError(
            f"TensorDataset: tensor {i} is 0-d (shape ()); every tensor needs a first dimension indexing the samples"
        )
    return t


class TensorDataset(Dataset):
    """Samples are rows of tensors: ``ds[i] == (t0[i], t1[i], ...)``.

    Arrays and (nested) lists are promoted with ``lucid_core.asarray``, so a native array keeps its backend.
    """

    def __init__(self, *tensors: Any) -> None:
        if not tensors:
            raise ValueError("TensorDataset: needs at least one tensor, got none")
        ts = tuple(_as_tensor(t, i) for i, t in enumerate(tensors))
        sizes = [t.shape[0] for t in ts]
        if any(s != sizes[0] for s in sizes):
            raise ValueError(
                f"TensorDataset: all tensors must have the same first dimension (number of samples); got {sizes}"
            )
        self.tensors: tuple[lc.Tensor, ...] = ts

    def __getitem__(self, index: int) -> tuple[lc.Tensor, ...]:
        i = normalize_index(index, len(self), "TensorDataset")
        return tuple(t[i] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]

    def to(self, device: lc.DeviceLike) -> TensorDataset:
        """Move every tensor to ``device`` (in place, as ``Module.to`` does); returns self."""
        self.tensors = tuple(t.to(device) for t in self.tensors)
        return self

    @property
    def device(self) -> lc.Device:
        """The device of the first tensor."""
        return self.tensors[0].device

    def __repr__(self) -> str:
        shapes = ", ".join(f"{t.shape} {t.dtype.name}" for t in self.tensors)
        devices = sorted({str(t.device) for t in self.tensors})
        return f"TensorDataset(size={len(self)}, tensors=[{shapes}], device={', '.join(devices)})"


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order. Unknown attributes are read from ``dataset``."""

    def __init__(self, dataset: Dataset, indices: Sequence[int] | Iterable[int]) -> None:
        if isinstance(indices, lc.Tensor):
            indices = indices.tolist()
        n = len(dataset)
        self.dataset = dataset
        self.indices: list[int] = [normalize_index(i, n, "Subset") for i in indices]

    def __getitem__(self, index: int) -> Any:
        return self.dataset[self.indices[normalize_index(index, len(self.indices), "Subset")]]

    def __len__(self) -> int:
        return len(self.indices)

    def __iter__(self) -> Iterator[Any]:
        for i in self.indices:
            yield self.dataset[i]

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails. Read `dataset` from __dict__ (never through getattr, which
        # would recurse while unpickling or copying, before `dataset` is set) and keep private names local.
        dataset = self.__dict__.get("dataset")
        if dataset is None or name.startswith("_"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(dataset, name)

    def to(self, device: lc.DeviceLike) -> Subset:
        """Move the underlying dataset to ``device`` (it must have ``.to``); returns self."""
        if not hasattr(self.dataset, "to"):
            raise AttributeError(f"Subset.to: the underlying {type(self.dataset).__name__} has no .to(device)")
        self.dataset.to(device)
        return self

    def __repr__(self) -> str:
        return f"Subset(size={len(self)}, of={self.dataset!r})"


class ConcatDataset(Dataset):
    """Several map-style datasets one after another; ``cumulative_sizes`` is computed once, at construction."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets: list[Dataset] = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: needs at least one dataset, got an empty list")
        for i, d in enumerate(self.datasets):
            if isinstance(d, IterableDataset):
                raise TypeError(f"ConcatDataset: dataset {i} is an IterableDataset; use ChainDataset for streams")
        self.cumulative_sizes: list[int] = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def locate(self, index: int) -> tuple[int, int]:
        """``(dataset number, index inside it)`` of sample ``index``."""
        i = normalize_index(index, len(self), "ConcatDataset")
        d = bisect.bisect_right(self.cumulative_sizes, i)  # bisect_right skips empty parts
        return d, i - (self.cumulative_sizes[d - 1] if d else 0)

    def __getitem__(self, index: int) -> Any:
        d, j = self.locate(index)
        return self.datasets[d][j]

    def __repr__(self) -> str:
        return f"ConcatDataset(size={len(self)}, sizes={[len(d) for d in self.datasets]})"


class ChainDataset(IterableDataset):
    """Several iterable datasets one after another (the stream version of ``ConcatDataset``)."""

    def __init__(self, datasets: Iterable[Iterable[Any]]) -> None:
        self.datasets = list(datasets)

    def __iter__(self) -> Iterator[Any]:
        for d in self.datasets:
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)  # type: ignore[arg-type]


class StackDataset(Dataset):
    """Zip same-length datasets: positional ones give tuples, keyword ones dicts (``StackDataset(x=a, y=b)``)."""

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError("StackDataset: pass datasets either positionally or as keywords, not both")
        if not args and not kwargs:
            raise ValueError("StackDataset: needs at least one dataset")
        self.datasets: tuple[Dataset, ...] | dict[str, Dataset] = args or kwargs
        named = dict(enumerate(args)) if args else kwargs
        sizes = {k: len(d) for k, d in named.items()}
        if len(set(sizes.values())) > 1:
            raise ValueError(f"StackDataset: all datasets must have the same length; got {sizes}")
        self._length = next(iter(sizes.values()))

    def __getitem__(self, index: int) -> tuple[Any, ...] | dict[str, Any]:
        i = normalize_index(index, self._length, "StackDataset")
        if isinstance(self.datasets, dict):
            return {k: d[i] for k, d in self.datasets.items()}
        return tuple(d[i] for d in self.datasets)

    def __len__(self) -> int:
        return self._length
