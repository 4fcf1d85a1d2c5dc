"""Stand-ins of torchvision's transforms for NumPy images (H x W or H x W x C uint8) and tensors of either run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from _framework import as_numpy, as_tensor, float_type


class Compose:
    """Apply the transforms in order."""

    def __init__(self, transforms: Sequence[Callable[[Any], Any]]) -> None:
        self.transforms = list(transforms)

    def __call__(self, x: Any) -> Any:
        for t in self.transforms:
            x = t(x)
        return x


class ToTensor:
    """uint8 H x W (x C) -> float32 (float64 in a float64 run) C x H x W in [0, 1], a tensor of the run's framework."""

    def __call__(self, img: Any) -> Any:
        a = as_numpy(img)
        if a.ndim == 2:
            a = a[:, :, None]
        f = float_type()
        return as_tensor((a.transpose(2, 0, 1).astype(f) / f(255)).astype(f))


class Normalize:
    """(x - mean) / std per channel, computed with NumPy in float32."""

    def __init__(self, mean: Sequence[float] | float, std: Sequence[float] | float, inplace: bool = False) -> None:
        self.mean = np.asarray(mean, dtype=float_type()).reshape(-1, 1, 1)
        self.std = np.asarray(std, dtype=float_type()).reshape(-1, 1, 1)

    def __call__(self, x: Any) -> Any:
        f = float_type()
        return as_tensor(((as_numpy(x).astype(f) - self.mean) / self.std).astype(f))


class Lambda:
    """Apply a user function."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def __call__(self, x: Any) -> Any:
        return self.fn(x)


def _hw(size: int | Sequence[int]) -> tuple[int, int]:
    return (size, size) if isinstance(size, int) else (int(size[0]), int(size[1]))


class Resize:
    """Nearest-neighbour resize of a NumPy image (the corpus programs resize only to the size they have)."""

    def __init__(self, size: int | Sequence[int], **_: Any) -> None:
        self.size = _hw(size)

    def __call__(self, img: Any) -> Any:
        a = as_numpy(img)
        h, w = self.size
        rows = (np.arange(h) * a.shape[0] // h).astype(np.int64)
        cols = (np.arange(w) * a.shape[1] // w).astype(np.int64)
        return a[rows][:, cols]


class CenterCrop:
    """The central ``size`` window of a NumPy image."""

    def __init__(self, size: int | Sequence[int]) -> None:
        self.size = _hw(size)

    def __call__(self, img: Any) -> Any:
        a = as_numpy(img)
        h, w = self.size
        top, left = (a.shape[0] - h) // 2, (a.shape[1] - w) // 2
        return a[top : top + h, left : left + w]
