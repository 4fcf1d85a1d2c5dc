"""``lucid.amp``: automatic mixed precision, as ``torch.amp``.

``autocast`` (lucid_core's mechanism and PyTorch's op lists, :mod:`lucid_core.amp`) and ``GradScaler``
(:mod:`lucid_optim.grad_scaler`), re-exported under PyTorch's names, plus ``custom_fwd``/``custom_bwd`` for
custom ``autograd.Function``s.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lucid_core import Tensor
from lucid_core import amp as _amp
from lucid_core.amp import autocast, is_autocast_available

if TYPE_CHECKING:
    from lucid_optim.grad_scaler import GradScaler

__all__ = [
    "autocast", "GradScaler", "is_autocast_available", "custom_fwd", "custom_bwd",
    "is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "get_autocast_cpu_dtype", "set_autocast_cpu_dtype",
    "autocast_increment_nesting", "autocast_decrement_nesting",
]  # fmt: skip


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"`lucid.{old}` is deprecated. Please use `lucid.{new}` instead.", FutureWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    """Deprecated (as in PyTorch): ``lucid.is_autocast_enabled("cpu")``."""
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return _amp.is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """Deprecated (as in PyTorch): ``lucid.set_autocast_enabled("cpu", enabled)``."""
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    _amp.set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype() -> Any:
    """Deprecated (as in PyTorch): ``lucid.get_autocast_dtype("cpu")``."""
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return _amp.get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype: Any) -> None:
    """Deprecated (as in PyTorch): ``lucid.set_autocast_dtype("cpu", dtype)``."""
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    _amp.set_autocast_dtype("cpu", dtype)


def autocast_increment_nesting() -> int:
    """One more open autocast region in this thread (what ``autocast.__enter__`` counts); the new depth."""
    _amp._state.nesting += 1
    return _amp._state.nesting


def autocast_decrement_nesting() -> int:
    """One fewer open autocast region; at depth 0 the cast cache is cleared, as on leaving the outermost region."""
    _amp._state.nesting -= 1
    if _amp._state.nesting == 0:
        _amp.clear_autocast_cache()
    return _amp._state.nesting


def __getattr__(name: str) -> Any:
    if name == "GradScaler":  # lucid_optim loads on first use, as ``lucid.optim`` does
        from lucid_optim.grad_scaler import GradScaler

        return GradScaler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _cast(value: Any, device_type: str, dtype: Any) -> Any:
    if isinstance(value, Tensor):
        eligible = value.dtype.kind == "f" and value.dtype.name != "float64"
        on_device = _amp._lucid_type(device_type) == value.device.type
        return value.astype(dtype) if eligible and on_device else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast(v, device_type, dtype) for k, v in value.items()}
    return value


def custom_fwd(
    fwd: Callable[..., Any] | None = None, *, device_type: str, cast_inputs: Any = None
) -> Callable[..., Any]:
    """Decorate a custom Function's ``forward``: with ``cast_inputs``, it runs with autocast off and its floating
    tensor arguments cast to that dtype (when autocast was on); its ``backward`` (under :func:`custom_bwd`) then
    runs in the same autocast state."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        ctx._fwd_used_autocast = _amp.is_autocast_enabled(device_type)
        ctx._dtype = _amp.get_autocast_dtype(device_type)
        if cast_inputs is None:
            return fwd(*args, **kwargs)
        if ctx._fwd_used_autocast:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd: Callable[..., Any] | None = None, *, device_type: str) -> Callable[..., Any]:
    """Decorate a custom Function's ``backward``: it runs in the autocast state its ``forward`` ran in."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
