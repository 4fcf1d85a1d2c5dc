"""Activation functions and softmax family, each stable for extreme inputs."""

from __future__ import annotations

__all__ = [
    "relu", "relu6", "leaky_relu", "prelu", "elu", "selu", "celu", "gelu", "silu", "mish", "sigmoid", "tanh",
    "hardtanh", "hardsigmoid", "hardswish", "softplus", "softsign", "logsigmoid", "threshold", "tanhshrink",
    "softmax", "log_softmax", "softmin", "glu",
]  # fmt: skip

import math

import lucid_core as lc
from lucid_core import Function, Tensor, kernels
from lucid_core.ops.reduction import ACCUMULATE, widened

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _check(x: object, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type(x).__name__}")
    return x


def relu(x: Tensor) -> Tensor:
    """max(x, 0)."""
    return lc.relu(_check(x, "relu"))


def relu6(x: Tensor) -> Tensor:
    """min(max(x, 0), 6)."""
    return hardtanh(x, 0.0, 6.0)


def threshold(x: Tensor, threshold: float, value: float) -> Tensor:
    """x where x > threshold, else ``value``."""
    _check(x, "threshold")
    return lc.where(x > threshold, x, lc.full_like(x, value))


def leaky_relu(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    """x for x > 0, negative_slope * x otherwise."""
    _check(x, "leaky_relu")
    return lc.where(x > 0, x, x * negative_slope)


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


def elu(x: Tensor, alpha: float = 1.0) -> Tensor:
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    _check(x, "elu")
    # the negative branch holds at 0 (slope alpha there, as in PyTorch); minimum(x, 0) would halve it
    return lc.where(x > 0, x, lc.expm1(_nonpositive(x)) * alpha)


def selu(x: Tensor) -> Tensor:
    """scale * elu(x, alpha) with the self-normalising constants."""
    return elu(x, _SELU_ALPHA) * _SELU_SCALE


def celu(x: Tensor, alpha: float = 1.0) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    _check(x, "celu")
    if alpha == 0:
        raise ValueError("celu: alpha must not be 0")
    return lc.where(x > 0, x, lc.expm1(_nonpositive(x) / alpha) * alpha)


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


def silu(x: Tensor) -> Tensor:
    """x * sigmoid(x)."""
    return _check(x, "silu") * lc.sigmoid(x)


def mish(x: Tensor) -> Tensor:
    """x * tanh(softplus(x))."""
    return _check(x, "mish") * lc.tanh(softplus(x))


def sigmoid(x: Tensor) -> Tensor:
    """The logistic function 1 / (1 + exp(-x))."""
    return lc.sigmoid(_check(x, "sigmoid"))


def tanh(x: Tensor) -> Tensor:
    """Hyperbolic tangent."""
    return lc.tanh(_check(x, "tanh"))


def tanhshrink(x: Tensor) -> Tensor:
    """x - tanh(x)."""
    return x - lc.tanh(_check(x, "tanhshrink"))


def hardtanh(x: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """x clipped to [min_val, max_val]."""
    _check(x, "hardtanh")
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) must not exceed max_val ({max_val})")
    return _pass_strictly_inside(x, lc.clip(x, min_val, max_val), min_val, max_val)


def _pass_strictly_inside(x: Tensor, y: Tensor, lo: float, hi: float) -> Tensor:
    """``y``, with the gradient of ``y`` only where lo < x < hi: PyTorch's hardtanh and hardsigmoid give 0 at
    the bounds themselves (``clip`` passes it there, as PyTorch's clamp does)."""
    return lc.where(lc.logical_and(x > lo, x < hi), y, y.detach())


def hardsigmoid(x: Tensor) -> Tensor:
    """clip(x / 6 + 1 / 2, 0, 1)."""
    _check(x, "hardsigmoid")
    return _pass_strictly_inside(x, lc.clip(x / 6.0 + 0.5, 0.0, 1.0), -3.0, 3.0)


def hardswish(x: Tensor) -> Tensor:
    """x * hardsigmoid(x)."""
    return x * hardsigmoid(x)


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
