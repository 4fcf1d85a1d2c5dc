"""``torch.special`` on Lucid tensors: every function of PyTorch 2.13's ``torch.special``, with ``out=``.

The functions and their gradients are :mod:`lucid_core.special`'s (kernels a backend may own, SciPy's on
the NumPy backend); this module adds PyTorch's ``out=`` keyword and its aliases (``psi``, ``expit``...).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import lucid_core as lc
from lucid_core import special as _s

_NAMES = (
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma", "entr", "erf", "erfc",
    "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln", "hermite_polynomial_h",
    "hermite_polynomial_he", "i0", "i0e", "i1", "i1e", "laguerre_polynomial_l", "legendre_polynomial_p",
    "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w",
    "sinc", "softmax", "spherical_bessel_j0", "xlog1py", "xlogy", "zeta",
)  # fmt: skip

#: functions PyTorch gives no ``out=`` (they take ``dtype=`` instead)
_NO_OUT = {"softmax", "log_softmax"}

__all__ = list(_NAMES)


def _with_out(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def function(*args: Any, out: Any = None, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        if out is None:
            return result
        if tuple(out.shape) != tuple(result.shape):
            raise ValueError(f"out=: expected a tensor of shape {tuple(result.shape)}, got {tuple(out.shape)}")
        with lc.no_grad():
            out.copy_(result)
        return out

    return function


def _core(name: str) -> Callable[..., Any]:
    return getattr(_s, name)


for _name in _NAMES:
    globals()[_name] = _core(_name) if _name in _NO_OUT else _with_out(_core(_name))
del _name
