"""Run by the tests under a launcher: every collective, op and dtype of one device against NumPy's answer.

usage: collectives.py COMMUNICATOR DEVICE   (prints "ok <rank> <checks>" on success, raises otherwise)
"""

import sys

import numpy as np
from _report import report

import lucid_core as lc
import lucid_distributed as dist
from lucid_distributed import ReduceOp

comm_name, device = sys.argv[1], sys.argv[2]
dist.init_process_group(comm_name, timeout=60)
rank, n = dist.get_rank(), dist.get_world_size()
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]  # fmt: skip
checks = 0


def held(name):
    """Whether the device holds this dtype (MLX's GPU has no float64, MLX no complex128, ...)."""
    try:
        t = lc.asarray([1], dtype=getattr(lc, name), device=device)
        return t.dtype.name == name
    except (TypeError, ValueError, RuntimeError):
        return False


def value(r, name, shape=(2, 3)):
    """Rank r's input: small numbers (products of 3 ranks stay exact in int8), different per rank."""
    base = (np.arange(int(np.prod(shape))).reshape(shape) % 3) + r + 1
    if name == "bool":
        return (base + r) % 2 == 0
    if name.startswith("complex"):
        return (base + 1j * (base % 2)).astype(name)
    if name.startswith("int"):
        return (base * (-1) ** r).astype(name)
    return base.astype(name)


def expected(op, name, arrays):
    s = np.stack(arrays)
    if name == "bool":
        return s.any(0) if op in (ReduceOp.SUM, ReduceOp.MAX) else s.all(0)
    if op is ReduceOp.SUM:
        return s.sum(0).astype(name)
    if op is ReduceOp.AVG:
        return (s.sum(0) / n).astype(name)
    if op is ReduceOp.PRODUCT:
        return s.prod(0).astype(name)
    return (s.max(0) if op is ReduceOp.MAX else s.min(0)).astype(name)


def same(t, want, what):
    global checks
    got = np.asarray(t.numpy())
    tol = 1e-3 if "16" in str(want.dtype) else 1e-6
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    ok = np.array_equal(got, want) if want.dtype.kind in "biu" else np.allclose(got, want, rtol=tol, atol=tol)
    assert ok, f"rank {rank} {what}: got {got}, expected {want}"
    checks += 1


def tensor(a):
    return lc.asarray(np.array(a, copy=True), device=device)  # asarray shares NumPy memory: keep inputs intact


dtypes = [d for d in DTYPES if held(d)]
for name in dtypes:
    mine = value(rank, name)
    everyone = [value(r, name) for r in range(n)]
    for op in ReduceOp:
        bad = (op is ReduceOp.AVG and name[0] not in "fc") or (
            name.startswith("complex") and op in (ReduceOp.MAX, ReduceOp.MIN)
        )
        t = tensor(mine)
        if bad:
            try:
                dist.all_reduce(t, op)
            except TypeError:
                checks += 1
                continue
            raise AssertionError(f"all_reduce {op} on {name} should raise TypeError")
        dist.all_reduce(t, op)
        same(t, expected(op, name, everyone), f"all_reduce {op.name} {name}")
        work = dist.all_reduce(t2 := tensor(mine), op, async_op=True)
        work.wait()
        same(t2, expected(op, name, everyone), f"async all_reduce {op.name} {name}")
        # reduce_scatter: each rank keeps its row of the reduction of an (n, 3) input
        big = [np.concatenate([value(r + k, name, (1, 3)) for k in range(n)]) for r in range(n)]
        out = tensor(np.zeros((1, 3), dtype=name))
        dist.reduce_scatter_tensor(out, tensor(big[rank]), op)
        same(out, expected(op, name, big)[rank : rank + 1], f"reduce_scatter_tensor {op.name} {name}")
    for src in range(n):
        t = tensor(mine)
        dist.broadcast(t, src)
        same(t, value(src, name), f"broadcast from {src} {name}")
    outs = [tensor(np.zeros((2, 3), dtype=name)) for _ in range(n)]
    dist.all_gather(outs, tensor(mine))
    for r in range(n):
        same(outs[r], value(r, name), f"all_gather[{r}] {name}")
    cat = tensor(np.zeros((2 * n, 3), dtype=name))
    dist.all_gather_into_tensor(cat, tensor(mine))
    same(cat, np.concatenate(everyone), f"all_gather_into_tensor {name}")
    stacked = tensor(np.zeros((n, 2, 3), dtype=name))
    dist.all_gather_into_tensor(stacked, tensor(mine), async_op=True).wait()
    same(stacked, np.stack(everyone), f"all_gather_into_tensor stacked {name}")
    # point to point around a ring
    got = tensor(np.zeros((2, 3), dtype=name))
    sent = dist.isend(tensor(mine), (rank + 1) % n)
    dist.recv(got, (rank - 1) % n)
    sent.wait()
    same(got, value((rank - 1) % n, name), f"send/recv {name}")

objs = [None] * n
dist.all_gather_object(objs, {"rank": rank, "tag": "x" * rank})
assert objs == [{"rank": r, "tag": "x" * r} for r in range(n)], objs
dist.barrier()
report(rank, f"ok {rank} {checks} {len(dtypes)}")
dist.destroy_process_group()
