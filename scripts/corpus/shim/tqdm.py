"""A stand-in of tqdm that prints each description on its own line, so both runs' progress text is compared."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any


class tqdm:  # noqa: N801 -- tqdm's own name
    """Iterate like tqdm; ``set_description`` and ``write`` print a line."""

    def __init__(self, iterable: Iterable[Any] | None = None, *args: Any, **kwargs: Any) -> None:
        self.iterable = iterable if iterable is not None else range(int(kwargs.get("total", 0) or 0))

    def __iter__(self) -> Iterator[Any]:
        return iter(self.iterable)

    def __len__(self) -> int:
        return len(self.iterable)  # type: ignore[arg-type]

    def set_description(self, desc: str = "", refresh: bool = True) -> None:
        print(f"tqdm: {desc}")

    def set_postfix(self, *args: Any, **kwargs: Any) -> None:
        print(f"tqdm: {args} {kwargs}")

    def update(self, n: int = 1) -> None:
        return None

    def close(self) -> None:
        return None

    @staticmethod
    def write(s: str) -> None:
        print(s)


def trange(*args: Any, **kwargs: Any) -> tqdm:
    """tqdm(range(...))."""
    return tqdm(range(*args), **kwargs)
