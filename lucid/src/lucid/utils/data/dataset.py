"""``lucid.utils.data.dataset``: PyTorch's ``torch.utils.data.dataset`` names."""

from lucid_data import ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset

from ._generators import random_split

__all__ = [
    "Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset", "Subset",
    "random_split",
]  # fmt: skip
