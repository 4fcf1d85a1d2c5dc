"""``lucid.utils.data.dataloader``: PyTorch's ``torch.utils.data.dataloader`` names."""

from lucid_data import WorkerInfo, default_collate, default_convert, get_worker_info

from ._generators import DataLoader

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert", "WorkerInfo"]
