"""Activation functions and softmax family, each stable for extreme inputs."""

from __future__ import annotations

__all__ = [
    "relu", "relu6", "leaky_relu", "prelu", "elu", "selu", "celu", "gelu", "silu", "mish", "sigmoid", "tanh",
    "hardtanh", "hardsigmoid", "hardswish", "softplus", "softsign", "logsigmoid", "threshold", "tanhshrink",
    "softmax", "log_softmax", "softmin", "glu", "hardshrink", "softshrink", "rrelu", "gumbel_softmax",
    "relu_", "elu_", "celu_", "selu_", "leaky_relu_", "hardtanh_", "threshold_", "rrelu_",
]  # fmt: skip

import math
from collections.abc import Callable

import lucid_core as lc
from lucid_core import Function, Tensor, kernels
from lucid_core.amp import autocast_op
from lucid_core.ops.reduction import ACCUMULATE, widened

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _check(x: object, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type(x).__name__}")
    return x


def _maybe_inplace(x: Tensor, fn: Callable[[Tensor], Tensor], inplace: bool, name: str) -> Tensor:
    """``fn(x)``, written into ``x`` itself when ``inplace`` (PyTorch's ``inplace=True``: returns ``x``)."""
    if not inplace:
        return fn(x)
    return x._apply_inplace(fn, f"{name}_")


def relu(x: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0)."""
    _check(x, "relu")
    return _maybe_inplace(x, lc.relu, inplace, "relu")


def relu6(x: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6)."""
    return hardtanh(x, 0.0, 6.0, inplace)


def threshold(x: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else ``value``."""
    _check(x, "threshold")
    return _maybe_inplace(x, lambda t: lc.where(t > threshold, t, lc.full_like(t, value)), inplace, "threshold")


def leaky_relu(x: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x for x > 0, negative_slope * x otherwise."""
    _check(x, "leaky_relu")
    return _maybe_inplace(x, lambda t: lc.where(t > 0, t, t * negative_slope), inplace, "leaky_relu")


@autocast_op("prelu")
def prelu(x: Tensor, weight: Tensor) -> Tensor:
    """Leaky ReLU with a learned slope per channel (axis 1) or one shared slope."""
    _check(x, "prelu")
    if weight.size != 1:
        if x.ndim < 2 or x.shape[1] != weight.size:
            raise ValueError(
                f"prelu: weight has {weight.size} slopes but the input has {x.shape[1] if x.ndim > 1 else 1} "
                "channels (axis 1); expected 1 slope or one per channel"
            )
        weight = weight.reshape((weight.size,) + (1,) * (x.ndim - 2))
    elif weight.ndim:
        weight = weight.reshape(())
    return lc.where(x > 0, x, x * weight)


def elu(x: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    _check(x, "elu")
    # the negative branch holds at 0 (slope alpha there, as in PyTorch); minimum(x, 0) would halve it
    return _maybe_inplace(x, lambda t: lc.where(t > 0, t, lc.expm1(_nonpositive(t)) * alpha), inplace, "elu")


def selu(x: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with the self-normalising constants."""
    _check(x, "selu")
    return _maybe_inplace(x, lambda t: elu(t, _SELU_ALPHA) * _SELU_SCALE, inplace, "selu")


def celu(x: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    _check(x, "celu")
    if alpha == 0:
        raise ValueError("celu: alpha must not be 0")
    return _maybe_inplace(x, lambda t: lc.where(t > 0, t, lc.expm1(_nonpositive(t) / alpha) * alpha), inplace, "celu")


def _nonpositive(x: Tensor) -> Tensor:
    """x where x <= 0, else 0: keeps exp's argument finite; at 0 the gradient goes to x whole."""
    return lc.where(x > 0, lc.zeros_like(x), x)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x), exactly (``"none"``) or with the tanh approximation (``"tanh"``)."""
    _check(x, "gelu")
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    if x.dtype.kind == "f":
        return _Gelu.apply(x, approximate)
    if approximate == "none":
        return x * 0.5 * (1.0 + lc.erf(x * _SQRT1_2))
    return x * 0.5 * (1.0 + lc.tanh((x + 0.044715 * x * x * x) * _SQRT_2_PI))


_SQRT1_2 = 1.0 / math.sqrt(2.0)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


class _Gelu(Function):
    """GELU in one node: the ``gelu`` kernel; first-order backward the ``gelu_grad`` kernel, and with
    ``create_graph`` the same derivative in Lucid ops (so gradients of every order exist)."""

    native = True

    @staticmethod
    def forward(ctx, x, approximate):
        return kernels.call(ctx.device, "gelu", x, approximate)

    @staticmethod
    def backward(ctx, gy):
        x, approximate = ctx.inputs
        if not lc.is_grad_enabled():
            return _GeluGrad.apply(gy, x, approximate), None
        if approximate == "tanh":
            t = lc.tanh((x + 0.044715 * x * x * x) * _SQRT_2_PI)
            d = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _SQRT_2_PI * (1.0 + 3.0 * 0.044715 * x * x)
        else:
            d = 0.5 * (1.0 + lc.erf(x * _SQRT1_2)) + x * lc.exp(-0.5 * x * x) * _INV_SQRT_2PI
        return gy * d, None

    @staticmethod
    def jvp(ctx, tx, _):
        with lc.enable_grad():  # the derivative in Lucid ops (not the graph-free kernel): tangents may nest
            return _Gelu.backward(ctx, tx)[0]

    @staticmethod
    def backward_raw(ctx, gy):
        x, approximate = ctx.inputs
        return kernels.call(ctx.device, "gelu_grad", gy, x._data, approximate), None


class _GeluGrad(Function):
    """``gy`` times GELU's derivative (the ``gelu_grad`` kernel), where no graph is kept."""

    native = True
    differentiable = False

    @staticmethod
    def forward(ctx, gy, x, approximate):
        return kernels.call(ctx.device, "gelu_grad", gy, x, approximate)


def silu(x: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x)."""
    _check(x, "silu")
    return _maybe_inplace(x, lambda t: t * lc.sigmoid(t), inplace, "silu")


def mish(x: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    _check(x, "mish")
    return _maybe_inplace(x, lambda t: t * lc.tanh(softplus(t)), inplace, "mish")


def sigmoid(x: Tensor) -> Tensor:
    """The logistic function 1 / (1 + exp(-x))."""
    return lc.sigmoid(_check(x, "sigmoid"))


def tanh(x: Tensor) -> Tensor:
    """Hyperbolic tangent."""
    return lc.tanh(_check(x, "tanh"))


def tanhshrink(x: Tensor) -> Tensor:
    """x - tanh(x)."""
    return x - lc.tanh(_check(x, "tanhshrink"))


def hardtanh(x: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """x clipped to [min_val, max_val]."""
    _check(x, "hardtanh")
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) must not exceed max_val ({max_val})")

    def fn(t: Tensor) -> Tensor:
        return _pass_strictly_inside(t, lc.clip(t, min_val, max_val), min_val, max_val)

    return _maybe_inplace(x, fn, inplace, "hardtanh")


def _pass_strictly_inside(x: Tensor, y: Tensor, lo: float, hi: float) -> Tensor:
    """``y``, with the gradient of ``y`` only where lo < x < hi: PyTorch's hardtanh and hardsigmoid give 0 at
    the bounds themselves (``clip`` passes it there, as PyTorch's clamp does)."""
    return lc.where(lc.logical_and(x > lo, x < hi), y, y.detach())


def hardsigmoid(x: Tensor, inplace: bool = False) -> Tensor:
    """clip(x / 6 + 1 / 2, 0, 1)."""
    _check(x, "hardsigmoid")

    def fn(t: Tensor) -> Tensor:
        return _pass_strictly_inside(t, lc.clip(t / 6.0 + 0.5, 0.0, 1.0), -3.0, 3.0)

    return _maybe_inplace(x, fn, inplace, "hardsigmoid")


def hardswish(x: Tensor, inplace: bool = False) -> Tensor:
    """x * hardsigmoid(x)."""
    _check(x, "hardswish")
    return _maybe_inplace(x, lambda t: t * hardsigmoid(t), inplace, "hardswish")


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold."""
    _check(x, "softplus")
    bx = x * beta if beta != 1 else x
    soft = lc.logaddexp(0.0, bx)  # log(1 + e^z) without overflow
    if beta != 1:
        soft = soft / beta
    return lc.where(bx > threshold, x, soft)


def softsign(x: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return _check(x, "softsign") / (1.0 + lc.abs(x))


def logsigmoid(x: Tensor) -> Tensor:
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
    _check(x, "logsigmoid")
    return -lc.logaddexp(0.0, -x)


def _axis(x: Tensor, dim: int | None, name: str) -> int:
    if dim is None:
        # PyTorch's legacy implicit choice
        return 0 if x.ndim in (0, 1, 3) else 1
    if not -max(x.ndim, 1) <= dim < max(x.ndim, 1):
        raise IndexError(f"{name}: dim {dim} is out of range for a {x.ndim}-D tensor")
    return dim % max(x.ndim, 1)


class _Softmax(Function):
    native = True

    @staticmethod
    def forward(ctx, x, axis):
        return kernels.call(ctx.device, "softmax", x, axis)  # e.g. MLX's fused kernel

    @staticmethod
    def backward(ctx, gy):
        y = ctx.output()
        axis = ctx.inputs[1]
        return y * (gy - lc.sum(gy * y, axis=axis, keepdims=True)), None

    jvp = staticmethod(lambda ctx, tx, _: _Softmax.backward(ctx, tx)[0])  # the Jacobian is symmetric


class _LogSoftmax(Function):
    native = True

    @staticmethod
    def forward(ctx, x, axis):
        return kernels.call(ctx.device, "log_softmax", x, axis)

    @staticmethod
    def backward(ctx, gy):
        y = ctx.output()
        axis = ctx.inputs[1]
        return gy - lc.exp(y) * lc.sum(gy, axis=axis, keepdims=True), None

    @staticmethod
    def jvp(ctx, tx, _):
        y, axis = ctx.output(), ctx.inputs[1]
        return tx - lc.sum(lc.exp(y) * tx, axis=axis, keepdims=True)


def _scalar_case(x: Tensor) -> bool:
    return x.ndim == 0


def softmax(x: Tensor, dim: int | None = None, dtype: lc.DTypeLike = None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim`` (max-shifted: no overflow)."""
    _check(x, "softmax")
    if dtype is not None:
        x = x.astype(dtype)
    if _scalar_case(x):
        return lc.ones_like(x) + 0 * x
    if x.dtype in ACCUMULATE:  # float16 in float32, as PyTorch does
        return widened(softmax, x, dim)
    return _Softmax.apply(x, _axis(x, dim, "softmax"))


def log_softmax(x: Tensor, dim: int | None = None, dtype: lc.DTypeLike = None) -> Tensor:
    """x - logsumexp(x) along ``dim``, computed in one stable pass."""
    _check(x, "log_softmax")
    if dtype is not None:
        x = x.astype(dtype)
    if _scalar_case(x):
        return 0 * x
    if x.dtype in ACCUMULATE:
        return widened(log_softmax, x, dim)
    return _LogSoftmax.apply(x, _axis(x, dim, "log_softmax"))


def softmin(x: Tensor, dim: int | None = None, dtype: lc.DTypeLike = None) -> Tensor:
    """softmax(-x) along ``dim``."""
    return softmax(-_check(x, "softmin"), dim, dtype)


def glu(x: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b), where a and b are the two halves of ``x`` along ``dim``."""
    _check(x, "glu")
    if x.ndim == 0:
        raise ValueError("glu: does not support scalars because halving size must be even")
    n = x.shape[dim]
    if n % 2:
        raise ValueError(f"glu: halving dimension must be even, but dimension {dim % x.ndim} is size {n}")
    a, b = lc.split(x, 2, axis=dim % x.ndim)
    return a * lc.sigmoid(b)


# -- shrinkage and randomised ReLU ---------------------------------------------------------------------
def hardshrink(x: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0."""
    _check(x, "hardshrink")
    return lc.where(lc.abs(x) > lambd, x, lc.zeros_like(x))


def softshrink(x: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    _check(x, "softshrink")
    if lambd < 0:
        raise ValueError(f"softshrink: lambda must be greater or equal to 0, but found to be {lambd}")
    zero = lc.zeros_like(x)
    return lc.where(x > lambd, x - lambd, lc.where(x < -lambd, x + lambd, zero))


def rrelu(
    x: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False
) -> Tensor:
    """Leaky ReLU whose negative slope is drawn from U(lower, upper) per element when training, and is
    (lower + upper) / 2 otherwise."""
    _check(x, "rrelu")
    if not 0 <= lower <= upper:
        raise ValueError(f"rrelu: expected 0 <= lower <= upper, got lower={lower}, upper={upper}")
    if not training:
        return leaky_relu(x, (lower + upper) / 2, inplace)
    slope = lc.uniform(lower, upper, x.shape, dtype=x.dtype, device=x.device)
    return _maybe_inplace(x, lambda t: lc.where(t >= 0, t, t * slope), inplace, "rrelu")


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """softmax((logits + g) / tau) with Gumbel(0, 1) noise g; ``hard`` returns one-hot samples whose gradient
    is the soft sample's (the straight-through estimator)."""
    _check(logits, "gumbel_softmax")
    u = lc.uniform(0.0, 1.0, logits.shape, dtype=logits.dtype, device=logits.device)
    e = -lc.log1p(-u)  # Exp(1) samples; the Gumbel noise is -log(e)
    y = softmax((logits - lc.log(e)) / tau, dim)
    if not hard:
        return y
    index = lc.argmax(y.detach(), axis=dim, keepdims=True)
    classes = lc.reshape(
        lc.arange(y.shape[dim], device=y.device), tuple(-1 if a == dim % y.ndim else 1 for a in range(y.ndim))
    )
    y_hard = lc.astype(index == classes, y.dtype)
    return y_hard - y.detach() + y


def relu_(x: Tensor) -> Tensor:
    """In-place :func:`relu`."""
    return relu(x, inplace=True)


def elu_(x: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`elu`."""
    return elu(x, alpha, inplace=True)


def celu_(x: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`celu`."""
    return celu(x, alpha, inplace=True)


def selu_(x: Tensor) -> Tensor:
    """In-place :func:`selu`."""
    return selu(x, inplace=True)


def leaky_relu_(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place :func:`leaky_relu`."""
    return leaky_relu(x, negative_slope, inplace=True)


def hardtanh_(x: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place :func:`hardtanh`."""
    return hardtanh(x, min_val, max_val, inplace=True)


def threshold_(x: Tensor, threshold: float, value: float) -> Tensor:
    """In-place :func:`threshold`."""
    return globals()["threshold"](x, threshold, value, inplace=True)


def rrelu_(x: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    """In-place :func:`rrelu`."""
    return rrelu(x, lower, upper, training, inplace=True)
