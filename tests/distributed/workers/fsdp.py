"""Run by the tests under a launcher: FSDP training equals one process training on the whole batch.

usage: fsdp.py DEVICE [SAVE_DIR [LOAD_DIR]]

Each rank trains the one-process reference itself on the whole global batch and compares, in float64,
for an MLP and a small transformer, with SGD-momentum and Adam, through ``fully_shard`` and the FSDP1
wrapper; then checks memory, summon_full_params and state dicts; on up to 2 ranks also no resharding,
the FSDP1 wrapper on the MLP, clipping and gradient accumulation without sync. SAVE_DIR: save a
sharded checkpoint of the trained transformer and its Adam there, and the one-process reference after
RESUME_STEPS more steps; LOAD_DIR: load one saved by a job of another size, check it against the
reference, train RESUME_STEPS more steps and check those too. Reports "ok RANK WORLD {results}".
"""

import functools
import sys

import numpy as np
from _report import report

import lucid_core as lc
import lucid_distributed as dist
import lucid_nn as nn
import lucid_optim as optim
from lucid_distributed import checkpoint
from lucid_distributed import fsdp as F

device = sys.argv[1]
save_dir = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] != "-" else None
load_dir = sys.argv[3] if len(sys.argv) > 3 else None
dist.init_process_group(timeout=60)
rank, n = dist.get_rank(), dist.get_world_size()
dtype = lc.float64
PER_RANK, STEPS = 2, 3
rng = np.random.default_rng(5)
B = PER_RANK * n


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(5, 33), nn.Linear(33, 17), nn.Linear(17, 3)

    def forward(self, x):
        return self.fc3(lc.tanh(self.fc2(lc.tanh(self.fc1(x)))))


class TinyGPT(nn.Module):
    """Embedding, two transformer blocks (attention + MLP, LayerNorms), a norm and a head.

    The blocks have no biases: the key projection's bias has a gradient that is zero in exact arithmetic
    (softmax ignores a shift of all scores), so in floating point it is rounding noise, which Adam divides
    by its own square root into a visible step; splitting the batch changes that noise (plain data
    parallelism differs from one process by 2e-12 there, so would any sharding).
    """

    def __init__(self, vocab=11, d=8, seq=5):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(lc.randn(seq, d) * 0.1)
        self.blocks = nn.ModuleList(
            [
                nn.TransformerEncoderLayer(d, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True, bias=False)
                for _ in range(2)
            ]
        )
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        h = self.tok(idx) + self.pos
        for b in self.blocks:
            h = b(h)
        return self.head(self.norm(h))


def make(kind, seed=0):
    lc.manual_seed(seed)
    return (MLP() if kind == "mlp" else TinyGPT()).to(device=device, dtype=dtype)


X_MLP = lc.asarray(rng.normal(size=(STEPS, B, 5)), dtype=dtype, device=device)
Y_MLP = lc.asarray(rng.normal(size=(STEPS, B, 3)), dtype=dtype, device=device)
X_GPT = lc.asarray(rng.integers(0, 11, size=(STEPS, B, 5)), dtype=lc.int64, device=device)
Y_GPT = lc.asarray(rng.integers(0, 11, size=(STEPS, B, 5)), dtype=lc.int64, device=device)
# the steps after a resume: one global batch for every world size, so a job of another size continues alike
RESUME_B, RESUME_STEPS = 4, 2
resume_rng = np.random.default_rng(7)
X_RES = lc.asarray(resume_rng.integers(0, 11, size=(RESUME_STEPS, RESUME_B, 5)), dtype=lc.int64, device=device)
Y_RES = lc.asarray(resume_rng.integers(0, 11, size=(RESUME_STEPS, RESUME_B, 5)), dtype=lc.int64, device=device)


def loss_of(kind, model, k, sl):
    if kind == "mlp":
        return nn.functional.mse_loss(model(X_MLP[k][sl]), Y_MLP[k][sl])
    return gpt_loss(model, X_GPT[k][sl], Y_GPT[k][sl])


def gpt_loss(model, x, y):
    return nn.functional.cross_entropy(model(x).reshape(-1, 11), y.reshape(-1))


def resume(model, opt, sl):
    """RESUME_STEPS more steps on the samples ``sl`` of the resume batch (all of it: the one-process run)."""
    for k in range(RESUME_STEPS):
        opt.zero_grad()
        gpt_loss(model, X_RES[k][sl], Y_RES[k][sl]).backward()
        opt.step()


def shard(kind, model, how):
    """Apply FSDP as ``how`` says; returns what to call and what to build the optimizer on."""
    layers = [model.fc1, model.fc2, model.fc3] if kind == "mlp" else list(model.blocks)
    if how == "fsdp1":
        cls = nn.Linear if kind == "mlp" else nn.TransformerEncoderLayer
        policy = functools.partial(F.transformer_auto_wrap_policy, transformer_layer_cls={cls})
        wrapped = F.FullyShardedDataParallel(model, auto_wrap_policy=policy)
        return wrapped
    for layer in layers:
        F.fully_shard(layer, reshard_after_forward=how != "keep")
    return F.fully_shard(model, reshard_after_forward=how != "keep")


def full_params(sd):
    return {k: v.numpy().copy() for k, v in sd.items()}


def max_diff(a, b):
    assert set(a) == set(b), (sorted(a), sorted(b))
    return max(float(np.max(np.abs(a[k] - b[k]))) for k in a)


def nbytes(ts):
    return sum(t.size * t.dtype.itemsize for t in ts)


def at_rest(params, opt):
    params = list(params)
    grads = [p.grad for p in params if p.grad is not None]
    state = [v for s in opt.state.values() for v in s.values() if isinstance(v, lc.Tensor)]
    return nbytes(params) + nbytes(grads) + nbytes(state)


def train(kind, make_opt, how="reshard", clip=None, accumulate=False):
    ref = make(kind)
    model = make(kind)
    wrapped = shard(kind, model, how)
    opt, ref_opt = make_opt(wrapped.parameters()), make_opt(ref.parameters())
    mine = slice(rank * PER_RANK, (rank + 1) * PER_RANK)
    norms = []
    peak = 0
    for k in range(STEPS):
        F.memory_stats(reset_peak=True)
        opt.zero_grad()
        if accumulate:  # two micro-batches of one sample; the first keeps its gradient local
            first = slice(mine.start, mine.start + 1)
            if how == "fsdp1":
                with wrapped.no_sync():
                    loss_of(kind, wrapped, k, first).backward()
            else:
                wrapped.set_requires_gradient_sync(False)
                loss_of(kind, wrapped, k, first).backward()
                wrapped.set_requires_gradient_sync(True)
            loss_of(kind, wrapped, k, slice(mine.start + 1, mine.stop)).backward()
        else:
            loss_of(kind, wrapped, k, mine).backward()
        if clip is not None:
            norms.append(float(F.clip_grad_norm_(wrapped, clip).item()))
        opt.step()
        peak = max(peak, F.memory_stats()["peak_unsharded_bytes"])
        ref_opt.zero_grad()
        if accumulate:
            evens = [r * PER_RANK for r in range(n)]
            odds = [r * PER_RANK + 1 for r in range(n)]
            loss_of(kind, ref, k, evens).backward()
            loss_of(kind, ref, k, odds).backward()
        else:
            loss_of(kind, ref, k, slice(None)).backward()
        if clip is not None:
            ref_norm = float(nn.utils.clip_grad_norm_(ref.parameters(), clip).item())
            assert abs(ref_norm - norms[-1]) < 1e-12 * max(1.0, ref_norm), (ref_norm, norms[-1])
            assert norms[-1] > clip, "the test wants clipping to happen"
        ref_opt.step()
    assert F.memory_stats()["unsharded_bytes"] == 0, "every gathered parameter is freed after the step"
    sd = F.get_model_state_dict(wrapped, options=F.StateDictOptions(full_state_dict=True))
    diff = max_diff(full_params(sd), full_params(ref.state_dict()))
    assert diff < 1e-12, f"rank {rank}: {kind} {how} differs from one process by {diff}"
    mem = {
        "full": at_rest(ref.parameters(), ref_opt),
        "rest": at_rest(wrapped.parameters(), opt),
        "peak": peak,
        "largest": max(unit_bytes(m) for m in layers_of(kind, model)),
        "root": unit_bytes(model),
    }
    return diff, mem, wrapped, ref, opt, ref_opt


def unit_bytes(module):
    """Bytes of the whole parameters a unit owns (what it holds while gathered)."""
    return sum(fp.numel * fp.piece.dtype.itemsize for fp in module._fsdp_state.params)


def layers_of(kind, model):
    return [model.fc1, model.fc2, model.fc3] if kind == "mlp" else list(model.blocks)


def sgd(ps):
    return optim.SGD(ps, lr=0.05, momentum=0.9)


def adam(ps):
    return optim.Adam(ps, lr=0.01)


results = {}
memory = {}
for kind in ("mlp", "gpt"):
    for opt_name, make_opt in (("sgd", sgd), ("adam", adam)):
        d, mem, *_ = train(kind, make_opt)
        results[f"{kind}_{opt_name}"] = d
        memory[f"{kind}_{opt_name}"] = mem
if n <= 2:  # the variants' code does not depend on the world size: a bigger job only checks the core again
    results["gpt_adam_keep"] = train("gpt", adam, how="keep")[0]
    results["mlp_sgd_fsdp1"] = train("mlp", sgd, how="fsdp1")[0]
    results["gpt_clip"] = train("gpt", sgd, clip=0.05)[0]
    results["mlp_accumulate"] = train("mlp", sgd, accumulate=True)[0]
    results["mlp_no_sync_fsdp1"] = train("mlp", adam, how="fsdp1", accumulate=True)[0]
diff, mem, wrapped, ref, opt, ref_opt = train("gpt", adam, how="fsdp1")
results["gpt_adam_fsdp1"] = diff

# memory: at rest 1/N of parameters + gradients + Adam's state (plus padding), and the transient peak
# bounded by the root's own parameters plus one layer's parameters and gradients
for key, m in memory.items():
    slack = 8 * 3 * 16  # padding: under one float64 per rank and parameter tensor, in param, grad, state
    assert m["rest"] * n <= m["full"] + slack * n, (key, m)
    assert m["rest"] * n >= m["full"], (key, m)
    assert m["peak"] <= m["root"] + 2 * m["largest"] + slack, (key, m)
    assert m["peak"] >= m["largest"], (key, m)

# summon_full_params: whole parameters inside; a change made inside is kept (each rank its piece)
ref_sd = full_params(ref.state_dict())
with F.FullyShardedDataParallel.summon_full_params(wrapped):
    w = wrapped.module.head.weight
    assert tuple(w.shape) == (11, 8) and float(np.max(np.abs(w.detach().numpy() - ref_sd["head.weight"]))) < 1e-12
    with lc.no_grad():
        w.mul_(2.0)
assert tuple(wrapped.module.head.weight.shape) != (11, 8), "pieces again after the block"
sd = F.get_model_state_dict(wrapped, options=F.StateDictOptions(full_state_dict=True))
assert float(np.max(np.abs(sd["head.weight"].numpy() - 2 * ref_sd["head.weight"]))) < 1e-12
with F.FullyShardedDataParallel.summon_full_params(wrapped):
    with lc.no_grad():
        wrapped.module.head.weight.mul_(0.5)

# FSDP1 state dicts: full on rank 0 only, and sharded
cfg = F.FullStateDictConfig(rank0_only=True)
with F.FullyShardedDataParallel.state_dict_type(wrapped, F.StateDictType.FULL_STATE_DICT, cfg):
    full = wrapped.state_dict()
assert (len(full) == len(ref_sd)) if rank == 0 else full == {}, len(full)
if rank == 0:
    assert max_diff(full_params(full), ref_sd) < 1e-12
with F.FullyShardedDataParallel.state_dict_type(wrapped, F.StateDictType.SHARDED_STATE_DICT):
    sharded = wrapped.state_dict()
assert isinstance(sharded["head.weight"], checkpoint.Shard)
fresh = F.FullyShardedDataParallel(make("gpt", seed=9), auto_wrap_policy={nn.TransformerEncoderLayer})
with F.FullyShardedDataParallel.state_dict_type(fresh, F.StateDictType.SHARDED_STATE_DICT):
    fresh.load_state_dict(sharded)
got = F.get_model_state_dict(fresh, options=F.StateDictOptions(full_state_dict=True))
results["sharded_roundtrip"] = max_diff(full_params(got), ref_sd)
fresh2 = F.FullyShardedDataParallel(make("gpt", seed=9), auto_wrap_policy={nn.TransformerEncoderLayer})
fresh2.load_state_dict(ref.state_dict())  # a whole (FULL_STATE_DICT) one: each rank takes its piece
got = F.get_model_state_dict(fresh2, options=F.StateDictOptions(full_state_dict=True))
results["full_load"] = max_diff(full_params(got), ref_sd)


# optimizer state dicts keyed by parameter name: the whole one (gathered) is the one-process optimizer's state
def optim_diff(osd):
    """Largest difference of ``osd``'s state from ``ref_opt``'s, parameter by parameter (plain values equal)."""
    ref_state = {name: ref_opt.state[p] for name, p in ref.named_parameters()}
    assert list(osd["state"]) == list(ref_state) and osd["param_groups"][0]["params"] == list(ref_state)
    worst = 0.0
    for name, st in osd["state"].items():
        assert list(st) == list(ref_state[name]), (name, list(st))
        for key, v in st.items():
            want = ref_state[name][key]
            if isinstance(v, lc.Tensor):
                assert tuple(v.shape) == tuple(want.shape), (name, key, tuple(v.shape))
                worst = max(worst, float(np.max(np.abs(v.numpy() - want.numpy()))))
            else:
                assert v == want, (name, key, v, want)
    return worst


full_opts = F.StateDictOptions(full_state_dict=True)
full_osd = F.get_optimizer_state_dict(wrapped, opt, options=full_opts)
fsdp1_osd = F.FullyShardedDataParallel.optim_state_dict(wrapped, opt)  # FULL_STATE_DICT: the same, on "cpu"
results["optim_full"] = max(optim_diff(full_osd), optim_diff(fsdp1_osd))
# sharded checkpoints through lucid_distributed.checkpoint, model and optimizer, loadable on another number of ranks
if save_dir:
    saved = {"model": F.get_model_state_dict(wrapped), "optim": F.get_optimizer_state_dict(wrapped, opt)}
    checkpoint.save(saved, checkpoint_id=save_dir)
    np.save(f"{save_dir}/reference-{rank}.npy", np.concatenate([v.reshape(-1) for _, v in sorted(ref_sd.items())]))
# the whole state dicts resume a fresh model and optimizer exactly (its lr too: 0.5 until the saved 0.01 is set)
again = F.FullyShardedDataParallel(make("gpt", seed=9), auto_wrap_policy={nn.TransformerEncoderLayer})
again_opt = optim.Adam(again.parameters(), lr=0.5)
F.set_model_state_dict(again, F.get_model_state_dict(wrapped, options=full_opts))
F.set_optimizer_state_dict(again, again_opt, full_osd)
assert RESUME_B % n == 0
mine_res = slice(rank * RESUME_B // n, (rank + 1) * RESUME_B // n)
resume(again, again_opt, mine_res)
resume(ref, ref_opt, slice(None))
resumed_sd = full_params(ref.state_dict())
results["optim_full_resume"] = max_diff(full_params(F.get_model_state_dict(again, options=full_opts)), resumed_sd)
if save_dir:
    np.save(f"{save_dir}/resumed-{rank}.npy", np.concatenate([v.reshape(-1) for _, v in sorted(resumed_sd.items())]))
if load_dir:  # a template from a fresh model and optimizer, filled by checkpoint.load, installed by set_state_dict
    target = make("gpt", seed=3)
    for b in target.blocks:
        F.fully_shard(b)
    F.fully_shard(target)
    target_opt = optim.Adam(target.parameters(), lr=0.5)
    model_sd, optim_sd = F.get_state_dict(target, target_opt)
    loaded = {"model": model_sd, "optim": optim_sd}
    checkpoint.load(loaded, checkpoint_id=load_dir)
    F.set_state_dict(target, target_opt, model_state_dict=loaded["model"], optim_state_dict=loaded["optim"])

    def flat_full(model):
        got = F.get_model_state_dict(model, options=full_opts)
        return np.concatenate([v.numpy().reshape(-1) for _, v in sorted(got.items())])

    results["resharded_load"] = float(np.max(np.abs(flat_full(target) - np.load(f"{load_dir}/reference-0.npy"))))
    resume(target, target_opt, mine_res)
    results["resharded_resume"] = float(np.max(np.abs(flat_full(target) - np.load(f"{load_dir}/resumed-0.npy"))))

assert max(results.values()) < 1e-12, results
mem = memory["gpt_adam"]
report(rank, f"ok {rank} {n} {results} {mem}")
dist.destroy_process_group()
