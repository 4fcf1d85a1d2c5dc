"""``diff`` (differentiable, built from slices) and ``nextafter`` (no gradient)."""

from __future__ import annotations

from .._autograd import Function
from .._tensor import Tensor, check_tensor
from . import _helpers as _h
from . import manipulation as _m

__all__ = ["diff", "nextafter"]


def diff(
    x: Tensor, /, *, axis: int = -1, n: int = 1, prepend: Tensor | None = None, append: Tensor | None = None
) -> Tensor:
    """The ``n``-th forward difference along ``axis`` (after joining ``prepend`` and ``append``)."""

    check_tensor(x, "diff")
    if x.ndim == 0:
        raise ValueError("diff: x must have at least one dimension")
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"diff: n must be a non-negative int, got {n!r}")
    ax = _h.normalize_axis(axis, x.ndim, "diff")
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = _m.concat(parts, axis=ax)
    lead = (slice(None),) * ax
    for _ in range(n):
        if x.dtype.kind == "b":
            x = x[(*lead, slice(1, None))] != x[(*lead, slice(None, -1))]
        else:
            x = x[(*lead, slice(1, None))] - x[(*lead, slice(None, -1))]
    return x


class NextAfter(Function):
    native = True
    differentiable = False

    @staticmethod
    def forward(ctx, a, b):
        fn = getattr(ctx.xp, "nextafter", None)
        if fn is None:
            raise NotImplementedError(f"nextafter: backend {ctx.device.backend.name!r} does not provide nextafter")
        return fn(a, b)


def nextafter(x1: Tensor | float, x2: Tensor | float, /) -> Tensor:
    """The next representable floating-point value after ``x1`` toward ``x2``."""
    if isinstance(x1, Tensor) and isinstance(x2, Tensor) and x1.dtype is not x2.dtype:
        raise TypeError(f"nextafter: x1 and x2 must have the same dtype, got {x1.dtype.name} and {x2.dtype.name}")
    a, b = _h.binary_operands(x1, x2, "nextafter")
    for t in (a, b):
        if isinstance(t, Tensor) and t.dtype.kind != "f":
            raise TypeError(f"nextafter: expected real floating-point tensors, got {t.dtype.name}")
    return NextAfter.apply(a, b)
