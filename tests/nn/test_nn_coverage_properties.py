"""Behaviour of the nn/functional names added for issue 33 beyond the PyTorch fixtures: in-place writes,
the random layers' distributions, float64 finite-difference gradients of the new math, lazy layers
materialising, and errors that name the problem."""

from __future__ import annotations

import numpy as np
import pytest

import lucid
import lucid_core as lc
import lucid_nn as nn
import lucid_nn.functional as F


def T(a, device, requires_grad=False):
    return lc.asarray(np.asarray(a, dtype=np.float64), dtype=lc.float64, device=device, requires_grad=requires_grad)


# -- in-place forms ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fn",
    [F.relu_, F.elu_, F.celu_, F.selu_, F.leaky_relu_, F.hardtanh_, F.rrelu_, lambda x: F.threshold_(x, 0.0, 5.0)],
)
def test_inplace_functions_write_into_their_input(fn, device):
    x = T([-1.5, -0.2, 0.0, 0.7, 2.0], device)
    before = x.numpy().copy()
    y = fn(x)
    assert y is x
    assert not np.allclose(x.numpy(), before)


def test_inplace_write_reaches_a_view_base(device):
    base = T([[-1.0, 2.0], [-3.0, 4.0]], device)
    F.relu_(base[0])
    assert base.numpy().tolist() == [[0.0, 2.0], [-3.0, 4.0]]


def test_inplace_module_returns_its_input_and_keeps_the_gradient(device):
    x = T([-1.0, 0.5, 2.0], device, requires_grad=True)
    h = x * 2.0
    y = nn.ReLU(inplace=True)(h)
    assert y is h
    y.sum().backward()
    assert x.grad.numpy().tolist() == [0.0, 2.0, 2.0]


@pytest.mark.parametrize("fn", [F.dropout, F.alpha_dropout, F.feature_alpha_dropout, F.dropout2d])
def test_inplace_dropout_inside_the_graph_keeps_the_gradient(fn, device):
    x = lc.ones((2, 3, 4, 4), dtype=lc.float64, device=device, requires_grad=True)
    h = x * 3.0
    y = fn(h, 0.5, True, True)
    assert y is h
    y.sum().backward()
    alpha_p, p = -1.7580993408473766, 0.5
    a = ((1 - p) * (1 + p * alpha_p**2)) ** -0.5
    dropped = 0.0 if fn in (F.dropout, F.dropout2d) else a * alpha_p - a * alpha_p * p
    kept = ~np.isclose(y.detach().numpy(), dropped)
    assert 0 < kept.mean() < 1
    np.testing.assert_array_equal(x.grad.numpy() != 0, kept)  # a gradient exactly where values were kept


def test_inplace_on_a_leaf_that_requires_grad_is_refused(device):
    x = T([1.0, -1.0], device, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        F.relu(x, inplace=True)


# -- random layers --------------------------------------------------------------------------------------------------
def test_rrelu_training_draws_slopes_between_lower_and_upper(device):
    x = lc.full((2000,), -1.0, dtype=lc.float64, device=device)
    slopes = -F.rrelu(x, 0.1, 0.3, training=True).numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3
    assert abs(slopes.mean() - 0.2) < 0.01
    assert F.rrelu(T([2.0], device), training=True).numpy().tolist() == [2.0]


def test_gumbel_softmax_soft_and_hard_samples(device):
    logits = T(np.log([[0.7, 0.2, 0.1]] * 4000), device, requires_grad=True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.detach().numpy().sum(-1), 1.0)
    hard = F.gumbel_softmax(logits, hard=True)
    h = hard.detach().numpy()
    assert set(np.unique(h)) == {0.0, 1.0} and np.all(h.sum(-1) == 1)
    np.testing.assert_allclose(h.mean(0), [0.7, 0.2, 0.1], atol=0.03)  # Gumbel-max samples the softmax
    (hard * T([1.0, 2.0, 3.0], device)).sum().backward()  # straight-through: the soft sample's gradient
    assert np.all(np.isfinite(logits.grad.numpy())) and np.any(logits.grad.numpy() != 0)


def test_dropout3d_zeros_whole_channels_and_scales_the_rest(device):
    x = lc.ones((8, 16, 2, 2, 2), dtype=lc.float64, device=device)
    y = F.dropout3d(x, 0.5, training=True).numpy().reshape(8, 16, -1)
    assert np.all(y == y[..., :1])  # one decision per channel
    assert set(np.unique(y)) <= {0.0, 2.0} and 0.3 < (y == 0).mean() < 0.7


def test_feature_alpha_dropout_keeps_mean_and_variance_per_channel(device):
    x = lc.randn(4000, 8, 3, dtype=lc.float64, device=device)
    y = F.feature_alpha_dropout(x, 0.2, training=True).numpy()
    dropped = np.all(y == y[..., :1], axis=-1) & (np.abs(y[..., 0] - y[..., 1]) < 1e-12)
    assert 0.15 < dropped.mean() < 0.25
    assert abs(y.mean()) < 0.05 and abs(y.std() - 1.0) < 0.05


def test_fractional_max_pool_without_samples_picks_input_maxima(device):
    x = lc.randn(2, 3, 9, 9, dtype=lc.float64, device=device)
    y, idx = F.fractional_max_pool2d(x, 2, output_size=4, return_indices=True)
    assert y.shape == (2, 3, 4, 4)
    flat = x.numpy().reshape(2, 3, -1)
    np.testing.assert_array_equal(
        np.take_along_axis(flat, idx.numpy().reshape(2, 3, -1), -1), y.numpy().reshape(2, 3, -1)
    )


# -- float64 finite differences -----------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "reflection"])
def test_grid_sample_gradients_match_finite_differences(mode, padding_mode):
    rng = np.random.default_rng(3)
    x = lc.asarray(rng.standard_normal((1, 2, 3, 4)), requires_grad=True)
    g = lc.asarray(rng.uniform(-1.2, 1.2, (1, 2, 2, 2)), requires_grad=True)
    assert lc.gradcheck(lambda a, b: F.grid_sample(a, b, mode, padding_mode, align_corners=False), [x, g])


def test_new_math_gradients_match_finite_differences():
    rng = np.random.default_rng(4)

    def r(*shape):
        return lc.asarray(rng.standard_normal(shape), requires_grad=True)

    assert lc.gradcheck(lambda a: F.interpolate(a, size=(4, 3), mode="bicubic"), [r(1, 1, 3, 3)])
    assert lc.gradcheck(lambda a: F.lp_pool2d(a, 2, 2), [r(1, 2, 4, 4)])
    assert lc.gradcheck(lambda a: F.local_response_norm(a, 3), [r(1, 4, 2, 2)])
    assert lc.gradcheck(lambda a: F.pdist(a), [r(4, 3)])
    assert lc.gradcheck(lambda t: F.affine_grid(t, (1, 1, 2, 3), align_corners=False), [r(1, 2, 3)])
    targets = lc.asarray([[1, 2], [2, 2]])
    assert lc.gradcheck(
        lambda a: F.ctc_loss(F.log_softmax(a, 2), targets, [4, 5], [2, 2], reduction="none"), [r(5, 2, 3)]
    )
    assert lc.gradcheck(lambda a: F.multilabel_margin_loss(a, lc.asarray([[2, 0, -1, 1]])), [r(1, 4)])
    assert lc.gradcheck(lambda a: F.multi_margin_loss(a, lc.asarray([1, 0]), p=2), [r(2, 3)])
    offs = lc.asarray([2, 5], dtype=lc.int32)
    assert lc.gradcheck(lambda a, b: F.grouped_mm(a, b, offs=offs), [r(5, 3), r(2, 3, 2)])
    w = r(5, 3)
    assert lc.gradcheck(lambda a: F.embedding_bag(lc.asarray([0, 2, 4, 1]), a, lc.asarray([0, 1]), mode="max"), [w])


def test_embedding_bag_scale_grad_by_freq_divides_by_index_counts(device):
    # PyTorch 2.13's CPU kernel scales some rows by the wrong count (index 2 of [[0,1,1,2,3],[1,1,1,3,3]] gets
    # 1/5); Lucid divides each row's gradient by its own count, as F.embedding(scale_grad_by_freq=True) does
    w = lc.ones((4, 1), dtype=lc.float64, device=device, requires_grad=True)
    idx = lc.asarray([[0, 1, 1, 2, 3], [1, 1, 1, 3, 3]], device=device)
    F.embedding_bag(idx, w, mode="sum", scale_grad_by_freq=True).sum().backward()
    assert w.grad.numpy().ravel().tolist() == [1.0, 1.0, 1.0, 1.0]


# -- lazy layers ------------------------------------------------------------------------------------------------
def test_lazy_linear_materialises_in_place_on_the_first_call(device):
    m = nn.LazyLinear(3).to(device)
    weight = m.weight
    seen = []
    m.register_forward_hook(lambda mod, args, out: seen.append(out.shape))
    assert m.has_uninitialized_params()
    y = m(lc.randn(2, 5, device=device))
    assert type(m) is nn.Linear and m.in_features == 5
    assert m.weight is weight and weight.shape == (3, 5)
    assert y.shape == (2, 3) and seen == [(2, 3)]
    bound = 1 / np.sqrt(5)
    assert np.all(np.abs(m.weight.detach().numpy()) <= bound)


def test_lazy_conv_and_norm_infer_channels(device):
    conv = nn.LazyConv2d(4, 3, groups=2).to(device)
    assert conv(lc.randn(1, 6, 5, 5, device=device)).shape == (1, 4, 3, 3)
    assert type(conv) is nn.Conv2d and conv.weight.shape == (4, 3, 3, 3)
    bn = nn.LazyBatchNorm1d().to(device)
    bn(lc.randn(4, 7, device=device))
    assert type(bn) is nn.BatchNorm1d and bn.running_mean.shape == (7,) and bn.weight.shape == (7,)
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.LazyConv1d(2, 1, groups=2)(lc.randn(1, 3, 4, device=device))


# -- containers and odd modules ---------------------------------------------------------------------------------
def test_data_parallel_runs_the_module_and_prefixes_state_keys(device):
    inner = nn.Linear(3, 2).to(device)
    dp = nn.DataParallel(inner)
    x = lc.randn(4, 3, device=device)
    np.testing.assert_array_equal(dp(x).detach().numpy(), inner(x).detach().numpy())
    assert sorted(dp.state_dict()) == ["module.bias", "module.weight"]


def test_convert_sync_batchnorm_keeps_parameters():
    model = nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3))
    w = model[1].weight
    out = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert isinstance(out[1], nn.SyncBatchNorm) and out[1].weight is w


def test_adaptive_log_softmax_probabilities_sum_to_one_and_predict_argmax():
    m = nn.AdaptiveLogSoftmaxWithLoss(6, 9, [3, 6])
    x = lc.randn(5, 6)
    lp = m.log_prob(x).detach().numpy()
    np.testing.assert_allclose(np.exp(lp).sum(-1), 1.0, rtol=1e-5)
    assert m.predict(x).numpy().tolist() == lp.argmax(-1).tolist()


def test_face_exports_every_new_functional_name():
    missing = [n for n in F.__all__ if not hasattr(lucid.nn.functional, n)]
    assert not missing


# -- errors -----------------------------------------------------------------------------------------------------
def test_errors_name_the_problem(device):
    x = lc.zeros((1, 3, 4, 4), device=device)
    with pytest.raises(ValueError, match="not divisible by upscale_factor squared"):
        F.pixel_shuffle(x, 2)
    with pytest.raises(ValueError, match="mode must be 'bilinear', 'nearest' or 'bicubic'"):
        F.grid_sample(x, lc.zeros((1, 2, 2, 2), device=device), mode="cubic")
    with pytest.raises(NotImplementedError, match="antialias"):
        F.interpolate(x, size=2, mode="bilinear", antialias=True)
    with pytest.raises(ValueError, match="indices must lie in"):
        F.max_unpool2d(lc.zeros((1, 1, 2, 2), device=device), lc.full((1, 1, 2, 2), 99, dtype=lc.int64,
                       device=device), 2)  # fmt: skip
    with pytest.raises(ValueError, match="expected 2 target lengths"):
        F.ctc_loss(lc.zeros((3, 2, 4), device=device), lc.zeros((2, 1), dtype=lc.int64), [3, 3], [1])
    with pytest.raises(ValueError, match="must be divisible by groups"):
        F.channel_shuffle(x, 2)
    with pytest.raises(ValueError, match="padding must be an int or 4 ints"):
        nn.ReflectionPad2d((1, 2, 3))
