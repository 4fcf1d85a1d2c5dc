"""Run by the tests under a launcher: how many signature exchanges collectives and DDP make.

usage: check_switch.py MODE   (MODE: default, env-off (run with LUCID_DIST_CHECK=0), init-off)
reports "ok <rank> <exchanges by 3 all_reduces> <by DDP construction> <by 3 DDP forwards> <by 3 backwards>"
(the model has a BatchNorm: each forward checks its buffers with one exchange before broadcasting them)
"""

import sys

from _report import report

import lucid_core as lc
import lucid_distributed as dist
import lucid_nn as nn
from lucid_distributed import _group

mode = sys.argv[1]
dist.init_process_group("mpi", timeout=30, **({"check_collectives": False} if mode == "init-off" else {}))
rank = dist.get_rank()
comm = _group._group()
calls = [0]
exchange = comm.gather_signatures


def counted(sig, describe):
    calls[0] += 1
    return exchange(sig, describe)


comm.gather_signatures = counted


def count(fn):
    before = calls[0]
    fn()
    return calls[0] - before


reduces = count(lambda: [dist.all_reduce(lc.ones((3,))) for _ in range(3)])
model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
box = []
built = count(lambda: box.append(dist.DistributedDataParallel(model, bucket_cap_mb=0.0001)))
ddp = box[0]
x = lc.randn(5, 4)
outs = []
forwards = count(lambda: [outs.append(ddp(x).sum()) for _ in range(1)])
backwards = count(lambda: outs[0].backward())
for _ in range(2):
    forwards += count(lambda: outs.append(ddp(x).sum()))
    backwards += count(lambda: outs[-1].backward())
report(rank, f"ok {rank} {reduces} {built} {forwards} {backwards}")
