"""``__array_namespace_info__()``: what this namespace can do, per the Array API standard."""

from __future__ import annotations

from typing import Any

from . import _dtypes as dt
from ._registry import _state, default_device, discover, resolve_device
from ._typing import DeviceLike


class _Info:
    """Capabilities, default dtypes, dtypes per kind and devices of ``lucid_core``."""

    def capabilities(self) -> dict[str, Any]:

        b = default_device().backend
        return {
            "boolean indexing": b.capabilities.get("data_dependent_shapes", True),
            "data-dependent shapes": b.capabilities.get("data_dependent_shapes", True),
            "max dimensions": 64,
        }

    def default_device(self) -> Any:

        return default_device()

    def devices(self) -> tuple[Any, ...]:
        """Every device of every loadable backend (a tuple, as the 2025.12 standard asks)."""

        discover()
        out = []
        for b in _state.backends.values():
            try:
                out.extend(b.devices.values())
            except Exception:  # noqa: BLE001 - a broken backend has no devices
                continue
        return tuple(out)

    def default_dtypes(self, *, device: DeviceLike = None) -> dict[str, Any]:
        return {
            "real floating": dt.float32,
            "complex floating": dt.complex64,
            "integral": dt.int64,
            "indexing": dt.int64,
        }

    def dtypes(self, *, device: DeviceLike = None, kind: Any = None) -> dict[str, Any]:
        """The standard's dtypes that ``device`` holds, optionally only those of ``kind``.

        float16 and bfloat16 are Lucid extensions (for mixed precision, as in PyTorch), not dtypes of the
        standard, so they are not listed here; ``lucid_core.float16`` still works where the backend has it.
        """

        dev = resolve_device(device)
        out = {}
        for d in dt.ALL_DTYPES:
            if d in dt.EXTENSION_DTYPES:
                continue
            if d in dev.backend.dtypes and (kind is None or dt.isdtype(d, kind)):
                out[d.name] = d
        return out


def __array_namespace_info__() -> _Info:  # noqa: N807 - the standard's name
    """The inspection object of the Array API standard."""
    return _Info()
