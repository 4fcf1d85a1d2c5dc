"""The process-group API in one process: the group of one, the communicator registry, DDP's reducer.

Multi-process behaviour is tested by the other files of this folder, on real processes.
"""

from __future__ import annotations

import subprocess
import sys
from typing import ClassVar

import pytest

import lucid_core as lc
import lucid_distributed as dist
import lucid_nn as nn
from lucid_distributed import ReduceOp, Work
from lucid_distributed._local import LocalCommunicator


@pytest.fixture
def local_group():
    dist.init_process_group("local")
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_without_a_launcher_init_process_group_makes_a_group_of_one(local_group):
    assert dist.is_initialized()
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "local")


def test_the_api_before_init_says_to_call_init_process_group():
    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match="call init_process_group"):
        dist.get_rank()


def test_init_twice_raises(local_group):
    with pytest.raises(RuntimeError, match="already initialized"):
        dist.init_process_group("local")


def test_an_unknown_communicator_lists_the_installed_ones():
    with pytest.raises(ValueError, match=r"no communicator named 'nope'; installed: \[.*'local'.*'mlx'.*'mpi'"):
        dist.init_process_group("nope")
    with pytest.raises(ValueError, match="no 'nccl' communicator"):
        dist.init_process_group("nccl")


def test_world_size_given_must_match_the_launcher():
    with pytest.raises(
        ValueError, match="world_size=2 was given, but the launcher started this process with world_size=1"
    ):
        dist.init_process_group("local", world_size=2)
    assert not dist.is_initialized()


def test_collectives_of_a_group_of_one_are_the_identity(local_group, device):
    t = lc.asarray([1.0, -2.0], device=device)
    for op in ReduceOp:
        dist.all_reduce(t, op)
    assert t.tolist() == [1.0, -2.0]
    out = lc.zeros((1, 2), device=device)
    dist.all_gather_into_tensor(out, t)
    assert out.tolist() == [[1.0, -2.0]]
    lst = [lc.zeros(2, device=device)]
    dist.all_gather(lst, t)
    assert lst[0].tolist() == [1.0, -2.0]
    work = dist.all_reduce(t, async_op=True)
    assert isinstance(work, Work) and work.wait() and work.is_completed()
    with pytest.raises(RuntimeError, match="no other rank"):
        dist.send(t, 0)
    with pytest.raises(TypeError, match="AVG needs a floating"):
        dist.all_reduce(lc.asarray([1, 2]), ReduceOp.AVG)
    with pytest.raises(ValueError, match="src must be a rank in \\[0, 0\\]"):
        dist.broadcast(t, 1)
    objs = [None]
    dist.all_gather_object(objs, {"a": 1})
    assert objs == [{"a": 1}]


def test_a_missing_mpi4py_is_a_clear_message_not_an_import_error():
    code = (
        "import sys; sys.modules['mpi4py'] = None\n"
        "import lucid_distributed as d\n"
        "try:\n    d.init_process_group('mpi')\n"
        "except RuntimeError as e:\n    print('RuntimeError', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert "RuntimeError the 'mpi' communicator needs mpi4py and an MPI library: pip install mpi4py mpich" in out


def test_a_plugin_whose_communicator_hook_raises_warns_and_is_reported_at_init():
    class Broken:
        @lc.hookimpl
        def lucid_register_communicators(self, register):
            raise ImportError("libfabric.so not found")

    with pytest.warns(RuntimeWarning, match="'broken-comm' failed to register its communicators: ImportError"):
        lc.plugin_manager.register(Broken(), name="broken-comm")
    try:
        assert "mpi" in lc.communicators()  # the others still load
        with pytest.raises(ValueError, match="(?s)plugins that failed:.*broken-comm.*libfabric"):
            dist.init_process_group("fabric")
    finally:
        lc.plugin_manager.unregister(name="broken-comm")
    assert lc.communicator_errors() == []


def test_two_communicators_with_one_name_is_an_error_naming_both():
    class Dup(LocalCommunicator):
        name = "mpi"

    with pytest.raises(lc.PluginError, match="two communicators are named 'mpi': one from plugin 'distributed'"):
        lc.register_communicator(Dup)
    with pytest.raises(TypeError, match="non-empty string `name`"):
        lc.register_communicator(object)


# -- DDP's reducer, watched through a communicator that pretends to have two ranks ------------------


class _Spy(LocalCommunicator):
    """Two ranks that hold the same values: every reduction is the identity; records when buckets go."""

    name = "spy"
    world_size = 2
    events: ClassVar[list[tuple[str, int]]] = []
    params: ClassVar[list[lc.Tensor]] = []

    def all_reduce(self, t, op):
        missing = sum(p.grad is None for p in _Spy.params)
        _Spy.events.append(("launch", missing))
        return Work(None, lambda: _Spy.events.append(("done", missing)))  # completes in wait() only

    def all_gather_into_tensor(self, out, t):
        from lucid_distributed import write_into

        write_into(out, lc.concat([t.reshape(-1)] * 2).reshape(out.shape))
        return Work.completed()


class _SpyPlugin:
    @lc.hookimpl
    def lucid_register_communicators(self, register):
        register(_Spy)


@pytest.fixture
def spy_group():
    lc.plugin_manager.register(_SpyPlugin(), name="spy-plugin")
    dist.init_process_group("spy")
    _Spy.events.clear()
    try:
        yield
    finally:
        dist.destroy_process_group()
        lc.plugin_manager.unregister(name="spy-plugin")


def _deep_model():
    lc.manual_seed(0)
    return nn.Sequential(*[nn.Linear(8, 8) for _ in range(4)])


def test_ddp_starts_a_bucket_while_backward_still_runs_and_waits_before_it_returns(spy_group):
    model = _deep_model()
    _Spy.params = list(model.parameters())
    ddp = dist.DistributedDataParallel(model, bucket_cap_mb=(8 * 8 + 8) * 4 / 2**20)  # one layer per bucket
    assert len(ddp._buckets) == 4
    loss = ddp(lc.ones((2, 8))).sum()
    reference = [g.tolist() for g in lc.grad(model(lc.ones((2, 8))).sum(), list(model.parameters()))]
    loss.backward()
    launches = [m for e, m in _Spy.events if e == "launch"]
    assert launches[0] == 6  # the last layer's bucket left while 3 layers (6 tensors) had no gradient yet
    assert launches == [6, 4, 2, 0]
    assert sum(e == "done" for e, _ in _Spy.events) == 4  # every bucket waited for inside backward
    assert [p.grad.tolist() for p in model.parameters()] == reference


def test_ddp_overlap_off_starts_every_bucket_after_the_last_gradient(spy_group):
    model = _deep_model()
    _Spy.params = list(model.parameters())
    ddp = dist.DistributedDataParallel(model, bucket_cap_mb=(8 * 8 + 8) * 4 / 2**20, overlap=False)
    ddp(lc.ones((2, 8))).sum().backward()
    assert [m for e, m in _Spy.events if e == "launch"] == [0, 0, 0, 0]


def test_ddp_no_sync_does_not_communicate(spy_group):
    model = _deep_model()
    ddp = dist.DistributedDataParallel(model)
    with ddp.no_sync():
        ddp(lc.ones((2, 8))).sum().backward()
    assert _Spy.events == []
    ddp(lc.ones((2, 8))).sum().backward()
    assert [e for e, _ in _Spy.events] == ["launch", "done"]


class _HalfUsed(nn.Module):
    def __init__(self):
        super().__init__()
        self.used, self.unused = nn.Linear(3, 3), nn.Linear(3, 3)

    def forward(self, x):
        return self.used(x)


def test_ddp_with_an_unused_parameter_says_what_to_do_at_the_next_forward(spy_group):
    ddp = dist.DistributedDataParallel(_HalfUsed())
    ddp(lc.ones((2, 3))).sum().backward()
    with pytest.raises(
        RuntimeError, match=r"prior iteration.*\['unused.weight', 'unused.bias'\].*find_unused_parameters=True"
    ):
        ddp(lc.ones((2, 3)))


def test_ddp_find_unused_parameters_reduces_the_used_ones_and_leaves_the_unused_alone(spy_group):
    model = _HalfUsed()
    ddp = dist.DistributedDataParallel(model, find_unused_parameters=True)
    for _ in range(2):
        ddp(lc.ones((2, 3))).sum().backward()
    assert model.used.weight.grad.tolist() == [[4.0] * 3] * 3  # two backwards accumulated, reduced each time
    assert model.unused.weight.grad is None


def test_ddp_state_dict_keys_are_prefixed_like_pytorchs(spy_group):
    model = _deep_model()
    ddp = dist.DistributedDataParallel(model)
    assert list(ddp.state_dict())[:2] == ["module.0.weight", "module.0.bias"]
    assert next(iter(ddp.named_parameters()))[0] == "module.0.weight"
    ddp.load_state_dict(ddp.state_dict())
    assert ddp.eval() is ddp and not model.training
