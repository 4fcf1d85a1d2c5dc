"""Run by the tests: sharded checkpoints saved on one world size and resumed on another.

usage: ckpt.py DEVICE save DIR     train 3 steps (DDP + ZeroRedundancyOptimizer(Adam)), save sharded
       ckpt.py DEVICE resume DIR   load it on this job's world size, train 3 more steps, compare with one
                                   process training 6 steps; alone (no launcher) also damages copies of
                                   the checkpoint and checks the errors
prints "ok RANK WORLD {results}". ``zero.py DEVICE DIR`` runs the save phase too, in its own job (one
four-rank job for both tests).

The model is saved as row shards (each rank a block of rows of every parameter, as dim-0 sharding
does; a rank may hold no rows of a small parameter), the optimizer as ZeRO's partition, so both
sharded kinds are re-cut for the new world size on load.
"""

import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from _report import report

import lucid_core as lc
import lucid_distributed as dist
import lucid_nn as nn
import lucid_optim as optim
from lucid_distributed import checkpoint as dcp
from lucid_distributed.optim import ZeroRedundancyOptimizer

dtype = lc.float64
BATCH, SAVED_AT, MORE = 12, 3, 3  # a global batch of 12 rows split evenly over 1, 2 or 4 ranks
device, rank, n, X, Y = "cpu", 0, 1, None, None


def setup(dev):
    """Set this job's device, rank and world size, and the data (the process group is open)."""
    global device, rank, n, X, Y
    device, rank, n = dev, dist.get_rank(), dist.get_world_size()
    rng = np.random.default_rng(9)
    X = lc.asarray(rng.normal(size=(SAVED_AT + MORE, BATCH, 5)), dtype=dtype, device=device)
    Y = lc.asarray(rng.normal(size=(SAVED_AT + MORE, BATCH, 3)), dtype=dtype, device=device)


def make_model(seed):
    lc.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 6), nn.Tanh(), nn.Linear(6, 3)).to(
        device=device, dtype=dtype
    )


def rows(total, r, world):
    """Rank ``r``'s block of ``total`` rows (the first ranks get one more; some may get none)."""
    per, extra = divmod(total, world)
    start = r * per + min(r, extra)
    return start, start + per + (r < extra)


def row_shards(model):
    out = {}
    for name, p in model.state_dict().items():
        a, b = rows(p.shape[0], rank, n)
        out[name] = dcp.Shard.rows(p[a:b], tuple(p.shape), a)
    return out


def train(net, opt, steps):
    share = BATCH // n
    mine = slice(rank * share, (rank + 1) * share)
    for k in steps:
        opt.zero_grad()
        nn.functional.mse_loss(net(X[k, mine]), Y[k, mine]).backward()
        opt.step()


def reference(steps):
    ref = make_model(0)
    opt = optim.Adam(ref.parameters(), lr=0.02)
    for k in range(steps):
        opt.zero_grad()
        nn.functional.mse_loss(ref(X[k]), Y[k]).backward()
        opt.step()
    return ref


def max_diff(a, b):
    return max(float(np.max(np.abs(x.detach().numpy() - y.detach().numpy()))) for x, y in zip(a, b))


def save_phase(folder):
    """Train on this job's ranks and save a sharded checkpoint into ``folder``."""
    results = {}
    model = make_model(0)
    ddp = dist.DistributedDataParallel(model)
    zero = ZeroRedundancyOptimizer(model.parameters(), optim.Adam, lr=0.02)
    train(ddp, zero, range(SAVED_AT))
    dcp.save({"model": row_shards(model), "optim": zero.sharded_state_dict(), "step": SAVED_AT}, checkpoint_id=folder)
    meta = dcp.read_metadata(folder)
    assert meta["world_size"] == n and len(meta["files"]) == n
    chunks = meta["tensors"]["model.0.weight"]["chunks"]  # 7 rows on 4 ranks: 2, 2, 2, 1
    assert [c["rows"] for c in chunks] == [[rows(7, r, n)[0], rows(7, r, n)[1]] for r in range(n)], chunks
    results["files"] = sorted(os.listdir(folder))
    return results


def resume_phase(folder):
    """Load ``folder`` on this job's ranks, train on and compare with one process (alone: damage it too)."""
    results = {}
    model = make_model(100 + rank)  # other weights than the saved ones: the load must replace them
    state = {"model": model.state_dict(), "step": -1}
    dcp.load(state, checkpoint_id=folder)  # whole tensors reassembled from the saved row blocks
    assert state["step"] == SAVED_AT
    saved = reference(SAVED_AT)
    results["model_reassembled"] = max_diff(model.parameters(), saved.parameters())
    assert results["model_reassembled"] < 1e-12, results
    resharded = {"model": row_shards(make_model(200 + rank))}  # this job's own row blocks
    dcp.load(resharded, checkpoint_id=folder)
    for (name, shard), want in zip(resharded["model"].items(), model.state_dict().values()):  # bit-equal
        a, b = rows(want.shape[0], rank, n)
        assert shard.offset == a * int(np.prod(want.shape[1:]))
        assert np.array_equal(shard.local.numpy(), want[a:b].numpy()), name
    ddp = dist.DistributedDataParallel(model)
    zero = ZeroRedundancyOptimizer(model.parameters(), optim.Adam, lr=0.5)
    zero.load_sharded_state_dict(folder, prefix="optim")
    assert zero.param_groups[0]["lr"] == 0.02
    train(ddp, zero, range(SAVED_AT, SAVED_AT + MORE))
    results["resumed"] = max_diff(model.parameters(), reference(SAVED_AT + MORE).parameters())
    assert results["resumed"] < 1e-12, results
    if n == 1:  # alone: the whole state dict without a template, then damaged copies
        full = dcp.load_full(folder)
        assert full["step"] == SAVED_AT and sorted(full["optim"]["state"]) == list(range(6))
        assert max_diff(full["model"].values(), saved.state_dict().values()) < 1e-12
        assert full["optim"]["param_groups"][0]["betas"] == (0.9, 0.999)

        def expect(damage, *words):
            scratch = tempfile.mkdtemp()
            copy = os.path.join(scratch, "ckpt")
            shutil.copytree(folder, copy)
            meta = dcp.read_metadata(copy)
            target = damage(copy, meta)
            try:
                dcp.load_full(copy)  # reads every tensor
            except dcp.CheckpointError as exc:
                text = str(exc)
                assert target in text and all(w in text for w in words), text
                return text
            finally:
                shutil.rmtree(scratch)
            raise AssertionError(f"{damage.__name__}: no CheckpointError")

        def shard(copy, meta, r=2):
            return os.path.join(copy, meta["files"][str(r)])

        def flip_byte(copy, meta):
            path = shard(copy, meta)
            data = bytearray(open(path, "rb").read())
            data[-3] ^= 0xFF
            open(path, "wb").write(bytes(data))
            return path

        def truncate(copy, meta):
            path = shard(copy, meta, 1)
            os.truncate(path, os.path.getsize(path) - 9)
            return path

        def remove(copy, meta):
            path = shard(copy, meta, 3)
            os.unlink(path)
            return path

        def garbage_header(copy, meta):
            path = shard(copy, meta, 0)
            data = bytearray(open(path, "rb").read())
            data[8:20] = b"not json at!"
            open(path, "wb").write(bytes(data))
            return path

        def garbage_metadata(copy, meta):
            path = os.path.join(copy, dcp.METADATA_FILE)
            open(path, "w").write('{"format": "lucid-sharded-checkpoint", "vers')
            return path

        def no_metadata(copy, meta):
            path = os.path.join(copy, dcp.METADATA_FILE)
            os.unlink(path)
            return path

        results["errors"] = [
            expect(flip_byte, "damaged", "CRC-32"),
            expect(truncate, "truncated"),
            expect(remove, "missing"),
            expect(garbage_header, "damaged"),
            expect(garbage_metadata, "damaged"),
            expect(no_metadata, "does not exist"),
        ]
        # a process killed while saving (its shard written to a temporary, not yet renamed) leaves the old
        # checkpoint readable and a temporary that the next save removes
        dying = (
            "import os, lucid_core as lc\nfrom lucid_distributed import checkpoint as c\n"
            "os.replace = lambda src, dst: os._exit(9)\n"
            f"c.save({{'step': 99, 'w': lc.ones(3)}}, checkpoint_id={folder!r})\n"
        )
        died = subprocess.run([sys.executable, "-c", dying], capture_output=True, text=True, timeout=60)
        assert died.returncode == 9, died.stderr
        assert sum(".tmp-" in f for f in os.listdir(folder)) == 1, os.listdir(folder)
        assert dcp.load_full(folder)["step"] == SAVED_AT
        # a save into the same folder replaces the checkpoint and removes the old and the stray shard files
        dcp.save({"model": model.state_dict(), "optim": zero.sharded_state_dict(), "step": 6}, checkpoint_id=folder)
        meta = dcp.read_metadata(folder)
        assert sorted(os.listdir(folder)) == sorted([dcp.METADATA_FILE, *meta["files"].values()]), os.listdir(folder)
        assert dcp.load_full(folder)["step"] == 6
    return results


if __name__ == "__main__":
    dist.init_process_group(timeout=60)
    setup(sys.argv[1])
    phase, folder = sys.argv[2], sys.argv[3]
    out = save_phase(folder) if phase == "save" else resume_phase(folder)
    report(rank, f"ok {rank} {n} {out}")
    dist.destroy_process_group()
