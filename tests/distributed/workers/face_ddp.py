"""Run by the tests under mpiexec: a PyTorch DDP script with ``torch`` renamed to ``lucid``.

usage: face_ddp.py   (prints "ok <rank> <world> <weight checksum>" on success, raises otherwise)
"""

import os

from _report import report

import lucid
import lucid.distributed as dist
import lucid.nn as nn
from lucid.nn.parallel import DistributedDataParallel as DDP  # noqa: N817 - as PyTorch scripts write it
from lucid.utils.data import DataLoader, TensorDataset
from lucid.utils.data.distributed import DistributedSampler

os.environ.setdefault("MASTER_ADDR", "localhost")
os.environ.setdefault("MASTER_PORT", "29500")
dist.init_process_group("nccl", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()

t = lucid.tensor([float(rank + 1)])
dist.all_reduce(t, op=dist.ReduceOp.SUM)
assert t.item() == world * (world + 1) / 2, t
parts = [lucid.zeros(1) for _ in range(world)]
dist.all_gather(parts, lucid.tensor([float(rank)]))
assert [p.item() for p in parts] == list(range(world)), parts
out = lucid.zeros(2)
dist.reduce_scatter(out, [lucid.full((2,), float(r + 10 * rank)) for r in range(world)])  # entry r goes to rank r
assert out.tolist() == [float(sum(rank + 10 * q for q in range(world)))] * 2, out

lucid.manual_seed(0)
data = TensorDataset(lucid.randn(16, 3), lucid.randn(16, 1))
sampler = DistributedSampler(data)  # num_replicas and rank from the process group, as PyTorch's
assert sampler.num_replicas == world and sampler.rank == rank
model = DDP(nn.Linear(3, 1))
opt = lucid.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x, y in DataLoader(data, batch_size=4, sampler=sampler):
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
w = model.module.weight.detach()
gathered = [lucid.zeros_like(w) for _ in range(world)]
dist.all_gather(gathered, w)
assert all(bool((g == w).all()) for g in gathered), "ranks diverged"
dist.barrier()
dist.destroy_process_group()
report(rank, f"ok {rank} {world} {float(w.sum()):.6f}")
