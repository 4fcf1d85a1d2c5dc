"""Special functions (PyTorch's ``torch.special``), with gradients written in Lucid ops.

Each function whose values no Array API composition gives exactly is a kernel a backend may own
(``kernels.KERNELS``, declared here): ``special_gammaln``, ``special_digamma``, ``special_erfinv``...
The NumPy backend registers SciPy's where SciPy is installed; every other backend gets the composed
default below (series, continued fractions and asymptotic expansions in ``xp``, accurate to about
1e-13 in float64), or, for the rarer functions (Bessel J/Y/K, Airy), a
``NotImplementedError`` naming the kernel. The functions composed from other ops (``xlogy``,
``entr``, ``sinc``, ``logit``, ``ndtr``...) get their gradients for free.

The names and arguments are PyTorch's (``lucid.special`` re-exports them with ``out=``); integer and
bool inputs are promoted to the default float dtype, as in PyTorch.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any

from . import _dtypes as dt
from ._autograd import Function
from ._forward_ad import jvp_from_vjp
from ._tensor import Tensor, check_tensor
from .kernels import KERNELS, Kernel, call
from .ops.creation import asarray
from .ops.elementwise import (
    erf,
    exp,
    expm1,
    isnan,
    log,
    log1p,
    logical_and,
    logical_not,
    sigmoid,
    sign,
    sin,
    where,
)
from .ops.elementwise import round as round_
from .ops.manipulation import astype
from .ops.reduction import logsumexp as logsumexp_

__all__ = [
    "gammaln", "digamma", "polygamma", "multigammaln", "zeta",
    "erf", "erfc", "erfcx", "erfinv", "ndtr", "ndtri", "log_ndtr",
    "expit", "logit", "exp2", "expm1", "log1p", "sinc", "round", "softmax", "log_softmax", "logsumexp",
    "xlogy", "xlog1py", "entr",
    "i0", "i0e", "i1", "i1e", "gammainc", "gammaincc",
    "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "spherical_bessel_j0", "airy_ai",
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
    "legendre_polynomial_p",
]  # fmt: skip

_SQRT_PI = math.sqrt(math.pi)
_SQRT_2 = math.sqrt(2.0)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)

# -- composed defaults (native arrays in, native arrays out) -------------------------------------------

# Lanczos' approximation, g = 7, nine terms (relative error about 1e-15 for x >= 0.5)
_LANCZOS_G = 7.0
_LANCZOS = (
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
    12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
)  # fmt: skip
# Bernoulli numbers B_2 .. B_24 (the Euler-Maclaurin tail of the Hurwitz zeta function)
_BERNOULLI = (
    1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798, -174611 / 330,
    854513 / 138, -236364091 / 2730,
)  # fmt: skip


def _sin_pi(xp: Any, x: Any) -> Any:
    """sin(pi x), with x reduced modulo 2 first so large arguments keep their precision."""
    r = x - 2.0 * xp.floor(0.5 * x)
    return xp.sin(math.pi * r)


def _lanczos_lgamma(xp: Any, x: Any) -> Any:
    z = x - 1.0
    a = _LANCZOS[0] + xp.zeros_like(z)
    for i, c in enumerate(_LANCZOS[1:], start=1):
        a = a + c / (z + i)
    t = z + _LANCZOS_G + 0.5
    return _LOG_SQRT_2PI + (z + 0.5) * xp.log(t) - t + xp.log(a)


def _gammaln(device: Any, x: Any) -> Any:
    xp = device.xp
    left = x < 0.5
    right = _lanczos_lgamma(xp, xp.where(left, 1.0 - x, x))
    reflected = math.log(math.pi) - xp.log(xp.abs(_sin_pi(xp, x))) - right  # Gamma(x) Gamma(1-x) = pi / sin(pi x)
    return xp.where(left, reflected, right)


def _digamma(device: Any, x: Any) -> Any:
    xp = device.xp
    neg = x < 0
    y = xp.where(neg, 1.0 - x, x)
    shift = xp.zeros_like(y)
    for k in range(8):  # psi(y) = psi(y + 8) - sum 1 / (y + k)
        shift = shift + 1.0 / (y + k)
    z = y + 8.0
    iz2 = 1.0 / (z * z)
    # the asymptotic series ln z - 1/(2z) - sum B_2k / (2k z^2k)
    tail = xp.zeros_like(z)
    for b, k in reversed(list(zip(_BERNOULLI[:7], range(1, 8)))):
        tail = (tail + b / (2 * k)) * iz2
    psi = xp.log(z) - 0.5 / z - tail - shift
    reflected = psi - math.pi * xp.cos(math.pi * x) / _sin_pi(xp, x)  # psi(1-x) - pi cot(pi x)
    out = xp.where(neg, reflected, psi)
    pole = xp.logical_and(neg, x == xp.floor(x))
    return xp.where(pole, xp.full_like(x, math.nan), out)


def _zeta(device: Any, s: Any, q: Any) -> Any:
    """The Hurwitz zeta function sum_k (q + k)^-s by Euler-Maclaurin summation (s > 1)."""
    xp = device.xp
    s, q = xp.broadcast_arrays(s, q)
    n = 12
    total = xp.zeros_like(q)
    for k in range(n):
        total = total + xp.pow(q + k, -s)
    a = q + n
    total = total + xp.pow(a, 1.0 - s) / (s - 1.0) + 0.5 * xp.pow(a, -s)
    rising = s  # s (s+1) ... (s + 2j - 2)
    fact = 2.0  # (2j)!
    apow = xp.pow(a, -s - 1.0)
    for j, b in enumerate(_BERNOULLI, start=1):
        total = total + (b / fact) * rising * apow
        rising = rising * (s + 2 * j - 1) * (s + 2 * j)
        fact *= (2 * j + 1) * (2 * j + 2)
        apow = apow / (a * a)
    bad = xp.logical_or(s < 1.0, xp.logical_and(q <= 0, q == xp.floor(q)))
    total = xp.where(s == 1.0, xp.full_like(total, math.inf), total)
    return xp.where(bad, xp.full_like(total, math.nan), total)


def _polygamma(device: Any, n: int, x: Any) -> Any:
    if n == 0:
        return call(device, "special_digamma", x)
    xp = device.xp
    z = call(device, "special_zeta", xp.full_like(x, n + 1.0), x)
    return (-1.0) ** (n + 1) * math.factorial(n) * z


def _erfc_cf(xp: Any, a: Any, terms: int = 90) -> Any:
    """The continued fraction ``f`` with erfc(a) = exp(-a^2) / (sqrt(pi) f), a >= 2 (accurate to ~1e-15)."""
    f = a
    for k in range(terms, 0, -1):
        f = a + (k / 2.0) / f
    return f


def _erfc(device: Any, x: Any) -> Any:
    xp = device.xp
    a = xp.abs(x)
    c = xp.maximum(a, 2.0)
    tail = xp.exp(-c * c) / (_SQRT_PI * _erfc_cf(xp, c))  # erfc(|x|) for |x| >= 2, no cancellation
    near = 1.0 - call(device, "erf", a)
    pos = xp.where(a < 2.0, near, tail)
    return xp.where(x < 0, 2.0 - pos, pos)


def _erfcx(device: Any, x: Any) -> Any:
    xp = device.xp
    c = xp.maximum(x, 2.0)
    large = 1.0 / (_SQRT_PI * _erfc_cf(xp, c))
    s = xp.minimum(x, 2.0)
    small = xp.exp(s * s) * _erfc(device, s)
    return xp.where(x < 2.0, small, large)


def _inverse_erf(device: Any, x: Any, q: Any) -> Any:
    """y >= 0 with erf(y) = x, where q = 1 - x is given separately (exact for x near 1).

    A rough start (Winitzki's closed form, 2e-3 relative) and three Halley steps (cubic convergence);
    the residual is taken in erf below 0.5 and in erfc above, so neither end cancels.
    """
    xp = device.xp
    lw = xp.log(q * (2.0 - q))  # ln(1 - x^2) without forming 1 - x^2
    aw = 0.147
    b = 2.0 / (math.pi * aw) + 0.5 * lw
    y = xp.sqrt(xp.maximum(xp.sqrt(b * b - lw / aw) - b, 0.0))
    for _ in range(3):
        r = xp.where(x < 0.5, call(device, "erf", y) - x, q - _erfc(device, y))
        slope = (2.0 / _SQRT_PI) * xp.exp(-y * y)
        step = r / slope
        y = y - step / (1.0 + y * step)
    return y


def _erfinv(device: Any, x: Any) -> Any:
    xp = device.xp
    a = xp.abs(x)
    y = _inverse_erf(device, a, 1.0 - a)
    y = xp.where(a == 1.0, xp.full_like(y, math.inf), y)
    y = xp.where(a > 1.0, xp.full_like(y, math.nan), y)
    return xp.sign(x) * y


def _ndtri(device: Any, p: Any) -> Any:
    xp = device.xp
    lower = p < 0.5
    q = xp.where(lower, 2.0 * p, 2.0 * (1.0 - p))  # erfc(y) = q with ndtri(p) = -+ sqrt(2) y
    y = _inverse_erf(device, 1.0 - q, q)
    y = xp.where(q == 0.0, xp.full_like(y, math.inf), y)
    out = _SQRT_2 * xp.where(lower, -y, y)
    return xp.where(xp.logical_or(p < 0.0, p > 1.0), xp.full_like(out, math.nan), out)


def _log_ndtr(device: Any, x: Any) -> Any:
    xp = device.xp
    t = -x / _SQRT_2
    # below -1 through erfcx (log ndtr = log(erfcx(t) / 2) - t^2 never underflows), above through log1p
    tail = xp.log(0.5 * _erfcx(device, xp.maximum(t, 0.7))) - t * t
    upper = xp.log1p(-0.5 * _erfc(device, -t))
    return xp.where(x < -1.0, tail, upper)


def _bessel_i(device: Any, x: Any, order: int, scaled: bool) -> Any:
    """I_0 or I_1 (times exp(-|x|) when ``scaled``): power series up to 30, asymptotic series above."""
    xp = device.xp
    a = xp.abs(x)
    s = xp.minimum(a, 30.0)
    q = 0.25 * s * s
    term = xp.ones_like(s) if order == 0 else 0.5 * s
    total = term
    for k in range(1, 90):
        term = term * q / (k * (k + order))
        total = total + term
    small = total * xp.exp(-s) if scaled else total
    c = xp.maximum(a, 30.0)
    mu = 4.0 * order * order
    term = xp.ones_like(c)
    series = term
    for k in range(1, 32):
        term = term * (-(mu - (2 * k - 1) ** 2) / (8.0 * k * c))
        series = series + term
    large = series / xp.sqrt(2.0 * math.pi * c)
    if not scaled:
        large = large * xp.exp(c)
    out = xp.where(a < 30.0, small, large)
    return xp.sign(x) * out if order == 1 else out


def _gammainc_parts(device: Any, a: Any, x: Any) -> tuple[Any, Any, Any]:
    """(P by its series, Q by its continued fraction, where the series is the one to use): the regularized
    incomplete gamma functions, the series for x < a + 1 and the continued fraction above (each converges
    fast where it is used; fixed iteration counts keep them element-wise)."""
    xp = device.xp
    a, x = xp.broadcast_arrays(a, x)
    use_series = x < a + 1.0
    xs = xp.where(use_series, x, xp.zeros_like(x))
    xpos = xp.where(x > 0, x, xp.ones_like(x))
    lead = a * xp.log(xpos) - x - call(device, "special_gammaln", a)  # log(x^a e^-x / Gamma(a))
    term = 1.0 / a
    total = term
    for n in range(1, 400):
        term = term * xs / (a + n)
        total = total + term
    p = xp.where(x > 0, xp.exp(lead) * total, xp.zeros_like(x))
    xc = xp.where(use_series, a + 1.0, x)  # the continued fraction of Q (modified Lentz), at safe points
    tiny = 1e-300 if x.dtype == xp.float64 else 1e-30
    b = xc + 1.0 - a
    c = xp.full_like(xc, 1.0 / tiny)
    d = 1.0 / b
    h = d
    for i in range(1, 200):
        an = -i * (i - a)
        b = b + 2.0
        d = an * d + b
        d = xp.where(xp.abs(d) < tiny, xp.full_like(d, tiny), d)
        c = b + an / c
        c = xp.where(xp.abs(c) < tiny, xp.full_like(c, tiny), c)
        d = 1.0 / d
        h = h * d * c
    leadc = a * xp.log(xc) - xc - call(device, "special_gammaln", a)
    q = xp.exp(leadc) * h
    return p, q, use_series


def _gammainc(device: Any, a: Any, x: Any) -> Any:
    p, q, series = _gammainc_parts(device, a, x)
    return device.xp.where(series, p, 1.0 - q)


def _gammaincc(device: Any, a: Any, x: Any) -> Any:
    p, q, series = _gammainc_parts(device, a, x)
    return device.xp.where(series, 1.0 - p, q)


def _missing(name: str) -> Callable[..., Any]:
    def default(device: Any, *args: Any) -> Any:
        raise NotImplementedError(
            f"special.{name}: backend {device.backend.name!r} has no kernel 'special_{name}' and there is no "
            "composed default; the NumPy backend computes it with SciPy (pip install scipy)"
        )

    return default


_COMPOSED: dict[str, tuple[str, Callable[..., Any] | None]] = {
    "gammaln": ("(x) -> array", _gammaln),
    "digamma": ("(x) -> array", _digamma),
    "polygamma": ("(n: int, x) -> array", _polygamma),
    "zeta": ("(x, q) -> array", _zeta),
    "erfc": ("(x) -> array", _erfc),
    "erfcx": ("(x) -> array", _erfcx),
    "erfinv": ("(x) -> array", _erfinv),
    "ndtri": ("(p) -> array", _ndtri),
    "log_ndtr": ("(x) -> array", _log_ndtr),
    "i0": ("(x) -> array", lambda d, x: _bessel_i(d, x, 0, False)),
    "i0e": ("(x) -> array", lambda d, x: _bessel_i(d, x, 0, True)),
    "i1": ("(x) -> array", lambda d, x: _bessel_i(d, x, 1, False)),
    "i1e": ("(x) -> array", lambda d, x: _bessel_i(d, x, 1, True)),
    "gammainc": ("(a, x) -> array", _gammainc),
    "gammaincc": ("(a, x) -> array", _gammaincc),
    "bessel_j0": ("(x) -> array", None),
    "bessel_j1": ("(x) -> array", None),
    "bessel_y0": ("(x) -> array", None),
    "bessel_y1": ("(x) -> array", None),
    "modified_bessel_k0": ("(x) -> array", None),
    "modified_bessel_k1": ("(x) -> array", None),
    "scaled_modified_bessel_k0": ("(x) -> array", None),
    "scaled_modified_bessel_k1": ("(x) -> array", None),
    "airy_ai": ("(x) -> array", None),
}

#: The special-function kernels a backend may register (``Backend.kernels["special_<name>"]``).
SPECIAL_KERNELS: dict[str, Kernel] = {
    f"special_{name}": Kernel(
        f"special_{name}",
        sig,
        f"``torch.special.{name}`` element-wise (SciPy's ``scipy.special`` meaning).",
        fn if fn is not None else _missing(name),
    )
    for name, (sig, fn) in _COMPOSED.items()
}
KERNELS.update(SPECIAL_KERNELS)


# -- ops ------------------------------------------------------------------------------------------------


def _floating(x: Any, name: str) -> Tensor:
    """``x`` as a floating-point Tensor (integers and bools promoted to the default float, as in PyTorch)."""
    check_tensor(x, f"special.{name}")
    if x.dtype.kind in "biu":
        return astype(x, dt.default_float)
    if x.dtype.kind == "c":
        raise TypeError(f"special.{name}: complex tensors are not supported, got {x.dtype.name}")
    return x


def _pair(x: Any, y: Any, name: str) -> tuple[Tensor, Tensor]:
    """Two operands as Tensors of one floating dtype (numbers become 0-d tensors on the other's device)."""
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        raise TypeError(f"special.{name}: expected at least one Tensor, got {type(x).__name__} and {type(y).__name__}")
    like = x if isinstance(x, Tensor) else y
    if not isinstance(x, Tensor):
        x = asarray(x, dtype=like.dtype if like.dtype.kind == "f" else dt.default_float, device=like.device)
    if not isinstance(y, Tensor):
        y = asarray(y, dtype=like.dtype if like.dtype.kind == "f" else dt.default_float, device=like.device)
    x, y = _floating(x, name), _floating(y, name)
    if x.dtype is not y.dtype:
        target = dt.result_type(x, y)
        x, y = astype(x, target), astype(y, target)
    return x, y


class _Unary(Function):
    """An element-wise kernel ``special_<kernel>``; subclasses give ``kernel`` and ``grad(x, y, gy)``."""

    native = True
    kernel = ""

    @classmethod
    def forward(cls, ctx, x):
        return call(ctx.device, "special_" + cls.kernel, x)

    @classmethod
    def backward(cls, ctx, gy):
        return cls.grad(ctx.inputs[0], ctx.output(), gy)

    @classmethod
    def jvp(cls, ctx, tx):
        # an element-wise slope: the tangent takes gy's place (no rule where the op has no gradient)
        return None if tx is None else cls.grad(ctx.inputs[0], ctx.output(), tx)

    @staticmethod
    def grad(x: Tensor, y: Tensor, gy: Tensor) -> Tensor:
        raise NotImplementedError


def _unary(kernel: str, grad: Callable[[Tensor, Tensor, Tensor], Tensor] | None) -> type[Function]:
    attrs: dict[str, Any] = {"kernel": kernel, "__doc__": f"``special.{kernel}`` as an op."}
    if grad is None:
        attrs["differentiable"] = False
    else:
        attrs["grad"] = staticmethod(grad)
    return type(f"Special_{kernel}", (_Unary,), attrs)


def _i1_over_x(x: Tensor, i1x: Tensor) -> Tensor:
    """I_1(x) / x, with its limit 1/2 at 0."""
    zero = x == 0
    return where(zero, 0.5, i1x / where(zero, 1.0, x))


_Gammaln = _unary("gammaln", lambda x, y, gy: gy * digamma(x))
_Digamma = _unary("digamma", lambda x, y, gy: gy * polygamma(1, x))
_Erfc = _unary("erfc", lambda x, y, gy: gy * (-2.0 / _SQRT_PI) * exp(-(x * x)))
_Erfcx = _unary("erfcx", lambda x, y, gy: gy * (2.0 * x * y - 2.0 / _SQRT_PI))
_Erfinv = _unary("erfinv", lambda x, y, gy: gy * (0.5 * _SQRT_PI) * exp(y * y))
_Ndtri = _unary("ndtri", lambda x, y, gy: gy * _SQRT_2PI * exp(0.5 * y * y))
_LogNdtr = _unary("log_ndtr", lambda x, y, gy: gy * exp(-0.5 * x * x - y) / _SQRT_2PI)
_I0 = _unary("i0", lambda x, y, gy: gy * i1(x))
_I0e = _unary("i0e", lambda x, y, gy: gy * (i1e(x) - sign(x) * y))
_I1 = _unary("i1", lambda x, y, gy: gy * (i0(x) - _i1_over_x(x, y)))
_I1e = _unary("i1e", lambda x, y, gy: gy * (i0e(x) - sign(x) * y - _i1_over_x(x, y)))
_BesselJ0 = _unary("bessel_j0", None)
_BesselJ1 = _unary("bessel_j1", None)
_BesselY0 = _unary("bessel_y0", None)
_BesselY1 = _unary("bessel_y1", None)
_K0 = _unary("modified_bessel_k0", None)
_K1 = _unary("modified_bessel_k1", None)
_K0e = _unary("scaled_modified_bessel_k0", None)
_K1e = _unary("scaled_modified_bessel_k1", None)
_AiryAi = _unary("airy_ai", None)


def gammaln(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's argument name
    """log |Gamma(x)| (``torch.lgamma``); its gradient is ``digamma``."""
    return _Gammaln.apply(_floating(input, "gammaln"))


def digamma(input: Tensor) -> Tensor:  # noqa: A002
    """psi(x) = d/dx log Gamma(x) (``-inf`` at 0, NaN at negative integers, as PyTorch)."""
    return _Digamma.apply(_floating(input, "digamma"))


psi = digamma


class _Polygamma(Function):
    native = True

    @staticmethod
    def forward(ctx, n, x):
        return call(ctx.device, "special_polygamma", n, x)

    @staticmethod
    def backward(ctx, gy):
        n, x = ctx.inputs
        return None, gy * polygamma(n + 1, x)

    @staticmethod
    def jvp(ctx, _, tx):
        n, x = ctx.inputs
        return None if tx is None else tx * polygamma(n + 1, x)


def polygamma(n: int, input: Tensor) -> Tensor:  # noqa: A002
    """The ``n``-th derivative of ``digamma`` (``n >= 0``)."""
    if not isinstance(n, int) or isinstance(n, builtins.bool) or n < 0:
        raise ValueError(f"special.polygamma: n must be a non-negative int, got {n!r}")
    return _Polygamma.apply(n, _floating(input, "polygamma"))


def multigammaln(input: Tensor, p: int) -> Tensor:  # noqa: A002
    """The multivariate log-gamma function of dimension ``p`` (``torch.mvlgamma``); like PyTorch 2.13 it does
    not check the domain x > (p - 1) / 2 (outside it the sum of log-gammas is returned as is)."""
    x = _floating(input, "multigammaln")
    if not isinstance(p, int) or p < 1:
        raise ValueError(f"special.multigammaln: p must be a positive int, got {p!r}")
    out = gammaln(x) + p * (p - 1) / 4 * math.log(math.pi)
    for j in range(1, p):
        out = out + gammaln(x - j / 2)
    return out


class _Zeta(Function):
    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, x, q):
        return call(ctx.device, "special_zeta", x, q)

    @staticmethod
    def backward(ctx, gy):
        x, q = ctx.inputs
        if ctx.needs_input_grad[0]:
            raise NotImplementedError("special.zeta: the gradient with respect to x is not implemented (as in PyTorch)")
        from .ops._helpers import sum_to

        return None, sum_to(gy * -x * zeta(x + 1.0, q), q.shape)


def zeta(input: Any, other: Any) -> Tensor:  # noqa: A002
    """The Hurwitz zeta function sum_k (other + k) ** -input (the Riemann zeta at other = 1)."""
    x, q = _pair(input, other, "zeta")
    return _Zeta.apply(x, q)


def erfc(input: Tensor) -> Tensor:  # noqa: A002
    """1 - erf(x), without the cancellation for large x."""
    return _Erfc.apply(_floating(input, "erfc"))


def erfcx(input: Tensor) -> Tensor:  # noqa: A002
    """exp(x**2) * erfc(x), without overflow for large x."""
    return _Erfcx.apply(_floating(input, "erfcx"))


def erfinv(input: Tensor) -> Tensor:  # noqa: A002
    """The inverse of erf on (-1, 1) (±inf at ±1, NaN outside)."""
    return _Erfinv.apply(_floating(input, "erfinv"))


def ndtr(input: Tensor) -> Tensor:  # noqa: A002
    """The standard normal distribution function, 0.5 * erfc(-x / sqrt(2))."""
    return 0.5 * erfc(-_floating(input, "ndtr") / _SQRT_2)


def ndtri(input: Tensor) -> Tensor:  # noqa: A002
    """The inverse of :func:`ndtr` (the standard normal quantile)."""
    return _Ndtri.apply(_floating(input, "ndtri"))


def log_ndtr(input: Tensor) -> Tensor:  # noqa: A002
    """log(ndtr(x)), accurate far into the lower tail."""
    return _LogNdtr.apply(_floating(input, "log_ndtr"))


def expit(input: Tensor) -> Tensor:  # noqa: A002
    """The logistic sigmoid."""
    return sigmoid(_floating(input, "expit"))


def logit(input: Tensor, eps: float | None = None) -> Tensor:  # noqa: A002
    """log(p / (1 - p)); with ``eps`` the input is clamped to [eps, 1 - eps] first."""
    x = _floating(input, "logit")
    if eps is not None:
        from .ops.elementwise import clip

        x = clip(x, eps, 1.0 - eps)
    return log(x / (1.0 - x))


def exp2(input: Tensor) -> Tensor:  # noqa: A002
    """2 ** x."""
    return exp(_floating(input, "exp2") * math.log(2.0))


def sinc(input: Tensor) -> Tensor:  # noqa: A002
    """The normalised sinc, sin(pi x) / (pi x), 1 at 0 (gradient 0 there)."""
    x = _floating(input, "sinc")
    zero = x == 0
    px = math.pi * where(zero, 1.0, x)
    return where(zero, 1.0, sin(px) / px)


def round(input: Tensor, decimals: int = 0) -> Tensor:  # noqa: A001, A002 - PyTorch's names
    """Round half to even, to ``decimals`` decimal places."""
    check_tensor(input, "special.round")
    if decimals == 0:
        return round_(input)
    scale = 10.0**decimals
    return round_(input * scale) / scale


def log_softmax(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:  # noqa: A002
    """x - logsumexp(x) along ``dim`` (cast to ``dtype`` first when given)."""
    x = _floating(input, "log_softmax") if dtype is None else astype(input, dt.as_dtype(dtype))
    return x - logsumexp_(x, axis=dim, keepdims=True)


def softmax(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:  # noqa: A002
    """exp(x) / sum(exp(x)) along ``dim``."""
    return exp(log_softmax(input, dim, dtype=dtype))


def logsumexp(input: Tensor, dim: int | tuple[int, ...], keepdim: bool = False) -> Tensor:  # noqa: A002
    """log(sum(exp(x))) over ``dim``, stable."""
    return logsumexp_(_floating(input, "logsumexp"), axis=dim, keepdims=keepdim)


def _zero_times(x: Tensor, y: Tensor, f: Callable[[Tensor], Tensor]) -> Tensor:
    """x * f(y), 0 where x == 0 and y is not NaN (gradients stay finite there)."""
    zero = logical_and(x == 0, logical_not(isnan(y)))
    safe = where(zero, 1.0, y)
    return where(zero, 0.0, x * f(safe))


def xlogy(input: Any, other: Any) -> Tensor:  # noqa: A002
    """x * log(y), 0 where x == 0 (unless y is NaN)."""
    x, y = _pair(input, other, "xlogy")
    return _zero_times(x, y, log)


def xlog1py(input: Any, other: Any) -> Tensor:  # noqa: A002
    """x * log1p(y), 0 where x == 0 (unless y is NaN)."""
    x, y = _pair(input, other, "xlog1py")
    return _zero_times(x, y, log1p)


def entr(input: Tensor) -> Tensor:  # noqa: A002
    """-x log x elementwise: 0 at 0, -inf for x < 0."""
    x = _floating(input, "entr")
    pos = x > 0
    val = -x * log(where(pos, x, 1.0))
    return where(pos, val, where(x == 0, 0.0, where(isnan(x), x, -math.inf)))


def i0(input: Tensor) -> Tensor:  # noqa: A002
    """The modified Bessel function of the first kind, order 0."""
    return _I0.apply(_floating(input, "i0"))


def i0e(input: Tensor) -> Tensor:  # noqa: A002
    """exp(-|x|) * i0(x)."""
    return _I0e.apply(_floating(input, "i0e"))


def i1(input: Tensor) -> Tensor:  # noqa: A002
    """The modified Bessel function of the first kind, order 1."""
    return _I1.apply(_floating(input, "i1"))


def i1e(input: Tensor) -> Tensor:  # noqa: A002
    """exp(-|x|) * i1(x)."""
    return _I1e.apply(_floating(input, "i1e"))


modified_bessel_i0 = i0
modified_bessel_i1 = i1


class _Gammainc(Function):
    """The regularized incomplete gamma functions P(a, x) (``upper=False``) and Q(a, x) = 1 - P."""

    native = True
    jvp = staticmethod(jvp_from_vjp)  # forward mode: derived from the backward (lucid_core._forward_ad)

    @staticmethod
    def forward(ctx, a, x, upper):
        return call(ctx.device, "special_gammaincc" if upper else "special_gammainc", a, x)

    @staticmethod
    def backward(ctx, gy):
        a, x, upper = ctx.inputs
        if ctx.needs_input_grad[0]:
            raise NotImplementedError(
                "special.gammainc: the gradient with respect to the first argument is not implemented (as in PyTorch)"
            )
        from .ops._helpers import sum_to

        d = exp(-x + (a - 1.0) * log(x) - gammaln(a))
        return None, sum_to(-gy * d if upper else gy * d, x.shape), None


def gammainc(input: Any, other: Any) -> Tensor:  # noqa: A002
    """The regularized lower incomplete gamma function P(a, x) (``torch.igamma``)."""
    a, x = _pair(input, other, "gammainc")
    return _Gammainc.apply(a, x, False)


def gammaincc(input: Any, other: Any) -> Tensor:  # noqa: A002
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x) (``torch.igammac``)."""
    a, x = _pair(input, other, "gammaincc")
    return _Gammainc.apply(a, x, True)


def bessel_j0(input: Tensor) -> Tensor:  # noqa: A002
    """The Bessel function of the first kind, order 0."""
    return _BesselJ0.apply(_floating(input, "bessel_j0"))


def bessel_j1(input: Tensor) -> Tensor:  # noqa: A002
    """The Bessel function of the first kind, order 1."""
    return _BesselJ1.apply(_floating(input, "bessel_j1"))


def bessel_y0(input: Tensor) -> Tensor:  # noqa: A002
    """The Bessel function of the second kind, order 0."""
    return _BesselY0.apply(_floating(input, "bessel_y0"))


def bessel_y1(input: Tensor) -> Tensor:  # noqa: A002
    """The Bessel function of the second kind, order 1."""
    return _BesselY1.apply(_floating(input, "bessel_y1"))


def modified_bessel_k0(input: Tensor) -> Tensor:  # noqa: A002
    """The modified Bessel function of the second kind, order 0."""
    return _K0.apply(_floating(input, "modified_bessel_k0"))


def modified_bessel_k1(input: Tensor) -> Tensor:  # noqa: A002
    """The modified Bessel function of the second kind, order 1."""
    return _K1.apply(_floating(input, "modified_bessel_k1"))


def scaled_modified_bessel_k0(input: Tensor) -> Tensor:  # noqa: A002
    """exp(x) * K_0(x)."""
    return _K0e.apply(_floating(input, "scaled_modified_bessel_k0"))


def scaled_modified_bessel_k1(input: Tensor) -> Tensor:  # noqa: A002
    """exp(x) * K_1(x)."""
    return _K1e.apply(_floating(input, "scaled_modified_bessel_k1"))


def airy_ai(input: Tensor) -> Tensor:  # noqa: A002
    """The Airy function Ai."""
    return _AiryAi.apply(_floating(input, "airy_ai"))


def spherical_bessel_j0(input: Tensor) -> Tensor:  # noqa: A002
    """sin(x) / x, 1 at 0."""
    x = _floating(input, "spherical_bessel_j0")
    zero = x == 0
    safe = where(zero, 1.0, x)
    return where(zero, 1.0, sin(safe) / safe)


# -- orthogonal polynomials: three-term recurrences, element-wise in n ---------------------------------


def _polynomial(
    name: str, x: Any, n: Any, first: Callable[[Tensor], Tensor], step: Callable[[int, Tensor, Tensor, Tensor], Tensor]
) -> Tensor:
    """P_n(x) from P_0 = 1, P_1 = ``first(x)`` and P_{k+1} = ``step(k, x, P_k, P_{k-1})``; ``n`` an int or a
    tensor (each element its own degree); negative degrees give 0, as in PyTorch."""
    x, nn = _pair(x, n, name)
    top = builtins.int(nn.max().item()) if nn.size else 0
    one = x * 0.0 + 1.0
    values = [one]
    if top >= 1:
        values.append(first(x))
    for k in range(1, top):
        values.append(step(k, x, values[k], values[k - 1]))
    out = x * 0.0
    for k, v in enumerate(values):
        out = where(nn == k, v, out)
    return out


def chebyshev_polynomial_t(input: Any, n: Any) -> Tensor:  # noqa: A002
    """The Chebyshev polynomial of the first kind T_n(x)."""
    return _polynomial("chebyshev_polynomial_t", input, n, lambda x: x, lambda k, x, p, q: 2 * x * p - q)


def chebyshev_polynomial_u(input: Any, n: Any) -> Tensor:  # noqa: A002
    """The Chebyshev polynomial of the second kind U_n(x)."""
    return _polynomial("chebyshev_polynomial_u", input, n, lambda x: 2 * x, lambda k, x, p, q: 2 * x * p - q)


def chebyshev_polynomial_v(input: Any, n: Any) -> Tensor:  # noqa: A002
    """The Chebyshev polynomial of the third kind V_n(x)."""
    return _polynomial("chebyshev_polynomial_v", input, n, lambda x: 2 * x - 1, lambda k, x, p, q: 2 * x * p - q)


def chebyshev_polynomial_w(input: Any, n: Any) -> Tensor:  # noqa: A002
    """The Chebyshev polynomial of the fourth kind W_n(x)."""
    return _polynomial("chebyshev_polynomial_w", input, n, lambda x: 2 * x + 1, lambda k, x, p, q: 2 * x * p - q)


def shifted_chebyshev_polynomial_t(input: Any, n: Any) -> Tensor:  # noqa: A002
    """T_n(2x - 1)."""
    return chebyshev_polynomial_t(2 * _floating_any(input) - 1, n)


def shifted_chebyshev_polynomial_u(input: Any, n: Any) -> Tensor:  # noqa: A002
    """U_n(2x - 1)."""
    return chebyshev_polynomial_u(2 * _floating_any(input) - 1, n)


def shifted_chebyshev_polynomial_v(input: Any, n: Any) -> Tensor:  # noqa: A002
    """V_n(2x - 1)."""
    return chebyshev_polynomial_v(2 * _floating_any(input) - 1, n)


def shifted_chebyshev_polynomial_w(input: Any, n: Any) -> Tensor:  # noqa: A002
    """W_n(2x - 1)."""
    return chebyshev_polynomial_w(2 * _floating_any(input) - 1, n)


def _floating_any(x: Any) -> Any:
    return _floating(x, "shifted_chebyshev_polynomial") if isinstance(x, Tensor) else x


def hermite_polynomial_h(input: Any, n: Any) -> Tensor:  # noqa: A002
    """The physicists' Hermite polynomial H_n(x)."""
    return _polynomial("hermite_polynomial_h", input, n, lambda x: 2 * x, lambda k, x, p, q: 2 * x * p - 2 * k * q)


def hermite_polynomial_he(input: Any, n: Any) -> Tensor:  # noqa: A002
    """The probabilists' Hermite polynomial He_n(x)."""
    return _polynomial("hermite_polynomial_he", input, n, lambda x: x, lambda k, x, p, q: x * p - k * q)


def laguerre_polynomial_l(input: Any, n: Any) -> Tensor:  # noqa: A002
    """The Laguerre polynomial L_n(x)."""
    return _polynomial(
        "laguerre_polynomial_l", input, n, lambda x: 1 - x, lambda k, x, p, q: ((2 * k + 1 - x) * p - k * q) / (k + 1)
    )


def legendre_polynomial_p(input: Any, n: Any) -> Tensor:  # noqa: A002
    """The Legendre polynomial P_n(x)."""
    return _polynomial(
        "legendre_polynomial_p", input, n, lambda x: x, lambda k, x, p, q: ((2 * k + 1) * x * p - k * q) / (k + 1)
    )


# -- PyTorch's main-namespace spellings (torch.lgamma, torch.igamma...) and their Tensor methods ---------


def _t_polygamma(n: int, input: Tensor) -> Tensor:  # noqa: A002
    """``torch.polygamma(n, x)``: the n-th derivative of digamma."""
    return polygamma(n, input)


def _polygamma_method(self: Tensor, n: int) -> Tensor:
    """``x.polygamma(n)``: the n-th derivative of digamma."""
    return polygamma(n, self)


#: PyTorch's main-namespace special functions, by name (each also a Tensor method, ``polygamma`` with
#: the method's argument order ``x.polygamma(n)``).
TORCH_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "lgamma": gammaln, "digamma": digamma, "polygamma": _t_polygamma, "mvlgamma": multigammaln,
    "erfinv": erfinv, "erfc": erfc, "i0": i0, "igamma": gammainc, "igammac": gammaincc, "sinc": sinc,
    "xlogy": xlogy, "logit": logit, "exp2": exp2,
}  # fmt: skip


def _inplace(fn: Callable[..., Tensor], name: str) -> Callable[..., Tensor]:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if self.dtype.kind not in "fc":
            raise TypeError(f"{name}: the result is floating-point but the tensor is {self.dtype.name}")
        return self._apply_inplace(lambda t: fn(t, *args, **kwargs), name, *args)

    method.__name__ = name
    method.__doc__ = f"In-place ``{name[:-1]}``."
    return method


def _attach_methods() -> None:
    """Put ``x.lgamma()``, ``x.digamma_()``, ``x.polygamma(n)``... on Tensor."""
    for name, fn in TORCH_FUNCTIONS.items():
        method = _polygamma_method if name == "polygamma" else fn
        if not hasattr(Tensor, name):
            setattr(Tensor, name, method)
        if not hasattr(Tensor, name + "_"):
            setattr(Tensor, name + "_", _inplace(method, name + "_"))


_attach_methods()
