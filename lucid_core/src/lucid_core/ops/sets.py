"""Set functions: ``unique_all``, ``unique_counts``, ``unique_inverse``, ``unique_values``, ``isin``.

Their output shapes depend on the data, so they leave the graph (no gradients), as in the standard.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .. import _dtypes as dt
from .._autograd import Function
from .._tensor import Tensor, check_tensor
from . import creation as _c
from . import elementwise as _e
from . import manipulation as _m
from . import reduction as _r

__all__ = [
    "unique_all", "unique_counts", "unique_inverse", "unique_values", "isin",
    "UniqueAllResult", "UniqueCountsResult", "UniqueInverseResult",
]  # fmt: skip


class UniqueAllResult(NamedTuple):
    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCountsResult(NamedTuple):
    values: Tensor
    counts: Tensor


class UniqueInverseResult(NamedTuple):
    values: Tensor
    inverse_indices: Tensor


def _kernel(ctx: Any, name: str) -> Any:
    fn = getattr(ctx.xp, name, None)
    if fn is None:
        raise NotImplementedError(f"{name}: backend {ctx.device.backend.name!r} does not provide {name}")
    return fn


class _Unique(Function):
    native = True
    differentiable = False

    @staticmethod
    def forward(ctx, x, name):
        out = _kernel(ctx, name)(x)
        return tuple(out) if isinstance(out, tuple) else out


def _check(x: Any, name: str) -> Tensor:
    check_tensor(x, name)
    if not x.device.backend.capabilities.get("data_dependent_shapes", True):
        raise RuntimeError(f"{name}: backend {x.device.backend.name!r} does not support data-dependent shapes")
    return x


def unique_all(x: Tensor, /) -> UniqueAllResult:
    """The unique values of ``x`` (sorted), the first index of each, the inverse indices and the counts."""
    return UniqueAllResult(*_Unique.apply(_check(x, "unique_all"), "unique_all"))


def unique_counts(x: Tensor, /) -> UniqueCountsResult:
    """The unique values of ``x`` and how often each occurs."""
    return UniqueCountsResult(*_Unique.apply(_check(x, "unique_counts"), "unique_counts"))


def unique_inverse(x: Tensor, /) -> UniqueInverseResult:
    """The unique values of ``x`` and, for each element, the index of its value (shaped like ``x``)."""
    return UniqueInverseResult(*_Unique.apply(_check(x, "unique_inverse"), "unique_inverse"))


def unique_values(x: Tensor, /) -> Tensor:
    """The unique values of ``x``, sorted."""
    return _Unique.apply(_check(x, "unique_values"), "unique_values")


def _scalar_dtype(t: Tensor, value: Any) -> Any:
    """A Python scalar takes the tensor's dtype where its kind fits (uint64 and int64 have no common dtype)."""
    return dt.promote_with_scalar(t.dtype, value) if isinstance(value, (bool, int, float, complex)) else None


def isin(x1: Tensor | int, x2: Tensor | int, /, *, invert: bool = False) -> Tensor:
    """Whether each element of ``x1`` occurs in ``x2`` (``invert=True`` for the opposite)."""

    if not isinstance(x1, Tensor):
        if not isinstance(x2, Tensor):
            raise TypeError("isin: at least one of x1 and x2 must be a Tensor")
        x1 = _c.asarray(x1, dtype=_scalar_dtype(x2, x1), device=x2.device)
    if not isinstance(x2, Tensor):
        x2 = _c.asarray(x2, dtype=_scalar_dtype(x1, x2), device=x1.device)
    with_values = _e.equal(_m.expand_dims(x1, axis=-1), _m.reshape(x2, (-1,)))
    out = _r.any(with_values, axis=-1)
    return _e.logical_not(out) if invert else out
