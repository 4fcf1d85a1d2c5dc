"""lucid/_numeric_extra.py (gradient, histogramdd): values, dtypes, gradients against PyTorch's, gradcheck, errors.

Values: every case of ``fixtures/numeric_extra_cases.py`` against ``fixtures/numeric_extra.npz`` (written once by
``casebook.py`` with PyTorch 2.13), then float64 finite-difference checks of ``gradient`` and
PyTorch's errors for bad arguments.
"""

from __future__ import annotations

import numpy as np
import pytest

import lucid
from tests.pytorch_face.fixtures import casebook
from tests.pytorch_face.fixtures import numeric_extra_cases as cases

TORCH = casebook.load("numeric_extra")


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_matches_pytorch(name):
    casebook.assert_matches_pytorch(cases, TORCH, name, 1e-05, 1e-09)


def test_fixture_exercises_edges_and_outside_values():
    # the right edge is closed: the (1, 1) corner counts in the last bin; 1.0000001 and -0.1 are outside
    hist = TORCH["histogramdd_right_edge_inclusive:0"]
    assert hist.sum() == 4 and hist[1, 1] == 2
    got = lucid.histogramdd(lucid.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 0.5]]), bins=2, range=[0.0, 1.0, 0.0, 1.0])
    assert got.hist.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert len(got.bin_edges) == 2 and got.bin_edges[0].tolist() == [0.0, 0.5, 1.0]


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"edge_order": 2, "spacing": 0.7},
        {"spacing": [2.0, 0.5]},
        {"dim": 1, "spacing": [lucid.tensor(cases.COORDS)]},
        {"dim": 1, "spacing": [lucid.tensor(cases.COORDS)], "edge_order": 2},
    ],
    ids=["default", "edge2", "spacing_list", "coords", "coords_edge2"],
)
def test_gradient_gradcheck(kw):
    x = lucid.tensor(cases.F, dtype=lucid.float64, requires_grad=True)
    assert lucid.autograd.gradcheck(lambda t: lucid.gradient(t, **kw), (x,))


def test_gradient_of_a_quadratic_is_exact_with_second_order_edges():
    xs = lucid.tensor(cases.COORDS, dtype=lucid.float64)
    (g,) = lucid.gradient(xs * xs, spacing=[xs], edge_order=2)
    np.testing.assert_allclose(g.numpy(), 2 * cases.COORDS, atol=1e-12)


def test_gradient_errors():
    with pytest.raises(RuntimeError, match="only supports edge_order=1 and edge_order=2"):
        lucid.gradient(lucid.ones(4), edge_order=3)
    with pytest.raises(RuntimeError, match="at least edge_order\\+1"):
        lucid.gradient(lucid.ones(2), edge_order=2)
    with pytest.raises(RuntimeError, match="list of length equal to 'self.dim\\(\\) = 2'"):
        lucid.gradient(lucid.ones(3, 3), spacing=[1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="same length"):
        lucid.gradient(lucid.ones(3, 3), spacing=[1.0, 2.0], dim=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        lucid.gradient(lucid.ones(3, 3), dim=2)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        lucid.gradient(lucid.ones(3, 3), dim=[0, 0])
    # PyTorch returns zeros here; Lucid says the coordinates need one entry per sample (3)
    with pytest.raises(RuntimeError, match=r"gradient expected .*(size 3|\(3\))"):
        lucid.gradient(lucid.ones(3, 3), spacing=[lucid.tensor([0.0, 1.0])], dim=0)


def test_histogramdd_errors():
    x = lucid.tensor(cases.PTS[:5, :2])
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        lucid.histogramdd(lucid.tensor([1.0, 2.0]), bins=2)
    with pytest.raises(RuntimeError, match="size of bins must be equal"):
        lucid.histogramdd(x, bins=[2, 2, 2])
    with pytest.raises(NotImplementedError, match='"histogramdd" not implemented for \'?int64'):
        lucid.histogramdd(lucid.tensor([[1, 2]]), bins=2)
    with pytest.raises(RuntimeError, match="range should have 4 elements, but got 2"):
        lucid.histogramdd(x, bins=2, range=[0.0, 1.0])
    with pytest.raises(RuntimeError, match="bins must be > 0, but got 0 for dimension 0"):
        lucid.histogramdd(x, bins=0)
    with pytest.raises(RuntimeError, match=r"min should not exceed max, but got min 1(\.0)? max 0(\.0)? for dim"):
        lucid.histogramdd(x, bins=2, range=[1.0, 0.0, 0.0, 1.0])
    with pytest.raises(RuntimeError, match="same shape as the input tensor excluding its innermost"):
        lucid.histogramdd(x, bins=2, weight=lucid.ones(4, dtype=lucid.float64))
    with pytest.raises(RuntimeError, match="should have the same dtype"):
        lucid.histogramdd(x, bins=2, weight=lucid.ones(5))
    with pytest.raises(RuntimeError, match="bins tensors should have the same dtype"):
        lucid.histogramdd(x, bins=[lucid.tensor([0.0, 1.0]), lucid.tensor([0.0, 1.0])])
