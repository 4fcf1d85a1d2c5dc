"""PyTorch's process-wide switches and questions that Lucid answers itself: determinism, ``typename``,
``is_storage``."""

from __future__ import annotations

from typing import Any

from lucid_core import Tensor

__all__ = [
    "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled", "typename", "is_storage",
]  # fmt: skip


class _Deterministic:
    enabled = False
    warn_only = False


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Ask for deterministic kernels. Lucid's kernels are already deterministic (no atomics, fixed
    summation order), so this only records the setting for :func:`are_deterministic_algorithms_enabled`."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms: mode must be a bool, got {type(mode).__name__}")
    _Deterministic.enabled, _Deterministic.warn_only = mode, bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    """Whether :func:`use_deterministic_algorithms` was last called with True."""
    return _Deterministic.enabled


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether determinism was requested with ``warn_only=True``."""
    return _Deterministic.warn_only


_TENSOR_TYPES = {
    "float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor", "bfloat16": "BFloat16Tensor",
    "int64": "LongTensor",
    "int32": "IntTensor", "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor",
    "complex64": "ComplexFloatTensor", "complex128": "ComplexDoubleTensor",
}  # fmt: skip


def typename(obj: Any, /) -> str:
    """The qualified name of ``obj``'s type: ``"lucid.FloatTensor"`` for a float32 tensor, as PyTorch names them."""
    if isinstance(obj, Tensor):
        return "lucid." + _TENSOR_TYPES.get(obj.dtype.name, "Tensor")
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = type(obj).__module__ or ""
        qualname = type(obj).__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def is_storage(obj: Any, /) -> bool:
    """Whether ``obj`` is a storage (what ``Tensor.untyped_storage()`` returns)."""
    return type(obj).__name__ in ("UntypedStorage", "TypedStorage", "Storage") and hasattr(obj, "nbytes")
