"""``lucid.utils.data`` (also ``lucid.data``): PyTorch's data loading (``lucid_data``), laid out as PyTorch's.

``from lucid.utils.data.dataloader import DataLoader``, ``.dataset``, ``.sampler`` and ``.distributed`` are the
same objects as the names here. ``DataLoader``, ``RandomSampler`` and ``random_split`` also take PyTorch's
``generator=`` as a :class:`lucid.Generator` (see :mod:`lucid.utils.data._generators`).
"""

from __future__ import annotations

from lucid_data import *  # noqa: F403
from lucid_data import __all__ as _data_all

from . import dataloader, dataset, distributed, sampler
from ._generators import (  # noqa: F401 - PyTorch's random draws replace lucid_data's
    DataLoader,
    DistributedSampler,
    RandomSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
    random_split,
)

__all__ = [*_data_all, "dataloader", "dataset", "sampler", "distributed"]
