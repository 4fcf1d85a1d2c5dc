"""FSDP (fully_shard and FullyShardedDataParallel) on real processes equals one process on the whole batch.

One job per world size runs every check (workers/fsdp.py): an MLP and a small transformer trained with
SGD-momentum and Adam in float64 against the one-process reference, per-rank memory, clipping,
summon_full_params, gradient accumulation and state dicts (the optimizer's too); the 4-rank job saves a
sharded checkpoint of the model and its Adam that the 2-rank job loads (resharding) and trains on, equal
to one process that never stopped. The errors for what is not supported are checked in-process.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

import lucid_core as lc
import lucid_distributed as dist
import lucid_nn as nn
import lucid_optim as optim
from lucid_distributed import checkpoint, fsdp

from ._launch import ok_lines, run_job

CHECKS = {"mlp_sgd", "mlp_adam", "gpt_sgd", "gpt_adam", "gpt_adam_fsdp1", "sharded_roundtrip", "full_load",
          "optim_full", "optim_full_resume"}  # fmt: skip
VARIANTS = {"gpt_adam_keep", "mlp_sgd_fsdp1", "gpt_clip", "mlp_accumulate", "mlp_no_sync_fsdp1"}  # on 2 ranks


def _parse(line: str) -> tuple[int, dict[str, float], dict[str, int]]:
    """``ok RANK WORLD {diffs} {memory}`` as printed by the worker."""
    _, _, world, rest = line.split(" ", 3)
    diffs, _, memory = rest.partition("} ")
    return int(world), ast.literal_eval(diffs + "}"), ast.literal_eval(memory)


def _check(lines: list[str], world: int, extra: set[str] = frozenset()) -> None:
    assert len(lines) == world
    for line in lines:
        n, diffs, mem = _parse(line)
        assert n == world
        assert set(diffs) == CHECKS | extra
        assert max(diffs.values()) < 1e-12, diffs
        # at rest each rank holds 1/N of parameters + gradients + Adam's state (up to padding) ...
        assert mem["rest"] * world == pytest.approx(mem["full"], rel=0.02), mem
        # ... and at its peak one gathered layer's parameters and gradients on top of the root's own
        assert mem["largest"] <= mem["peak"] <= mem["root"] + 2 * mem["largest"] + 400, mem


def test_fsdp_matches_one_process_on_four_then_two_ranks_and_resumes_a_checkpoint_with_its_optimizer(
    tmp_path: Path,
) -> None:
    saved = tmp_path / "ckpt"
    saved.mkdir()
    _check(ok_lines(run_job(4, "fsdp.py", "numpy", str(saved), timeout=180)), 4)  # the equivalence core
    assert (saved / "metadata.json").exists()
    # the second job on MLX where it is installed: its tensors travel through host buffers, a second code path
    second = "mlx" if importlib.util.find_spec("lucid_backend_mlx") else "numpy"
    resumed = {"resharded_load", "resharded_resume"}
    _check(ok_lines(run_job(2, "fsdp.py", second, "-", str(saved), timeout=180)), 2, VARIANTS | resumed)


@pytest.fixture
def group_of_one() -> Iterator[None]:
    dist.init_process_group("local")
    try:
        yield
    finally:
        dist.destroy_process_group()


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))


def test_fully_shard_keeps_a_flat_piece_per_parameter_and_forward_gives_the_full_result(group_of_one: None) -> None:
    lc.manual_seed(0)
    model = _mlp()
    x = lc.randn(5, 3)
    expected = model(x).detach().numpy()
    fsdp.fully_shard(model[0])
    fsdp.fully_shard(model)
    assert isinstance(model, fsdp.FSDPModule) and isinstance(model[0], fsdp.FSDPModule)
    assert [tuple(p.shape) for p in model.parameters()] == [(12,), (4,), (8,), (2,)]  # flat, one rank
    out = model(x)
    assert (out.detach().numpy() == expected).all()
    assert tuple(model[0].weight.shape) == (12,), "the piece again after forward"
    out.sum().backward()
    assert [tuple(p.grad.shape) for p in model.parameters()] == [(12,), (4,), (8,), (2,)]
    assert fsdp.memory_stats()["unsharded_bytes"] == 0, "backward frees every gathered parameter"


def test_unsupported_options_are_refused_with_what_to_do_instead(group_of_one: None) -> None:
    with pytest.raises(ValueError, match="use DistributedDataParallel"):
        fsdp.FullyShardedDataParallel(_mlp(), sharding_strategy=fsdp.ShardingStrategy.NO_SHARD)
    with pytest.raises(ValueError, match="HYBRID_SHARD is not supported"):
        fsdp.FullyShardedDataParallel(_mlp(), sharding_strategy=fsdp.ShardingStrategy.HYBRID_SHARD)
    with pytest.raises(ValueError, match="low precision is not built"):
        fsdp.FullyShardedDataParallel(_mlp(), mixed_precision=fsdp.MixedPrecision(param_dtype=lc.float16))
    with pytest.raises(ValueError, match="CPUOffload"):
        fsdp.FullyShardedDataParallel(_mlp(), cpu_offload=fsdp.CPUOffload(offload_params=True))
    with pytest.raises(ValueError, match="mesh=None"):
        fsdp.fully_shard(_mlp(), mesh=object())
    fsdp.FullyShardedDataParallel(_mlp(), mixed_precision=fsdp.MixedPrecision())  # the trivial policy is fine
    model = fsdp.fully_shard(_mlp())
    with pytest.raises(ValueError, match="already sharded"):
        fsdp.fully_shard(model)


def test_a_sharded_state_dict_names_each_piece_with_its_place_in_the_whole(group_of_one: None) -> None:
    from lucid_distributed.checkpoint import Shard

    model = fsdp.fully_shard(_mlp())
    sd = model.state_dict()
    assert isinstance(sd["0.weight"], Shard) and sd["0.weight"].global_shape == (4, 3)
    full = fsdp.get_model_state_dict(model, options=fsdp.StateDictOptions(full_state_dict=True))
    assert tuple(full["0.weight"].shape) == (4, 3)
    before = model[0].weight.detach().numpy().copy()
    changed = {k: v * 2.0 for k, v in full.items()}
    with pytest.raises(RuntimeError, match="unexpected keys \\['extra'\\]"):
        model.load_state_dict({**changed, "extra": lc.zeros(1)})
    assert (model[0].weight.detach().numpy() == before).all(), "a refused load writes nothing"
    fsdp.set_model_state_dict(model, changed)
    assert (model[0].weight.detach().numpy() == 2.0 * before).all()


def _stepped_adam(model: nn.Module) -> optim.Adam:
    opt = optim.Adam(model.parameters(), lr=0.1)
    model(lc.randn(5, 3)).sum().backward()
    opt.step()
    return opt


NAMES = ["0.weight", "0.bias", "2.weight", "2.bias"]
FULL = fsdp.StateDictOptions(full_state_dict=True)


def test_an_optimizer_state_dict_is_keyed_by_parameter_name_and_cut_as_the_parameters(group_of_one: None) -> None:
    lc.manual_seed(0)
    model = fsdp.fully_shard(_mlp())
    opt = _stepped_adam(model)
    sd = fsdp.get_optimizer_state_dict(model, opt)
    assert list(sd["state"]) == NAMES and sd["param_groups"][0]["params"] == NAMES
    st = sd["state"]["0.weight"]
    assert st["step"] == 1
    shard, param = st["exp_avg"], fsdp.get_model_state_dict(model)["0.weight"]
    assert isinstance(shard, checkpoint.Shard), "described as the parameter's piece is"
    assert (shard.global_shape, shard.offset, shard.local.size) == (param.global_shape, param.offset, 12)
    full = fsdp.get_optimizer_state_dict(model, opt, options=FULL)["state"]["0.weight"]["exp_avg"]
    assert tuple(full.shape) == (4, 3)
    assert (full.numpy().reshape(-1) == opt.state[model[0].weight]["exp_avg"].numpy()).all()


def test_set_optimizer_state_dict_names_an_unknown_parameter_and_a_wrong_shape(group_of_one: None) -> None:
    lc.manual_seed(0)
    model = fsdp.fully_shard(_mlp())
    opt = _stepped_adam(model)
    full = fsdp.get_optimizer_state_dict(model, opt, options=FULL)
    before = opt.state[model[0].weight]["exp_avg"].numpy().copy()
    unknown = {**full, "state": {**full["state"], "1.weight": {"step": 1}}}
    with pytest.raises(ValueError, match="state for '1.weight', which is not a parameter of the model"):
        fsdp.set_optimizer_state_dict(model, opt, unknown)
    wrong = {**full, "state": {**full["state"], "0.weight": {**full["state"]["0.weight"], "exp_avg": lc.zeros(3, 4)}}}
    with pytest.raises(ValueError, match=r"'exp_avg' of '0.weight' has shape \(3, 4\); expected .* \(4, 3\)"):
        fsdp.set_optimizer_state_dict(model, opt, wrong)
    with pytest.raises(ValueError, match="keyed by index"):
        fsdp.set_optimizer_state_dict(model, opt, opt.state_dict())
    assert (opt.state[model[0].weight]["exp_avg"].numpy() == before).all(), "a refused state dict loads nothing"


def test_a_saved_model_and_optimizer_resume_through_a_template_of_fresh_ones(
    group_of_one: None, tmp_path: Path
) -> None:
    lc.manual_seed(0)
    model = fsdp.fully_shard(_mlp())
    opt = _stepped_adam(model)
    model_sd, optim_sd = fsdp.get_state_dict(model, opt)
    checkpoint.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=tmp_path)
    fresh = fsdp.fully_shard(_mlp())
    fresh_opt = optim.Adam(fresh.parameters(), lr=0.5, betas=(0.5, 0.5))
    model_sd, optim_sd = fsdp.get_state_dict(fresh, fresh_opt)  # a fresh optimizer gets its state first
    template = {"model": model_sd, "optim": optim_sd}
    checkpoint.load(template, checkpoint_id=tmp_path)  # betas, a tuple, is replaced by the saved one
    fsdp.set_state_dict(fresh, fresh_opt, model_state_dict=template["model"], optim_state_dict=template["optim"])
    assert fresh_opt.param_groups[0]["lr"] == 0.1 and fresh_opt.param_groups[0]["betas"] == (0.9, 0.999)
    for p, q in zip(model.parameters(), fresh.parameters()):
        assert (p.detach().numpy() == q.detach().numpy()).all()
        want, got = opt.state[p], fresh_opt.state[q]
        assert got["step"] == want["step"] == 1
        assert all((got[k].numpy() == want[k].numpy()).all() for k in ("exp_avg", "exp_avg_sq"))


def test_fsdp1_optim_state_dict_follows_state_dict_type_and_loads_back(group_of_one: None) -> None:
    lc.manual_seed(0)
    FSDP = fsdp.FullyShardedDataParallel
    model = FSDP(_mlp())
    opt = _stepped_adam(model)
    assert tuple(FSDP.optim_state_dict(model, opt)["state"]["0.weight"]["exp_avg"].shape) == (4, 3)
    with FSDP.state_dict_type(model, fsdp.StateDictType.SHARDED_STATE_DICT):
        sharded = FSDP.optim_state_dict(model, opt)
        assert isinstance(sharded["state"]["0.weight"]["exp_avg"], checkpoint.Shard)
        local = FSDP.optim_state_dict_to_load(model, opt, sharded)
    mine = opt.state_dict()
    assert list(local["state"]) == list(mine["state"]) == [0, 1, 2, 3]
    assert all((local["state"][i]["exp_avg"].numpy() == mine["state"][i]["exp_avg"].numpy()).all() for i in range(4))
    with pytest.raises(ValueError, match="group is not supported"):
        FSDP.optim_state_dict(model, opt, group=object())
    config = fsdp.FullOptimStateDictConfig(rank0_only=True)
    with FSDP.state_dict_type(model, fsdp.StateDictType.FULL_STATE_DICT, optim_state_dict_config=config):
        with pytest.raises(ValueError, match=r"rank0_only=True\) is not supported"):
            FSDP.optim_state_dict_to_load(model, opt, sharded)


def test_the_pytorch_face_spells_it_torch_distributed_fsdp() -> None:
    import lucid.distributed.fsdp as face
    from lucid.distributed.fsdp.wrap import ModuleWrapPolicy, transformer_auto_wrap_policy

    assert face.fully_shard is fsdp.fully_shard
    assert face.FullyShardedDataParallel is fsdp.FullyShardedDataParallel
    assert face.ShardingStrategy.FULL_SHARD is fsdp.ShardingStrategy.FULL_SHARD
    assert ModuleWrapPolicy is fsdp.ModuleWrapPolicy
    assert transformer_auto_wrap_policy is fsdp.transformer_auto_wrap_policy
    from lucid.distributed.checkpoint import state_dict as dcp_state_dict

    assert dcp_state_dict.get_optimizer_state_dict is fsdp.get_optimizer_state_dict
    assert dcp_state_dict.set_state_dict is fsdp.set_state_dict
    assert dcp_state_dict.get_model_state_dict is fsdp.get_model_state_dict


def test_auto_wrap_policies_pick_the_units_bottom_up(group_of_one: None) -> None:
    def units(model: nn.Module) -> list[str]:
        return [name for name, m in model.named_modules() if isinstance(m, fsdp.FSDPModule)]

    def model() -> nn.Module:
        return nn.Sequential(nn.Linear(3, 40), nn.Sequential(nn.Linear(40, 2), nn.ReLU()))

    assert units(fsdp.FullyShardedDataParallel(model(), auto_wrap_policy={nn.Linear}).module) == ["", "0", "1.0"]
    policy = fsdp.ModuleWrapPolicy({nn.Sequential})
    assert units(fsdp.FullyShardedDataParallel(model(), auto_wrap_policy=policy).module) == ["", "1"]
    size = functools.partial(fsdp.size_based_auto_wrap_policy, min_num_params=100)
    assert units(fsdp.FullyShardedDataParallel(model(), auto_wrap_policy=size).module) == ["", "0"]
