"""Lucid's data pipeline: Dataset, samplers, DataLoader, random_split. Imports only ``lucid_core``."""

from ._collate import default_collate, default_convert
from ._split import random_split
from ._workers import WorkerError, WorkerInfo, get_worker_info
from .dataloader import DataLoader
from .dataset import ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset
from .sampler import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    # datasets
    "Dataset",
    "IterableDataset",
    "TensorDataset",
    "Subset",
    "ConcatDataset",
    "ChainDataset",
    "StackDataset",
    "random_split",
    # samplers
    "Sampler",
    "SequentialSampler",
    "RandomSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "BatchSampler",
    "DistributedSampler",
    # loading
    "DataLoader",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "WorkerInfo",
    "WorkerError",
]
