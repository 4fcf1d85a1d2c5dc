"""Float64-accurate elementary functions for MLX's CPU.

MLX's CPU kernels for exp, sin, cos, erf, sigmoid and logaddexp are only float32-accurate in
float64 (relative errors 1e-7 to 3e-5), too coarse for finite-difference gradient checks. These
compose them from MLX functions that are float64-accurate (cosh, sinh, tan, log1p).
"""

from __future__ import annotations

import math
from typing import Any

import mlx.core as mx

__all__ = ["exp64", "sin64", "cos64", "erf64", "sigmoid64", "logaddexp64", "logsumexp64", "erf32"]


def exp64(x: Any) -> Any:
    """exp(x) to float64 accuracy: cosh + sinh of |x| (no cancellation), inverted for x < 0."""
    a = mx.abs(x)
    e = mx.cosh(a) + mx.sinh(a)
    return mx.where(x >= 0, e, 1.0 / e)


def _half_tan(x: Any) -> tuple[Any, Any, Any]:
    t = mx.tan(0.5 * x)
    tt = t * t
    return t, tt, 1.0 + tt


def sin64(x: Any) -> Any:
    """sin(x) to float64 accuracy through the half-angle tangent."""
    t, _, d = _half_tan(x)
    return mx.where(mx.isinf(d), 0.0, 2.0 * t / d)


def cos64(x: Any) -> Any:
    """cos(x) to float64 accuracy through the half-angle tangent."""
    _, tt, d = _half_tan(x)
    return mx.where(mx.isinf(d), -1.0, (1.0 - tt) / d)


_SQRT_PI = math.sqrt(math.pi)


def erf64(x: Any) -> Any:
    """erf(x) to float64 accuracy: a positive-term series below 2.5, erfc's continued fraction above."""
    a = mx.abs(x)
    s = mx.minimum(a, 2.5)
    two_s2 = 2.0 * s * s
    term = s
    total = s
    for n in range(1, 64):
        term = term * two_s2 / (2 * n + 1)
        total = total + term
    series = (2.0 / _SQRT_PI) * exp64(-s * s) * total
    c = mx.maximum(a, 2.5)
    f = c
    for k in range(90, 0, -1):
        f = c + (0.5 * k) / f
    tail = 1.0 - exp64(-c * c) / (_SQRT_PI * f)
    v = mx.where(a < 2.5, series, mx.where(a > 6.0, 1.0, tail))
    v = mx.where(mx.isnan(x), x, v)
    return mx.where(x < 0, -v, v)


def sigmoid64(x: Any) -> Any:
    """The logistic function to float64 accuracy, stable for large |x|."""
    e = exp64(-mx.abs(x))
    return mx.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def logaddexp64(a: Any, b: Any) -> Any:
    m = mx.maximum(a, b)
    r = m + mx.log1p(exp64(-mx.abs(a - b)))
    return mx.where(a == b, a + math.log(2.0), r)


def logsumexp64(x: Any, axis: Any, keepdims: bool) -> Any:
    m = mx.max(x, axis=axis, keepdims=True)
    m = mx.where(mx.isfinite(m), m, 0.0)
    out = mx.log(mx.sum(exp64(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else mx.squeeze(out, axis=axis)


def erf32(x: Any) -> Any:
    # MLX's float32 erf loses relative accuracy near 0; the series is exact to rounding there
    xx = x * x
    small = (2.0 / _SQRT_PI) * x * (1.0 - xx / 3.0 + xx * xx / 10.0 - xx * xx * xx / 42.0)
    return mx.where(mx.abs(x) < 0.05, small, mx.erf(x))
