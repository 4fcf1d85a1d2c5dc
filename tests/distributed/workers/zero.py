"""Run by the tests under a launcher: ZeroRedundancyOptimizer equals one process's optimizer.

usage: zero.py DEVICE [DIR]   (prints "ok RANK WORLD {results}"; every check asserts on every rank;
with DIR, ckpt.py's save phase then writes a sharded checkpoint there in the same job)

Each rank trains a DDP replica on its share of every batch with a ZeroRedundancyOptimizer and, beside
it, the one-process reference on the whole batch with the unsharded optimizer; both must end equal in
float64 to 1e-12. Also: the state each rank holds (bytes), consolidate_state_dict/state_dict against
the reference's state_dict, load_state_dict, add_param_group, and overlap_with_ddp refused.
"""

import sys

import numpy as np
from _report import report

import lucid_core as lc
import lucid_distributed as dist
import lucid_nn as nn
import lucid_optim as optim
from lucid_distributed.optim import ZeroRedundancyOptimizer, state_bytes

device = sys.argv[1]
dist.init_process_group(timeout=60)
rank, n = dist.get_rank(), dist.get_world_size()
dtype = lc.float64
PER_RANK, STEPS = 3, 6
rng = np.random.default_rng(5)
X = lc.asarray(rng.normal(size=(STEPS, 4 * PER_RANK, 6)), dtype=dtype, device=device)  # batches for up to 4 ranks
Y = lc.asarray(rng.normal(size=(STEPS, 4 * PER_RANK, 2)), dtype=dtype, device=device)


def make_model(seed=0):
    lc.manual_seed(seed)
    layers = [nn.Linear(6, 12), nn.Tanh()] + [m for _ in range(4) for m in (nn.Linear(12, 12), nn.Tanh())]
    m = nn.Sequential(*layers, nn.Linear(12, 2))  # 12 parameters of similar sizes: state splits evenly
    return m.to(device=device, dtype=dtype)


def numpy_params(m):
    return [p.detach().numpy().copy() for p in m.parameters()]


def max_diff(a, b):
    return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b))


def train_step(net, opt, k, rows):
    opt.zero_grad()
    nn.functional.mse_loss(net(X[k, rows]), Y[k, rows]).backward()
    opt.step()


def compare(opt_class, steps=STEPS, bucket_view=False, **hyper):
    """Train ZeRO+DDP and the one-process reference side by side; the largest parameter difference."""
    ref, model = make_model(), make_model(0 if rank == 0 else 50 + rank)
    ddp = dist.DistributedDataParallel(model)
    zero = ZeroRedundancyOptimizer(model.parameters(), opt_class, parameters_as_bucket_view=bucket_view, **hyper)
    ref_opt = opt_class(ref.parameters(), **hyper)
    mine = slice(rank * PER_RANK, (rank + 1) * PER_RANK)
    for k in range(steps):
        train_step(ddp, zero, k, mine)
        train_step(ref, ref_opt, k, slice(0, n * PER_RANK))
    diff = max_diff(numpy_params(model), numpy_params(ref))
    assert diff < 1e-12, f"rank {rank}: {opt_class.__name__} ZeRO differs from one process by {diff}"
    return diff, zero, ref_opt, model, ref


results = {}
results["sgd"], zero_sgd, ref_sgd, *_ = compare(optim.SGD, lr=0.1, momentum=0.9)
results["adam"], zero, ref_opt, model, ref = compare(optim.Adam, lr=0.01)
results["adam_bucket_view"], *_ = compare(optim.Adam, bucket_view=True, lr=0.01, weight_decay=0.01)

# -- the state each rank holds: about 1/N of the whole -------------------------------------------------------
mine_bytes, full_bytes = state_bytes(zero), state_bytes(ref_opt)
everyone = [None] * n
dist.all_gather_object(everyone, mine_bytes)
assert sum(everyone) == full_bytes, (everyone, full_bytes)
largest = max(2 * p.size * p.dtype.itemsize for p in model.parameters())  # Adam: two moments per parameter
assert max(everyone) <= full_bytes / n + largest, (everyone, full_bytes)
owned = [p for g in zero.optim.param_groups for p in g["params"]] if zero.optim else []
assert len(owned) < len(list(model.parameters())) or n == 1
results["state_share"] = max(everyone) / full_bytes  # the largest rank's share of the whole state
assert results["state_share"] < 1.3 / n, results["state_share"]

# -- consolidate_state_dict + state_dict equal the reference optimizer's ---------------------------------------
zero.consolidate_state_dict(to=0)
if rank == 0:
    sd, want = zero.state_dict(), ref_opt.state_dict()
    assert sorted(sd["state"]) == sorted(want["state"]) == list(range(12)), sorted(sd["state"])
    for i, st in want["state"].items():
        assert sd["state"][i]["step"] == st["step"]
        for key in ("exp_avg", "exp_avg_sq"):
            assert float(np.max(np.abs(sd["state"][i][key].numpy() - st[key].numpy()))) < 1e-12
    assert sd["param_groups"] == want["param_groups"], (sd["param_groups"], want["param_groups"])
else:
    try:
        zero.state_dict()
        raise AssertionError("state_dict() on a rank it was not consolidated to must raise")
    except RuntimeError as exc:
        assert "consolidate_state_dict" in str(exc)

# -- load_state_dict of the whole state (from the unsharded optimizer) then train on: still equal -----------------
model2 = make_model(7)
ddp2 = dist.DistributedDataParallel(model2)
with lc.no_grad():
    for p, q in zip(model2.parameters(), ref.parameters()):
        p.copy_(q)
zero2 = ZeroRedundancyOptimizer(model2.parameters(), optim.Adam, lr=0.5)
zero2.load_state_dict(ref_opt.state_dict())
assert zero2.param_groups[0]["lr"] == 0.01 and (zero2.optim is None or zero2.optim.param_groups[0]["lr"] == 0.01)
for k in range(3):
    train_step(ddp2, zero2, k, slice(rank * PER_RANK, (rank + 1) * PER_RANK))
    train_step(ref, ref_opt, k, slice(0, n * PER_RANK))
results["resumed"] = max_diff(numpy_params(model2), numpy_params(ref))
assert results["resumed"] < 1e-12, results["resumed"]

# -- add_param_group: the new group is partitioned too and trained ------------------------------------------------
lc.manual_seed(3)
extra = nn.Linear(3, 3).to(device=device, dtype=dtype)
zero_sgd.add_param_group({"params": list(extra.parameters()), "lr": 0.05})
assert len(zero_sgd.param_groups) == 2 and zero_sgd.param_groups[1]["momentum"] == 0.9
holders = [None] * n
dist.all_gather_object(holders, sorted(zero_sgd._index[id(p)] for ps in zero_sgd._partition[rank] for p in ps))
assert sorted(i for h in holders for i in h) == list(range(14)), holders
before = extra.weight.detach().numpy().copy()
zero_sgd.zero_grad()
(extra(lc.ones((2, 3), dtype=dtype, device=device)) ** 2).sum().backward()
zero_sgd.step()
assert np.abs(extra.weight.detach().numpy() - before).max() > 0, "the added group was not updated"
gathered = [None] * n
dist.all_gather_object(gathered, extra.weight.detach().numpy().tolist())
assert all(g == gathered[0] for g in gathered), "ranks disagree on the added group's parameters"

try:
    ZeroRedundancyOptimizer(model.parameters(), optim.SGD, overlap_with_ddp=True, lr=0.1)
    raise AssertionError("overlap_with_ddp=True must be refused")
except NotImplementedError as exc:
    assert "overlap_with_ddp" in str(exc)

if len(sys.argv) > 2:
    import ckpt

    ckpt.setup(device)
    results["saved"] = ckpt.save_phase(sys.argv[2])["files"]
report(rank, f"ok {rank} {n} {results}")
dist.destroy_process_group()
