"""``lucid.multiprocessing`` and shared tensors: ``share_memory_``, ``Module.share_memory`` and Hogwild training.

Real processes: forked ones inherit the shared memory, spawned ones receive it by handle through their
arguments or a Queue; both see each other's writes, and nothing is left in ``/dev/shm``.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import lucid
import lucid.multiprocessing as mp
import lucid.nn as nn
import lucid_core as lc

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="memfd shared memory and fork: Linux")


def _shm_names() -> set[str]:
    """Named shared-memory segments a tensor could leave behind (stdlib ``psm_*`` or Lucid's ``lucid_*``)."""
    return {n for n in os.listdir("/dev/shm") if n.startswith(("psm_", "lucid"))}


def _lucid_memfds() -> int:
    """How many shared Lucid storages this process maps (memfd mappings named lucid-shared)."""
    with open("/proc/self/maps") as fh:
        return sum("memfd:lucid-shared" in line for line in fh)


def test_the_standard_api_is_there_with_pytorchs_extras():
    import multiprocessing

    for name in ("Process", "Queue", "get_context", "set_start_method", "Pool", "Lock", "Barrier"):
        assert getattr(mp, name) is getattr(multiprocessing, name)
    assert mp.get_all_sharing_strategies() == {"file_descriptor"}
    assert mp.get_sharing_strategy() == "file_descriptor"
    with pytest.raises(ValueError, match="'file_system' is not supported"):
        mp.set_sharing_strategy("file_system")


def test_share_memory_moves_the_whole_storage_keeping_views_aliased():
    x = lucid.arange(12.0).reshape(3, 4)
    row = x[1]
    assert not x.is_shared()
    assert x.share_memory_() is x
    assert x.is_shared() and row.is_shared()
    row.add_(100.0)  # a write through a view lands in the base, in the shared memory
    x[0, 0] = -1.0
    assert x.tolist()[1] == [104.0, 105.0, 106.0, 107.0] and row.tolist()[0] == 104.0
    assert x.tolist()[0][0] == -1.0
    x.mul_(2.0)
    assert row.tolist() == [208.0, 210.0, 212.0, 214.0]


def test_a_forked_process_writes_into_the_parents_shared_tensor():
    x = lucid.zeros(4)
    x.share_memory_()
    pid = os.fork()
    if pid == 0:  # the child: a write through a view, one by an in-place op and one by copy_
        try:
            x[:2].fill_(5.0)
            x.add_(1.0)
            x[3:].copy_(lucid.tensor([9.0]))
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert x.tolist() == [6.0, 6.0, 1.0, 9.0]


def _train_step(rank: int, model: nn.Module, barrier, data) -> None:
    """One Hogwild SGD step: gradients at the shared starting weights, then each process applies its own."""
    opt = lucid.optim.SGD(model.parameters(), lr=0.5)
    x, y = data[rank]
    loss = ((model(x) - y) ** 2).sum()
    loss.backward()
    barrier.wait()  # both gradients are taken at the initial weights
    if rank == 1:
        barrier.wait()  # ... and the updates land one after the other
    opt.step()
    if rank == 0:
        barrier.wait()


def test_hogwild_two_processes_both_updates_land():
    lucid.manual_seed(0)
    model = nn.Linear(3, 2)
    model.share_memory()
    assert all(p.is_shared() for p in model.parameters())
    data = [(lucid.randn(4, 3), lucid.randn(4, 2)) for _ in range(2)]
    # the expected result: both processes' steps, each from the gradient at the starting weights
    grads = []
    for x, y in data:
        model.zero_grad()
        ((model(x) - y) ** 2).sum().backward()
        grads.append([p.grad.numpy().copy() for p in model.parameters()])
    model.zero_grad()
    start = [p.detach().numpy().copy() for p in model.parameters()]
    ctx = mp.get_context("fork")  # spawn is slow to start; the spawn test below checks passing by handle
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_train_step, args=(r, model, barrier, data)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    for k, p in enumerate(model.parameters()):
        want = start[k] - 0.5 * (grads[0][k] + grads[1][k])
        np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-6, atol=1e-6)
        assert not np.allclose(p.detach().numpy(), start[k])


def _write_and_report(t, q, done) -> None:
    t.mul_(3.0)
    q.put(t)  # back through a Queue: still the same memory
    q.put(t.is_shared())
    done.wait(60)  # the sender of a handle stays alive until it is received (as in PyTorch)


def test_a_spawned_process_gets_a_shared_tensor_by_handle_through_args_and_a_queue():
    before = _shm_names()
    t = lucid.ones(5)
    t.share_memory_()
    ctx = mp.get_context("spawn")
    q, done = ctx.Queue(), ctx.Event()
    p = ctx.Process(target=_write_and_report, args=(t, q, done))
    p.start()
    back = q.get(timeout=60)
    shared_there = q.get(timeout=60)
    done.set()
    p.join(60)
    assert p.exitcode == 0 and shared_there
    assert t.tolist() == [3.0] * 5
    assert back.is_shared()
    back.add_(1.0)  # the tensor that came back is the same memory as ``t``
    assert t.tolist() == [4.0] * 5
    assert _shm_names() == before  # memory files, never named segments in /dev/shm


def _echo(q_in, q_out) -> None:
    q_out.put(q_in.get())


def test_a_tensor_that_is_not_shared_is_copied_and_keeps_its_type():
    w = nn.Parameter(lucid.arange(3.0))
    ctx = mp.get_context("fork")
    q_in, q_out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_echo, args=(q_in, q_out))
    p.start()
    q_in.put(w)
    back = q_out.get(timeout=60)
    p.join(60)
    assert type(back) is nn.Parameter and back.requires_grad and back.tolist() == [0.0, 1.0, 2.0]
    assert not back.is_shared() and not w.is_shared()


def test_a_non_leaf_that_requires_grad_is_refused():
    from multiprocessing.reduction import ForkingPickler

    y = lucid.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        ForkingPickler.dumps(y)


def test_shared_memory_leaves_nothing_in_dev_shm_and_is_freed_with_its_tensors():
    import gc

    before_names, before_maps = _shm_names(), _lucid_memfds()
    t = lucid.ones(1000)
    t.share_memory_()
    model = nn.Linear(8, 8).share_memory()
    view = t[10:20]
    assert _lucid_memfds() == before_maps + 3
    assert _shm_names() == before_names
    del t, model
    gc.collect()
    assert _lucid_memfds() == before_maps + 1  # the view keeps its storage alive
    del view
    gc.collect()
    assert _lucid_memfds() == before_maps


def test_mlx_tensors_cannot_be_shared():
    if "mlx" not in [b.name for b in lc.backends() if b.status == "ok"]:
        pytest.skip("the MLX backend is not installed")
    x = lucid.ones(3, device="mlx")
    with pytest.raises(RuntimeError, match="the mlx backend's arrays cannot be placed in shared memory"):
        x.share_memory_()
    assert not x.is_shared()


def _fail(i: int) -> None:
    raise ValueError(f"worker {i} failed")


def _square_into(i: int, t) -> None:
    t[i] = float(i * i)


def test_spawn_runs_fn_with_its_index_and_raises_a_workers_error():
    t = lucid.zeros(3)
    t.share_memory_()
    mp.spawn(_square_into, args=(t,), nprocs=3, start_method="fork")
    assert t.tolist() == [0.0, 1.0, 4.0]
    with pytest.raises(mp.ProcessRaisedException, match="worker 0 failed"):
        mp.spawn(_fail, nprocs=1, start_method="fork")
