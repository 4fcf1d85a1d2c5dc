"""Run by the tests under a launcher: bucket views and the optimizer update inside backward.

usage: ddp_features.py DEVICE   (prints "ok RANK WORLD VIEWS" where VIEWS says whether .grad aliased the buckets)
"""

import sys

import numpy as np
from _report import report

import lucid_core as lc
import lucid_distributed as dist
import lucid_nn as nn
import lucid_optim as optim

device = sys.argv[1]
dist.init_process_group(timeout=60)
rank, n = dist.get_rank(), dist.get_world_size()
dtype = lc.float64


def model():
    lc.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).to(device=device, dtype=dtype)


def batch(step):
    """This rank's batch of step ``step`` and the mean over ranks of the gradients it should produce."""
    rng = np.random.default_rng(10 * step + rank)
    return lc.asarray(rng.normal(size=(5, 4)), dtype=dtype, device=device)


def local_grads(m, x):
    m.zero_grad()
    (m(x) ** 2).sum().backward()
    return [p.grad.numpy().copy() for p in m.parameters()]


def mean_grads(ref, step):
    """Average over ranks of the gradients every rank's batch of ``step`` gives ``ref`` (a private model)."""
    total = None
    for r in range(n):
        rng = np.random.default_rng(10 * step + r)
        g = local_grads(ref, lc.asarray(rng.normal(size=(5, 4)), dtype=dtype, device=device))
        total = g if total is None else [a + b for a, b in zip(total, g)]
    return [t / n for t in total]


# 1. gradient_as_bucket_view: .grad are views of the bucket buffer (NumPy under MPI), values are the mean
m = model()
ddp = dist.DistributedDataParallel(m, bucket_cap_mb=0.0001, gradient_as_bucket_view=True)
assert len(ddp._buckets) > 1
(ddp(batch(0)) ** 2).sum().backward()
want = mean_grads(model(), 0)
got = [p.grad.numpy().copy() for p in m.parameters()]
assert max(float(np.max(np.abs(a - b))) for a, b in zip(got, want)) < 1e-12
views = getattr(ddp._buckets[0].buffer, "as_view", False)
if views:
    for b in ddp._buckets:
        for p in b.params:
            assert np.shares_memory(p.grad._data, b.buffer.buffer), "grad must be a view of its bucket"
    kept = m[0].weight.grad
    m.zero_grad()
    (ddp(batch(1)) ** 2).sum().backward()  # the next synchronized backward overwrites the kept view (PyTorch's)
    assert np.array_equal(kept.numpy(), m[0].weight.grad.numpy())
    assert not np.array_equal(kept.numpy(), got[list(m.parameters()).index(m[0].weight)])
elif device == "numpy" and n > 1:
    raise AssertionError("NumPy gradients under MPI should be bucket views")

# 1b. the default (no views): the persistent buffer is reused, but each .grad is its own memory
m = model()
ddp = dist.DistributedDataParallel(m, bucket_cap_mb=0.0001)
(ddp(batch(0)) ** 2).sum().backward()
got = [p.grad.numpy().copy() for p in m.parameters()]
assert max(float(np.max(np.abs(a - b))) for a, b in zip(got, mean_grads(model(), 0))) < 1e-12
kept = m[0].weight.grad
m.zero_grad()
(ddp(batch(1)) ** 2).sum().backward()
assert np.array_equal(kept.numpy(), got[list(m.parameters()).index(m[0].weight)]), "a kept .grad must not change"
assert max(float(np.max(np.abs(p.grad.numpy() - w))) for p, w in zip(m.parameters(), mean_grads(model(), 1))) < 1e-12
if views:
    for b in ddp._buckets:
        for p in b.params:
            assert not np.shares_memory(p.grad._data, b.buffer.buffer), "without views .grad owns its memory"

# 2. overlap_optimizer: backward updates the parameters; step() afterwards adds nothing
for view in (False, True):
    m, ref = model(), model()
    ddp = dist.DistributedDataParallel(m, bucket_cap_mb=0.0001, gradient_as_bucket_view=view)
    opt, ref_opt = optim.SGD(m.parameters(), lr=0.1, momentum=0.9), optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    ddp.overlap_optimizer(opt)
    for step in range(3):
        if step == 1:  # a resumed optimizer (new group dicts, maybe) and a new rate must reach the update in backward
            for o in (opt, ref_opt):
                o.load_state_dict(o.state_dict())
                o.param_groups[0]["lr"] = 0.05
        before = [p.detach().numpy().copy() for p in m.parameters()]
        opt.zero_grad()
        (ddp(batch(step)) ** 2).sum().backward()
        after = [p.detach().numpy().copy() for p in m.parameters()]
        assert all(not np.array_equal(a, b) for a, b in zip(before, after)), "backward must have stepped"
        opt.step()  # nothing left to do: no second update
        assert all(np.array_equal(a, p.detach().numpy()) for a, p in zip(after, m.parameters()))
        for p, g in zip(ref.parameters(), mean_grads(ref, step)):
            p.grad = lc.asarray(g, dtype=dtype, device=device)
        ref_opt.step()
        diff = max(
            float(np.max(np.abs(p.detach().numpy() - q.detach().numpy())))
            for p, q in zip(m.parameters(), ref.parameters())
        )
        assert diff < 1e-12, diff

    # a gradient changed between backward and step (clipping) cannot take effect: step() says so
    opt.zero_grad()
    (ddp(batch(5)) ** 2).sum().backward()
    nn.utils.clip_grad_norm_(m.parameters(), 1e-3)
    try:
        opt.step()
    except RuntimeError as e:
        assert "changed afterwards" in str(e), e
    else:
        raise AssertionError("step() after clipping must raise under overlap_optimizer")

    # no_sync backwards do not step; the synchronized one steps with the accumulated gradients
    opt.zero_grad()
    before = [p.detach().numpy().copy() for p in m.parameters()]
    with ddp.no_sync():
        (ddp(batch(6)) ** 2).sum().backward()
    assert all(np.array_equal(a, p.detach().numpy()) for a, p in zip(before, m.parameters()))
    (ddp(batch(7)) ** 2).sum().backward()
    assert all(not np.array_equal(a, p.detach().numpy()) for a, p in zip(before, m.parameters()))
    opt.step()

# 3. an optimizer with its own step() is refused with a message
ddp = dist.DistributedDataParallel(model())
try:
    ddp.overlap_optimizer(optim.LBFGS(ddp.parameters()))
except ValueError as e:
    assert "own step()" in str(e), e
else:
    raise AssertionError("LBFGS must be refused")

report(rank, f"ok {rank} {n} {views}")
dist.destroy_process_group()
