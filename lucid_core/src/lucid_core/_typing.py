"""Type aliases for the public API, so a signature says what it accepts.

``device: DeviceLike`` takes a :class:`Device`, a string such as ``"cpu"``, ``"mlx:gpu"`` or
``"cuda"``, or None for the default device; ``dtype: DTypeLike`` takes a Lucid dtype, its name
(``"float32"``), a Python type (``float``), or None for the default. Both sit below every other
core module (they import only the dtype and backend contract), so any module may use them.
"""

from __future__ import annotations

import builtins

from ._dtypes import DType
from .backend import Device

#: What a ``device=`` parameter accepts: a Device, its name, or None for the default device.
DeviceLike = Device | str | None

#: What a ``dtype=`` parameter accepts: a Lucid dtype, its name, a Python scalar type, or None.
DTypeLike = DType | str | type[builtins.bool] | type[int] | type[float] | type[complex] | None

__all__ = ["DTypeLike", "DeviceLike"]
