"""``lucid.utils.data.distributed``: ``DistributedSampler`` (``lucid_data``'s; pass ``num_replicas``/``rank`` or
let it ask ``lucid.distributed``)."""

from ._generators import DistributedSampler

__all__ = ["DistributedSampler"]
