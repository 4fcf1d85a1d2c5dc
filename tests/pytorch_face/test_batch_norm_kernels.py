"""lucid/_batch_norm_kernels.py against PyTorch: SyncBN's kernels, native_norm, norm_except_dim, embedding_renorm_.

Values: every case of ``fixtures/batch_norm_kernels_cases.py`` against ``fixtures/batch_norm_kernels.npz``
(written once by ``casebook.py`` with PyTorch 2.13). PyTorch's SyncBN kernels are CUDA-only,
so the ``sync_bn_*`` fixtures hold PyTorch's full-batch training batch norm and its gradients: here lucid's
kernels are composed over two simulated ranks (the halves of the batch) and must reproduce those numbers.
Then float64 finite-difference gradient checks and the errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import lucid
from tests.pytorch_face.fixtures import batch_norm_kernels_cases as cases
from tests.pytorch_face.fixtures import casebook

TORCH = casebook.load("batch_norm_kernels")


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_matches_pytorch(name):
    casebook.assert_matches_pytorch(cases, TORCH, name)


def _t(a: np.ndarray) -> lucid.Tensor:
    return lucid.tensor(a, dtype=lucid.float64)


def _two_ranks(x_np: np.ndarray, g_np: np.ndarray, split: int, equal_counts: bool) -> list[np.ndarray]:
    """SyncBatchNorm's forward and backward by its kernels, each half of the batch one rank."""
    c = x_np.shape[1]
    w, b = _t(cases.W3[:c]), _t(cases.B3[:c])
    parts = [_t(x_np[:split]), _t(x_np[split:])]
    grads = [_t(g_np[:split]), _t(g_np[split:])]
    counts = [p.size // c for p in parts]
    stats = [lucid.batch_norm_stats(p, cases.EPS) for p in parts]
    mean_all = lucid.stack([s[0] for s in stats])
    invstd_all = lucid.stack([s[1] for s in stats])
    rm, rv = lucid.zeros(c, dtype=lucid.float64), lucid.ones(c, dtype=lucid.float64)
    if equal_counts:
        assert counts[0] == counts[1]
        mean, invstd = lucid.batch_norm_gather_stats(
            parts[0], mean_all, invstd_all, rm, rv, cases.MOMENTUM, cases.EPS, counts[0]
        )
    else:
        mean, invstd = lucid.batch_norm_gather_stats_with_counts(
            parts[0], mean_all, invstd_all, rm, rv, cases.MOMENTUM, cases.EPS, _t(np.array(counts, dtype=float))
        )
    out = lucid.cat([lucid.batch_norm_elemt(p, w, b, mean, invstd, cases.EPS) for p in parts])
    reduced = [lucid.batch_norm_backward_reduce(g, p, mean, invstd, w, True, True, True) for g, p in zip(grads, parts)]
    sum_dy, sum_dy_xmu, grad_w, grad_b = (r[0] + r[1] for r in zip(*reduced))  # the all-reduce
    count = lucid.tensor(counts, dtype=lucid.int32)
    grad_x = lucid.cat(
        [
            lucid.batch_norm_backward_elemt(g, p, mean, invstd, w, sum_dy, sum_dy_xmu, count)
            for g, p in zip(grads, parts)
        ]
    )
    halves = [t for s in stats for t in s]
    return [t.numpy() for t in (out, rm, rv, grad_x, grad_w, grad_b, *halves)]


@pytest.mark.parametrize(
    ("name", "equal_counts"),
    [("sync_bn_3d", True), ("sync_bn_3d", False), ("sync_bn_4d_unequal", False)],
    ids=["gather_stats", "gather_stats_with_counts", "unequal_ranks"],
)
def test_kernels_compose_into_full_batch_norm(name, equal_counts):
    x_np, g_np, split = cases.SPLITS[name]
    casebook.compare(name, _two_ranks(x_np, g_np, split, equal_counts), TORCH)


def test_kernels_compose_into_lucids_own_batch_norm_and_differentiate():
    x_np, g_np, split = cases.SPLITS["sync_bn_4d_unequal"]
    c = x_np.shape[1]
    x = lucid.tensor(x_np, dtype=lucid.float64, requires_grad=True)
    w = _t(cases.W3[:c])
    want = lucid.nn.functional.batch_norm(x, None, None, w, None, training=True, eps=cases.EPS)
    (want * _t(g_np)).sum().backward()
    want_grad = x.grad.numpy()
    x.grad = None
    parts = [x[:split], x[split:]]
    stats = [lucid.batch_norm_stats(p, cases.EPS) for p in parts]
    counts = _t(np.array([p.shape[0] * p.shape[2] * p.shape[3] for p in parts], dtype=float))
    mean, invstd = lucid.batch_norm_gather_stats_with_counts(
        x, lucid.stack([s[0] for s in stats]), lucid.stack([s[1] for s in stats]), None, None, 0.1, cases.EPS, counts
    )
    got = lucid.cat([lucid.batch_norm_elemt(p, w, None, mean, invstd, cases.EPS) for p in parts])
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-10)
    (got * _t(g_np)).sum().backward()  # autograd through stats, gather and elemt
    np.testing.assert_allclose(x.grad.numpy(), want_grad, rtol=1e-8, atol=1e-10)


def test_backward_reduce_flags_and_missing_weight():
    x, g = _t(cases.X), _t(cases.G)
    mean, invstd = lucid.batch_norm_stats(x, cases.EPS)
    w = _t(cases.W3)
    sum_dy, sum_dy_xmu, gw, gb = lucid.batch_norm_backward_reduce(g, x, mean, invstd, w, True, True, True)
    np.testing.assert_allclose(sum_dy.numpy(), cases.G.sum((0, 2)), rtol=1e-12)
    xmu = cases.X - cases.X.mean((0, 2), keepdims=True)
    np.testing.assert_allclose(sum_dy_xmu.numpy(), (cases.G * xmu).sum((0, 2)), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gw.numpy(), sum_dy_xmu.numpy() * invstd.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gb.numpy(), sum_dy.numpy(), rtol=1e-12)
    assert lucid.batch_norm_backward_reduce(g, x, mean, invstd, w, False, False, False) == (None, None, None, None)
    r = lucid.batch_norm_backward_reduce(g, x, mean, invstd, w, True, False, True)
    assert r[2] is None and r[0] is not None and r[3] is not None
    r = lucid.batch_norm_backward_reduce(g, x, mean, invstd, None, True, True, True)
    assert r[2] is None and r[3] is None and r[1] is not None


def test_elemt_without_affine_and_half_precision_stats():
    x = _t(cases.X)
    mean, invstd = lucid.batch_norm_stats(x, cases.EPS)
    y = lucid.batch_norm_elemt(x, None, None, mean, invstd, 123.0)  # eps is not used by elemt
    ref = (cases.X - cases.X.mean((0, 2), keepdims=True)) / np.sqrt(cases.X.var((0, 2), keepdims=True) + cases.EPS)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-10, atol=1e-12)
    h = lucid.tensor(cases.X, dtype=lucid.float16)
    m16, i16 = lucid.batch_norm_stats(h, cases.EPS)
    assert m16.dtype is lucid.float32 and i16.dtype is lucid.float32
    assert lucid.batch_norm_elemt(h, None, None, m16, i16, cases.EPS).dtype is lucid.float16


def test_gather_running_stats_use_the_unbiased_variance():
    x_np = cases.X
    parts = [_t(x_np[:2]), _t(x_np[2:])]
    stats = [lucid.batch_norm_stats(p, 0.0) for p in parts]
    rm, rv = lucid.zeros(3, dtype=lucid.float64), lucid.zeros(3, dtype=lucid.float64)
    counts = _t(np.array([10.0, 20.0]))
    mean, invstd = lucid.batch_norm_gather_stats_with_counts(
        parts[0], lucid.stack([s[0] for s in stats]), lucid.stack([s[1] for s in stats]), rm, rv, 1.0, 0.0, counts
    )
    np.testing.assert_allclose(mean.numpy(), x_np.mean((0, 2)), rtol=1e-12)
    np.testing.assert_allclose(invstd.numpy(), 1 / x_np.std((0, 2)), rtol=1e-10)
    np.testing.assert_allclose(rm.numpy(), x_np.mean((0, 2)), rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), x_np.var((0, 2), ddof=1), rtol=1e-10)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: lucid.batch_norm_stats(x, 1e-3)[1],
        lambda x: lucid.batch_norm_elemt(x, x[0, :, 0], None, x[1, :, 1], x[2, :, 2] ** 2, 1e-5),
        lambda x: lucid.native_norm(x, 3),
        lambda x: lucid.native_norm(x, 2, (0, 2), True, None),
        lambda x: lucid.norm_except_dim(x, 2, 1),
        lambda x: lucid.norm_except_dim(x, 2, -1),
    ],
    ids=["batch_norm_stats", "batch_norm_elemt", "native_norm", "native_norm_dims", "norm_except_dim", "whole"],
)
def test_gradients_match_finite_differences(fn):
    x = lucid.tensor(cases.X[:3, :, :4], dtype=lucid.float64, requires_grad=True)
    assert lucid.autograd.gradcheck(fn, (x,))


def test_native_norm_dims_overload_matches_vector_norm():
    x = _t(cases.V)
    got = lucid.native_norm(x, 2, [0, 2], True, None)
    assert got.shape == (1, 4, 1)
    np.testing.assert_allclose(got.numpy().ravel(), np.sqrt((cases.V**2).sum((0, 2))), rtol=1e-12)
    assert lucid.native_norm(x, None, 1, False, lucid.float32).dtype is lucid.float32


def test_embedding_renorm_is_in_place_and_counts_a_row_once():
    w = lucid.tensor(cases.EMB, dtype=lucid.float64)
    assert lucid.embedding_renorm_(w, lucid.tensor([2, 2, 2]), 1.0, 2.0) is w
    np.testing.assert_allclose(w.numpy()[2], cases.EMB[2] / (10 + 1e-7), rtol=1e-12)
    np.testing.assert_array_equal(w.numpy()[[0, 1, 3, 4]], cases.EMB[[0, 1, 3, 4]])
    p = lucid.tensor(cases.EMB, requires_grad=True)
    with lucid.no_grad():
        lucid.embedding_renorm_(p, lucid.tensor([0]), 1.0, 2.0)
    assert abs(float(p[0, 0].item()) - 0.6) < 1e-6


def test_errors():
    with pytest.raises(IndexError, match="Dimension out of range"):
        lucid.batch_norm_stats(lucid.ones(3), 1e-5)
    with pytest.raises(RuntimeError, match="floating-point input, got int64"):
        lucid.batch_norm_update_stats(lucid.ones(2, 3, dtype=lucid.int64), None, None, 0.1)
    with pytest.raises(RuntimeError, match="one count per rank"):
        lucid.batch_norm_gather_stats_with_counts(
            lucid.ones(2, 3), lucid.ones(2, 3), lucid.ones(2, 3), None, None, 0.1, 1e-5, lucid.ones(3)
        )
    with pytest.raises(RuntimeError, match="same shape"):
        lucid.batch_norm_gather_stats(lucid.ones(2, 3), lucid.ones(2, 3), lucid.ones(3), None, None, 0.1, 1e-5, 4)
    with pytest.raises(RuntimeError, match="grad_out of the input's shape"):
        lucid.batch_norm_backward_reduce(lucid.ones(2), lucid.ones(2, 3), lucid.ones(3), lucid.ones(3), None,
                                         True, True, True)  # fmt: skip
    with pytest.raises(RuntimeError, match="floating point or complex. Got int64"):
        lucid.native_norm(lucid.tensor([1, 2]))
    with pytest.raises(TypeError, match="'pow' .* must be int, not float"):
        lucid.norm_except_dim(lucid.ones(2, 3), 2.5, 0)
    with pytest.raises(IndexError, match=r"range of \[-2, 1\], but got 2"):
        lucid.norm_except_dim(lucid.ones(2, 3), 2, 2)
    with pytest.raises(IndexError, match="no dimensions"):
        lucid.norm_except_dim(lucid.tensor(2.0), 2, 0)
    with pytest.raises(RuntimeError, match="Expected 2-dimensional tensor, but got 1-dimensional"):
        lucid.embedding_renorm_(lucid.ones(3), lucid.tensor([0]), 1.0, 2.0)
    with pytest.raises(RuntimeError, match="'indices' .* Long, Int; but got float32"):
        lucid.embedding_renorm_(lucid.ones(3, 2), lucid.tensor([0.0]), 1.0, 2.0)
    with pytest.raises(IndexError, match="index 4 out of range"):
        lucid.embedding_renorm_(lucid.ones(4, 2), lucid.tensor([4]), 1.0, 2.0)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        lucid.embedding_renorm_(lucid.ones(4, 2, requires_grad=True), lucid.tensor([0]), 1.0, 2.0)
