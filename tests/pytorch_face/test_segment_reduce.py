"""torch.segment_reduce (lucid/_segment.py) against PyTorch: values, gradients, finite differences, errors.

Values and gradients: every case of ``fixtures/segment_reduce_cases.py`` (all five reductions; 1-D, 2-D and 3-D
data; axis 0, 1 and -1; lengths and offsets; empty segments with and without ``initial``; ties) against
``fixtures/segment_reduce.npz`` (written once by ``casebook.py`` with PyTorch 2.13).
"""

from __future__ import annotations

import numpy as np
import pytest

import lucid
from tests.pytorch_face.fixtures import casebook
from tests.pytorch_face.fixtures import segment_reduce_cases as cases

TORCH = casebook.load("segment_reduce")


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_matches_pytorch(name):
    casebook.assert_matches_pytorch(cases, TORCH, name, 1e-05, 1e-09)


def test_empty_segment_values():
    x = lucid.tensor([1.0, 2.0])
    got = {r: lucid.segment_reduce(x, r, lengths=lucid.tensor([0, 2])).tolist()[0] for r in cases.REDUCES}
    assert got["sum"] == 0.0 and got["prod"] == 1.0 and np.isnan(got["mean"])
    assert got["max"] == float("-inf") and got["min"] == float("inf")
    for r in cases.REDUCES:
        assert lucid.segment_reduce(x, r, lengths=lucid.tensor([0, 2]), initial=-4.0).tolist()[0] == -4.0


@pytest.mark.parametrize("reduce", cases.REDUCES)
@pytest.mark.parametrize(
    ("shape", "kw"),
    [((6,), {"lengths": [2, 0, 3, 1]}), ((3, 4), {"offsets": [[0, 1, 4], [0, 0, 4], [1, 2, 3]], "axis": 1})],
    ids=["1d_lengths", "2d_axis1_offsets"],
)
def test_gradcheck_float64(reduce, shape, kw):
    # distinct values away from zero, so max/min have no ties and prod no zero within a finite-difference step
    a = np.random.default_rng(5).permutation(np.arange(1, 1 + int(np.prod(shape)))).reshape(shape) / 4.0 + 0.1
    x = lucid.tensor(a, dtype=lucid.float64, requires_grad=True)
    kw = {k: (lucid.tensor(v) if k != "axis" else v) for k, v in kw.items()}
    assert lucid.autograd.gradcheck(lambda t: lucid.segment_reduce(t, reduce, initial=0.3, **kw), (x,))
    if reduce not in ("mean", "max", "min"):  # empty segments there give nan/inf, which finite differences can't
        assert lucid.autograd.gradcheck(lambda t: lucid.segment_reduce(t, reduce, **kw), (x,))


def test_rejects_bad_input():
    d = lucid.ones(3, 4)
    with pytest.raises(RuntimeError, match="Either lengths or offsets must be defined"):
        lucid.segment_reduce(d, "sum")
    with pytest.raises(RuntimeError, match="indices based reduction is not supported"):
        lucid.segment_reduce(d, "sum", indices=lucid.tensor([0, 1, 1]))
    with pytest.raises(RuntimeError, match="got median"):
        lucid.segment_reduce(d, "median", lengths=lucid.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="sum to data.size"):
        lucid.segment_reduce(d, "sum", lengths=lucid.tensor([1, 1]))
    with pytest.raises(RuntimeError, match="negative"):
        lucid.segment_reduce(d, "sum", lengths=lucid.tensor([-1, 4]))
    with pytest.raises(RuntimeError, match="negative"):
        lucid.segment_reduce(d, "sum", lengths=lucid.tensor([-1, 2]), unsafe=True)
    with pytest.raises(RuntimeError, match="last dimension of lengths but got 1"):
        lucid.segment_reduce(d, "sum", lengths=lucid.tensor([1, 3]), axis=1)
    with pytest.raises(RuntimeError, match="leading shape"):
        lucid.segment_reduce(d, "sum", lengths=lucid.tensor([[1, 3], [2, 2]]), axis=1)
    with pytest.raises(RuntimeError, match="non-decreasing"):
        lucid.segment_reduce(d, "sum", offsets=lucid.tensor([0, 2, 1]))
    with pytest.raises(RuntimeError, match=r"lie in \[0, data.size\(0\)\]"):
        lucid.segment_reduce(d, "sum", offsets=lucid.tensor([0, 2, 5]))
    with pytest.raises(RuntimeError, match="integer tensor"):
        lucid.segment_reduce(d, "sum", lengths=lucid.tensor([1.0, 2.0]))
    with pytest.raises(IndexError, match=r"expected to be in range of \[-2, 1\], but got 2"):
        lucid.segment_reduce(d, "sum", lengths=lucid.tensor([1, 2]), axis=2)
    with pytest.raises(NotImplementedError, match="floating point"):
        lucid.segment_reduce(lucid.tensor([1, 2, 3]), "sum", lengths=lucid.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="at least one dimension"):
        lucid.segment_reduce(lucid.tensor(3.0), "sum", lengths=lucid.tensor([1]))
