"""Lazy layers: ``LazyLinear``, ``LazyConv*``, ``LazyConvTranspose*``, ``LazyBatchNorm*``, ``LazyInstanceNorm*``.

Each infers its input size (``in_features``, ``in_channels`` or ``num_features``) from the first input it is
called with, then resizes its parameters in place (the same Parameter objects, so hooks and references stay
valid), initialises them as the eager layer does and becomes that layer (``cls_to_become``), as in PyTorch.
Until then its parameters have a 0-sized input axis; build an optimizer only after a first (dry) call.
"""

from __future__ import annotations

__all__ = [
    "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
    "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
    "LazyInstanceNorm2d", "LazyInstanceNorm3d",
]  # fmt: skip

from collections.abc import Sequence
from typing import Any

import lucid_core as lc
from lucid_core import Tensor

from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
)


def _resize(t: Tensor | None, shape: tuple[int, ...]) -> None:
    """Give ``t`` new (uninitialised) storage of ``shape``, keeping the object (and its dtype and device)."""
    if t is not None:
        with lc.no_grad():
            t.data = lc.empty(shape, dtype=t.dtype, device=t.device)


class _LazyMixin:
    """Shared behaviour: ``has_uninitialized_params`` and materialising on the first call."""

    cls_to_become: type = object

    def has_uninitialized_params(self) -> bool:
        """True until the first call has fixed the input size."""
        return type(self) is not self.cls_to_become

    def _infer(self, x: Tensor) -> None:
        raise NotImplementedError

    def initialize_parameters(self, x: Tensor, *args: Any, **kwargs: Any) -> None:
        """Fix the input size from ``x``, allocate and initialise the parameters, and become the eager class."""
        if not isinstance(x, Tensor):
            raise TypeError(f"{type(self).__name__}: expected a Tensor input, got {type(x).__name__}")
        self._infer(x)
        self.reset_parameters()  # type: ignore[attr-defined]
        self.__class__ = self.cls_to_become

    def forward(self, x: Tensor, *args: Any, **kwargs: Any) -> Any:
        self.initialize_parameters(x)
        return self.forward(x, *args, **kwargs)  # now the eager class's forward


# -- linear ----------------------------------------------------------------------------------------------------
class LazyLinear(_LazyMixin, Linear):
    """:class:`Linear` whose ``in_features`` is the size of the first input's last axis."""

    cls_to_become = Linear

    def __init__(
        self, out_features: int, bias: bool = True, device: lc.DeviceLike = None, dtype: lc.DTypeLike = None
    ) -> None:
        super().__init__(0, out_features, bias, device, dtype)

    def reset_parameters(self) -> None:
        if self.in_features:
            Linear.reset_parameters(self)

    def _infer(self, x: Tensor) -> None:
        self.in_features = x.shape[-1] if x.ndim else 1
        _resize(self.weight, (self.out_features, self.in_features))


# -- convolutions ----------------------------------------------------------------------------------------------
class _LazyConvMixin(_LazyMixin):
    def reset_parameters(self) -> None:
        if self.in_channels:  # type: ignore[attr-defined]
            self.cls_to_become.reset_parameters(self)  # type: ignore[attr-defined]

    def _infer(self, x: Tensor) -> None:
        nd = self._nd  # type: ignore[attr-defined]
        if x.ndim not in (nd + 1, nd + 2):
            raise ValueError(f"{type(self).__name__}: expected a {nd + 1}-D or {nd + 2}-D input, got shape {x.shape}")
        c = x.shape[1] if x.ndim == nd + 2 else x.shape[0]
        g = self.groups  # type: ignore[attr-defined]
        if c % g:
            raise ValueError(f"{type(self).__name__}: in_channels ({c}) must be divisible by groups ({g})")
        self.in_channels = c
        out, k = self.out_channels, self.kernel_size  # type: ignore[attr-defined]
        shape = (c, out // g, *k) if self._transposed else (out, c // g, *k)  # type: ignore[attr-defined]
        _resize(self.weight, shape)  # type: ignore[attr-defined]


def _lazy_conv(base: type, nd: int) -> type:
    class _Lazy(_LazyConvMixin, base):  # type: ignore[misc, valid-type]
        cls_to_become = base

        def __init__(
            self,
            out_channels: int,
            kernel_size: int | Sequence[int],
            stride: int | Sequence[int] = 1,
            padding: str | int | Sequence[int] = 0,
            dilation: int | Sequence[int] = 1,
            groups: int = 1,
            bias: bool = True,
            padding_mode: str = "zeros",
            device: lc.DeviceLike = None,
            dtype: lc.DTypeLike = None,
        ) -> None:
            base.__init__(
                self, 0, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                device=device, dtype=dtype,
            )  # fmt: skip

    _Lazy.__name__ = _Lazy.__qualname__ = f"Lazy{base.__name__}"
    _Lazy.__doc__ = f":class:`{base.__name__}` whose ``in_channels`` comes from the first input."
    return _Lazy


def _lazy_conv_transpose(base: type) -> type:
    class _Lazy(_LazyConvMixin, base):  # type: ignore[misc, valid-type]
        cls_to_become = base

        def __init__(
            self,
            out_channels: int,
            kernel_size: int | Sequence[int],
            stride: int | Sequence[int] = 1,
            padding: int | Sequence[int] = 0,
            output_padding: int | Sequence[int] = 0,
            groups: int = 1,
            bias: bool = True,
            dilation: int | Sequence[int] = 1,
            padding_mode: str = "zeros",
            device: lc.DeviceLike = None,
            dtype: lc.DTypeLike = None,
        ) -> None:
            base.__init__(
                self, 0, out_channels, kernel_size, stride, padding, output_padding, groups, bias, dilation,
                padding_mode, device=device, dtype=dtype,
            )  # fmt: skip

    _Lazy.__name__ = _Lazy.__qualname__ = f"Lazy{base.__name__}"
    _Lazy.__doc__ = f":class:`{base.__name__}` whose ``in_channels`` comes from the first input."
    return _Lazy


LazyConv1d = _lazy_conv(Conv1d, 1)
LazyConv2d = _lazy_conv(Conv2d, 2)
LazyConv3d = _lazy_conv(Conv3d, 3)
LazyConvTranspose1d = _lazy_conv_transpose(ConvTranspose1d)
LazyConvTranspose2d = _lazy_conv_transpose(ConvTranspose2d)
LazyConvTranspose3d = _lazy_conv_transpose(ConvTranspose3d)


# -- normalisation ---------------------------------------------------------------------------------------------
class _LazyNormMixin(_LazyMixin):
    def reset_parameters(self) -> None:
        if self.num_features:  # type: ignore[attr-defined]
            self.cls_to_become.reset_parameters(self)  # type: ignore[attr-defined]

    def _infer(self, x: Tensor) -> None:
        dims = self._expected_ndim  # type: ignore[attr-defined]
        if x.ndim not in dims:
            raise ValueError(f"{type(self).__name__}: expected {' or '.join(f'{d}D' for d in dims)} input")
        c = x.shape[1]  # as PyTorch: axis 1 even for an unbatched instance-norm input
        self.num_features = c
        for name in ("weight", "bias"):
            _resize(self._parameters.get(name), (c,))  # type: ignore[attr-defined]
        for name in ("running_mean", "running_var"):
            _resize(self._buffers.get(name), (c,))  # type: ignore[attr-defined]


def _lazy_norm(base: type) -> type:
    """The lazy form of a batch or instance norm; both default to affine=True, track_running_stats=True, as
    PyTorch's lazy norms do (unlike the eager InstanceNorm*d)."""

    class _Lazy(_LazyNormMixin, base):  # type: ignore[misc, valid-type]
        cls_to_become = base

        def __init__(
            self,
            eps: float = 1e-5,
            momentum: float | None = 0.1,
            affine: bool = True,
            track_running_stats: bool = True,
            device: lc.DeviceLike = None,
            dtype: lc.DTypeLike = None,
            *,
            bias: bool = True,
        ) -> None:
            base.__init__(self, 0, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    _Lazy.__name__ = _Lazy.__qualname__ = f"Lazy{base.__name__}"
    _Lazy.__doc__ = f":class:`{base.__name__}` whose ``num_features`` comes from the first input."
    return _Lazy


LazyBatchNorm1d = _lazy_norm(BatchNorm1d)
LazyBatchNorm2d = _lazy_norm(BatchNorm2d)
LazyBatchNorm3d = _lazy_norm(BatchNorm3d)
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d)
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d)
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d)
