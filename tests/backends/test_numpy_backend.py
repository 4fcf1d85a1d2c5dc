"""NumPy-backend fast paths give exactly what the plain NumPy calls give."""

from __future__ import annotations

import numpy as np
import pytest

import lucid_core as lc
from lucid_backend_numpy import _backend, _native


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_where_bit_select_is_exact_for_every_value(dtype):
    xp = lc.get_backend("numpy").xp
    rng = np.random.default_rng(0)
    a = rng.standard_normal((40, 50)).astype(dtype)
    b = rng.standard_normal((40, 50)).astype(dtype)
    a[0, :5] = [np.nan, np.inf, -np.inf, -0.0, 0.0]
    b[0, :5] = [1.0, np.nan, 2.0, 0.0, -0.0]
    m = rng.random((40, 50)) > 0.5
    m[0, :5] = True
    got, ref = xp.where(m, a, b), np.where(m, a, b)
    assert got.dtype == ref.dtype
    assert got.tobytes() == ref.tobytes()
    assert xp.where(~m, a, b).tobytes() == np.where(~m, a, b).tobytes()


def test_batched_matmul_of_transposed_views_matches_numpy():
    xp = lc.get_backend("numpy").xp
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4, 5))
    b = rng.standard_normal((3, 6, 5))
    np.testing.assert_array_equal(xp.matmul(a, np.swapaxes(b, -1, -2)), np.matmul(a, np.swapaxes(b, -1, -2)))


def test_in_place_updates_write_into_the_same_memory():
    p = lc.Parameter(lc.ones(4, device="numpy"))
    buf = p.native
    with lc.no_grad():
        p.sub_(lc.ones(4, device="numpy"), alpha=0.5)
        p.mul_(2.0)
        p.add_(1)
    assert p.native is buf and p.tolist() == [2.0, 2.0, 2.0, 2.0]
    view = lc.asarray(np.broadcast_to(np.ones(1, dtype=np.float32), (3,)))  # read-only memory
    view += 1.0
    assert view.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize(
    "key_shape, rows, cols, key_form",
    [((12, 64), 65, 64, "tuple"), ((1000,), 5000, 3, "array"), ((40,), 6, 8, "tuple"), ((300,), 3, 4, "array")],
)
@pytest.mark.parametrize("compiled", ["1", "0"], ids=["compiled loop", "NumPy rounds"])
def test_row_index_add_is_np_add_at_bit_for_bit(key_shape, rows, cols, key_form, compiled, monkeypatch):
    """The embedding-gradient paths (a compiled loop over the rows, or NumPy adding them in rounds) make
    np.add.at's additions in its order: repeated and negative indices, a non-zero target, and many repeats of
    few rows (where the rounds fall back to np.add.at)."""
    if compiled == "1" and _native.load() is None:
        pytest.skip("lucid_backend_numpy's compiled kernels are not built (no C compiler at install)")
    monkeypatch.setenv("LUCID_NUMPY_CKERNELS", compiled)
    add = _backend._kernels(np)["index_add"]
    rng = np.random.default_rng(0)
    idx = rng.integers(-rows, rows, key_shape)
    values = rng.standard_normal((*key_shape, cols)).astype(np.float32)
    z = rng.standard_normal((rows, cols)).astype(np.float32)
    want = z.copy()
    np.add.at(want, (idx, Ellipsis), values)
    got = add(z.copy(), (idx, Ellipsis) if key_form == "tuple" else idx, values)
    assert got.tobytes() == want.tobytes()


def test_row_index_add_out_of_range_raises_like_np_add_at():
    add = lc.get_backend("numpy").kernels["index_add"]
    for bad in (np.arange(20) % 5, -(np.arange(20) % 5) - 1):  # 4 and -5 are out of range for 4 rows
        z = np.zeros((4, 3), np.float32)
        with pytest.raises(IndexError):
            add(z, bad, np.ones((20, 3), np.float32))
