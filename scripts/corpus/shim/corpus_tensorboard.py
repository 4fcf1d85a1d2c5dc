"""A no-op stand-in of ``torch.utils.tensorboard.SummaryWriter`` (the tensorboard package is in neither run's
environment); programs that log to TensorBoard are patched to import it from here, in both runs alike."""

from __future__ import annotations

from typing import Any


class SummaryWriter:
    """Accept every logging call and write nothing."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None
