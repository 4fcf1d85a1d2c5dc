"""Weight initialisation, in place and outside the graph, with PyTorch's distributions and bounds."""

from __future__ import annotations

__all__ = [
    "calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_", "eye_", "dirac_",
    "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "trunc_normal_", "orthogonal_",
]  # fmt: skip

import math
from typing import Any

import lucid_core as lc
from lucid_core import Tensor

_LINEAR = (
    "linear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "sigmoid",
)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for ``nonlinearity`` (PyTorch's table)."""
    if nonlinearity in _LINEAR:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = float(param)
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity!r}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight laid out as PyTorch's (out, in, *kernel)."""
    if tensor.ndim < 2:
        raise ValueError(
            f"Fan in and fan out can not be computed for tensor with fewer than 2 dimensions (got shape {tensor.shape})"
        )
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode!r} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _check(tensor: Any, name: str) -> Tensor:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type(tensor).__name__}")
    return tensor


def _fill(tensor: Tensor, values: Tensor) -> Tensor:
    with lc.no_grad():
        tensor.copy_(values)
    return tensor


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Fill with samples from U(a, b)."""
    _check(tensor, "uniform_")
    return _fill(tensor, lc.uniform(a, b, tensor.shape, dtype=tensor.dtype, device=tensor.device))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Fill with samples from N(mean, std**2)."""
    _check(tensor, "normal_")
    return _fill(tensor, lc.randn(*tensor.shape, dtype=tensor.dtype, device=tensor.device) * std + mean)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0) -> Tensor:
    """Fill with N(mean, std**2) samples truncated to [a, b] (inverse-CDF method, as PyTorch)."""
    _check(tensor, "trunc_normal_")

    def cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    lo, hi = cdf((a - mean) / std), cdf((b - mean) / std)
    dtype = tensor.dtype
    u = lc.uniform(2 * lo - 1, 2 * hi - 1, tensor.shape, dtype=dtype, device=tensor.device)
    # erfinv via Newton steps on erf, starting from a rational approximation
    y = _erfinv(u)
    vals = lc.clip(y * (std * math.sqrt(2.0)) + mean, a, b)
    return _fill(tensor, vals)


def _erfinv(y: Tensor) -> Tensor:
    """Inverse error function of ``y`` in (-1, 1) (Giles' approximation refined by Newton steps)."""
    y = lc.clip(y, -1 + 1e-7, 1 - 1e-7)
    w = -lc.log((1.0 - y) * (1.0 + y))
    small = w < 5.0
    w1 = w - 2.5
    p1 = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
              -0.00417768164, 0.246640727, 1.50140941):  # fmt: skip
        p1 = c + p1 * w1
    w2 = lc.sqrt(lc.maximum(w, 5.0)) - 3.0
    p2 = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
              0.00943887047, 1.00167406, 2.83297682):  # fmt: skip
        p2 = c + p2 * w2
    x = lc.where(small, p1, p2) * y
    two_over_sqrt_pi = 2.0 / math.sqrt(math.pi)
    for _ in range(2):
        x = x - (lc.erf(x) - y) / (two_over_sqrt_pi * lc.exp(-x * x))
    return x


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    _check(tensor, "constant_")
    with lc.no_grad():
        tensor.fill_(val)
    return tensor


def zeros_(tensor: Tensor) -> Tensor:
    """Fill tensor with zeros, in place."""
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill tensor with ones, in place."""
    return constant_(tensor, 1.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity matrix."""
    _check(tensor, "eye_")
    if tensor.ndim != 2:
        raise ValueError(f"eye_: only tensors with 2 dimensions are supported, got shape {tensor.shape}")
    return _fill(tensor, lc.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype, device=tensor.device))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3/4/5-D convolution weight with the Dirac delta (identity convolution)."""
    _check(tensor, "dirac_")
    if tensor.ndim not in (3, 4, 5):
        raise ValueError(f"dirac_: only tensors with 3, 4, or 5 dimensions are supported, got {tensor.ndim}")
    out_per_group = tensor.shape[0] // groups
    if tensor.shape[0] % groups:
        raise ValueError(f"dirac_: dim 0 ({tensor.shape[0]}) must be divisible by groups ({groups})")
    vals = lc.zeros(tensor.shape, dtype=tensor.dtype, device=tensor.device)
    centre = tuple(s // 2 for s in tensor.shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, tensor.shape[1])):
            vals[(g * out_per_group + d, d, *centre)] = 1
    return _fill(tensor, vals)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(_check(tensor, "xavier_uniform_"))
    a = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a)


def xavier_normal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot normal: N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(_check(tensor, "xavier_normal_"))
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)))


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Tensor:
    """He uniform: U(-b, b) with b = gain * sqrt(3 / fan)."""
    _check(tensor, "kaiming_uniform_")
    if 0 in tensor.shape:
        return tensor
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / _fan(tensor, mode))
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Tensor:
    """He normal: N(0, std**2) with std = gain / sqrt(fan)."""
    _check(tensor, "kaiming_normal_")
    if 0 in tensor.shape:
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std)


def orthogonal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Fill with a (semi-)orthogonal matrix from the QR of a Gaussian matrix (rows flattened past dim 0)."""
    _check(tensor, "orthogonal_")
    if tensor.ndim < 2:
        raise ValueError(f"orthogonal_: only tensors with 2 or more dimensions are supported, got shape {tensor.shape}")
    if tensor.size == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.size // rows
    flat = lc.randn(rows, cols, dtype=tensor.dtype, device=tensor.device)
    if rows < cols:
        flat = flat.T
    q = _gram_schmidt(flat)
    if rows < cols:
        q = q.T
    return _fill(tensor, (q * gain).reshape(tensor.shape))


def _gram_schmidt(a: Tensor) -> Tensor:
    """Orthonormal columns spanning ``a``'s columns (the Q of a QR with a positive R diagonal)."""
    k = a.shape[1]
    cols: list[Tensor] = []
    for j in range(k):
        v = a[:, j]
        for _ in range(2):  # re-orthogonalise once for stability
            for q in cols:
                v = v - lc.sum(q * v) * q
        cols.append(v / lc.sqrt(lc.sum(v * v)))
    return lc.stack(cols, axis=1)


def _reset_weight_and_bias(weight: Tensor, bias: Tensor | None) -> None:
    """PyTorch's default for Linear and Conv: weight ~ kaiming_uniform(a=sqrt(5)), bias ~ U(+-1/sqrt(fan_in))."""
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = _calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        uniform_(bias, -bound, bound)
