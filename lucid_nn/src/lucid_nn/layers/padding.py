"""Padding layers: constant (zero), reflection, replication and circular padding over 1, 2 or 3 axes."""

from __future__ import annotations

__all__ = [
    "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
    "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d",
]  # fmt: skip

from collections.abc import Sequence

from lucid_core import Tensor

from .. import functional as F
from ..module import Module


class _PadNd(Module):
    """Pads the last ``_nd`` axes by ``padding``: an int for every side, or F.pad's (left, right, top, ...)."""

    _nd = 1
    _mode = "constant"

    def __init__(self, padding: int | Sequence[int], value: float = 0.0) -> None:
        super().__init__()
        n = 2 * self._nd
        if isinstance(padding, int):
            padding = (padding,) * n
        padding = tuple(int(p) for p in padding)
        if len(padding) != n:
            raise ValueError(f"{type(self).__name__}: padding must be an int or {n} ints, got {padding}")
        self.padding = padding
        self.value = value

    def forward(self, x: Tensor) -> Tensor:
        if self._mode != "constant" and x.ndim not in (self._nd + 1, self._nd + 2):
            raise ValueError(
                f"{type(self).__name__}: expected a {self._nd + 1}-D or {self._nd + 2}-D input, got shape {x.shape}"
            )
        if self._mode == "constant":
            return F.pad(x, self.padding, "constant", self.value)
        return F.pad(x, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}, value={self.value}" if self._mode == "constant" else f"{self.padding}"


class ConstantPad1d(_PadNd):
    """Pads the last axis with ``value`` (negative amounts crop)."""

    def __init__(self, padding: int | Sequence[int], value: float) -> None:
        super().__init__(padding, value)


class ConstantPad2d(ConstantPad1d):
    """Pads the last two axes with ``value``."""

    _nd = 2


class ConstantPad3d(ConstantPad1d):
    """Pads the last three axes with ``value``."""

    _nd = 3


class ZeroPad1d(_PadNd):
    """Pads the last axis with zeros."""

    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__(padding, 0.0)


class ZeroPad2d(ZeroPad1d):
    """Pads the last two axes with zeros."""

    _nd = 2


class ZeroPad3d(ZeroPad1d):
    """Pads the last three axes with zeros."""

    _nd = 3


class _ModePad(_PadNd):
    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__(padding, 0.0)


class ReflectionPad1d(_ModePad):
    """Pads the last axis with its reflection (the edge itself not repeated)."""

    _mode = "reflect"


class ReflectionPad2d(ReflectionPad1d):
    """Pads the last two axes with their reflection."""

    _nd = 2


class ReflectionPad3d(ReflectionPad1d):
    """Pads the last three axes with their reflection."""

    _nd = 3


class ReplicationPad1d(_ModePad):
    """Pads the last axis by repeating its edge values."""

    _mode = "replicate"


class ReplicationPad2d(ReplicationPad1d):
    """Pads the last two axes by repeating their edges."""

    _nd = 2


class ReplicationPad3d(ReplicationPad1d):
    """Pads the last three axes by repeating their edges."""

    _nd = 3


class CircularPad1d(_ModePad):
    """Pads the last axis by wrapping around (periodic)."""

    _mode = "circular"


class CircularPad2d(CircularPad1d):
    """Pads the last two axes by wrapping around."""

    _nd = 2


class CircularPad3d(CircularPad1d):
    """Pads the last three axes by wrapping around."""

    _nd = 3
