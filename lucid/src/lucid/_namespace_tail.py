"""The rest of PyTorch's ``torch`` namespace: torch-level nn ops, view copies and scatters, typed tensor and
storage classes, memory formats, and process-wide switches and queries.

Everything here is an adapter: the math is ``lucid_nn.functional``'s or ``lucid_core``'s. The torch-level nn
ops keep PyTorch's ATen signatures (``lucid.dropout(x, p, train)`` with a positional ``train``, losses with
an integer ``reduction``), which differ in places from ``nn.functional``'s. The ``*_copy`` functions are
PyTorch's functionalization names: the view's values in a tensor of their own (writing to it leaves the
input alone), with gradients. ``view_as_real``/``view_as_complex`` are views (writes land in the input),
built on two view steps of :mod:`lucid_core._views`.
"""

from __future__ import annotations

import builtins
import enum
import math
import os
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import lucid_core as lc
from lucid_core import Tensor, _views
from lucid_core._tensor_methods import Size as _Size
from lucid_core._tensor_methods import UntypedStorage as _CoreUntypedStorage
from lucid_core.amp import autocast_op

from . import _creation, _functions, _runtime

__all__ = [
    # 1. nn ops at torch level
    "dropout", "dropout_", "alpha_dropout", "alpha_dropout_", "feature_dropout", "feature_dropout_",
    "feature_alpha_dropout", "feature_alpha_dropout_", "native_dropout", "layer_norm", "native_layer_norm",
    "batch_norm", "native_batch_norm", "group_norm", "native_group_norm", "instance_norm", "rms_norm",
    "convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "conv_tbc", "embedding", "embedding_bag", "adaptive_avg_pool1d", "adaptive_max_pool1d", "avg_pool1d",
    "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "bilinear",
    "binary_cross_entropy_with_logits", "celu", "celu_", "selu", "selu_", "rrelu", "rrelu_", "prelu",
    "threshold", "threshold_", "hardshrink", "relu_", "cosine_similarity", "pairwise_distance", "pdist",
    "cosine_embedding_loss", "hinge_embedding_loss", "kl_div", "margin_ranking_loss", "poisson_nll_loss",
    "triplet_margin_loss", "ctc_loss", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
    "native_channel_shuffle", "constant_pad_nd", "grid_sampler", "grid_sampler_2d", "grid_sampler_3d",
    "affine_grid_generator", "rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell",
    # 2. view copies, scatters, splits, complex views, detach and fills
    "alias_copy", "as_strided_copy", "detach_copy", "diagonal_copy", "expand_copy", "narrow_copy",
    "permute_copy", "select_copy", "slice_copy", "split_copy", "split_with_sizes_copy", "squeeze_copy",
    "t_copy", "transpose_copy", "unbind_copy", "unfold_copy", "unsqueeze_copy", "view_copy",
    "view_as_real_copy", "view_as_complex_copy", "select_scatter", "slice_scatter", "diagonal_scatter",
    "as_strided_scatter", "unsafe_split", "unsafe_chunk", "unsafe_split_with_sizes",
    "view_as_real", "view_as_complex", "detach", "detach_", "fill", "fill_", "zero_",
    # 3. typed tensor and storage classes
    "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor",
    "CharTensor", "ByteTensor", "BoolTensor", "TypedStorage", "UntypedStorage", "Storage", "FloatStorage",
    "DoubleStorage", "HalfStorage", "BFloat16Storage", "LongStorage", "IntStorage", "ShortStorage", "CharStorage",
    "ByteStorage", "BoolStorage",
    "ComplexFloatStorage", "ComplexDoubleStorage", "set_default_tensor_type",
    # 4. memory formats
    "memory_format", "contiguous_format", "channels_last", "channels_last_3d", "preserve_format",
    "legacy_contiguous_format", "empty_like", "zeros_like", "ones_like", "full_like",
    # 5. switches and queries
    "set_float32_matmul_precision", "get_float32_matmul_precision", "set_flush_denormal", "set_warn_always",
    "is_warn_always_enabled", "get_num_interop_threads", "set_num_interop_threads", "init_num_threads",
    "set_deterministic_debug_mode", "get_deterministic_debug_mode", "compiled_with_cxx11_abi", "conj_physical_",

    "scalar_tensor", "empty_strided", "empty_permuted", "from_file", "to_dlpack", "range", "logspace", "polar",
    "complex", "frexp", "gcd", "gcd_", "lcm", "lcm_", "put", "index_reduce", "sym_float",
    "sym_int", "sym_max", "sym_min", "sym_not", "sym_ite", "sym_sqrt", "sym_sum", "SymInt", "SymFloat",
    "SymBool", "Tag", "Future", "fork", "wait",
]  # fmt: skip

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _F() -> Any:  # noqa: N802 - stands for the usual ``F``
    """``lucid_nn.functional``, imported on first use (``import lucid`` stays lazy)."""
    import lucid_nn.functional

    return lucid_nn.functional


def _reduction(reduction: int | str, name: str) -> str:
    """ATen's integer reduction (0 none, 1 mean, 2 sum), or the functional's string."""
    if isinstance(reduction, str) and reduction in _REDUCTIONS.values():
        return reduction
    if isinstance(reduction, int) and reduction in _REDUCTIONS:
        return _REDUCTIONS[reduction]
    raise ValueError(f"{name}: reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction!r}")


def _write(input: Tensor, out: Tensor) -> Tensor:
    """The in-place form of an op: ``out`` written into ``input`` (views and autograd see it), ``input`` back."""
    return input.copy_(out)


# -- 1. nn ops at torch level --------------------------------------------------------------------------------
def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Zero elements with probability ``p`` and scale the rest by ``1/(1-p)`` when ``train`` (ATen's order)."""
    return _F().dropout(input, p, train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """:func:`dropout`, written into ``input``."""
    return _write(input, dropout(input, p, train)) if train else input


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Dropout that keeps SELU's mean and variance, when ``train``."""
    return _F().alpha_dropout(input, p, train)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """:func:`alpha_dropout`, written into ``input``."""
    return _write(input, alpha_dropout(input, p, train)) if train else input


def _feature_mask(input: Tensor, p: float) -> Tensor:
    """A keep-mask (1 kept, 0 dropped) per (batch, channel), broadcast over the other axes."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"feature dropout: p must be in [0, 1], got {p}")
    if input.ndim < 2:
        raise ValueError(f"feature dropout: input must have at least 2 dimensions, got shape {input.shape}")
    shape = (input.shape[0], input.shape[1]) + (1,) * (input.ndim - 2)
    keep = lc.full(shape, 1.0 - p, dtype=input.dtype, device=input.device)
    return _creation.bernoulli(keep)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Zero whole channels (axis 1) with probability ``p``, scaling the others by ``1/(1-p)``, when ``train``."""
    if not train or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    return input * _feature_mask(input, p) / (1.0 - p)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """:func:`feature_dropout`, written into ``input``."""
    return _write(input, feature_dropout(input, p, train)) if train else input


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Alpha dropout of whole channels, when ``train``."""
    return _F().feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """:func:`feature_alpha_dropout`, written into ``input``."""
    return _write(input, feature_alpha_dropout(input, p, train)) if train else input


def native_dropout(input: Tensor, p: float, train: bool | None) -> tuple[Tensor, Tensor]:
    """``(output, mask)``: dropout's output and the boolean mask of the kept elements (all True unless training)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"native_dropout: p must be in [0, 1], got {p}")
    if train is False:
        return input.clone(), lc.ones(input.shape, dtype=lc.bool, device=input.device)
    keep = _creation.bernoulli(lc.full(input.shape, 1.0 - p, dtype=input.dtype, device=input.device))
    scale = 0.0 if p == 1.0 else 1.0 / (1.0 - p)
    return input * keep * scale, keep.astype(lc.bool)


def _norm_axes(input: Tensor, normalized_shape: int | Sequence[int], name: str) -> tuple[int, ...]:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape) :]) != shape or len(shape) > input.ndim:
        raise ValueError(
            f"{name}: normalized_shape {list(shape)} does not match the input's trailing axes {input.shape}"
        )
    return tuple(builtins.range(input.ndim - len(shape), input.ndim))


def layer_norm(
    input: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
    cudnn_enable: bool = True,
) -> Tensor:
    """Layer normalization over the trailing ``normalized_shape`` axes (``cudnn_enable`` has no meaning here)."""
    return _F().layer_norm(input, normalized_shape, weight, bias, eps)


def native_layer_norm(
    input: Tensor, normalized_shape: Sequence[int], weight: Tensor | None, bias: Tensor | None, eps: float
) -> tuple[Tensor, Tensor, Tensor]:
    """``(output, mean, rstd)``: layer norm and the per-row mean and ``1/sqrt(var + eps)`` it used (kept axes)."""
    axes = _norm_axes(input, normalized_shape, "native_layer_norm")
    mean = input.mean(dim=axes, keepdim=True)
    rstd = lc.rsqrt(((input - mean) ** 2).mean(dim=axes, keepdim=True) + eps)
    return _F().layer_norm(input, normalized_shape, weight, bias, eps), mean, rstd


def batch_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool,
) -> Tensor:
    """Batch normalization in ATen's argument order (weight and bias before the running statistics)."""
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def _channel_stats(input: Tensor) -> tuple[Tensor, Tensor]:
    """Per-channel (axis 1) mean and biased variance."""
    axes = (0, *builtins.range(2, input.ndim))
    mean = input.mean(dim=axes)
    shape = (1, -1) + (1,) * (input.ndim - 2)
    var = ((input - mean.reshape(shape)) ** 2).mean(dim=axes)
    return mean, var


def native_batch_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[Tensor, Tensor, Tensor]:
    """``(output, save_mean, save_invstd)``: batch norm and, when training, the batch's per-channel mean and
    ``1/sqrt(var + eps)`` (empty tensors in evaluation, as PyTorch's CPU kernel returns)."""
    out = _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        empty = lc.zeros((0,), dtype=input.dtype, device=input.device)
        return out, empty, empty
    mean, var = _channel_stats(input)
    return out, mean, lc.rsqrt(var + eps)


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
    cudnn_enabled: bool = True,
) -> Tensor:
    """Group normalization over ``num_groups`` groups of channels."""
    return _F().group_norm(input, num_groups, weight, bias, eps)


def native_group_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    N: int,  # noqa: N803 - ATen's argument names
    C: int,  # noqa: N803
    HxW: int,  # noqa: N803
    group: int,
    eps: float,
) -> tuple[Tensor, Tensor, Tensor]:
    """``(output, mean, rstd)``: group norm and the per-(sample, group) mean and ``1/sqrt(var + eps)``."""
    if input.shape[0] != N or input.shape[1] != C or input.size != N * C * HxW:
        raise ValueError(f"native_group_norm: input of shape {input.shape} is not (N={N}, C={C}, HxW={HxW})")
    grouped = input.reshape(N, group, -1)
    mean = grouped.mean(dim=2)
    rstd = lc.rsqrt(((grouped - mean.reshape(N, group, 1)) ** 2).mean(dim=2) + eps)
    return _F().group_norm(input, group, weight, bias, eps), mean, rstd


def instance_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    use_input_stats: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool,
) -> Tensor:
    """Instance normalization in ATen's argument order."""
    return _F().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def _same_as_functional(name: str) -> Callable[..., Any]:
    """The torch-level function whose arguments are ``nn.functional.<name>``'s (imported on first call, so
    ``import lucid`` does not load ``lucid_nn``)."""

    def fn(*args: Any, **kwargs: Any) -> Any:
        return getattr(_F(), name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``nn.functional.{name}``, at torch level with the same arguments."
    return fn


rms_norm = _same_as_functional("rms_norm")
conv1d = _same_as_functional("conv1d")
conv2d = _same_as_functional("conv2d")
conv3d = _same_as_functional("conv3d")
conv_transpose1d = _same_as_functional("conv_transpose1d")
conv_transpose2d = _same_as_functional("conv_transpose2d")
conv_transpose3d = _same_as_functional("conv_transpose3d")
conv_tbc = _same_as_functional("conv_tbc")
bilinear = _same_as_functional("bilinear")
adaptive_avg_pool1d = _same_as_functional("adaptive_avg_pool1d")
avg_pool1d = _same_as_functional("avg_pool1d")
cosine_similarity = _same_as_functional("cosine_similarity")
pairwise_distance = _same_as_functional("pairwise_distance")
pdist = _same_as_functional("pdist")
pixel_shuffle = _same_as_functional("pixel_shuffle")
pixel_unshuffle = _same_as_functional("pixel_unshuffle")
channel_shuffle = _same_as_functional("channel_shuffle")
native_channel_shuffle = _same_as_functional("native_channel_shuffle")
relu_ = _same_as_functional("relu_")
celu_ = _same_as_functional("celu_")
selu_ = _same_as_functional("selu_")
threshold_ = _same_as_functional("threshold_")


def convolution(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    transposed: bool,
    output_padding: Sequence[int],
    groups: int,
) -> Tensor:
    """The general convolution: 1-, 2- or 3-d by ``weight``'s rank, transposed or not."""
    n = weight.ndim - 2
    if n not in (1, 2, 3):
        raise ValueError(f"convolution: weight must have 3, 4 or 5 dimensions, got shape {weight.shape}")
    if transposed:
        fn = (_F().conv_transpose1d, _F().conv_transpose2d, _F().conv_transpose3d)[n - 1]
        return fn(input, weight, bias, tuple(stride), tuple(padding), tuple(output_padding), groups, tuple(dilation))
    fn = (_F().conv1d, _F().conv2d, _F().conv3d)[n - 1]
    return fn(input, weight, bias, tuple(stride), tuple(padding), tuple(dilation), groups)


def embedding(
    weight: Tensor, indices: Tensor, padding_idx: int = -1, scale_grad_by_freq: bool = False, sparse: bool = False
) -> Tensor:
    """Rows of ``weight`` at ``indices`` (ATen's order: weight first; ``padding_idx`` -1 means none)."""
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: scale_grad_by_freq and sparse gradients are not supported by Lucid")
    return _F().embedding(indices, weight, padding_idx if padding_idx >= 0 else None)


_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}


def embedding_bag(
    weight: Tensor,
    indices: Tensor,
    offsets: Tensor,
    scale_grad_by_freq: bool = False,
    mode: int = 0,
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``(output, offset2bag, bag_size, max_indices)`` for 1-D ``indices`` split into bags at ``offsets``.

    ``output`` is ``nn.functional.embedding_bag``'s; the other three are what PyTorch's CPU kernel returns
    beside it (the bag of each index, the bag sizes, the argmax rows for ``mode=2``; for ``mode=0`` zero sizes
    and indices, for ``mode=1`` ``max_indices`` equal to ``bag_size``). PyTorch's float32 ``mode=0`` fast path
    leaves ``offset2bag`` empty; Lucid always fills it.
    """
    if mode not in _BAG_MODES:
        raise ValueError(f"embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got {mode!r}")
    if indices.ndim != 1:
        raise ValueError(f"embedding_bag: indices must be 1-D with offsets, got shape {indices.shape}")
    out = _F().embedding_bag(
        indices, weight, offsets, None, 2.0, scale_grad_by_freq, _BAG_MODES[mode], sparse, per_sample_weights,
        include_last_offset, padding_idx,
    )  # fmt: skip
    idx, starts = [int(i) for i in indices.tolist()], [int(o) for o in offsets.tolist()]
    n_bags = len(starts) - 1 if include_last_offset else len(starts)
    bounds = [*starts[:n_bags], len(idx)] if not include_last_offset else starts
    long = {"dtype": lc.int64, "device": indices.device}
    sizes = [bounds[b + 1] - bounds[b] for b in builtins.range(n_bags)]
    bag_of = [b for b in builtins.range(n_bags) for _ in builtins.range(sizes[b])]
    offset2bag = lc.asarray(bag_of + [0] * (len(idx) - len(bag_of)), **long)
    if mode == 0:
        zeros = lc.zeros((n_bags,), **long)
        return out, offset2bag, zeros, zeros
    bag_size = lc.asarray(sizes, **long)
    if mode == 1:
        return out, offset2bag, bag_size, bag_size
    rows = weight.detach().tolist()
    width = weight.shape[1]
    argmax = []
    for b in builtins.range(n_bags):
        members = idx[bounds[b] : bounds[b + 1]]
        argmax.append(
            [builtins.max(members, key=lambda r, d=d: rows[r][d]) if members else -1 for d in builtins.range(width)]
        )
    return out, offset2bag, bag_size, lc.asarray(argmax, **long).reshape(n_bags, width)


def adaptive_max_pool1d(input: Tensor, output_size: int | Sequence[int]) -> tuple[Tensor, Tensor]:
    """``(values, indices)`` of adaptive max pooling over the last axis (the torch-level function returns both)."""
    return _F().adaptive_max_pool1d(input, output_size, return_indices=True)


def max_pool1d(
    input: Tensor,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    ceil_mode: bool = False,
) -> Tensor:
    """Max pooling over the last axis (values only)."""
    return _F().max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool1d_with_indices(
    input: Tensor,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    ceil_mode: bool = False,
) -> tuple[Tensor, Tensor]:
    """``(values, indices)`` of max pooling over the last axis."""
    return _F().max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode, return_indices=True)


def max_pool2d(
    input: Tensor,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    ceil_mode: bool = False,
) -> Tensor:
    """Max pooling over the last two axes (values only)."""
    return _F().max_pool2d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool3d(
    input: Tensor,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    ceil_mode: bool = False,
) -> Tensor:
    """Max pooling over the last three axes (values only)."""
    return _F().max_pool3d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    pos_weight: Tensor | None = None,
    reduction: int | str = 1,
) -> Tensor:
    """Sigmoid + binary cross-entropy in ATen's order (``pos_weight`` before ``reduction``, an int)."""
    return _F().binary_cross_entropy_with_logits(
        input, target, weight, _reduction(reduction, "binary_cross_entropy_with_logits"), pos_weight
    )


def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    return _F().celu(input, alpha)


def selu(input: Tensor) -> Tensor:
    """Scaled ELU with SELU's fixed constants."""
    return _F().selu(input)


def rrelu(
    input: Tensor, lower: float = 0.125, upper: float = 1.0 / 3.0, training: bool = False, generator: Any = None
) -> Tensor:
    """Randomized leaky ReLU (slopes drawn from U(lower, upper) when training, their mean otherwise)."""
    if generator is not None:
        raise NotImplementedError("rrelu: generator= is not supported; seed with lucid.manual_seed instead")
    return _F().rrelu(input, lower, upper, training)


def rrelu_(
    input: Tensor, lower: float = 0.125, upper: float = 1.0 / 3.0, training: bool = False, generator: Any = None
) -> Tensor:
    """:func:`rrelu`, written into ``input``."""
    return _write(input, rrelu(input, lower, upper, training, generator))


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``max(0, x) + weight * min(0, x)`` with a learned slope per channel (or one)."""
    return _F().prelu(input, weight)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    """``x`` where ``x > threshold``, else ``value``."""
    return _F().threshold(input, threshold, value)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, else 0."""
    return _F().hardshrink(input, lambd)


def cosine_embedding_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int | str = 1
) -> Tensor:
    """Cosine embedding loss with ATen's integer ``reduction``."""
    return _F().cosine_embedding_loss(input1, input2, target, margin, _reduction(reduction, "cosine_embedding_loss"))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, reduction: int | str = 1) -> Tensor:
    """Hinge embedding loss with ATen's integer ``reduction``."""
    return _F().hinge_embedding_loss(input, target, margin, _reduction(reduction, "hinge_embedding_loss"))


def kl_div(input: Tensor, target: Tensor, reduction: int | str = 1, *, log_target: bool = False) -> Tensor:
    """KL divergence with ATen's integer ``reduction`` (1, mean, averages over every element as PyTorch's)."""
    return _F().kl_div(input, target, _reduction(reduction, "kl_div"), log_target)


def margin_ranking_loss(
    input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, reduction: int | str = 1
) -> Tensor:
    """Margin ranking loss with ATen's integer ``reduction``."""
    return _F().margin_ranking_loss(input1, input2, target, margin, _reduction(reduction, "margin_ranking_loss"))


def poisson_nll_loss(
    input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float, reduction: int | str
) -> Tensor:
    """Poisson negative log-likelihood; every argument required, as ATen's."""
    return _F().poisson_nll_loss(input, target, log_input, full, eps, _reduction(reduction, "poisson_nll_loss"))


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2.0,
    eps: float = 1e-6,
    swap: bool = False,
    reduction: int | str = 1,
) -> Tensor:
    """Triplet margin loss with ATen's integer ``reduction``."""
    return _F().triplet_margin_loss(
        anchor, positive, negative, margin, p, eps, swap, _reduction(reduction, "triplet_margin_loss")
    )


def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Any,
    target_lengths: Any,
    blank: int = 0,
    reduction: int | str = 1,
    zero_infinity: bool = False,
) -> Tensor:
    """Connectionist temporal classification loss with ATen's integer ``reduction``."""
    red = _reduction(reduction, "ctc_loss")
    return _F().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, red, zero_infinity)


def constant_pad_nd(input: Tensor, pad: Sequence[int], value: float = 0) -> Tensor:
    """Pad with ``value``: ``pad`` lists (before, after) pairs from the last axis backwards (negative crops)."""
    return _F().pad(input, tuple(pad), "constant", value)


_INTERP = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def grid_sampler(
    input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int, align_corners: bool
) -> Tensor:
    """``grid_sample`` with ATen's integer modes (interpolation 0 bilinear, 1 nearest, 2 bicubic; padding
    0 zeros, 1 border, 2 reflection)."""
    if interpolation_mode not in _INTERP or padding_mode not in _PADDING:
        raise ValueError(
            f"grid_sampler: interpolation_mode must be 0, 1 or 2 and padding_mode 0, 1 or 2, "
            f"got {interpolation_mode!r} and {padding_mode!r}"
        )
    return _F().grid_sample(input, grid, _INTERP[interpolation_mode], _PADDING[padding_mode], align_corners)


def grid_sampler_2d(
    input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int, align_corners: bool
) -> Tensor:
    """:func:`grid_sampler` of a 4-D input."""
    if input.ndim != 4:
        raise ValueError(f"grid_sampler_2d: input must be 4-D (N, C, H, W), got shape {input.shape}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(
    input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int, align_corners: bool
) -> Tensor:
    """:func:`grid_sampler` of a 5-D input."""
    if input.ndim != 5:
        raise ValueError(f"grid_sampler_3d: input must be 5-D (N, C, D, H, W), got shape {input.shape}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def affine_grid_generator(theta: Tensor, size: Sequence[int], align_corners: bool) -> Tensor:
    """The sampling grid of the affine maps ``theta`` for an output of ``size`` (``affine_grid``)."""
    return _F().affine_grid(theta, list(size), align_corners)


def rnn_tanh_cell(
    input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None, b_hh: Tensor | None = None
) -> Tensor:
    """One step of an Elman RNN with tanh."""
    return _F().rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_relu_cell(
    input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None, b_hh: Tensor | None = None
) -> Tensor:
    """One step of an Elman RNN with ReLU."""
    return _F().rnn_relu_cell(input, hx, w_ih, w_hh, b_ih, b_hh)


def lstm_cell(
    input: Tensor,
    hx: Sequence[Tensor],
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None = None,
    b_hh: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """One LSTM step: ``hx`` is ``[h, c]``; returns ``(h', c')``."""
    return _F().lstm_cell(input, tuple(hx), w_ih, w_hh, b_ih, b_hh)


def gru_cell(
    input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None, b_hh: Tensor | None = None
) -> Tensor:
    """One GRU step."""
    return _F().gru_cell(input, hx, w_ih, w_hh, b_ih, b_hh)


# -- 2. view copies, scatters, splits, complex views ----------------------------------------------------------
def _copy_of(view: Tensor) -> Tensor:
    """The view's values in a tensor of their own (a write to it leaves the input alone); gradients flow."""
    return view.clone()


def alias_copy(input: Tensor) -> Tensor:
    """A copy of ``input`` (PyTorch's ``alias`` is the identity view)."""
    return input.clone()


def _as_strided(input: Tensor, size: Sequence[int], stride: Sequence[int], offset: int | None) -> Tensor:
    # the offset is always passed: lucid_core's as_strided mis-handles storage_offset=None
    return input.as_strided(tuple(size), tuple(stride), input.storage_offset() if offset is None else offset)


def as_strided_copy(
    input: Tensor, size: Sequence[int], stride: Sequence[int], storage_offset: int | None = None
) -> Tensor:
    """A copy of ``input.as_strided(size, stride, storage_offset)``."""
    return _copy_of(_as_strided(input, size, stride, storage_offset))


def detach_copy(input: Tensor) -> Tensor:
    """A copy of ``input.detach()``: the values, out of the graph."""
    return input.detach().clone()


def diagonal_copy(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A copy of ``input.diagonal(offset, dim1, dim2)``."""
    return _copy_of(input.diagonal(offset, dim1, dim2))


def expand_copy(input: Tensor, size: Sequence[int], *, implicit: bool = False) -> Tensor:
    """A copy of ``input.expand(size)`` (every element its own place, so it can be written)."""
    return _copy_of(input.expand(*size))


def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """A copy of ``input.narrow(dim, start, length)``."""
    return _copy_of(input.narrow(dim, start, length))


def permute_copy(input: Tensor, dims: Sequence[int]) -> Tensor:
    """A copy of ``input.permute(dims)``."""
    return _copy_of(input.permute(*dims))


def select_copy(input: Tensor, dim: int, index: int) -> Tensor:
    """A copy of ``input.select(dim, index)``."""
    return _copy_of(input.select(dim, index))


def _slice_key(input: Tensor, dim: int, start: int | None, end: int | None, step: int) -> tuple[Any, ...]:
    if step <= 0:
        raise ValueError(f"slice: step must be positive, got {step}")
    d = dim + input.ndim if dim < 0 else dim
    if not 0 <= d < input.ndim:
        raise IndexError(f"slice: dim {dim} is out of range for a tensor of {input.ndim} dimensions")
    return (slice(None),) * d + (slice(start, end, step),)


def slice_copy(input: Tensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1) -> Tensor:
    """A copy of ``input[..., start:end:step, ...]`` along ``dim``."""
    return _copy_of(input[_slice_key(input, dim, start, end, step)])


def split_copy(input: Tensor, split_size: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Copies of ``input.split(split_size, dim)``."""
    return tuple(_copy_of(p) for p in input.split(split_size, dim))


def split_with_sizes_copy(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Copies of ``input.split(split_sizes, dim)``."""
    return tuple(_copy_of(p) for p in input.split_with_sizes(split_sizes, dim))


def squeeze_copy(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """A copy of ``input.squeeze(dim)``."""
    return _copy_of(input.squeeze() if dim is None else input.squeeze(dim))


def t_copy(input: Tensor) -> Tensor:
    """A copy of ``input.t()``."""
    return _copy_of(input.t())


def transpose_copy(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """A copy of ``input.transpose(dim0, dim1)``."""
    return _copy_of(input.transpose(dim0, dim1))


def unbind_copy(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """Copies of ``input.unbind(dim)``."""
    return tuple(_copy_of(p) for p in input.unbind(dim))


def unfold_copy(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """A copy of ``input.unfold(dimension, size, step)``."""
    return _copy_of(input.unfold(dimension, size, step))


def unsqueeze_copy(input: Tensor, dim: int) -> Tensor:
    """A copy of ``input.unsqueeze(dim)``."""
    return _copy_of(input.unsqueeze(dim))


def view_copy(input: Tensor, size: Any) -> Tensor:
    """A copy of ``input.view(size)`` (a dtype as ``size`` is not supported: Lucid has no bit reinterpretation)."""
    if isinstance(size, lc.DType):
        raise NotImplementedError("view_copy: viewing as another dtype is not supported by Lucid")
    return _copy_of(input.view(*size) if isinstance(size, (tuple, list)) else input.view(size))


def view_as_real_copy(input: Tensor) -> Tensor:
    """A copy of :func:`view_as_real`."""
    return _copy_of(view_as_real(input))


def view_as_complex_copy(input: Tensor) -> Tensor:
    """A copy of :func:`view_as_complex`."""
    return _copy_of(view_as_complex(input))


def _scatter_into(input: Tensor, src: Tensor, take: Callable[[Tensor], Tensor], name: str) -> Tensor:
    """``input`` with the view ``take`` picks replaced by ``src``, out of place; differentiable in both."""
    out = input.clone()
    view = take(out)
    if tuple(view.shape) != tuple(src.shape):
        raise ValueError(f"{name}: src has shape {src.shape} but the view it replaces has shape {view.shape}")
    view.copy_(src)
    return out


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """``input`` with ``input.select(dim, index)`` replaced by ``src``."""
    return _scatter_into(input, src, lambda t: t.select(dim, index), "select_scatter")


def slice_scatter(
    input: Tensor, src: Tensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1
) -> Tensor:
    """``input`` with the slice ``start:end:step`` along ``dim`` replaced by ``src``."""
    key = _slice_key(input, dim, start, end, step)
    return _scatter_into(input, src, lambda t: t[key], "slice_scatter")


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``input`` with ``input.diagonal(offset, dim1, dim2)`` replaced by ``src``."""
    return _scatter_into(input, src, lambda t: t.diagonal(offset, dim1, dim2), "diagonal_scatter")


def as_strided_scatter(
    input: Tensor, src: Tensor, size: Sequence[int], stride: Sequence[int], storage_offset: int | None = None
) -> Tensor:
    """``input`` (as its contiguous storage) with ``as_strided(size, stride, storage_offset)`` replaced by ``src``."""
    return _scatter_into(input, src, lambda t: _as_strided(t, size, stride, storage_offset), "as_strided_scatter")


def _unsafe_pieces(input: Tensor, sizes: Sequence[int], dim: int) -> tuple[Tensor, ...]:
    """Views made one by one with ``narrow``: unlike ``split``'s, each may be written in place in grad mode."""
    out, start = [], 0
    for s in sizes:
        out.append(input.narrow(dim, start, s))
        start += s
    return tuple(out)


def unsafe_split(input: Tensor, split_size: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``split`` whose pieces autograd lets you write in place (PyTorch's "unsafe": no multi-output check)."""
    n = input.shape[dim]
    if split_size <= 0:
        raise ValueError(f"unsafe_split: split_size must be positive, got {split_size}")
    sizes = [builtins.min(split_size, n - i) for i in builtins.range(0, n, split_size)] or [0]
    return _unsafe_pieces(input, sizes, dim)


def unsafe_split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """:func:`split_with_sizes` whose pieces may be written in place in grad mode."""
    input.split_with_sizes(split_sizes, dim)  # the same checks
    return _unsafe_pieces(input, [int(s) for s in split_sizes], dim)


def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``chunk`` whose pieces may be written in place in grad mode."""
    if chunks <= 0:
        raise ValueError(f"unsafe_chunk: chunks must be positive, got {chunks}")
    n = input.shape[dim]
    size = -(-n // chunks) if n else 0
    return unsafe_split(input, size, dim) if size else (input.narrow(dim, 0, 0),) * builtins.min(chunks, 1)


_COMPLEX_OF = {"float32": "complex64", "float64": "complex128"}
_REAL_OF = {"complex64": "float32", "complex128": "float64"}


class _AsReal(_views.Step):
    """``view_as_real``: a complex tensor seen as real pairs along a new last axis of 2."""

    __slots__ = ()

    def apply(self, device: Any, a: Any) -> Any:
        xp = device.xp
        return xp.stack([xp.real(a), xp.imag(a)], axis=-1)

    def op(self, t: Tensor) -> Tensor:
        from lucid_core.ops.complex import Imag, Real

        return lc.stack([Real.apply(t), Imag.apply(t)], axis=-1)

    def scatter(self, device: Any, a: Any, piece: Any) -> Any:
        xp = device.xp
        return xp.astype(piece[..., 0], a.dtype) + xp.astype(piece[..., 1], a.dtype) * 1j

    def layout(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> tuple[Any, Any, int]:
        return (*shape, 2), (*(2 * s for s in strides), 1), 2 * offset


class _AsComplex(_views.Step):
    """``view_as_complex``: real pairs along a last axis of 2 seen as complex numbers."""

    __slots__ = ()

    def apply(self, device: Any, a: Any) -> Any:
        xp = device.xp
        dtype = getattr(xp, _COMPLEX_OF[str(device.backend.lucid_dtype(a.dtype).name)])
        return xp.astype(a[..., 0], dtype) + xp.astype(a[..., 1], dtype) * 1j

    def op(self, t: Tensor) -> Tensor:
        dtype = getattr(lc, _COMPLEX_OF[t.dtype.name])
        return t[..., 0].astype(dtype) + t[..., 1].astype(dtype) * 1j

    def scatter(self, device: Any, a: Any, piece: Any) -> Any:
        xp = device.xp
        return xp.astype(xp.stack([xp.real(piece), xp.imag(piece)], axis=-1), a.dtype)

    def layout(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> tuple[Any, Any, int]:
        return shape[:-1], tuple(s // 2 for s in strides[:-1]), offset // 2


def view_as_real(input: Tensor) -> Tensor:
    """A real view of a complex tensor, real and imaginary parts along a new last axis of 2 (writes land in
    ``input``)."""
    if input.dtype.kind != "c":
        raise TypeError(f"view_as_real is only supported for complex tensors, got {input.dtype.name}")
    step = _AsReal()
    return _views.make_view(step.op(input), input, step)


@autocast_op("view_as_complex")
def view_as_complex(input: Tensor) -> Tensor:
    """A complex view of a float32/float64 tensor whose last axis is 2 and has stride 1 (writes land in ``input``)."""
    if input.dtype.name not in _COMPLEX_OF:
        raise TypeError(f"view_as_complex is only supported for float32 and float64 tensors, got {input.dtype.name}")
    if input.ndim == 0 or input.shape[-1] != 2:
        raise ValueError(f"view_as_complex: tensor must have a last dimension of size 2, got shape {input.shape}")
    strides, offset = input.stride(), input.storage_offset()
    if strides[-1] != 1:
        raise ValueError(f"view_as_complex: tensor must have a last dimension with stride 1, got strides {strides}")
    if any(s % 2 for s in strides[:-1]) or offset % 2:
        raise ValueError(
            f"view_as_complex: tensor must have a stride divisible by 2 for all but last dimension and an even "
            f"storage offset, got strides {strides} and offset {offset}"
        )
    step = _AsComplex()
    return _views.make_view(step.op(input), input, step)


def detach(input: Tensor) -> Tensor:
    """``input.detach()``: the same storage, out of the graph."""
    return input.detach()


def detach_(input: Tensor) -> Tensor:
    """``input.detach_()``: cut ``input`` from its graph, in place."""
    return input.detach_()


def fill(input: Tensor, value: Any) -> Tensor:
    """A new tensor of ``input``'s shape, dtype and device, every element ``value`` (a number or 0-d tensor,
    differentiable)."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise ValueError(f"fill: value must be a number or a 0-d tensor, got shape {value.shape}")
        return value.to(input.device).astype(input.dtype).expand(*input.shape).clone()
    return lc.full(input.shape, value, dtype=input.dtype, device=input.device)


def fill_(input: Tensor, value: Any) -> Tensor:
    """``input.fill_(value)``."""
    return input.fill_(value)


def zero_(input: Tensor) -> Tensor:
    """``input.zero_()``."""
    return input.zero_()


# -- 3. typed tensor and storage classes ----------------------------------------------------------------------
class _TensorType(type):
    """The metaclass of ``lucid.FloatTensor`` & co.: calling one makes a tensor of its dtype, ``isinstance``
    is true only for CPU tensors of that dtype (PyTorch's legacy tensor types)."""

    _dtype: Any

    def __call__(cls, *args: Any, device: Any = None) -> Tensor:
        dtype = cls._dtype
        if len(args) == 1 and isinstance(args[0], Tensor):
            if args[0].dtype is not dtype:
                raise TypeError(f"{cls.__name__}: expected a tensor of dtype {dtype.name}, got {args[0].dtype.name}")
            return args[0].detach()
        if len(args) == 1 and not isinstance(args[0], int) and not isinstance(args[0], _Size):
            return _creation.tensor(args[0], dtype=dtype, device=device)  # data
        shape = tuple(args[0]) if len(args) == 1 and isinstance(args[0], _Size) else args
        if not all(isinstance(s, int) for s in shape):
            raise TypeError(f"{cls.__name__}(): expected sizes (ints) or data, got {args!r}")
        return lc.empty(shape if shape else (0,), dtype=dtype, device=device)  # uninitialised, as PyTorch's

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls._dtype and obj.device.type == "cpu"

    def __repr__(cls) -> str:
        return f"<class 'lucid.{cls.__name__}'>"


def _tensor_type(name: str, dtype: Any) -> Any:
    cls = _TensorType(name, (), {"_dtype": dtype, "__module__": "lucid", "__doc__": f"A CPU tensor of {dtype.name}."})
    return cls


FloatTensor = _tensor_type("FloatTensor", lc.float32)
DoubleTensor = _tensor_type("DoubleTensor", lc.float64)
HalfTensor = _tensor_type("HalfTensor", lc.float16)
BFloat16Tensor = _tensor_type("BFloat16Tensor", lc.bfloat16)
LongTensor = _tensor_type("LongTensor", lc.int64)
IntTensor = _tensor_type("IntTensor", lc.int32)
ShortTensor = _tensor_type("ShortTensor", lc.int16)
CharTensor = _tensor_type("CharTensor", lc.int8)
ByteTensor = _tensor_type("ByteTensor", lc.uint8)
BoolTensor = _tensor_type("BoolTensor", lc.bool)
_TENSOR_TYPES = {
    c.__name__: c
    for c in (FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor, LongTensor, IntTensor, ShortTensor, CharTensor,
              ByteTensor, BoolTensor)
}  # fmt: skip


def _type_name(t: Tensor) -> str:
    name = _runtime.typename(t)  # "lucid.FloatTensor"
    return name if t.device.type == "cpu" else name.replace("lucid.", f"lucid.{t.device.type}.", 1)


def _tensor_type_method(self: Tensor, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    """``x.type()``: the type's name (``'lucid.FloatTensor'``); ``x.type(lucid.DoubleTensor)`` (or its name,
    ``'torch.…'`` accepted, or a dtype): ``x`` cast to it (``x`` itself when it already is)."""
    if dtype is None:
        return _type_name(self)
    if isinstance(dtype, str):
        short = dtype.rsplit(".", 1)[-1]
        if dtype.split(".")[0] not in ("lucid", "torch") or short not in _TENSOR_TYPES or dtype.count(".") != 1:
            raise ValueError(f"type: invalid type {dtype!r}; expected e.g. 'lucid.FloatTensor' (CPU types only)")
        dtype = _TENSOR_TYPES[short]
    target = dtype._dtype if isinstance(dtype, _TensorType) else dtype
    if not isinstance(target, lc.DType):
        raise TypeError(f"type: expected a tensor type, its name or a dtype, got {dtype!r}")
    if target is self.dtype and (not isinstance(dtype, _TensorType) or self.device.type == "cpu"):
        return self
    out = self.astype(target)
    return out.to("cpu") if isinstance(dtype, _TensorType) and out.device.type != "cpu" else out


if not hasattr(Tensor, "type"):
    Tensor.type = _tensor_type_method  # type: ignore[attr-defined]


def set_default_tensor_type(t: Any) -> None:
    """Make ``t`` (``lucid.DoubleTensor`` or ``'torch.DoubleTensor'``, a floating type) the default float type
    (PyTorch's deprecated spelling of ``set_default_dtype``)."""
    if isinstance(t, str):
        t = _TENSOR_TYPES.get(t.rsplit(".", 1)[-1], t)
    if not isinstance(t, _TensorType) or t._dtype.kind != "f":
        raise TypeError(f"set_default_tensor_type: only floating-point types are supported as the default, got {t!r}")
    lc.set_default_dtype(t._dtype)


class TypedStorage:
    """A flat storage of elements of one dtype: ``lucid.FloatStorage(3)`` (uninitialised) or
    ``lucid.FloatStorage([1.0, 2.0])``.

    Lucid exposes what it can answer honestly: ``size()``, ``element_size()``, ``nbytes()``, ``data_ptr()``,
    ``tolist()``, ``dtype``, ``len()`` and ``untyped()``. Storages cannot be resized, shared between
    processes or set into tensors (``Tensor.set_``), so those methods are absent.
    """

    def __init__(self, *args: Any, dtype: Any = None, device: Any = None) -> None:
        dtype = dtype if dtype is not None else lc.get_default_dtype()
        if len(args) == 1 and isinstance(args[0], Tensor):
            data = args[0].detach().reshape(-1).astype(dtype)
        elif len(args) == 1 and not isinstance(args[0], int):
            data = _creation.tensor(list(args[0]), dtype=dtype, device=device).reshape(-1)
        elif len(args) <= 1:
            data = lc.empty((args[0] if args else 0,), dtype=dtype, device=device)
        else:
            raise TypeError(f"TypedStorage: expected a size or a sequence of values, got {args!r}")
        self._data = data

    @property
    def dtype(self) -> Any:
        """The element dtype."""
        return self._data.dtype

    @property
    def device(self) -> Any:
        """The device the elements live on."""
        return self._data.device

    def size(self) -> int:
        """The number of elements."""
        return int(self._data.shape[0])

    def __len__(self) -> int:
        return self.size()

    def element_size(self) -> int:
        """Bytes per element."""
        return self._data.dtype.itemsize

    def nbytes(self) -> int:
        """The size in bytes."""
        return self.size() * self.element_size()

    def data_ptr(self) -> int:
        """The storage's address (see ``Tensor.data_ptr``: a stable identity, not a memory address)."""
        return self._data.data_ptr()

    def tolist(self) -> list[Any]:
        """The elements as Python numbers."""
        return self._data.tolist()

    def untyped(self) -> Any:
        """The untyped (byte) storage beneath."""
        return self._data.untyped_storage()

    def __repr__(self) -> str:
        return f"{self.tolist()}\n[lucid.storage.TypedStorage(dtype={self.dtype.name}, size={self.size()})]"


class _StorageType(type):
    """The metaclass of ``lucid.FloatStorage`` & co.: a :class:`TypedStorage` of a fixed dtype."""

    _dtype: Any

    def __call__(cls, *args: Any, device: Any = None) -> TypedStorage:
        return TypedStorage(*args, dtype=cls._dtype, device=device)

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, TypedStorage) and obj.dtype is cls._dtype


def _storage_type(name: str, dtype: Any) -> Any:
    return _StorageType(name, (), {"_dtype": dtype, "__module__": "lucid", "__doc__": f"A storage of {dtype.name}."})


FloatStorage = _storage_type("FloatStorage", lc.float32)
DoubleStorage = _storage_type("DoubleStorage", lc.float64)
HalfStorage = _storage_type("HalfStorage", lc.float16)
BFloat16Storage = _storage_type("BFloat16Storage", lc.bfloat16)
LongStorage = _storage_type("LongStorage", lc.int64)
IntStorage = _storage_type("IntStorage", lc.int32)
ShortStorage = _storage_type("ShortStorage", lc.int16)
CharStorage = _storage_type("CharStorage", lc.int8)
ByteStorage = _storage_type("ByteStorage", lc.uint8)
BoolStorage = _storage_type("BoolStorage", lc.bool)
ComplexFloatStorage = _storage_type("ComplexFloatStorage", lc.complex64)
ComplexDoubleStorage = _storage_type("ComplexDoubleStorage", lc.complex128)
Storage = TypedStorage  # PyTorch's ``torch.Storage`` is its float storage class; any typed storage here


class _UntypedStorageType(type):
    """``lucid.UntypedStorage(n)`` makes ``n`` bytes; ``isinstance(x.untyped_storage(), lucid.UntypedStorage)``."""

    def __call__(cls, nbytes: int = 0, *, device: Any = None) -> Any:
        if not isinstance(nbytes, int) or nbytes < 0:
            raise TypeError(f"UntypedStorage: expected a number of bytes (int >= 0), got {nbytes!r}")
        return lc.empty((nbytes,), dtype=lc.uint8, device=device).untyped_storage()

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, _CoreUntypedStorage)


UntypedStorage = _UntypedStorageType(
    "UntypedStorage", (), {"__module__": "lucid", "__doc__": "A tensor's storage in bytes (``x.untyped_storage()``)."}
)


# -- 4. memory formats ----------------------------------------------------------------------------------------
class memory_format:  # noqa: N801 - PyTorch's name
    """How a 4-D/5-D tensor's elements are laid out in its storage (``lucid.channels_last``...).

    ``x.contiguous(memory_format=lucid.channels_last)`` and ``x.to(memory_format=...)`` return a tensor whose
    storage holds NHWC (NDHWC) order, as PyTorch's: ``stride()`` and ``is_contiguous(memory_format=)`` report
    it, and every op gives the same numbers in any format. Ops' results are contiguous (PyTorch keeps
    channels-last through most ops; the values are the same). ``Module.to(memory_format=)`` is accepted and
    keeps the parameters' layout as it is (the numbers do not change; ``is_contiguous`` tells the truth).
    """

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"lucid.{self._name}"

    def __reduce__(self) -> str:
        return self._name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
legacy_contiguous_format = memory_format("legacy_contiguous_format")

# the axis orders, slowest to fastest, that channels-last formats keep in memory
_ORDERS = {channels_last: (0, 2, 3, 1), channels_last_3d: (0, 2, 3, 4, 1)}


def _check_format(fmt: Any, name: str) -> None:
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{name}: memory_format must be a lucid.memory_format, got {fmt!r}")


def _is_format_contiguous(t: Tensor, fmt: Any) -> bool:
    """PyTorch's test: along the format's axis order from fastest to slowest, strides grow as the sizes' product
    (axes of length 1 do not count)."""
    order = _ORDERS[fmt]
    if t.ndim != len(order):
        return False
    shape, strides = t.shape, t.stride()
    expected = 1
    for d in reversed(order):
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def _suggest_format(t: Tensor) -> Any:
    """The format ``t`` is held in (preserve_format's choice): channels-last when it is and C order is not."""
    for fmt in (channels_last, channels_last_3d):
        if t.ndim == len(_ORDERS[fmt]) and _is_format_contiguous(t, fmt) and not _ORIGINAL["is_contiguous"](t):
            return fmt
    return contiguous_format


def _in_format(t: Tensor, fmt: Any, name: str) -> Tensor:
    """``t`` laid out in ``fmt`` (itself when it already is); differentiable."""
    _check_format(fmt, name)
    if fmt is preserve_format:
        return t
    if fmt in (contiguous_format, legacy_contiguous_format):
        return _ORIGINAL["contiguous"](t)
    order = _ORDERS[fmt]
    if t.ndim != len(order):
        raise ValueError(f"{name}: {fmt!r} needs a tensor of {len(order)} dimensions, got shape {t.shape}")
    if _is_format_contiguous(t, fmt):
        return t
    inverse = [order.index(i) for i in builtins.range(len(order))]
    return t.permute(*order).clone().permute(*inverse)  # a contiguous NHWC storage, seen as NCHW


_ORIGINAL: dict[str, Any] = {
    "contiguous": Tensor.contiguous,
    "is_contiguous": Tensor.is_contiguous,
    "to": Tensor.to,
}


def _contiguous(self: Tensor, memory_format: Any = contiguous_format) -> Tensor:
    """The tensor laid out in ``memory_format`` (C order by default): itself when it already is, else a copy."""
    if memory_format is preserve_format:
        raise ValueError("contiguous: preserve memory format is unsupported by the contiguous operator")
    return _in_format(self, contiguous_format if memory_format is None else memory_format, "contiguous")


def _is_contiguous(self: Tensor, memory_format: Any = contiguous_format) -> bool:
    """Whether the elements lie in the storage in ``memory_format``'s order (C order by default)."""
    if memory_format is None:  # lucid_core's own default
        memory_format = contiguous_format
    _check_format(memory_format, "is_contiguous")
    if memory_format in (contiguous_format, legacy_contiguous_format):
        return _ORIGINAL["is_contiguous"](self)
    if memory_format is preserve_format:
        raise ValueError("is_contiguous: preserve_format is not a layout to test against")
    return _is_format_contiguous(self, memory_format)


def _to(self: Tensor, *args: Any, memory_format: Any = preserve_format, **kwargs: Any) -> Tensor:
    """``Tensor.to`` with PyTorch's ``memory_format=`` (preserve by default)."""
    out = _ORIGINAL["to"](self, *args, **kwargs)
    return out if memory_format is preserve_format else _in_format(out, memory_format, "to")


for _name, _fn in (("contiguous", _contiguous), ("is_contiguous", _is_contiguous), ("to", _to)):
    _fn.__name__ = _name
    _fn.__qualname__ = f"Tensor.{_name}"
    setattr(Tensor, _name, _fn)


def _like(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """``fn`` (a ``*_like`` creator) with PyTorch's ``memory_format=`` (preserve: the input's layout)."""

    def like(input: Tensor, *args: Any, memory_format: Any = preserve_format, **kwargs: Any) -> Tensor:
        _check_format(memory_format, fn.__name__)
        out = fn(input, *args, **kwargs)
        fmt = _suggest_format(input) if memory_format is preserve_format else memory_format
        return out if fmt in (contiguous_format, legacy_contiguous_format) else _in_format(out, fmt, fn.__name__)

    like.__name__ = like.__qualname__ = fn.__name__
    like.__doc__ = f"{fn.__doc__}\n\n``memory_format=`` lays the result out as PyTorch's (the input's by default)."
    return like


empty_like = _like(getattr(_functions, "empty_like", lc.empty_like))
zeros_like = _like(getattr(_functions, "zeros_like", lc.zeros_like))
ones_like = _like(getattr(_functions, "ones_like", lc.ones_like))
full_like = _like(getattr(_functions, "full_like", lc.full_like))


# -- 5. switches and queries ----------------------------------------------------------------------------------
class _Switches:
    matmul_precision = "highest"
    warn_always = False
    interop_threads: int | None = None


def set_float32_matmul_precision(precision: str) -> None:
    """Record ``'highest'``, ``'high'`` or ``'medium'``. Lucid always multiplies float32 in float32 (no TF32 or
    bfloat16 passes), so ``'high'`` and ``'medium'`` give the same results as ``'highest'``."""
    if precision not in ("highest", "high", "medium"):
        raise ValueError(f"set_float32_matmul_precision: expected 'highest', 'high' or 'medium', got {precision!r}")
    _Switches.matmul_precision = precision


def get_float32_matmul_precision() -> str:
    """The value last given to :func:`set_float32_matmul_precision` (``'highest'`` at start)."""
    return _Switches.matmul_precision


def set_flush_denormal(mode: bool) -> bool:
    """Whether flushing denormal floats to zero could be switched: never here (the backends' kernels keep
    denormals), so this returns False and changes nothing, as PyTorch does on CPUs without the feature."""
    if not isinstance(mode, builtins.bool):
        raise TypeError(f"set_flush_denormal: mode must be a bool, got {type(mode).__name__}")
    return False


def set_warn_always(b: bool) -> None:
    """When True, Lucid's warnings are shown every time instead of once per place (a ``warnings`` filter on
    the ``lucid*`` modules); False removes that filter."""
    _Switches.warn_always = builtins.bool(b)
    warnings.filters[:] = [f for f in warnings.filters if f is not _WARN_ALWAYS_FILTER]
    if b:
        warnings.filters.insert(0, _WARN_ALWAYS_FILTER)
        warnings._filters_mutated()  # type: ignore[attr-defined] - what warnings.filterwarnings calls itself


def is_warn_always_enabled() -> bool:
    """Whether :func:`set_warn_always` was last called with True."""
    return _Switches.warn_always


_WARN_ALWAYS_FILTER = ("always", None, Warning, __import__("re").compile(r"lucid"), 0)


def get_num_interop_threads() -> int:
    """The size PyTorch would give its inter-op pool (the CPU count unless set). Lucid runs independent ops one
    after another on the calling thread, so the number is recorded, not used."""
    return _Switches.interop_threads if _Switches.interop_threads is not None else (os.cpu_count() or 1)


def set_num_interop_threads(num: int) -> None:
    """Record the inter-op thread count (see :func:`get_num_interop_threads`); once only, as PyTorch allows."""
    if not isinstance(num, int) or num <= 0:
        raise ValueError(f"set_num_interop_threads: expected a positive int, got {num!r}")
    if _Switches.interop_threads is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has started or "
                           "set_num_interop_threads called")  # fmt: skip
    _Switches.interop_threads = num


def init_num_threads() -> None:
    """Initialise the thread pools: Lucid's backends start theirs themselves, so there is nothing to do."""


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode: int | str) -> None:
    """0/``'default'``, 1/``'warn'``, 2/``'error'``: ``use_deterministic_algorithms`` off, warn-only, on."""
    mode = _DEBUG_MODES.get(debug_mode, debug_mode) if isinstance(debug_mode, str) else debug_mode
    if mode not in (0, 1, 2):
        raise ValueError(
            f"set_deterministic_debug_mode: expected 0, 1, 2 or 'default', 'warn', 'error', got {debug_mode!r}"
        )
    _runtime.use_deterministic_algorithms(mode > 0, warn_only=mode == 1)


def get_deterministic_debug_mode() -> int:
    """0, 1 or 2, from the state of ``use_deterministic_algorithms``."""
    if not _runtime.are_deterministic_algorithms_enabled():
        return 0
    return 1 if _runtime.is_deterministic_algorithms_warn_only_enabled() else 2


def conj_physical_(input: Tensor) -> Tensor:
    """``torch.conj_physical_``: the method ``input.conj_physical_()`` (the op table's), as a function."""
    return input.conj_physical_()


def compiled_with_cxx11_abi() -> bool:
    """False: Lucid is pure Python and has no C++ library to link extensions against."""
    return False


def scalar_tensor(
    s: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False, **_unused: Any
) -> Tensor:
    """A 0-d tensor holding ``s``, of the default float dtype unless ``dtype`` is given (even for an int)."""
    out = lc.asarray(s, dtype=dtype or lc.get_default_dtype(), device=device)
    return out.requires_grad_(True) if requires_grad else out


def _numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


def empty_strided(
    size: Sequence[int],
    stride: Sequence[int],
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    **_unused: Any,
) -> Tensor:
    """An uninitialised tensor of ``size`` whose elements lie ``stride`` apart in a storage of its own."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride) or any(s < 0 for s in (*size, *stride)):
        raise ValueError(f"empty_strided: size {size} and stride {stride} must be as long and non-negative")
    extent = 0 if 0 in size else 1 + sum((n - 1) * st for n, st in zip(size, stride))
    out = lc.empty((extent,), dtype=dtype or lc.get_default_dtype(), device=device).as_strided(size, stride, 0)
    return out.requires_grad_(True) if requires_grad else out


def empty_permuted(
    size: Sequence[int],
    physical_layout: Sequence[int],
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    **_unused: Any,
) -> Tensor:
    """An uninitialised tensor of ``size`` held in memory with its axes in ``physical_layout`` order."""
    order = [int(d) for d in physical_layout]
    if sorted(order) != list(builtins.range(len(size))):
        raise ValueError(f"empty_permuted: physical_layout {order} is not a permutation of {len(size)} dims")
    held = lc.empty(tuple(size[d] for d in order), dtype=dtype or lc.get_default_dtype(), device=device)
    out = held.permute(*[order.index(i) for i in builtins.range(len(order))])
    return out.requires_grad_(True) if requires_grad else out


def from_file(
    filename: str,
    shared: bool | None = None,
    size: int = 0,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    **_unused: Any,
) -> Tensor:
    """The first ``size`` elements of ``dtype`` stored in the binary file ``filename`` (machine byte order).

    ``shared=True`` (writes going back to the file through a memory map) is not supported.
    """
    if shared:
        raise NotImplementedError("from_file: shared=True (a tensor mapped onto the file) is not supported by Lucid")
    dtype = dtype or lc.get_default_dtype()
    nbytes = size * dtype.itemsize
    with open(filename, "rb") as f:
        data = f.read(nbytes)
    if len(data) < nbytes:
        raise RuntimeError(f"from_file: {filename} holds {len(data)} bytes, {nbytes} are needed for {size} elements")
    out = _functions_or_core("frombuffer")(bytearray(data), dtype=dtype) if size else lc.empty((0,), dtype=dtype)
    if device is not None:
        out = out.to(device)
    return out.requires_grad_(True) if requires_grad else out


def _functions_or_core(name: str) -> Any:
    import lucid

    return getattr(lucid, name)


def to_dlpack(tensor: Tensor) -> Any:
    """A DLPack capsule of ``tensor``'s data, for ``from_dlpack`` of another library (no copy where it can)."""
    return tensor.detach().__dlpack__()


def range(
    start: Any = 0,
    end: Any = None,
    step: Any = 1,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    **_unused: Any,
) -> Tensor:
    """Deprecated: ``start, start + step, ...`` up to and including ``end``, of the default float dtype.

    Use ``arange`` (which stops before ``end``); PyTorch warns the same way.
    """
    warnings.warn(
        "lucid.range is deprecated and will be removed in a future release because its behavior is inconsistent "
        "with Python's range builtin. Instead, use lucid.arange, which produces values in [start, end).",
        UserWarning,
        stacklevel=2,
    )
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("range: step must be nonzero")
    n = math.floor((end - start) / step) + 1
    if n < 0:
        raise ValueError(f"range: upper bound and larger bound inconsistent with step sign ({start}, {end}, {step})")
    dtype = dtype or lc.get_default_dtype()
    steps = lc.arange(n, dtype=lc.float64 if dtype.kind == "f" else lc.int64, device=device)
    out = (steps * step + start).astype(dtype)
    return out.requires_grad_(True) if requires_grad else out


def logspace(
    start: Any,
    end: Any,
    steps: int,
    base: float = 10.0,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    **_unused: Any,
) -> Tensor:
    """``steps`` values from ``base ** start`` to ``base ** end``, evenly spaced in the exponent."""
    dtype = dtype or lc.get_default_dtype()
    exps = lc.linspace(builtins.float(start), builtins.float(end), steps, dtype=lc.float64, device=device)
    out = (base**exps).astype(dtype)
    return out.requires_grad_(True) if requires_grad else out


def complex(real: Tensor, imag: Tensor) -> Tensor:
    """``real + imag * 1j`` (float32 -> complex64, float64 -> complex128); differentiable in both."""
    if real.dtype is not imag.dtype or real.dtype.name not in _COMPLEX_OF:
        raise TypeError(
            f"complex: expected real and imag of the same float32 or float64 dtype, got {real.dtype.name} and "
            f"{imag.dtype.name}"
        )
    dtype = getattr(lc, _COMPLEX_OF[real.dtype.name])
    return real.astype(dtype) + imag.astype(dtype) * 1j


@autocast_op("polar")
def polar(abs: Tensor, angle: Tensor) -> Tensor:
    """``abs * (cos(angle) + 1j * sin(angle))``; differentiable in both."""
    return complex(abs * lc.cos(angle), abs * lc.sin(angle))


def frexp(input: Tensor) -> tuple[Tensor, Tensor]:
    """``(mantissa, exponent)`` with ``input = mantissa * 2 ** exponent`` and ``0.5 <= |mantissa| < 1``
    (zero, inf and nan: the value itself and exponent 0); the exponent is int32."""
    if input.dtype.kind != "f":
        raise TypeError(f"frexp: only floating-point tensors are supported, got {input.dtype.name}")
    x = input.detach()
    finite = lc.isfinite(x) & (x != 0)
    safe = lc.where(finite, lc.abs(x), lc.ones_like(x))
    e = lc.floor(lc.log2(safe.astype(lc.float64))) + 1.0
    m = safe.astype(lc.float64) / 2.0**e
    e = lc.where(m >= 1.0, e + 1.0, lc.where(m < 0.5, e - 1.0, e))  # log2's rounding near powers of two
    exponent = lc.where(finite, e, lc.zeros_like(e)).astype(lc.int32)
    return input / (2.0 ** exponent.astype(input.dtype)), exponent


def _check_integer(a: Tensor, b: Tensor, name: str) -> None:
    if a.dtype.kind not in "iu" or b.dtype.kind not in "iu":
        raise TypeError(f"{name}: expected integer tensors, got {a.dtype.name} and {b.dtype.name}")


def gcd(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise greatest common divisor (non-negative; ``gcd(0, 0) = 0``) of integer tensors."""
    _check_integer(input, other, "gcd")
    a, b = lc.broadcast_arrays(lc.abs(input), lc.abs(other))
    a, b = a.astype(lc.result_type(input, other)), b.astype(lc.result_type(input, other))
    while builtins.bool((b != 0).any()):
        nonzero = b != 0
        r = lc.where(nonzero, a % lc.where(nonzero, b, lc.ones_like(b)), lc.zeros_like(b))
        a, b = lc.where(nonzero, b, a), r
    return a


def gcd_(input: Tensor, other: Tensor) -> Tensor:
    """:func:`gcd`, written into ``input``."""
    return _write(input, gcd(input, other))


def lcm(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise least common multiple (non-negative; 0 when either is 0) of integer tensors."""
    g = gcd(input, other)
    safe = lc.where(g == 0, lc.ones_like(g), g)
    return lc.abs(input // safe * other).astype(g.dtype)


def lcm_(input: Tensor, other: Tensor) -> Tensor:
    """:func:`lcm`, written into ``input``."""
    return _write(input, lcm(input, other))


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """``input`` seen as 1-D with ``source`` written (or added, ``accumulate``) at ``index``; out of place."""
    n = input.size
    idx = index.reshape(-1).astype(lc.int64)
    if idx.size and builtins.bool(((idx < -n) | (idx >= n)).any()):
        raise IndexError(f"put: index out of range for a tensor of {n} elements")
    idx = lc.where(idx < 0, idx + n, idx)
    src = source.reshape(-1).astype(input.dtype)
    if src.size != idx.size:
        raise ValueError(f"put: source has {src.size} elements but index has {idx.size}")
    flat = input.reshape(-1)
    out = flat.index_add(0, idx, src) if accumulate else flat.clone().index_put_((idx,), src)
    return out.reshape(input.shape)


def index_reduce(
    input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *, include_self: bool = True
) -> Tensor:
    """Reduce the slices of ``source`` into ``input``'s slices ``index`` along ``dim`` with ``reduce``
    (``'prod'``, ``'mean'``, ``'amax'``, ``'amin'``); ``include_self`` counts ``input``'s own values."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise ValueError(f"index_reduce: reduce must be 'prod', 'mean', 'amax' or 'amin', got {reduce!r}")
    d = dim + input.ndim if dim < 0 else dim
    if index.ndim != 1 or index.shape[0] != source.shape[d]:
        raise ValueError(f"index_reduce: index must be 1-D with one entry per slice of source along {dim}")
    shape = [1] * source.ndim
    shape[d] = -1
    full_index = index.astype(lc.int64).reshape(shape).expand(*source.shape)
    return input.scatter_reduce(d, full_index, source, reduce, include_self=include_self)


def sym_float(a: Any) -> float:
    """``float(a)`` (PyTorch's symbolic-shape helper, on plain numbers)."""
    return builtins.float(a)


def sym_int(a: Any) -> int:
    """``a`` rounded toward zero to an int."""
    return math.trunc(a)


def sym_max(a: Any, b: Any) -> Any:
    """The larger of two numbers (a float when either is one)."""
    out = builtins.max(a, b)
    return builtins.float(out) if isinstance(a, builtins.float) or isinstance(b, builtins.float) else out


def sym_min(a: Any, b: Any) -> Any:
    """The smaller of two numbers (a float when either is one)."""
    out = builtins.min(a, b)
    return builtins.float(out) if isinstance(a, builtins.float) or isinstance(b, builtins.float) else out


def sym_not(a: Any) -> bool:
    """``not a``."""
    return not a


def sym_ite(b: Any, t: Any, f: Any) -> Any:
    """``t if b else f``."""
    return t if b else f


def sym_sqrt(a: Any) -> float:
    """``math.sqrt(a)``."""
    return math.sqrt(a)


def sym_sum(args: Sequence[Any]) -> Any:
    """``sum(args)``."""
    return builtins.sum(args)


class _Symbolic:
    """Base of PyTorch's symbolic numbers. Lucid traces no symbolic shapes, so none is ever made: the classes
    exist so that ``isinstance(n, lucid.SymInt)`` answers False for plain numbers, as PyTorch's does."""

    def __init__(self, node: Any) -> None:
        raise TypeError(f"{type(self).__name__}: Lucid has no symbolic shapes (no symbolic node to wrap)")


class SymInt(_Symbolic):
    """A symbolic integer (never made by Lucid)."""


class SymFloat(_Symbolic):
    """A symbolic float (never made by Lucid)."""


class SymBool(_Symbolic):
    """A symbolic bool (never made by Lucid)."""


Tag = enum.Enum(
    "Tag",
    [
        "core", "cudagraph_unsafe", "data_dependent_output", "dynamic_output_shape", "flexible_layout", "generated",
        "inplace", "inplace_view", "maybe_aliasing_or_mutating", "needs_contiguous_strides", "needs_exact_strides",
        "needs_fixed_stride_order", "nondeterministic_bitwise", "nondeterministic_seeded", "out", "out_variant",
        "pointwise", "pt2_compliant_tag", "reduction", "view_copy",
    ],
    module="lucid",
)  # fmt: skip
Tag.__doc__ = "PyTorch's operator tags (``lucid.Tag.pointwise``...), for code that names them."


class Future:
    """The result of :func:`fork`: ``wait()``/``value()`` return it, ``done()`` says whether it is there,
    ``then(fn)`` chains. Outside TorchScript ``fork`` runs at once, so futures it returns are complete."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._value: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Future], Any]] = []

    def done(self) -> bool:
        """Whether a result or an error is set."""
        return self._done.is_set()

    def set_result(self, result: Any) -> None:
        """Complete the future with ``result``."""
        self._finish(result, None)

    def set_exception(self, error: BaseException) -> None:
        """Complete the future with ``error`` (raised by ``wait()``)."""
        self._finish(None, error)

    def _finish(self, value: Any, error: BaseException | None) -> None:
        if self.done():
            raise RuntimeError("Future: a result was already set")
        self._value, self._error = value, error
        self._done.set()
        for cb in self._callbacks:
            cb(self)

    def wait(self) -> Any:
        """Block until complete; the result (or raise the error)."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value

    value = wait

    def add_done_callback(self, callback: Callable[[Future], Any]) -> None:
        """Call ``callback(self)`` when complete (at once if it is)."""
        if self.done():
            callback(self)
        else:
            self._callbacks.append(callback)

    def then(self, callback: Callable[[Future], Any]) -> Future:
        """A future of ``callback(self)``, completed when this one is."""
        out = Future()

        def run(fut: Future) -> None:
            try:
                out.set_result(callback(fut))
            except Exception as e:  # noqa: BLE001 - the error belongs to the chained future
                out.set_exception(e)

        self.add_done_callback(run)
        return out


def fork(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
    """Run ``func(*args, **kwargs)`` now and return a completed :class:`Future` of its result (what
    ``torch.jit.fork`` does outside TorchScript; errors are raised here)."""
    fut = Future()
    fut.set_result(func(*args, **kwargs))
    return fut


def wait(future: Future) -> Any:
    """The result of a :class:`Future` (``torch.jit.wait``)."""
    return future.wait()


# -- the rest of the Tensor surface (methods installed on import) ---------------------------------------------
from ._tensor_surface import *  # noqa: E402, F403
from ._tensor_surface import __all__ as _surface_all  # noqa: E402

__all__ += _surface_all
