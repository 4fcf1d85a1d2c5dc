"""Pooling layers: max, average, adaptive, power-average (LP), fractional max pools and max unpooling."""

from __future__ import annotations

__all__ = [
    "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d",
    "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "FractionalMaxPool2d", "FractionalMaxPool3d",
]  # fmt: skip

from collections.abc import Sequence
from typing import Any

from lucid_core import Tensor

from .. import functional as F
from ..module import Module


class _MaxPool(Module):
    def __init__(
        self,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
        dilation: int | Sequence[int] = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool1d(_MaxPool):
    """Max over sliding windows of (N, C, L); ``stride`` defaults to ``kernel_size``, padding counts as -inf."""

    def forward(self, input: Tensor) -> Any:
        return F.max_pool1d(
            input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode, self.return_indices
        )


class MaxPool2d(_MaxPool):
    """Max over sliding windows of (N, C, H, W); ``stride`` defaults to ``kernel_size``.

    Args:
        return_indices: also return each maximum's flat index into H * W.
        ceil_mode: round the output size up, so partial windows at the end count.
    """

    def forward(self, input: Tensor) -> Any:
        return F.max_pool2d(
            input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode, self.return_indices
        )


class AvgPool1d(Module):
    """Mean over sliding windows of (N, C, L); ``count_include_pad`` decides whether zero padding counts."""

    def __init__(
        self,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool3d(_MaxPool):
    """Max over sliding windows of (N, C, D, H, W); indices are flat into D * H * W."""

    def forward(self, input: Tensor) -> Any:
        return F.max_pool3d(
            input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode, self.return_indices
        )


class AvgPool2d(Module):
    """Mean over sliding windows of (N, C, H, W).

    Args:
        count_include_pad: whether zero padding counts in each window's divisor.
        divisor_override: divide every window's sum by this instead.
    """

    def __init__(
        self,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _Adaptive(Module):
    def __init__(self, output_size: int | Sequence[int | None], return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_Adaptive):
    """Average pooling of (N, C, L) into ``output_size`` windows (PyTorch's window bounds)."""

    def __init__(self, output_size: int | Sequence[int]) -> None:
        super().__init__(output_size)

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_Adaptive):
    """Average pooling of (N, C, H, W) to ``output_size`` (an int, a pair, None keeps an axis)."""

    def __init__(self, output_size: int | Sequence[int | None]) -> None:
        super().__init__(output_size)

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveMaxPool1d(_Adaptive):
    """Max pooling of (N, C, L) into ``output_size`` windows."""

    def forward(self, input: Tensor) -> Any:
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_Adaptive):
    """Max pooling of (N, C, H, W) to ``output_size`` (an int, a pair, None keeps an axis)."""

    def forward(self, input: Tensor) -> Any:
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AvgPool3d(AvgPool2d):
    """Mean over sliding windows of (N, C, D, H, W)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool3d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )


class AdaptiveAvgPool3d(_Adaptive):
    """Average pooling of (N, C, D, H, W) to ``output_size``."""

    def __init__(self, output_size: int | Sequence[int | None]) -> None:
        super().__init__(output_size)

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_Adaptive):
    """Max pooling of (N, C, D, H, W) to ``output_size``."""

    def forward(self, input: Tensor) -> Any:
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class _LPPool(Module):
    _fn = staticmethod(F.lp_pool1d)

    def __init__(
        self,
        norm_type: float,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int] | None = None,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
            f"ceil_mode={self.ceil_mode}"
        )


class LPPool1d(_LPPool):
    """Power-average pooling of (N, C, L): the ``norm_type``-norm of each window."""


class LPPool2d(_LPPool):
    """Power-average pooling of (N, C, H, W)."""

    _fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPool):
    """Power-average pooling of (N, C, D, H, W)."""

    _fn = staticmethod(F.lp_pool3d)


class _MaxUnpool(Module):
    _fn = staticmethod(F.max_unpool1d)

    def __init__(
        self,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding

    def forward(self, input: Tensor, indices: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        return type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpool):
    """The partial inverse of :class:`MaxPool1d`: maxima back at their indices, zeros elsewhere."""


class MaxUnpool2d(_MaxUnpool):
    """The partial inverse of :class:`MaxPool2d`."""

    _fn = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpool):
    """The partial inverse of :class:`MaxPool3d`."""

    _fn = staticmethod(F.max_unpool3d)


class _FractionalMaxPool(Module):
    _fn = staticmethod(F.fractional_max_pool2d)

    def __init__(
        self,
        kernel_size: int | Sequence[int],
        output_size: int | Sequence[int] | None = None,
        output_ratio: float | Sequence[float] | None = None,
        return_indices: bool = False,
        _random_samples: Tensor | None = None,
    ) -> None:
        super().__init__()
        if (output_size is None) == (output_ratio is None):
            raise ValueError(f"{type(self).__name__}: give exactly one of output_size and output_ratio")
        self.kernel_size = kernel_size
        self.output_size = output_size
        self.output_ratio = output_ratio
        self.return_indices = return_indices
        self._random_samples = _random_samples

    def forward(self, input: Tensor) -> Any:
        return type(self)._fn(
            input,
            self.kernel_size,
            self.output_size,
            self.output_ratio,
            self.return_indices,
            _random_samples=self._random_samples,
        )


class FractionalMaxPool2d(_FractionalMaxPool):
    """Fractional max pooling of (N, C, H, W): pseudo-random window starts (Graham, 2014)."""


class FractionalMaxPool3d(_FractionalMaxPool):
    """Fractional max pooling of (N, C, D, H, W)."""

    _fn = staticmethod(F.fractional_max_pool3d)
