"""Hypothesis strategies shared by the core op tests: small shapes, broadcasting pairs, float64 values.

Shapes stay small (at most 3 dimensions of at most 4) so gradchecks, which cost one backward per
output element, stay fast. Values are NumPy float64 arrays; ``leaf`` turns one into a float64
Tensor that requires grad on the device under test.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lucid_core as lc

MAX_DIMS = 3
MAX_SIDE = 4

#: Applied to every @given test: the ``device`` fixture is function-scoped but immutable.
fixture_ok = settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large]
)


def shapes(min_dims: int = 0, max_dims: int = MAX_DIMS, min_side: int = 1, max_side: int = MAX_SIDE) -> Any:
    """Array shapes with ``min_dims..max_dims`` axes of ``min_side..max_side`` each."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def broadcast_pairs(min_dims: int = 0, max_dims: int = MAX_DIMS, max_side: int = MAX_SIDE) -> Any:
    """Two shapes that broadcast together (size-1 and missing leading axes included)."""
    return hnp.mutually_broadcastable_shapes(
        num_shapes=2, min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=max_side
    ).map(lambda bs: bs.input_shapes)


def floats(lo: float = -2.0, hi: float = 2.0, *, away_from_zero: float | None = None) -> Any:
    """Finite float64 values in [lo, hi]; with ``away_from_zero=d``, |x| >= d (for abs, sign, ...)."""
    if away_from_zero is None:
        return st.floats(lo, hi, allow_nan=False, allow_infinity=False)
    mag = st.floats(away_from_zero, max(abs(lo), abs(hi)), allow_nan=False, allow_infinity=False)
    return st.tuples(mag, st.booleans()).map(lambda t: t[0] if t[1] else -t[0])


def arrays(
    shape: Any, lo: float = -2.0, hi: float = 2.0, *, away_from_zero: float | None = None, distinct: bool = False
) -> Any:
    """float64 arrays of ``shape`` (a shape or a shape strategy) with values from :func:`floats`.

    ``distinct=True`` makes every value unique and at least 1e-3 apart (for max/min/sort/topk,
    whose gradients jump where two values tie).
    """
    if distinct:
        return _distinct_arrays(shape, lo, hi)
    return hnp.arrays(np.float64, shape, elements=floats(lo, hi, away_from_zero=away_from_zero))


def _distinct_arrays(shape: Any, lo: float, hi: float) -> Any:
    shape_st = shape if isinstance(shape, st.SearchStrategy) else st.just(tuple(shape))

    def build(shp: tuple[int, ...]) -> Any:
        n = int(np.prod(shp, dtype=np.int64))
        # a random permutation of an evenly spaced grid, jittered a little: distinct by construction
        grid = np.linspace(lo, hi, max(n, 1))
        step = (hi - lo) / max(n, 1)
        perm = st.permutations(list(range(n)))
        jitter = hnp.arrays(np.float64, (n,), elements=st.floats(0.0, 0.3 * step if n > 1 else 0.0))
        return st.tuples(perm, jitter).map(
            lambda pj: (grid[list(pj[0])] + pj[1]).reshape(shp) if n else grid[:0].reshape(shp)
        )

    return shape_st.flatmap(build)


def leaf(values: Any, device: Any, requires_grad: bool = True) -> lc.Tensor:
    """A float64 leaf Tensor holding ``values`` on ``device``."""
    return lc.asarray(np.asarray(values, dtype=np.float64), dtype=lc.float64, device=device).requires_grad_(
        requires_grad
    )


def to_numpy(t: lc.Tensor) -> np.ndarray:
    """The values of ``t`` as a NumPy array (detached)."""
    return np.asarray(t.detach().numpy())
