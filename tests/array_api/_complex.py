"""Test-only helpers for complex gradients: build ``a + i b`` from two real leaves, split results back.

``lc.gradcheck`` perturbs real float64 inputs, so a complex function ``f`` is checked as
``(Re f, Im f)`` of ``Complex.apply(a, b)``. Its backward reads the complex gradient ``g`` with
PyTorch's convention (``g = dL/dRe + i dL/dIm``), so a holomorphic op that forgets to conjugate
its derivative fails the check.
"""

from __future__ import annotations

import lucid_core as lc
from lucid_core.ops.complex import imag, real


class Complex(lc.Function):
    """a + i b from two real tensors (so gradcheck, which perturbs reals, can drive complex inputs)."""

    @staticmethod
    def forward(ctx, a, b):
        return a + b * 1j

    @staticmethod
    def backward(ctx, g):
        return real(g), imag(g)


def parts(y):
    """``(real(y), imag(y))`` for a complex tensor (or a tuple of them); real tensors as they are."""
    if isinstance(y, tuple):
        out: list = []
        for t in y:
            p = parts(t)
            out.extend(p if isinstance(p, tuple) else (p,))
        return tuple(out)
    return (real(y), imag(y)) if y.dtype.kind == "c" else y
