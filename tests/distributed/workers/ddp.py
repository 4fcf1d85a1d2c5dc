"""Run by the tests under a launcher: DDP training equals one process training on the whole batch.

usage: ddp.py DEVICE   (each rank also trains the one-process reference itself and compares; prints "ok")
"""

import sys

import numpy as np
from _report import report

import lucid_core as lc
import lucid_data as data
import lucid_distributed as dist
import lucid_nn as nn
import lucid_optim as optim

device = sys.argv[1]
dist.init_process_group(timeout=60)
rank, n = dist.get_rank(), dist.get_world_size()
N, PER_RANK, EPOCHS = 24, 4, 4  # 24 samples, global batch 4 * n: (24 / (4n)) * 4 >= 8 steps for n <= 3
dtype = lc.float64
rng = np.random.default_rng(123)
X = lc.asarray(rng.normal(size=(N, 5)), dtype=dtype, device=device)
Y = lc.asarray(rng.normal(size=(N, 2)), dtype=dtype, device=device)


class MLP(nn.Module):
    def __init__(self, extra):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(5, 16), nn.Linear(16, 2)
        if extra:
            self.unused = nn.Linear(3, 3)  # never called in forward

    def forward(self, x):
        return self.fc2(lc.tanh(self.fc1(x)))


def make_model(seed, extra=False):
    lc.manual_seed(seed)
    return MLP(extra).to(device=device, dtype=dtype)


def params(m):
    return [p.detach().numpy().copy() for p in m.parameters()]


def max_diff(a, b):
    return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b))


def batches(epoch):
    """Per step: this rank's indices and the whole step's indices (every rank's, for the reference)."""
    shards = []
    for r in range(n):
        s = data.DistributedSampler(range(N), num_replicas=n, rank=r, shuffle=True, seed=7)
        s.set_epoch(epoch)
        shards.append(list(s))
    steps = len(shards[0]) // PER_RANK
    for k in range(steps):
        sl = slice(k * PER_RANK, (k + 1) * PER_RANK)
        yield shards[rank][sl], [i for sh in shards for i in sh[sl]]


def train(make_opt, accumulate=False, extra=False, view=False, fused=False):
    ref = make_model(0, extra)
    model = make_model(0 if rank == 0 else 100 + rank, extra)  # different initial weights on every rank
    if rank > 0:
        assert max_diff(params(model), params(ref)) > 0.1
    ddp = dist.DistributedDataParallel(
        model, find_unused_parameters=extra, bucket_cap_mb=0.0005, gradient_as_bucket_view=view
    )
    assert max_diff(params(model), params(ref)) == 0.0, "construction must broadcast rank 0's weights"
    assert len(ddp._buckets) > 1, "the test wants several buckets"
    opt, ref_opt = make_opt(model.parameters()), make_opt(ref.parameters())
    if fused:
        ddp.overlap_optimizer(opt)
    steps = 0
    for epoch in range(EPOCHS):
        for mine, every in batches(epoch):
            opt.zero_grad()
            if accumulate:  # two micro-batches: the first without communication
                half = len(mine) // 2
                with ddp.no_sync():
                    nn.functional.mse_loss(ddp(X[mine[:half]]), Y[mine[:half]]).backward()
                nn.functional.mse_loss(ddp(X[mine[half:]]), Y[mine[half:]]).backward()
            else:
                nn.functional.mse_loss(ddp(X[mine]), Y[mine]).backward()
            opt.step()
            ref_opt.zero_grad()
            if accumulate:  # the same two micro-steps over every rank's micro-batches
                firsts = [i for r in range(n) for i in every[r * PER_RANK : r * PER_RANK + PER_RANK // 2]]
                seconds = [i for r in range(n) for i in every[r * PER_RANK + PER_RANK // 2 : (r + 1) * PER_RANK]]
                nn.functional.mse_loss(ref(X[firsts]), Y[firsts]).backward()
                nn.functional.mse_loss(ref(X[seconds]), Y[seconds]).backward()
            else:
                nn.functional.mse_loss(ref(X[every]), Y[every]).backward()
            ref_opt.step()
            steps += 1
    assert steps >= 8, steps
    diff = max_diff(params(model), params(ref))
    assert diff < 1e-12, f"rank {rank}: DDP parameters differ from one process by {diff}"
    if extra:
        assert model.unused.weight.grad is None, "a parameter unused on every rank keeps grad None"
    return diff


def sgd(ps):
    return optim.SGD(ps, lr=0.1, momentum=0.9)


def adam(ps):
    return optim.Adam(ps, lr=0.01)


results = {
    "sgd": train(sgd),
    "adam": train(adam),
    "accumulate": train(sgd, accumulate=True),
    "unused": train(adam, extra=True),
    "view_sgd": train(sgd, view=True),
    "fused_sgd": train(sgd, fused=True),
    "fused_adam_view": train(adam, view=True, fused=True),
    "fused_accumulate": train(sgd, accumulate=True, view=True, fused=True),
    "fused_unused": train(adam, extra=True, fused=True),
}
report(rank, f"ok {rank} {n} {results}")
dist.destroy_process_group()
