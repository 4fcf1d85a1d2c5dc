"""Special functions the distributions need, as lucid_core ``Function``s with gradients.

``lucid_core`` has ``erf`` but no ``lgamma``/``digamma``/``polygamma``/``erfinv``; these are written here over
lucid_core ops (shift by recurrence, then the asymptotic series), each with its backward, so Gamma, Beta,
Dirichlet, StudentT, Poisson and Binomial get exact log-densities and gradients on every backend. The Gamma
sampler and its implicit reparameterisation gradient live here too.
"""

from __future__ import annotations

import math

import lucid_core as lc
from lucid_core import Function, Tensor

__all__ = ["lgamma", "digamma", "polygamma", "erfinv", "gammainc", "standard_gamma", "log_beta", "xlogy"]

_SHIFT = 10  # recurrence steps before the asymptotic series (z >= 10 keeps its error below 1e-16)
# Bernoulli numbers B_2, B_4, ..., B_18
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798)


def _lgamma_positive(x: Tensor) -> Tensor:
    """log Gamma(x) for x > 0: shift to z = x + 10, then Stirling's series."""
    z = x + float(_SHIFT)
    shift = lc.zeros_like(x)
    for k in range(_SHIFT):
        shift = shift + lc.log(x + float(k))
    zinv = 1.0 / z
    zinv2 = zinv * zinv
    series = lc.zeros_like(x)
    power = zinv
    for k, b in enumerate(_BERNOULLI[:8], start=1):
        series = series + (b / (2 * k * (2 * k - 1))) * power
        power = power * zinv2
    stirling = (z - 0.5) * lc.log(z) - z + 0.5 * math.log(2 * math.pi) + series
    return stirling - shift


def _digamma_positive(x: Tensor) -> Tensor:
    z = x + float(_SHIFT)
    shift = lc.zeros_like(x)
    for k in range(_SHIFT):
        shift = shift + 1.0 / (x + float(k))
    zinv2 = 1.0 / (z * z)
    series = lc.zeros_like(x)
    power = zinv2
    for k, b in enumerate(_BERNOULLI[:8], start=1):
        series = series + (b / (2 * k)) * power
        power = power * zinv2
    return lc.log(z) - 0.5 / z - series - shift


def _polygamma_positive(n: int, x: Tensor) -> Tensor:
    sign = 1.0 if n % 2 == 1 else -1.0  # (-1) ** (n + 1)
    z = x + float(_SHIFT)
    shift = lc.zeros_like(x)
    for k in range(_SHIFT):
        shift = shift + (x + float(k)) ** float(-(n + 1))
    zinv = 1.0 / z
    series = math.factorial(n - 1) * zinv**n + 0.5 * math.factorial(n) * zinv ** (n + 1)
    for k, b in enumerate(_BERNOULLI, start=1):
        coef = b * math.factorial(2 * k + n - 1) / math.factorial(2 * k)
        series = series + coef * zinv ** (2 * k + n)
    return sign * (series + math.factorial(n) * shift)


class _Lgamma(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        reflect = x < 0.5
        safe = lc.where(reflect, 1.0 - x, x)
        direct = _lgamma_positive(safe)
        # Gamma(x) Gamma(1 - x) = pi / sin(pi x)
        reflected = math.log(math.pi) - lc.log(lc.abs(lc.sin(math.pi * x))) - direct
        return lc.where(reflect, reflected, direct)

    @staticmethod
    def backward(ctx, gy):
        (x,) = ctx.saved_tensors
        return gy * digamma(x)


class _Digamma(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        reflect = x < 0.5
        safe = lc.where(reflect, 1.0 - x, x)
        direct = _digamma_positive(safe)
        # psi(1 - x) - psi(x) = pi / tan(pi x)
        reflected = direct - math.pi / lc.tan(math.pi * x)
        out = lc.where(reflect, reflected, direct)
        # poles at the non-positive integers, where PyTorch gives nan (0 gives -inf)
        pole = (x <= 0) & (x == lc.floor(x))
        return lc.where(pole, lc.where(x == 0, -math.inf, math.nan), out)

    @staticmethod
    def backward(ctx, gy):
        (x,) = ctx.saved_tensors
        return gy * polygamma(1, x)


class _Polygamma(Function):
    @staticmethod
    def forward(ctx, x, n):
        ctx.save_for_backward(x)
        ctx.n = n
        return _polygamma_positive(n, x)

    @staticmethod
    def backward(ctx, gy):
        (x,) = ctx.saved_tensors
        return gy * polygamma(ctx.n + 1, x), None


def lgamma(x: Tensor) -> Tensor:
    """log |Gamma(x)| (``torch.lgamma``), differentiable (its gradient is :func:`digamma`)."""
    return _Lgamma.apply(x)


def digamma(x: Tensor) -> Tensor:
    """The logarithmic derivative of Gamma (``torch.digamma``), differentiable."""
    return _Digamma.apply(x)


def polygamma(n: int, x: Tensor) -> Tensor:
    """The ``n``-th derivative of :func:`digamma` (``n >= 1``, ``x > 0``), differentiable."""
    if n == 0:
        return digamma(x)
    if n < 0:
        raise ValueError(f"polygamma: n must be non-negative, got {n}")
    return _Polygamma.apply(x, n)


def _erfinv_forward(x: Tensor) -> Tensor:
    # Giles' single-precision approximation as the start, then Newton steps on erf(y) = x
    w = -lc.log((1.0 - x) * (1.0 + x))
    small = w - 2.5
    p1 = lc.full_like(x, 2.81022636e-08)
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
              -0.00417768164, 0.246640727, 1.50140941):  # fmt: skip
        p1 = c + p1 * small
    big = lc.sqrt(lc.clip(w, 0.0, None)) - 3.0
    p2 = lc.full_like(x, -0.000200214257)
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
              0.00943887047, 1.00167406, 2.83297682):  # fmt: skip
        p2 = c + p2 * big
    y = lc.where(w < 5.0, p1, p2) * x
    for _ in range(3):
        step = (lc.erf(y) - x) / ((2.0 / math.sqrt(math.pi)) * lc.exp(-(y * y)))
        y = lc.where(lc.isfinite(step), y - step, y)
    y = lc.where(x == 1.0, math.inf, lc.where(x == -1.0, -math.inf, y))
    return lc.where(lc.abs(x) > 1.0, math.nan, y)


class _Erfinv(Function):
    @staticmethod
    def forward(ctx, x):
        y = _erfinv_forward(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, gy):
        (y,) = ctx.saved_tensors
        return gy * (math.sqrt(math.pi) / 2.0) * lc.exp(y * y)


def erfinv(x: Tensor) -> Tensor:
    """The inverse error function on (-1, 1) (``torch.erfinv``), differentiable."""
    return _Erfinv.apply(x)


def log_beta(a: Tensor, b: Tensor) -> Tensor:
    """log B(a, b) = lgamma(a) + lgamma(b) - lgamma(a + b)."""
    return lgamma(a) + lgamma(b) - lgamma(a + b)


def xlogy(x: Tensor, y: Tensor) -> Tensor:
    """x * log(y), 0 where x == 0 (so 0 * log 0 = 0), as ``torch.xlogy``."""
    safe_y = lc.where(x == 0, lc.ones_like(y), y)
    return lc.where(x == 0, lc.zeros_like(x * safe_y), x * lc.log(safe_y))


# -- Gamma sampling -----------------------------------------------------------------------------------


def _marsaglia_tsang(alpha: Tensor) -> Tensor:
    """Gamma(alpha, 1) draws (Marsaglia and Tsang's squeeze; alpha < 1 boosted through alpha + 1)."""
    boost = alpha < 1.0
    a = lc.where(boost, alpha + 1.0, alpha)
    d = a - 1.0 / 3.0
    c = 1.0 / lc.sqrt(9.0 * d)
    shape, dtype, device = tuple(alpha.shape), alpha.dtype, alpha.device
    out = lc.zeros_like(alpha)
    done = lc.zeros(shape, dtype=lc.bool, device=device)
    for _ in range(1000):
        z = lc.randn(*shape, dtype=dtype, device=device)
        u = lc.rand(*shape, dtype=dtype, device=device)
        v = (1.0 + c * z) ** 3
        pos = v > 0
        safe_v = lc.where(pos, v, lc.ones_like(v))
        accept = pos & (lc.log(u) < 0.5 * z * z + d - d * safe_v + d * lc.log(safe_v)) & ~done
        out = lc.where(accept, d * safe_v, out)
        done = done | accept
        if bool(lc.all(done).item()):
            break
    u = lc.rand(*shape, dtype=dtype, device=device)
    boosted = out * u ** (1.0 / lc.where(boost, alpha, lc.ones_like(alpha)))
    tiny = lc.finfo(dtype).smallest_normal
    return lc.clip(lc.where(boost, boosted, out), tiny, None)


def _gamma_series(alpha: Tensor, x: Tensor) -> tuple[Tensor, Tensor]:
    """S = sum_n x^n / ((a+1)...(a+n)) and dS/da, summed until the terms stop counting.

    P(a, x) = x^a e^-x / Gamma(a + 1) * S is the regularized lower incomplete gamma function.
    """
    term = lc.ones_like(x)
    total = lc.ones_like(x)
    dlog = lc.zeros_like(x)  # d log(term_n) / da = -sum_{k<=n} 1 / (a + k)
    dtotal = lc.zeros_like(x)
    eps = lc.finfo(x.dtype).eps
    # the terms grow until n passes x - a, then fall faster than geometrically
    start = max(0.0, (x - alpha).max().item()) if x.numel() else 0.0
    for n in range(1, 100000):
        term = term * x / (alpha + float(n))
        dlog = dlog - 1.0 / (alpha + float(n))
        total = total + term
        dtotal = dtotal + term * dlog
        if n % 16 == 0 and n > start:
            rest = term * (1.0 + lc.abs(dlog))
            if bool(lc.all(rest <= eps * 1e-2 * (total + lc.abs(dtotal))).item()):
                break
    return total, dtotal


def _gamma_sample_grad(alpha: Tensor, x: Tensor) -> Tensor:
    """dx/dalpha of a Gamma(alpha, 1) sample at fixed CDF value (implicit reparameterisation).

    dx/da = -(dP/da) / p(x; a), with P differentiated term by term through :func:`_gamma_series`; the
    prefactor x^a e^-x / Gamma(a + 1) over the density is x / a, so no large exponential is formed.
    """
    total, dtotal = _gamma_series(alpha, x)
    dp = (lc.log(x) - digamma(alpha + 1.0)) * total + dtotal
    return -(x / alpha) * dp


def _log_prefactor(alpha: Tensor, x: Tensor) -> Tensor:
    return xlogy(alpha, x) - x - lgamma(alpha + 1.0)


class _Gammainc(Function):
    @staticmethod
    def forward(ctx, alpha, x):
        total, dtotal = _gamma_series(alpha, x)
        log_pre = _log_prefactor(alpha, x)
        ctx.save_for_backward(alpha, x, total, dtotal, log_pre)
        return lc.clip(lc.exp(log_pre) * total, 0.0, 1.0)

    @staticmethod
    def backward(ctx, gy):
        alpha, x, total, dtotal, log_pre = ctx.saved_tensors
        need_a, need_x = ctx.needs_input_grad
        ga = gx = None
        if need_a:
            dlog_x = lc.log(lc.where(x > 0, x, lc.ones_like(x)))
            ga = gy * lc.exp(log_pre) * ((dlog_x - digamma(alpha + 1.0)) * total + dtotal)
        if need_x:
            # the density x^(a-1) e^-x / Gamma(a)
            gx = gy * lc.exp(xlogy(alpha - 1.0, x) - x - lgamma(alpha))
        return ga, gx


def gammainc(alpha: Tensor, x: Tensor) -> Tensor:
    """The regularized lower incomplete gamma function P(alpha, x) (``torch.special.gammainc``), for x >= 0.

    Differentiable in both arguments (PyTorch's is not in ``alpha``).
    """
    alpha, x = lc.broadcast_arrays(alpha, x)
    return _Gammainc.apply(alpha, x)


class _StandardGamma(Function):
    @staticmethod
    def forward(ctx, alpha):
        x = _marsaglia_tsang(alpha)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, gy):
        alpha, x = ctx.saved_tensors
        with lc.no_grad():
            dx = _gamma_sample_grad(alpha.detach(), x.detach())
        return gy * dx


def standard_gamma(alpha: Tensor) -> Tensor:
    """Gamma(alpha, 1) samples whose gradient to ``alpha`` is the implicit reparameterisation gradient."""
    return _StandardGamma.apply(alpha)
