"""The NumPy backend's batch-split kernels give the single-thread result bit for bit (2-D products, split
along a side, within rounding); the thread setting and the malloc tuning behave as documented."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import lucid_core as lc
import lucid_nn as nn
import lucid_nn.functional as F
from lucid_backend_numpy import _backend, _malloc, _native, _parallel


@pytest.fixture
def numpy_backend():
    b = lc.get_backend("numpy")
    b.ensure_loaded()
    return b


@pytest.fixture
def split_everything(monkeypatch, numpy_backend):
    """Split every kernel call, however small, over 3 threads (uneven slices); restore afterwards."""
    before = lc.get_num_threads()
    monkeypatch.setattr(_parallel, "MIN_WORK", 1)
    monkeypatch.setattr(_parallel, "COMPILED_MIN_WORK", 1)
    yield
    lc.set_num_threads(before)


def _both(fn):
    """``fn()`` at 1 thread and at 3 threads, as NumPy arrays."""
    lc.set_num_threads(1)
    one = fn()
    lc.set_num_threads(3)
    three = fn()
    return one, three


def _assert_same_bits(one, three):
    assert one.dtype == three.dtype and one.shape == three.shape
    assert one.tobytes() == three.tobytes()


def test_parallel_batches_covers_the_range_once_on_several_threads(split_everything):
    lc.set_num_threads(3)
    seen: list[tuple[int, int, int]] = []
    together = threading.Barrier(3, timeout=30)  # passes only if the three slices run at once

    def part(lo: int, hi: int) -> None:
        together.wait()
        seen.append((lo, hi, threading.get_ident()))

    _parallel.parallel_batches(part, 10, 10)
    spans = sorted((lo, hi) for lo, hi, _ in seen)
    assert spans == [(0, 3), (3, 6), (6, 10)]
    assert len({t for *_, t in seen}) == 3


def test_parallel_batches_reraises_a_slice_error(split_everything):
    lc.set_num_threads(2)

    def part(lo, hi):
        if lo > 0:
            raise KeyError("second slice")

    with pytest.raises(KeyError, match="second slice"):
        _parallel.parallel_batches(part, 4, 4)


def test_small_work_stays_on_the_calling_thread(numpy_backend):
    lc.set_num_threads(2)
    assert _parallel.chunks(64, _parallel.MIN_WORK - 1) == 1
    assert _parallel.chunks(64, 2 * _parallel.MIN_WORK) == 2
    assert _parallel.chunks(1, 10 * _parallel.MIN_WORK) == 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv_and_pool_kernels_are_bit_identical_split(split_everything, numpy_backend, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((7, 3, 9, 8)).astype(dtype)
    k = numpy_backend.kernels
    args = ((3, 2), (1, 2), (2, 1), ((1, 2), (0, 1)))
    out = (8, 4)  # (9+3-(3-1)*2-1)//1+1, (8+1-(2-1)-1)//2+1
    one, three = _both(lambda: k["im2col"](x, *args, out, 0.5))
    _assert_same_bits(one, three)
    cols = rng.standard_normal(one.shape).astype(dtype)
    one, three = _both(lambda: k["col2im"](cols, *args, (9, 8)))
    _assert_same_bits(one, three)
    xp = rng.integers(-2, 3, (7, 3, 9, 8)).astype(dtype)  # small integers: ties inside tiles
    y = np.maximum.reduce([xp[key] for key in lc.kernels.tile_keys((2, 2), (4, 4))])
    gy = rng.standard_normal(y.shape).astype(dtype)
    one, three = _both(lambda: k["max_pool_tiles_grad"](gy, xp, y, (2, 2), (4, 4)))
    _assert_same_bits(one, three)


def test_relu_grad_is_bit_identical_split_with_nan_and_negative_zero(split_everything, numpy_backend):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 37)).astype(np.float32)
    x[0, :3] = [np.nan, -0.0, 0.0]
    gy = rng.standard_normal((5, 37)).astype(np.float32)
    one, three = _both(lambda: numpy_backend.kernels["relu_grad"](gy, x))
    _assert_same_bits(one, three)
    np.testing.assert_array_equal(one, np.where(x > 0, gy, 0))


@pytest.mark.parametrize(
    "sa, sb",
    [((6, 48, 64), (6, 64, 40)), ((5, 3, 17, 9), (5, 3, 9, 11)), ((7, 33, 20), (20, 30)), ((20, 30), (4, 30, 5))],
)
def test_batched_matmul_is_bit_identical_split(split_everything, numpy_backend, sa, sb):
    rng = np.random.default_rng(2)
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    one, three = _both(lambda: numpy_backend.xp.matmul(a, b))
    _assert_same_bits(one, three)
    _assert_same_bits(one, np.matmul(a, b))


@pytest.mark.parametrize("m, k, n", [(37, 20, 9), (9, 20, 37), (64, 784, 128)])
@pytest.mark.parametrize("order", ["C", "F"])
def test_a_2d_matmul_splits_along_its_longer_side_while_the_pool_is_busy(
    split_everything, numpy_backend, monkeypatch, m, k, n, order
):
    """While the pool is busy, rows of ``a`` (m >= n) or columns of ``b`` go to separate threads, each a BLAS
    call on a view; BLAS may block a smaller product differently, so the result agrees with one call within
    float rounding. An idle pool leaves the product to BLAS. (The opt-in path, ``LUCID_DETERMINISTIC=0``.)"""
    monkeypatch.setattr(_parallel, "DETERMINISTIC", False)
    rng = np.random.default_rng(3)
    a = np.asarray(rng.standard_normal((m, k)), order=order)
    b = np.asarray(rng.standard_normal((k, n)), order=order)
    calls: list[tuple[int, int]] = []
    orig = _parallel.parallel_batches

    def spy(fn, n_items, work, busy=True):
        calls.append((n_items, work, busy))
        return orig(fn, n_items, work, busy)

    lc.set_num_threads(3)
    monkeypatch.setattr(_backend, "parallel_batches", spy)
    monkeypatch.setitem(_parallel._state, "busy_until", 0.0)
    assert not _parallel.pool_busy()
    np.testing.assert_array_equal(numpy_backend.xp.matmul(a, b), a @ b)  # an idle pool: BLAS threads it
    assert calls == []
    _parallel.parallel_batches(lambda lo, hi: None, 4, 10)  # a split makes the pool busy for a while
    assert _parallel.pool_busy()
    until = _parallel._state["busy_until"]
    got = numpy_backend.xp.matmul(a, b)
    assert calls == [(max(m, n), m * n * k // 16, False)]
    assert _parallel._state["busy_until"] == until  # a split product does not keep the pool busy
    np.testing.assert_allclose(got, a @ b, rtol=1e-12, atol=1e-12)
    f32 = numpy_backend.xp.matmul(a.astype(np.float32), b.astype(np.float32))
    assert f32.dtype == np.float32
    np.testing.assert_allclose(f32, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize(
    "stride, dilation, pads, groups",
    [
        ((1, 1), (1, 1), ((1, 1), (1, 1)), 1),
        ((2, 2), (1, 2), ((0, 1), (2, 0)), 1),
        ((1, 1), (1, 1), ((0, 0), (0, 0)), 2),
    ],
)
def test_conv_kernels_and_their_gradients_are_bit_identical_split(split_everything, numpy_backend, stride, dilation,
                                                                   pads, groups):  # fmt: skip
    # the padded-grid path (stride 1 on the last axis, short rows) and the plain im2col path, grouped too
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 4, 9, 8))
    w = rng.standard_normal((6, 4 // groups, 3, 2))
    b = rng.standard_normal(6)
    k = numpy_backend.kernels
    one, three = _both(lambda: k["conv_bias"](x, w, b, stride, dilation, pads, groups))
    _assert_same_bits(one, three)
    gy = rng.standard_normal(one.shape)
    one, three = _both(lambda: k["conv_input_grad"](gy, w, (9, 8), stride, dilation, pads, groups))
    _assert_same_bits(one, three)
    assert one.shape == x.shape
    one, three = _both(lambda: k["conv_weight_grad"](x, gy, (3, 2), stride, dilation, pads, groups))
    _assert_same_bits(one, three)
    assert one.shape == w.shape


def test_float32_convolutions_on_the_compiled_product_are_bit_identical_split(split_everything, numpy_backend):
    # sizes that take the compiled product where the CPU has it (AVX-512): the forward and the input gradient per
    # sample, the weight gradient as sums over fixed chunks of samples (three chunks of 9, 9 and 2 here)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((20, 16, 14, 14)).astype(np.float32)
    w = (rng.standard_normal((64, 16, 3, 3)) * 0.1).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    gy = rng.standard_normal((20, 64, 14, 14)).astype(np.float32)
    k = numpy_backend.kernels
    pads = ((1, 1), (1, 1))
    calls = (
        lambda: k["conv_bias"](x, w, b, (1, 1), (1, 1), pads, 1),
        lambda: k["conv_input_grad"](gy, w, (14, 14), (1, 1), (1, 1), pads, 1),
        lambda: k["conv_weight_grad"](x, gy, (3, 3), (1, 1), (1, 1), pads, 1),
    )
    for call in calls:
        one, three = _both(call)
        _assert_same_bits(one, three)
    exact = k["conv_weight_grad"](x.astype(np.float64), gy.astype(np.float64), (3, 3), (1, 1), (1, 1), pads, 1)
    np.testing.assert_allclose(calls[2](), exact, rtol=1e-4, atol=2e-3)


def test_a_cnn_train_step_is_bit_identical_split(split_everything):
    def step():
        lc.manual_seed(0)
        model = nn.Sequential(
            nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 5 * 5, 3)
        )
        x = lc.randn(6, 2, 10, 10)
        loss = F.cross_entropy(model(x), lc.asarray([0, 1, 2, 0, 1, 2]))
        loss.backward()
        return np.concatenate([p.grad.numpy().ravel() for p in model.parameters()] + [loss.detach().numpy().ravel()])

    one, three = _both(step)
    _assert_same_bits(one, three)


@pytest.mark.parametrize("busy", [False, True], ids=["compiled pool", "Python pool busy"])
@pytest.mark.parametrize("compiled", ["1", "0"], ids=["compiled kernels", "NumPy kernels"])
def test_row_and_element_kernels_are_bit_identical_split(split_everything, numpy_backend, compiled, busy, monkeypatch):
    """GELU, layer norm, softmax, attention, ReLU and 2x2 max-pool split over 3 threads give the one-thread
    bits (row sums are BLAS products, so rows are split at multiples of 64: enough rows to cut here), with
    the compiled float32 kernels (``_ckernels.c``: split in C over the compiled pool, or, while the Python
    pool is busy, one compiled call per slice on its threads) and with the NumPy ones."""
    rng = np.random.default_rng(4)
    if compiled == "1" and _native.load() is None:
        pytest.skip("lucid_backend_numpy's compiled kernels are not built (no C compiler at install)")
    monkeypatch.setenv("LUCID_NUMPY_CKERNELS", compiled)
    k = _backend._kernels(np)
    x = rng.standard_normal((300, 37)).astype(np.float32)
    gy = rng.standard_normal((300, 37)).astype(np.float32)
    w, b = rng.standard_normal(37).astype(np.float32), rng.standard_normal(37).astype(np.float32)
    checks = {
        "gelu": lambda: k["gelu"](x, "none"),
        "gelu_grad": lambda: k["gelu_grad"](gy, x, "none"),
        "softmax": lambda: k["softmax"](x, 1),
        "log_softmax": lambda: k["log_softmax"](x, -1),
        "relu": lambda: k["relu"](np.repeat(x, 120, axis=0)),  # relu splits only from 4096 elements
        "relu of a view": lambda: k["relu"](np.repeat(x, 120, axis=0)[:, 3:30]),  # split along the batch
    }
    for weight, bias in ((w, b), (None, None)):
        y, mean, rstd = k["layer_norm"](x, weight, bias, 1e-5)
        checks[f"layer_norm {weight is None}"] = lambda weight=weight, bias=bias: np.concatenate(
            [a.ravel() for a in k["layer_norm"](x, weight, bias, 1e-5)]
        )
        checks[f"layer_norm_grad {weight is None}"] = lambda weight=weight, mean=mean, rstd=rstd: np.concatenate(
            [a.ravel() for a in k["layer_norm_grad"](gy, x, mean, rstd, weight)]
        )
    q, kk, v = (rng.standard_normal((2, 6, 16, 8)).astype(np.float32) for _ in range(3))
    for causal in (False, True):
        out, att = k["scaled_dot_product_attention"](q, kk, v, 0.35, causal)
        checks[f"sdpa {causal}"] = lambda causal=causal: np.concatenate(
            [a.ravel() for a in k["scaled_dot_product_attention"](q, kk, v, 0.35, causal)]
        )
        g = rng.standard_normal(out.shape).astype(np.float32)
        checks[f"sdpa_grad {causal}"] = lambda g=g, att=att, causal=causal: np.concatenate(
            [a.ravel() for a in k["scaled_dot_product_attention_grad"](g, q, kk, v, att, 0.35, causal)]
        )
    xp = rng.integers(-2, 3, (7, 3, 9, 8)).astype(np.float32)  # ties inside tiles, a remainder row
    checks["max_pool_tiles"] = lambda: k["max_pool_tiles"](xp, (2, 2), (4, 4))
    yp = k["max_pool_tiles"](xp, (2, 2), (4, 4))
    gp = rng.standard_normal(yp.shape).astype(np.float32)
    checks["max_pool_tiles_grad"] = lambda: k["max_pool_tiles_grad"](gp, xp, yp, (2, 2), (4, 4))
    checks["relu_grad"] = lambda: k["relu_grad"](np.repeat(gy, 120, axis=0), np.repeat(x, 120, axis=0))
    for name, fn in checks.items():
        # the last check's Python-pool split is over, or the pool stays busy throughout
        monkeypatch.setitem(_parallel._state, "busy_until", time.monotonic() + 600 if busy else 0.0)
        if compiled == "1" and _parallel._compiled["routed"]:  # compiled kernels split in C (_pool.c)
            lc.set_num_threads(3)
            assert _parallel.compiled_parts(300, 300 * 37) == (1 if busy else 3)
        one, three = _both(fn)
        assert one.dtype == three.dtype and one.shape == three.shape, name
        assert one.tobytes() == three.tobytes(), name
    lc.set_num_threads(1)
    y = k["max_pool_tiles"](xp, (2, 2), (4, 4))
    composed = lc.kernels.KERNELS["max_pool_tiles"].default(_backend._NumpyDevice(), xp, (2, 2), (4, 4))
    assert y.tobytes() == composed.tobytes()  # the backend's kernel is the composed one, split


def test_split_slices_start_at_multiples_of_align(split_everything):
    lc.set_num_threads(3)
    seen: list[tuple[int, int]] = []
    _parallel.parallel_batches(lambda lo, hi: seen.append((lo, hi)), 300, 300, align=64)
    assert sorted(seen) == [(0, 64), (64, 192), (192, 300)]
    seen.clear()
    _parallel.parallel_batches(lambda lo, hi: seen.append((lo, hi)), 64, 64, align=64)
    assert seen == [(0, 64)]  # one unit of 64: nothing to split


@pytest.mark.skipif(_parallel._SPIN is None, reason="spinning workers need Linux spin locks")
def test_spinning_workers_park_when_idle_and_stop_when_replaced(split_everything):
    import time

    lc.set_num_threads(2)
    _parallel.parallel_batches(lambda lo, hi: None, 4, 4)
    pool = _parallel._state["pool"]
    assert isinstance(pool, _parallel._SpinningPool)
    assert not pool.spinners[0].parked  # spinning, for the next split
    deadline = time.monotonic() + 10
    while not pool.spinners[0].parked and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pool.spinners[0].parked  # idle for BUSY_SECONDS: asleep, using no CPU
    cpu = time.process_time()
    time.sleep(0.3)
    assert time.process_time() - cpu < 0.1
    done: list[int] = []
    _parallel.parallel_batches(lambda lo, hi: done.append(hi - lo), 4, 4)  # a parked worker wakes up
    assert sorted(done) == [2, 2]
    thread = pool.spinners[0].thread
    lc.set_num_threads(3)  # a new pool; the old one's worker exits
    thread.join(timeout=10)
    assert not thread.is_alive() and pool.closed


def test_blas_runs_at_one_thread_by_default_for_deterministic_products(split_everything):
    if _parallel.blas_threads() is None:
        pytest.skip("threadpoolctl cannot see a BLAS here")
    if not _parallel.DETERMINISTIC:
        pytest.skip("LUCID_DETERMINISTIC=0 lets BLAS thread its products")
    lc.set_num_threads(2)
    assert _parallel.blas_threads() == 1  # OpenBLAS's bits follow its thread count


def test_blas_stays_at_one_thread_while_the_pool_is_busy_then_gets_its_threads_back(split_everything, monkeypatch):
    if _parallel.blas_threads() is None:
        pytest.skip("threadpoolctl cannot see a BLAS here")
    monkeypatch.setattr(_parallel, "DETERMINISTIC", False)  # threaded BLAS: the opt-in path
    lc.set_num_threads(2)
    assert _parallel.blas_threads() == 2
    _parallel.parallel_batches(lambda lo, hi: None, 4, 4)
    assert _parallel.pool_busy() and _parallel.blas_threads() == 1  # not only during the split
    a = np.ones((3, 3))
    _backend._split_matmul(np, np.matmul, a, a)  # still busy: stays at one thread
    assert _parallel.blas_threads() == 1
    monkeypatch.setitem(_parallel._state, "busy_until", 0.0)  # idle now
    _backend._split_matmul(np, np.matmul, a, a)  # a product outside the pool gets BLAS's threads back
    assert _parallel.blas_threads() == 2


def test_without_spin_locks_the_pool_sleeps_and_splits_only_large_kernels():
    code = (
        "import lucid_core as lc; lc.get_backend('numpy').ensure_loaded(); lc.set_num_threads(2)\n"
        "from lucid_backend_numpy import _parallel as P\n"
        "out = []; P.parallel_batches(lambda lo, hi: out.append(hi - lo), 4, 4 * P.MIN_WORK)\n"
        "def bad(lo, hi):\n"
        "    if lo: raise KeyError('second slice')\n"
        "try: P.parallel_batches(bad, 4, 4 * P.MIN_WORK)\n"
        "except KeyError: out.append('raised')\n"
        "print(type(P._state['pool']).__name__, P.MIN_WORK, out)"
    )
    got = _run(code, LUCID_NUMPY_SPIN="0").stdout.split()
    assert got == ["_SleepingPool", str(1 << 19), "[2,", "2,", "'raised']"]
    bad = _run(code, LUCID_NUMPY_SPIN="yes")
    assert bad.returncode != 0 and "LUCID_NUMPY_SPIN='yes'" in bad.stderr


def test_set_num_threads_reaches_loaded_backends_and_new_ones():
    calls: list[int] = []

    class Counting(lc.ArrayAPIBackend):
        def set_num_threads(self, n: int) -> None:
            calls.append(n)

    import array_api_strict

    before = lc.get_num_threads()
    lc.register_backend(Counting(array_api_strict, name="counting"))
    try:
        lc.get_backend("counting").ensure_loaded()
        assert calls == [before]  # the setting, handed over when the backend loads
        lc.set_num_threads(before + 1)
        assert calls == [before, before + 1]
        assert lc.get_num_threads() == before + 1
    finally:
        lc.unregister_backend("counting")
        lc.set_num_threads(before)


@pytest.mark.parametrize("bad", [0, -1, True, 2.0, "2"])
def test_set_num_threads_rejects_non_positive_ints(bad):
    with pytest.raises(ValueError, match="int >= 1"):
        lc.set_num_threads(bad)


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("LUCID_NUM_THREADS", "LUCID_MALLOC"))}
    full.update(env)
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=120)


def test_num_threads_default_and_environment():
    code = "import lucid_core as lc; print(lc.get_num_threads())"
    default = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert _run(code).stdout.strip() == str(default)
    assert _run(code, LUCID_NUM_THREADS="3").stdout.strip() == "3"
    bad = _run(code, LUCID_NUM_THREADS="many")
    assert bad.returncode != 0 and "LUCID_NUM_THREADS='many'" in bad.stderr


def test_face_exposes_pytorch_names():
    import lucid

    assert lucid.set_num_threads is lc.set_num_threads
    assert lucid.get_num_threads() == lc.get_num_threads()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the tuning applies to glibc only")
def test_malloc_tuning_on_glibc_and_its_opt_out():
    code = "import lucid_core as lc; lc.ones(1); print(lc.get_backend('numpy').malloc)"
    tuned = _run(code).stdout
    import platform

    if platform.libc_ver()[0] == "glibc":
        assert "mmap threshold 256 MiB, trim threshold 512 MiB" in tuned
    assert "left alone (LUCID_MALLOC=system)" in _run(code, LUCID_MALLOC="system").stdout
    assert "MALLOC_TRIM_THRESHOLD_" in _run(code, MALLOC_TRIM_THRESHOLD_="1000000").stdout
    bad = _run(code, LUCID_MALLOC="jemalloc")
    assert bad.returncode != 0 and "LUCID_MALLOC='jemalloc'" in bad.stderr


def test_malloc_tuning_runs_once_per_process():
    assert _malloc.tune_malloc() is _malloc.tune_malloc()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_a_forked_child_gets_a_fresh_pool(split_everything):
    lc.set_num_threads(2)
    _parallel.parallel_batches(lambda lo, hi: None, 4, 4)  # the parent's pool now has threads
    pid = os.fork()
    if pid == 0:  # the child: a split call must not wait on the parent's threads
        import signal

        signal.alarm(30)  # a hang ends the child (and fails the test) instead of the suite
        done: list[int] = []
        _parallel.parallel_batches(lambda lo, hi: done.append(hi - lo), 4, 4)
        os._exit(0 if sorted(done) == [2, 2] else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
