"""8-bit float casts with PyTorch's bits, over ``ml_dtypes``' float8 dtypes.

Every source is first rounded to float32 (PyTorch's float8 constructors take a float, so float64 and integers
reach them through float32). ``ml_dtypes`` then rounds to nearest even, as PyTorch does, except where PyTorch's
rules differ (checked bit for bit against PyTorch 2.13 by tests/core/test_low_precision_dtypes.py):

- float8_e4m3fn saturates: finite values beyond 448 and the infinities become +-448 (``ml_dtypes`` gives NaN);
- float8_e5m2's NaN is ``0x7f`` (``ml_dtypes`` gives ``0x7e``), sign kept;
- float8_e8m0fnu keeps float32's exponent byte, ignoring the sign, rounding its mantissa to nearest even
  (zero becomes 2**-127; NaN and the infinities the NaN ``0xff``).
"""

from __future__ import annotations

from typing import Any

NAMES = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu")


def native_dtypes(np: Any) -> dict[str, Any]:
    """NumPy dtypes of the float8 formats, by Lucid name (``ml_dtypes``, imported with NumPy)."""
    import ml_dtypes

    return {name: np.dtype(getattr(ml_dtypes, name)) for name in NAMES}


def cast(np: Any, x: Any, target: Any) -> Any:
    """``x`` (an ndarray of any real dtype) as the float8 dtype ``target``, with PyTorch's rounding."""
    name = target.name
    with np.errstate(over="ignore", invalid="ignore"):
        x32 = np.asarray(x, dtype=np.float32)
    if name == "float8_e8m0fnu":
        bits = x32.view(np.uint32)
        exponent = ((bits >> 23) & 0xFF).astype(np.uint8)
        guard = (bits & 0x400000) != 0
        rest = (bits & 0x3FFFFF) != 0
        up = guard & (rest | (exponent > 0))  # round to nearest even on the implied bit
        out = np.where(exponent == 0xFF, np.uint8(0xFF), exponent + up.astype(np.uint8))
        return out.astype(np.uint8).view(target)
    if name == "float8_e4m3fn":
        x32 = np.clip(x32, -448.0, 448.0)  # NaN stays NaN
    out = x32.astype(target)
    if name == "float8_e5m2":
        bits = out.view(np.uint8)
        out = np.where(np.isnan(x32), bits | np.uint8(1), bits).astype(np.uint8).view(target)
    return out
