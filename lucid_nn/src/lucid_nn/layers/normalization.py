"""Normalisation layers: BatchNorm*, SyncBatchNorm, InstanceNorm*, LayerNorm, GroupNorm, RMSNorm, local response
normalisation."""

from __future__ import annotations

__all__ = [
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "SyncBatchNorm",
    "LocalResponseNorm",
    "CrossMapLRN2d",
    "LayerNorm",
    "GroupNorm",
    "RMSNorm",
]

from collections.abc import Sequence

import lucid_core as lc
from lucid_core import Parameter, Tensor

from .. import functional as F
from .. import init
from ..functional._misc import _cross_map_lrn2d
from ..module import Module


def _affine_parameters(
    module: Module, shape: tuple[int, ...], affine: bool, bias: bool | None, dtype: lc.DTypeLike, device: lc.DeviceLike
) -> None:
    """Register ``weight`` (ones) and ``bias`` (zeros) of ``shape``, or None placeholders, as PyTorch's norms do.

    ``bias=None`` means the layer has no bias at all (RMSNorm).
    """
    if affine:
        module.weight = Parameter(lc.ones(shape, dtype=dtype, device=device))
        if bias:
            module.bias = Parameter(lc.zeros(shape, dtype=dtype, device=device))
        elif bias is not None:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        if bias is not None:
            module.register_parameter("bias", None)


class _NormBase(Module):
    """Shared state of batch and instance norm: affine weight/bias and running statistics."""

    _expected_ndim: tuple[int, ...] = ()

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _affine_parameters(self, (num_features,), affine, bias, dtype, device)
        if track_running_stats:
            self.register_buffer("running_mean", lc.zeros((num_features,), dtype=dtype, device=device))
            self.register_buffer("running_var", lc.ones((num_features,), dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", lc.zeros((), dtype=lc.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with lc.no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1.0)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input(self, x: Tensor) -> None:
        if x.ndim not in self._expected_ndim:
            dims = " or ".join(f"{d}D" for d in self._expected_ndim)
            raise ValueError(f"{type(self).__name__}: expected {dims} input (got {x.ndim}D input)")

    def _momentum_factor(self) -> float:
        """This step's averaging factor; bumps ``num_batches_tracked`` (momentum None: cumulative mean)."""
        if not (self.training and self.track_running_stats):
            return 0.0 if self.momentum is None else self.momentum
        with lc.no_grad():
            self.num_batches_tracked.add_(1)
        if self.momentum is None:
            return 1.0 / int(self.num_batches_tracked.item())
        return self.momentum

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}"
        )


class _BatchNorm(_NormBase):
    def forward(self, x: Tensor) -> Tensor:
        self._check_input(x)
        momentum = self._momentum_factor()
        use_batch_stats = self.training or self.running_mean is None
        track = not self.training or self.track_running_stats
        return F.batch_norm(
            x,
            self.running_mean if track else None,
            self.running_var if track else None,
            self.weight,
            self.bias,
            use_batch_stats,
            momentum,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) inputs over the batch (and length) axes.

    Args:
        momentum: running-statistics update factor; None uses the cumulative average.
        affine: learn a per-channel scale and shift.
        track_running_stats: keep running mean/var for eval mode (else batch statistics always).
    """

    _expected_ndim = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) inputs; see :class:`BatchNorm1d`."""

    _expected_ndim = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of (N, C, D, H, W) inputs; see :class:`BatchNorm1d`."""

    _expected_ndim = (5,)


class _InstanceNorm(_NormBase):
    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        self._check_input(x)
        unbatched = x.ndim == self._expected_ndim[0]
        if unbatched:
            x = lc.expand_dims(x, axis=0)
        if x.shape[1] != self.num_features and self.affine:
            raise ValueError(
                f"{type(self).__name__}: expected input's size at dim=1 to match num_features "
                f"({self.num_features}), but got: {x.shape[1]}."
            )
        # as PyTorch: instance norm never counts batches, and momentum None means 0 (no running update)
        momentum = self.momentum if self.momentum is not None else 0.0
        use_input_stats = self.training or not self.track_running_stats
        y = F.instance_norm(
            x, self.running_mean, self.running_var, self.weight, self.bias, use_input_stats, momentum, self.eps
        )
        return y[0] if unbatched else y


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of (N, C, L) or (C, L) inputs (no affine, no running stats by default)."""

    _expected_ndim = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of (N, C, H, W) or (C, H, W) inputs (no affine, no running stats by default)."""

    _expected_ndim = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of (N, C, D, H, W) or (C, D, H, W) inputs."""

    _expected_ndim = (4, 5)


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation whose statistics PyTorch reduces across processes; here, within one process, it
    is :class:`BatchNorm1d`/``2d``/``3d`` on any (N, C, ...) input (``process_group`` is accepted)."""

    _expected_ndim = (2, 3, 4, 5)

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        process_group: object = None,
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: object = None) -> Module:
        """``module`` with every BatchNorm*d replaced by a SyncBatchNorm holding the same parameters and stats."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                      process_group)  # fmt: skip
            for store in ("_parameters", "_buffers"):
                for name, value in getattr(module, store).items():
                    getattr(out, store)[name] = value
            out.train(module.training)
        for name, child in module._modules.items():
            if child is not None:
                out._modules[name] = cls.convert_sync_batchnorm(child, process_group)
        return out


class LocalResponseNorm(Module):
    """x / (k + alpha * mean of x^2 over ``size`` neighbouring channels)^beta."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, x: Tensor) -> Tensor:
        return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(LocalResponseNorm):
    """PyTorch's legacy (Lua Torch) local response normalisation of (N, C, H, W) inputs: its channel window
    differs from :class:`LocalResponseNorm`'s, and is reproduced as PyTorch computes it."""

    def forward(self, x: Tensor) -> Tensor:
        return _cross_map_lrn2d(x, self.size, self.alpha, self.beta, self.k)


def _shape(normalized_shape: int | Sequence[int]) -> tuple[int, ...]:
    return (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` axes; elementwise weight (ones) and bias (zeros)."""

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
    ) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_parameters(self, self.normalized_shape, elementwise_affine, bias, dtype, device)

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
            f"bias={self.bias is not None}"
        )


class GroupNorm(Module):
    """Normalise each sample's channels in ``num_groups`` groups; per-channel weight (ones) and bias (zeros)."""

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine_parameters(self, (num_channels,), affine, bias, dtype, device)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ValueError(f"GroupNorm: expected input of shape (N, {self.num_channels}, ...), got {x.shape}")
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        bias = self.bias is not None
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, bias={bias}"


class RMSNorm(Module):
    """x / sqrt(mean(x**2) + eps) over the trailing axes, times a learned weight (ones)."""

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float | None = None,
        elementwise_affine: bool = True,
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
    ) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_parameters(self, self.normalized_shape, elementwise_affine, None, dtype, device)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
