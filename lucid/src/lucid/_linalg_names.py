"""PyTorch's main-namespace names for linear algebra, special functions and signal windows.

``torch.det``, ``torch.svd`` (the old API: ``some=``, V not Vh), ``torch.lgamma``, ``torch.igamma``,
``torch.hann_window``...: the math is :mod:`lucid_core.linalg`'s and :mod:`lucid_core.special`'s (whose
``TORCH_FUNCTIONS`` tables are also the Tensor methods ``x.det()``, ``x.lgamma_()``...). Importing this module
also binds ``lucid.linalg``, ``lucid.fft`` and ``lucid.special`` to the face's modules (not the engine's).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from typing import Any

import lucid_core as lc
from lucid_core import Tensor
from lucid_core import fft as _core_fft
from lucid_core import linalg as _core_linalg
from lucid_core import special as _core_special

# by full name: ``from . import linalg`` would find the engine's module, which ``from lucid_core import *`` bound
linalg = importlib.import_module("lucid.linalg")
fft = importlib.import_module("lucid.fft")
special = importlib.import_module("lucid.special")

__all__ = [
    "fft", "linalg", "special",
    *_core_linalg.TORCH_FUNCTIONS, *_core_special.TORCH_FUNCTIONS, *_core_fft.TORCH_FUNCTIONS,
    "chain_matmul", "vander",
    "bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window",
]  # fmt: skip

globals().update(_core_linalg.TORCH_FUNCTIONS)
globals().update(_core_special.TORCH_FUNCTIONS)
globals().update(_core_fft.TORCH_FUNCTIONS)


def chain_matmul(*matrices: Tensor, out: Tensor | None = None) -> Tensor:
    """The product of two or more matrices (``torch.chain_matmul``; ``linalg.multi_dot`` of 2-D inputs)."""
    if len(matrices) == 1:
        return matrices[0]
    return linalg.multi_dot(matrices, out=out)


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803
    """The Vandermonde matrix of a 1-D ``x``: decreasing powers unless ``increasing`` (``torch.vander``)."""
    if x.ndim != 1:
        raise ValueError(f"vander: x must be 1-D, got shape {tuple(x.shape)}")
    v = _core_linalg.vander(x, n=N)
    return v if increasing else lc.flip(v, axis=-1)


# -- signal windows -------------------------------------------------------------------------------------


def _window(
    name: str,
    window_length: int,
    periodic: bool,
    dtype: Any,
    device: Any,
    requires_grad: bool,
) -> tuple[Tensor | None, float]:
    """(the sample positions 0..N-1 as floats, the denominator N or N-1), or (None, 0) for lengths 0 and 1."""
    if not isinstance(window_length, int) or window_length < 0:
        raise ValueError(f"{name}: window_length must be a non-negative int, got {window_length!r}")
    d = lc.float32 if dtype is None else dtype
    if d.kind != "f":
        raise TypeError(f"{name}: expected a floating-point dtype, got {d.name}")
    if window_length <= 1:
        return None, 0.0
    n = lc.arange(window_length, dtype=d, device=device)
    return n, float(window_length if periodic else window_length - 1)


def _finish(values: Tensor, requires_grad: bool) -> Tensor:
    return values.requires_grad_(True) if requires_grad else values


def _trivial(window_length: int, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    return _finish(lc.ones(window_length, dtype=lc.float32 if dtype is None else dtype, device=device), requires_grad)


def _cosine_sum(
    name: str,
    coefficients: Sequence[float],
    window_length: int,
    periodic: bool,
    dtype: Any,
    device: Any,
    requires_grad: bool,
) -> Tensor:
    n, denom = _window(name, window_length, periodic, dtype, device, requires_grad)
    if n is None:
        return _trivial(window_length, dtype, device, requires_grad)
    w = n * 0.0
    for k, a in enumerate(coefficients):
        w = w + ((-1) ** k) * a * lc.cos(2.0 * math.pi * k * n / denom)
    return _finish(w, requires_grad)


def hann_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The Hann window 0.5 - 0.5 cos(2 pi n / N)."""
    return _cosine_sum("hann_window", (0.5, 0.5), window_length, periodic, dtype, device, requires_grad)


def hamming_window(
    window_length: int,
    periodic: bool = True,
    alpha: float = 0.54,
    beta: float = 0.46,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The Hamming window alpha - beta cos(2 pi n / N)."""
    return _cosine_sum("hamming_window", (alpha, beta), window_length, periodic, dtype, device, requires_grad)


def blackman_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The Blackman window 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)."""
    return _cosine_sum("blackman_window", (0.42, 0.5, 0.08), window_length, periodic, dtype, device, requires_grad)


def bartlett_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The triangular Bartlett window 1 - |2 n / N - 1|."""
    n, denom = _window("bartlett_window", window_length, periodic, dtype, device, requires_grad)
    if n is None:
        return _trivial(window_length, dtype, device, requires_grad)
    return _finish(1.0 - lc.abs(2.0 * n / denom - 1.0), requires_grad)


def kaiser_window(
    window_length: int,
    periodic: bool = True,
    beta: float = 12.0,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The Kaiser window I0(beta sqrt(1 - (2 n / N - 1)^2)) / I0(beta)."""
    n, denom = _window("kaiser_window", window_length, periodic, dtype, device, requires_grad)
    if n is None:
        return _trivial(window_length, dtype, device, requires_grad)
    if periodic:  # PyTorch: the symmetric window of length N + 1, without its last sample
        n = lc.arange(window_length, dtype=n.dtype, device=n.device)
    r = 2.0 * n / denom - 1.0
    arg = beta * lc.sqrt(lc.clip(1.0 - r * r, 0.0, None))
    w = _core_special.i0(arg) / _core_special.i0(lc.asarray(beta, dtype=n.dtype, device=n.device))
    return _finish(w, requires_grad)
