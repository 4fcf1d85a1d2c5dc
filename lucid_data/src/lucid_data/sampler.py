"""Samplers: which dataset indices a DataLoader visits, and in what order."""

from __future__ import annotations

import math
import random
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Any

import lucid_core as lc

from ._rng import check_seed, local_rng

__all__ = [
    "Sampler",
    "SequentialSampler",
    "RandomSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "BatchSampler",
    "DistributedSampler",
]


def check_positive_int(value: Any, name: str, owner: str) -> int:
    """``value`` if it is a positive int (not a bool); ValueError naming ``name`` otherwise."""
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{owner}: {name} must be a positive integer, got {value!r}")
    return value


def _check_bool(value: Any, name: str, owner: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{owner}: {name} must be a bool, got {value!r}")
    return value


class Sampler(ABC):
    """Yields dataset indices (a batch sampler: lists of them). Define ``__iter__``, and ``__len__`` if known."""

    @abstractmethod
    def __iter__(self) -> Iterator[Any]: ...


class _Shuffling(Sampler):
    """Bookkeeping shared by the random samplers: a local RNG per epoch (see ``set_epoch``)."""

    def _init_rng(self, seed: int | None, generator: random.Random | None) -> None:
        check_seed(seed, generator, type(self).__name__)
        self.seed = seed
        self.generator = generator
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch the next iteration uses (with a ``seed``, the order depends only on seed and epoch)."""
        self.epoch = epoch

    def _next_rng(self) -> random.Random:
        rng = local_rng(self.seed, self.generator, self.epoch)
        self.epoch += 1
        return rng


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(_Shuffling):
    """A random order of the indices, a new one each epoch.

    Args:
        replacement: draw indices independently (repeats possible) instead of permuting.
        num_samples: how many indices per epoch (default ``len(data_source)``); without replacement a larger
            number concatenates several permutations.
        seed: seed of a local RNG (mixed with the epoch number); without it a seed is drawn from
            ``lucid_core.host_rng()``. ``generator``: a ``random.Random`` to use instead.
    """

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        seed: int | None = None,
        generator: random.Random | None = None,
    ) -> None:
        self.data_source = data_source
        self.replacement = _check_bool(replacement, "replacement", "RandomSampler")
        self._num_samples = num_samples
        if num_samples is not None:
            check_positive_int(num_samples, "num_samples", "RandomSampler")
        elif len(data_source) == 0:
            raise ValueError("RandomSampler: the dataset is empty (num_samples would be 0); nothing to sample")
        self._init_rng(seed, generator)

    @property
    def num_samples(self) -> int:
        """How many indices one pass yields."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n, k = len(self.data_source), self.num_samples
        if n == 0:
            raise ValueError("RandomSampler: the dataset is empty; nothing to sample")
        rng = self._next_rng()
        if self.replacement:
            return iter([rng.randrange(n) for _ in range(k)])
        out: list[int] = []
        while len(out) < k:
            perm = list(range(n))
            rng.shuffle(perm)
            out.extend(perm[: k - len(out)])
        return iter(out)

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(_Shuffling):
    """The given ``indices`` in a random order, a new one each epoch (``seed``/``generator`` as in RandomSampler)."""

    def __init__(self, indices: Sequence[int], seed: int | None = None, generator: random.Random | None = None) -> None:
        self.indices = list(indices)
        self._init_rng(seed, generator)

    def __iter__(self) -> Iterator[int]:
        order = list(self.indices)
        self._next_rng().shuffle(order)
        return iter(order)

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(_Shuffling):
    """``num_samples`` indices drawn with probability proportional to ``weights`` (a 1-D sequence or tensor).

    Without replacement each index appears at most once (weighted sampling without replacement).
    """

    def __init__(
        self,
        weights: Sequence[float] | lc.Tensor,
        num_samples: int,
        replacement: bool = True,
        seed: int | None = None,
        generator: random.Random | None = None,
    ) -> None:
        if isinstance(weights, lc.Tensor):
            if weights.ndim != 1:
                raise ValueError(f"WeightedRandomSampler: weights must be 1-D, got shape {weights.shape}")
            weights = weights.tolist()
        w = [float(x) for x in weights]
        if not w:
            raise ValueError("WeightedRandomSampler: weights is empty")
        bad = [x for x in w if not (math.isfinite(x) and x >= 0)]
        if bad:
            raise ValueError(f"WeightedRandomSampler: weights must be finite and non-negative, got {bad[0]}")
        if sum(w) <= 0:
            raise ValueError("WeightedRandomSampler: weights sum to 0; at least one must be positive")
        self.weights = w
        self.num_samples = check_positive_int(num_samples, "num_samples", "WeightedRandomSampler")
        self.replacement = _check_bool(replacement, "replacement", "WeightedRandomSampler")
        positive = sum(1 for x in w if x > 0)
        if not replacement and num_samples > positive:
            raise ValueError(
                f"WeightedRandomSampler: cannot draw {num_samples} samples without replacement "
                f"from {positive} indices with positive weight"
            )
        self._init_rng(seed, generator)

    def __iter__(self) -> Iterator[int]:
        rng = self._next_rng()
        n = len(self.weights)
        if self.replacement:
            return iter(rng.choices(range(n), weights=self.weights, k=self.num_samples))
        # Efraimidis-Spirakis: the k largest keys u ** (1 / w) are a weighted sample without replacement
        keys = [(rng.random() ** (1.0 / w), i) for i, w in enumerate(self.weights) if w > 0]
        keys.sort(reverse=True)
        return iter([i for _, i in keys[: self.num_samples]])

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` (any iterable of ints) into lists of ``batch_size``.

    The last, shorter batch is kept unless ``drop_last``.
    """

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool = False) -> None:
        self.sampler = sampler
        self.batch_size = check_positive_int(batch_size, "batch_size", "BatchSampler")
        self.drop_last = _check_bool(drop_last, "drop_last", "BatchSampler")

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class DistributedSampler(Sampler):
    """The shard of ``dataset`` that replica ``rank`` of ``num_replicas`` loads; the shards are disjoint.

    Without ``drop_last`` the index list is padded (repeating it from the front) to a multiple of
    ``num_replicas`` so every replica gets the same count; with it the tail is dropped. With ``shuffle`` the
    order is a permutation drawn from ``seed`` and the epoch, the same on every replica: call
    ``set_epoch(e)`` before each epoch so the order changes.
    """

    def __init__(
        self,
        dataset: Sized,
        num_replicas: int = 1,
        rank: int = 0,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        check_positive_int(num_replicas, "num_replicas", "DistributedSampler")
        if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedSampler: rank must be an int in [0, {num_replicas - 1}], got {rank!r}")
        check_seed(seed, None, "DistributedSampler")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.shuffle = _check_bool(shuffle, "shuffle", "DistributedSampler")
        self.seed = seed
        self.drop_last = _check_bool(drop_last, "drop_last", "DistributedSampler")
        self.epoch = 0
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = n // num_replicas
        else:
            self.num_samples = -(-n // num_replicas)
        self.total_size = self.num_samples * num_replicas

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch that seeds the next shuffle (call it on every replica with the same number)."""
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        indices = list(range(len(self.dataset)))
        if self.shuffle:
            local_rng(self.seed, None, self.epoch).shuffle(indices)
        if self.drop_last:
            indices = indices[: self.total_size]
        elif indices:
            pad = self.total_size - len(indices)
            indices += (indices * (pad // len(indices) + 1))[:pad]
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples
