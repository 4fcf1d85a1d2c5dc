"""``generator=`` on the face's random functions: ``lucid.rand(3, generator=g)`` draws from ``g``.

The functions themselves are ``lucid_core``'s (or the face's adaptations of them); this wraps each so a
``lucid.Generator`` swaps its state into the backend that draws (``lucid_core._random.drawing_from``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import lucid_core as lc
from lucid_core import Generator, Tensor
from lucid_core._generator import drawing_from

__all__ = ["Generator", "accepting_generator", "default_generator"]


def _factory_device(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return lc.resolve_device(kwargs.get("device"))


def _input_device(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    for v in (*args, *kwargs.values()):
        if isinstance(v, Tensor):
            return v.device
    return _factory_device(args, kwargs)


def accepting_generator(fn: Callable[..., Any], *, from_input: bool = False) -> Callable[..., Any]:
    """``fn`` that also takes ``generator=`` (a :class:`lucid.Generator`); it draws on the output's device.

    ``from_input``: the device is the first tensor argument's (``bernoulli(p)``, ``multinomial(w, n)``),
    otherwise ``device=`` or the default device.
    """
    device_of = _input_device if from_input else _factory_device

    @functools.wraps(fn)
    def wrapper(*args: Any, generator: Generator | None = None, **kwargs: Any) -> Any:
        if generator is None:
            return fn(*args, **kwargs)
        with drawing_from(generator, device_of(args, kwargs).backend):
            return fn(*args, **kwargs)

    return wrapper


class _DefaultGenerator:
    """``lucid.default_generator``: the global stream as a Generator-shaped object (``manual_seed``, ``seed``...)."""

    def manual_seed(self, seed: int) -> _DefaultGenerator:
        """Seed every backend and the host RNG (``lucid.manual_seed``); returns self."""
        lc.manual_seed(seed)
        return self

    def seed(self) -> int:
        """Reseed the global stream from a non-deterministic source; returns the seed."""
        s = Generator().seed()
        lc.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed last given to ``manual_seed`` (PyTorch's default seed before any)."""
        from ._functions import initial_seed

        return initial_seed()

    def get_state(self) -> Any:
        """A snapshot of every random stream (``lucid_core.get_rng_state``)."""
        return lc.get_rng_state()

    def set_state(self, state: Any) -> _DefaultGenerator:
        """Restore a snapshot from :meth:`get_state`."""
        lc.set_rng_state(state)
        return self

    @property
    def device(self) -> Any:
        """The default device."""
        return lc.get_default_device()


default_generator = _DefaultGenerator()
