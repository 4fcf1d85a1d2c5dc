"""PyTorch's pre-1.0 loss arguments ``size_average=`` and ``reduce=``, still accepted (with PyTorch's warning).

Old programs (pytorch-made's ``F.binary_cross_entropy_with_logits(..., size_average=False)``) pass them by
keyword; PyTorch turns the pair into ``reduction`` (``_Reduction.legacy_get_string``): both true (or unset)
is ``"mean"``, ``reduce`` true alone ``"sum"``, ``reduce=False`` ``"none"``. :func:`accept_legacy` wraps a loss
function or a loss module's ``__init__`` once, for every loss, instead of each spelling it out.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["accept_legacy", "legacy_reduction"]


def legacy_reduction(size_average: bool | None, reduce: bool | None) -> str:
    """The ``reduction`` PyTorch gives a ``size_average``/``reduce`` pair (None: the old default, True)."""
    warnings.warn(
        "size_average and reduce args will be deprecated, please use reduction='"
        + ("mean" if (size_average is None or size_average) and (reduce is None or reduce) else
           "sum" if reduce is None or reduce else "none")
        + "' instead.",
        UserWarning,
        stacklevel=3,
    )  # fmt: skip
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    return "sum" if reduce else "none"


def accept_legacy(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (with a ``reduction`` parameter) also taking ``size_average=``/``reduce=`` by keyword."""
    if "reduction" not in inspect.signature(fn).parameters:
        return fn

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if "size_average" in kwargs or "reduce" in kwargs:
            size_average, reduce = kwargs.pop("size_average", None), kwargs.pop("reduce", None)
            if size_average is not None or reduce is not None:
                kwargs["reduction"] = legacy_reduction(size_average, reduce)
        return fn(*args, **kwargs)

    return wrapper
