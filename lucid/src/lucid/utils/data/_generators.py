"""PyTorch's random draws in data loading: shuffles, splits and loader seeds from ``lucid.Generator``s.

``torch.utils.data`` draws its shuffles from torch's CPU generator (``randperm``, ``randint``), and every
``iter(loader)`` first draws a 64-bit base seed from it. The subclasses here do the same draws with Lucid's
CPU generator (the global one, or a :class:`lucid.Generator` passed as ``generator=``), in the same order, so on
the numpy backend ``manual_seed(s)`` gives PyTorch's batch order and a seeded ``random_split`` PyTorch's split.
``seed=`` and a ``random.Random`` generator keep ``lucid_data``'s own streams.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sized
from typing import Any

import lucid_core as lc
import lucid_data
from lucid_core import Generator
from lucid_core._generator import drawing_from
from lucid_data._split import _split_lengths

__all__ = [
    "DataLoader", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "DistributedSampler", "random_split",
]  # fmt: skip

_PYTORCH_ONLY = ("pin_memory_device", "in_order")
# torch.utils.data.DataLoader's positional parameters after the dataset, in its order
_POSITIONAL = ("batch_size", "shuffle", "sampler", "batch_sampler", "num_workers", "collate_fn", "pin_memory",
               "drop_last", "timeout", "worker_init_fn", "multiprocessing_context", "generator")  # fmt: skip


def _cpu() -> Any:
    return lc.resolve_device("cpu")


def _randperm(n: int, generator: Generator | None) -> list[int]:
    with drawing_from(generator, _cpu().backend):
        return lc.randperm(n, device="cpu").tolist()


def _randint(high: int, size: int, generator: Generator | None) -> list[int]:
    """``torch.randint(high=high, size=(size,), dtype=torch.int64, generator=generator).tolist()``."""
    with drawing_from(generator, _cpu().backend):
        return lc.randint(0, high, (size,), device="cpu").tolist()


def _random64(generator: Generator | None) -> int:
    """``torch.empty((), dtype=torch.int64).random_(generator=g).item()``: one 64-bit word, 63 bits kept."""
    with drawing_from(generator, _cpu().backend):
        return int(lc.randint(0, 2**63, (), device="cpu").item())


class RandomSampler(lucid_data.RandomSampler):
    """``lucid_data.RandomSampler`` drawing as PyTorch's does when given a ``lucid.Generator`` or no generator.

    Without a generator each epoch seeds a fresh generator from the global stream (as PyTorch does); a
    ``seed=`` or a ``random.Random`` generator uses ``lucid_data``'s stream instead.
    """

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: Generator | random.Random | None = None,
        seed: int | None = None,
    ) -> None:
        self.torch_generator = generator if isinstance(generator, Generator) else None
        self._pytorch_stream = seed is None and not isinstance(generator, random.Random)
        own = None if self.torch_generator is not None else generator
        super().__init__(data_source, replacement, num_samples, seed=seed, generator=own)

    def __iter__(self) -> Iterator[int]:
        if not self._pytorch_stream:
            return super().__iter__()
        return self._pytorch_order()

    def _pytorch_order(self) -> Iterator[int]:
        n = len(self.data_source)
        generator = self.torch_generator
        if generator is None:
            generator = Generator().manual_seed(_random64(None))
        k = self.num_samples
        if self.replacement:
            # chunks of 32 as PyTorch draws them; each chunk is drawn with the generator swapped in and yielded
            # after it is swapped out, so the consumer's own draws between chunks (dropout, init) stay global
            for chunk in range(k // 32 + 1):
                size = 32 if chunk < k // 32 else k % 32
                yield from _randint(n, size, generator)
            return
        for _ in range(k // n):
            yield from _randperm(n, generator)
        yield from _randperm(n, generator)[: k % n]


class SubsetRandomSampler(lucid_data.SubsetRandomSampler):
    """``lucid_data.SubsetRandomSampler`` drawing PyTorch's ``randperm(len(indices), generator=generator)``
    (the global stream without a generator); ``seed=`` or a ``random.Random`` keeps lucid_data's stream."""

    def __init__(
        self, indices: Any, generator: Generator | random.Random | None = None, seed: int | None = None
    ) -> None:
        self.torch_generator = generator if isinstance(generator, Generator) else None
        self._pytorch_stream = seed is None and not isinstance(generator, random.Random)
        super().__init__(indices, seed=seed, generator=None if self.torch_generator is not None else generator)

    def __iter__(self) -> Iterator[int]:
        if not self._pytorch_stream:
            return super().__iter__()
        return iter([self.indices[i] for i in _randperm(len(self.indices), self.torch_generator)])


class WeightedRandomSampler(lucid_data.WeightedRandomSampler):
    """``lucid_data.WeightedRandomSampler`` that also takes a ``lucid.Generator`` (its host-side stream; the
    draws are lucid_data's, not PyTorch's ``multinomial``)."""

    def __init__(
        self, weights: Any, num_samples: int, replacement: bool = True, generator: Any = None, seed: int | None = None
    ) -> None:
        host = generator.host if isinstance(generator, Generator) else generator
        super().__init__(weights, num_samples, replacement, seed=seed, generator=host)


class DistributedSampler(lucid_data.DistributedSampler):
    """``lucid_data.DistributedSampler`` with PyTorch's defaults and shuffle.

    ``num_replicas``/``rank`` default to ``lucid.distributed``'s world size and rank; the shuffle is PyTorch's
    ``randperm`` from a generator seeded with ``seed + epoch``.
    """

    def __init__(
        self,
        dataset: Sized,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if num_replicas is None or rank is None:
            from lucid import distributed as dist

            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        super().__init__(dataset, num_replicas, rank, shuffle, seed, drop_last)

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)  # type: ignore[arg-type]
        indices = _randperm(n, Generator().manual_seed(self.seed + self.epoch)) if self.shuffle else list(range(n))
        if self.drop_last:
            indices = indices[: self.total_size]
        elif indices:
            pad = self.total_size - len(indices)
            indices += (indices * (pad // len(indices) + 1))[:pad]
        return iter(indices[self.rank : self.total_size : self.num_replicas])


def random_split(
    dataset: Any, lengths: Any, generator: Generator | random.Random | None = None, seed: int | None = None
) -> list[lucid_data.Subset]:
    """PyTorch's ``random_split``: ``randperm(len(dataset), generator=generator)`` cut into ``lengths``.

    ``generator`` None draws from the global stream (``manual_seed``), as PyTorch's default generator does;
    ``seed=`` or a ``random.Random`` uses ``lucid_data.random_split``'s stream.
    """
    if seed is not None or isinstance(generator, random.Random):
        return lucid_data.random_split(dataset, lengths, seed=seed, generator=generator)
    counts = _split_lengths(len(dataset), lengths)
    perm = _randperm(sum(counts), generator)
    out, start = [], 0
    for c in counts:
        out.append(lucid_data.Subset(dataset, perm[start : start + c]))
        start += c
    return out


class DataLoader(lucid_data.DataLoader):
    """``lucid_data.DataLoader`` with PyTorch's random draws and keywords.

    ``shuffle=True`` uses :class:`RandomSampler` (PyTorch's order), every ``iter(loader)`` first draws a base
    seed from ``generator`` (or the global stream) as PyTorch does, and ``pin_memory_device``/``in_order`` are
    accepted (no-ops: there is no pinned memory, and batches always arrive in order).
    """

    def __init__(self, dataset: Any, *args: Any, **kwargs: Any) -> None:
        for name in _PYTORCH_ONLY:
            kwargs.pop(name, None)
        if len(args) > len(_POSITIONAL):
            raise TypeError(f"DataLoader: takes at most {len(_POSITIONAL) + 1} positional arguments")
        for name, value in zip(_POSITIONAL, args):
            if name in kwargs:
                raise TypeError(f"DataLoader: got multiple values for argument {name!r}")
            kwargs[name] = value
        generator = kwargs.pop("generator", None)
        shuffle = kwargs.pop("shuffle", False)
        self.torch_generator = generator if isinstance(generator, Generator) else None
        iterable = isinstance(dataset, lucid_data.IterableDataset) or not hasattr(dataset, "__getitem__")
        if shuffle is True and kwargs.get("sampler") is None and not iterable and kwargs.get("seed") is None:
            if not isinstance(generator, random.Random) and kwargs.get("batch_sampler") is None and len(dataset):
                kwargs["sampler"] = RandomSampler(dataset, generator=generator)
                shuffle = False
        host = generator.host if isinstance(generator, Generator) else generator
        super().__init__(dataset, shuffle=shuffle, generator=host, **kwargs)
        if not shuffle and isinstance(kwargs.get("sampler"), RandomSampler):
            self.shuffle = True

    def __iter__(self) -> Iterator[Any]:
        if self.seed is None and not (self.generator is not None and self.torch_generator is None):
            _random64(self.torch_generator)  # PyTorch's base seed, drawn at every iter(loader)
        return super().__iter__()
