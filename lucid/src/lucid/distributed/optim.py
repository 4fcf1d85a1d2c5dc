"""``lucid.distributed.optim``: PyTorch's ``torch.distributed.optim`` names over ``lucid_distributed.optim``."""

from __future__ import annotations

from .._optional import distributed_module

distributed_module()  # an ImportError saying how to install lucid_distributed, when it is missing

from lucid_distributed.optim import ZeroRedundancyOptimizer  # noqa: E402

__all__ = ["ZeroRedundancyOptimizer"]
