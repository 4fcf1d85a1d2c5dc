"""Run by the tests under a launcher: the last rank wraps a different model; every rank must raise.

usage: ddp_mismatch.py   (reports "ok <rank> <json of the ValueError message per case>")
"""

import json

from _report import report

import lucid_core as lc
import lucid_distributed as dist
import lucid_nn as nn

dist.init_process_group("mpi", timeout=30)
rank, n = dist.get_rank(), dist.get_world_size()
odd = rank == n - 1


class Named(nn.Module):
    def __init__(self, name):
        super().__init__()
        setattr(self, name, nn.Linear(2, 2))

    def forward(self, x):
        return x


def frozen_bias():
    m = nn.Linear(3, 4)
    if odd:
        m.bias.requires_grad_(False)
    return m


def replaced_buffer():
    """Equal at construction; the last rank then replaces a BatchNorm statistic with one of another shape."""
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    ddp = dist.DistributedDataParallel(model)
    if odd:
        model[1].register_buffer("running_mean", lc.zeros((5,)))
    ddp(lc.randn(6, 3))


CASES = {
    "shape": lambda: dist.DistributedDataParallel(nn.Linear(3, 5 if odd else 4)),
    "requires_grad": lambda: dist.DistributedDataParallel(frozen_bias()),
    "count": lambda: dist.DistributedDataParallel(
        nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 4)) if odd else nn.Sequential(nn.Linear(3, 4))
    ),
    "name": lambda: dist.DistributedDataParallel(Named("head" if odd else "fc")),
    "buffer replaced after construction": replaced_buffer,
}
messages = {}
for name, make in CASES.items():
    try:
        make()
    except ValueError as exc:
        messages[name] = str(exc)
    else:
        messages[name] = "no error"
report(rank, "ok " + str(rank) + " " + json.dumps(messages))
