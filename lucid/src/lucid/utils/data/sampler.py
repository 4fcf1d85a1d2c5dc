"""``lucid.utils.data.sampler``: PyTorch's ``torch.utils.data.sampler`` names."""

from lucid_data import BatchSampler, Sampler, SequentialSampler

from ._generators import RandomSampler, SubsetRandomSampler, WeightedRandomSampler

__all__ = [
    "BatchSampler", "RandomSampler", "Sampler", "SequentialSampler", "SubsetRandomSampler", "WeightedRandomSampler",
]  # fmt: skip
