"""``lucid.cuda.amp``: PyTorch's deprecated CUDA spellings of ``lucid.amp``, warning as PyTorch's do."""

from __future__ import annotations

import warnings
from typing import Any

from lucid_core import float16
from lucid_core.amp import autocast as _autocast
from lucid_optim.grad_scaler import GradScaler as _GradScaler

__all__ = ["autocast", "GradScaler"]


class autocast(_autocast):  # noqa: N801 - PyTorch's name
    """``lucid.cuda.amp.autocast(args...)``: deprecated, as in PyTorch; ``lucid.amp.autocast("cuda", args...)``."""

    def __init__(self, enabled: bool = True, dtype: Any = float16, cache_enabled: bool = True) -> None:
        warnings.warn(
            "`lucid.cuda.amp.autocast(args...)` is deprecated. "
            "Please use `lucid.amp.autocast('cuda', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """``lucid.cuda.amp.GradScaler(args...)``: deprecated, as in PyTorch; ``lucid.amp.GradScaler("cuda", ...)``."""

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        warnings.warn(
            "`lucid.cuda.amp.GradScaler(args...)` is deprecated. "
            "Please use `lucid.amp.GradScaler('cuda', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)
