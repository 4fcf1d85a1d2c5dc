"""``lucid_core.special``'s kernels through SciPy (``scipy.special``), when SciPy is installed.

Without SciPy the backend registers none of them and the core's composed defaults run instead (the
rarer functions, Bessel J/Y/K and Airy, then raise ``NotImplementedError``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: lucid_core kernel name -> scipy.special function name (element-wise, same arguments)
_SCIPY_NAMES = {
    "special_gammaln": "gammaln",
    "special_digamma": "psi",
    "special_zeta": "zeta",
    "special_erfc": "erfc",
    "special_erfcx": "erfcx",
    "special_erfinv": "erfinv",
    "special_ndtri": "ndtri",
    "special_log_ndtr": "log_ndtr",
    "special_i0": "i0",
    "special_i0e": "i0e",
    "special_i1": "i1",
    "special_i1e": "i1e",
    "special_gammainc": "gammainc",
    "special_gammaincc": "gammaincc",
    "special_bessel_j0": "j0",
    "special_bessel_j1": "j1",
    "special_bessel_y0": "y0",
    "special_bessel_y1": "y1",
    "special_modified_bessel_k0": "k0",
    "special_modified_bessel_k1": "k1",
    "special_scaled_modified_bessel_k0": "k0e",
    "special_scaled_modified_bessel_k1": "k1e",
}


def special_kernels(np: Any) -> dict[str, Callable[..., Any]]:
    """The kernels, or an empty table without SciPy; results keep the input's dtype (float32 stays float32)."""
    try:
        from scipy import special as sp
    except ImportError:  # pragma: no cover - depends on the environment
        return {}

    def same_dtype(fn: Callable[..., Any]) -> Callable[..., Any]:
        def kernel(*args: Any) -> Any:
            out = np.asarray(fn(*args))
            return out.astype(args[-1].dtype, copy=False)

        return kernel

    table = {name: same_dtype(getattr(sp, fn)) for name, fn in _SCIPY_NAMES.items()}

    def polygamma(n: int, x: Any) -> Any:
        return np.asarray(sp.polygamma(n, x)).astype(x.dtype, copy=False)

    def airy_ai(x: Any) -> Any:
        return np.asarray(sp.airy(x)[0]).astype(x.dtype, copy=False)

    table["special_polygamma"] = polygamma
    table["special_airy_ai"] = airy_ai
    return table
