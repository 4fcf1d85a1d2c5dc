"""Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d (PyTorch's parameters, init and repr)."""

from __future__ import annotations

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

from collections.abc import Sequence
from typing import Any

import lucid_core as lc
from lucid_core import Parameter, Tensor

from .. import functional as F
from .. import init
from ..functional._conv import _ntuple, transposed_out_size
from ..module import Module

_PADDING_MODES = {"zeros": None, "reflect": "reflect", "replicate": "edge", "circular": "circular"}


class _ConvNd(Module):
    _nd = 2
    _transposed = False

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | Sequence[int],
        stride: int | Sequence[int] = 1,
        padding: str | int | Sequence[int] = 0,
        dilation: int | Sequence[int] = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        output_padding: int | Sequence[int] = 0,
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        nd = self._nd
        if groups <= 0:
            raise ValueError(f"{name}: groups must be a positive integer, got {groups}")
        if in_channels % groups:
            raise ValueError(f"{name}: in_channels ({in_channels}) must be divisible by groups ({groups})")
        if out_channels % groups:
            raise ValueError(f"{name}: out_channels ({out_channels}) must be divisible by groups ({groups})")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {sorted(_PADDING_MODES)}, got {padding_mode!r}")
        if self._transposed and padding_mode != "zeros":
            raise ValueError(f"{name}: only padding_mode='zeros' is supported, got {padding_mode!r}")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(kernel_size, nd, "kernel_size", name)
        self.stride = _ntuple(stride, nd, "stride", name)
        self.dilation = _ntuple(dilation, nd, "dilation", name)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"{name}: padding must be 'same', 'valid', an int or a tuple, got {padding!r}")
            if self._transposed:
                raise ValueError(f"{name}: padding={padding!r} is not supported; use an int or a tuple")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided convolutions")
            self.padding: Any = padding
        else:
            self.padding = _ntuple(padding, nd, "padding", name)
        self.output_padding = _ntuple(output_padding, nd, "output_padding", name)
        self.groups = groups
        self.padding_mode = padding_mode
        shape = (
            (in_channels, out_channels // groups) if self._transposed else (out_channels, in_channels // groups)
        ) + self.kernel_size
        self.weight = Parameter(lc.empty(shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(lc.empty((out_channels,), dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's init: weight ~ kaiming_uniform(a=sqrt(5)), bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
        init._reset_weight_and_bias(self.weight, self.bias)

    def _explicit_pads(self) -> list[tuple[int, int]]:
        """(before, after) per spatial axis, for padding modes applied before the convolution."""
        if self.padding == "valid":
            return [(0, 0)] * self._nd
        if self.padding == "same":
            total = [d * (k - 1) for k, d in zip(self.kernel_size, self.dilation)]
            return [(t // 2, t - t // 2) for t in total]
        return [(p, p) for p in self.padding]

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._nd:
            s += f", padding={self.padding!r}" if isinstance(self.padding, str) else f", padding={self.padding}"
        if self.dilation != (1,) * self._nd:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._nd:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    _fn: Any = None

    def __init__(
        self,
        in_channels: int,
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
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
            device=device, dtype=dtype,
        )  # fmt: skip

    def forward(self, input: Tensor) -> Tensor:
        fn = type(self)._fn
        if self.padding_mode != "zeros" and isinstance(input, Tensor) and input.ndim == self._nd + 2:
            pads = [(0, 0), (0, 0), *self._explicit_pads()]
            padded = lc.pad(input, pads, mode=_PADDING_MODES[self.padding_mode])
            return fn(padded, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_Conv):
    """1-D convolution over (N, C_in, L) -> (N, C_out, L_out).

    Args:
        padding: int, tuple, ``"valid"`` or ``"same"``; ``padding_mode`` is zeros, reflect, replicate or circular.
        groups: split channels into this many independent convolutions.
    """

    _nd = 1
    _fn = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-D convolution over (N, C_in, H, W) -> (N, C_out, H_out, W_out); weight (C_out, C_in / groups, kh, kw).

    Args:
        padding: int, tuple, ``"valid"`` or ``"same"``; ``padding_mode`` is zeros, reflect, replicate or circular.
        groups: split channels into this many independent convolutions.
    """

    _nd = 2
    _fn = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-D convolution over (N, C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out)."""

    _nd = 3
    _fn = staticmethod(F.conv3d)


class _ConvTranspose(_ConvNd):
    _transposed = True
    _fn: Any = None

    def __init__(
        self,
        in_channels: int,
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
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
            output_padding, device=device, dtype=dtype,
        )  # fmt: skip

    def _output_padding(self, input: Tensor, output_size: Sequence[int] | None) -> tuple[int, ...]:
        if output_size is None:
            return self.output_padding
        name = type(self).__name__
        want = tuple(int(v) for v in output_size)[-self._nd :]
        if len(want) != self._nd:
            raise ValueError(f"{name}: output_size must have {self._nd} or {self._nd + 2} elements, got {output_size}")
        smallest = transposed_out_size(
            input.shape[2:], self.kernel_size, self.stride, self.padding, (0,) * self._nd, self.dilation
        )
        extra = tuple(w - s for w, s in zip(want, smallest))
        for e, s, d in zip(extra, self.stride, self.dilation):
            if not 0 <= e < max(s, d):
                largest = tuple(v + max(st, dl) - 1 for v, st, dl in zip(smallest, self.stride, self.dilation))
                raise ValueError(f"{name}: requested output size {want} is not between {smallest} and {largest}")
        return extra

    def forward(self, input: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        fn = type(self)._fn
        op = self._output_padding(input, output_size) if isinstance(input, Tensor) else self.output_padding
        return fn(input, self.weight, self.bias, self.stride, self.padding, op, self.groups, self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """1-D transposed convolution (N, C_in, L) -> (N, C_out, L_out); weight (C_in, C_out / groups, k)."""

    _nd = 1
    _fn = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """2-D transposed convolution (the gradient of Conv2d); weight (C_in, C_out / groups, kh, kw).

    Args:
        output_padding: extra size added to one side of the output (smaller than stride or dilation).
    """

    _nd = 2
    _fn = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    """3-D transposed convolution; weight (C_in, C_out / groups, kd, kh, kw)."""

    _nd = 3
    _fn = staticmethod(F.conv_transpose3d)
