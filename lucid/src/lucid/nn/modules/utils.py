"""``lucid.nn.modules.utils``: PyTorch's tuple helpers (``_pair(3) == (3, 3)``) and
``consume_prefix_in_state_dict_if_present``."""

from __future__ import annotations

import collections.abc
from collections.abc import Callable
from itertools import repeat
from typing import Any

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n: int, name: str = "parse") -> Callable[[Any], tuple[Any, ...]]:
    """A function that repeats a scalar ``n`` times and passes an iterable through as a tuple."""

    def parse(x: Any) -> tuple[Any, ...]:
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t: tuple[Any, ...], n: int) -> tuple[Any, ...]:
    """Reverse ``t`` and repeat each element ``n`` times (padding tuples for ``F.pad``)."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size: list[Any], defaults: list[int]) -> list[int]:
    """``out_size`` with each None replaced by the matching trailing entry of ``defaults``."""
    if isinstance(out_size, (int,)):
        return out_size  # type: ignore[return-value]
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size) :])]


def consume_prefix_in_state_dict_if_present(state_dict: dict[str, Any], prefix: str) -> None:
    """Strip ``prefix`` (e.g. ``"module."`` from a DDP checkpoint) from every key that has it, in place."""
    keys = list(state_dict.keys())
    for key in keys:
        if key.startswith(prefix):
            state_dict[key[len(prefix) :]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            if len(key) == 0:
                continue
            if key == prefix.replace(".", "") or key.startswith(prefix):
                metadata[key[len(prefix) :]] = metadata.pop(key)
