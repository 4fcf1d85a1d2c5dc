"""Resampling and patch layers: Upsample, UpsamplingNearest2d, UpsamplingBilinear2d, Unfold, Fold."""

from __future__ import annotations

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "Unfold", "Fold"]

from collections.abc import Sequence

from lucid_core import Tensor

from .. import functional as F
from ..module import Module


class Upsample(Module):
    """Resample (N, C, *spatial) to ``size`` or by ``scale_factor``.

    Args:
        mode: ``"nearest"``, ``"nearest-exact"``, ``"linear"``, ``"bilinear"`` or ``"trilinear"``.
        align_corners: for linear modes, map the corner pixels' centres onto each other.
    """

    def __init__(
        self,
        size: int | Sequence[int] | None = None,
        scale_factor: float | Sequence[float] | None = None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, (tuple, list)):
            self.scale_factor: float | tuple[float, ...] | None = tuple(float(v) for v in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor is not None else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(
            input, self.size, self.scale_factor, self.mode, self.align_corners, self.recompute_scale_factor
        )

    def extra_repr(self) -> str:
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return f"{info}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling of (N, C, H, W)."""

    def __init__(
        self, size: int | Sequence[int] | None = None, scale_factor: float | Sequence[float] | None = None
    ) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling of (N, C, H, W) with ``align_corners=True`` (the old PyTorch behaviour)."""

    def __init__(
        self, size: int | Sequence[int] | None = None, scale_factor: float | Sequence[float] | None = None
    ) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class Unfold(Module):
    """Sliding blocks of (N, C, H, W) as columns (N, C * kh * kw, L) (im2col)."""

    def __init__(
        self,
        kernel_size: int | Sequence[int],
        dilation: int | Sequence[int] = 1,
        padding: int | Sequence[int] = 0,
        stride: int | Sequence[int] = 1,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, stride={self.stride}"


class Fold(Module):
    """Sum columns (N, C * kh * kw, L) back into an (N, C, *output_size) image (col2im)."""

    def __init__(
        self,
        output_size: int | Sequence[int],
        kernel_size: int | Sequence[int],
        dilation: int | Sequence[int] = 1,
        padding: int | Sequence[int] = 0,
        stride: int | Sequence[int] = 1,
    ) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )
