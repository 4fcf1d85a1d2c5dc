"""Activation layers: thin modules over :mod:`lucid_nn.functional`."""

from __future__ import annotations

__all__ = [
    "ReLU", "ReLU6", "LeakyReLU", "PReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Sigmoid", "Tanh",
    "Hardtanh", "Hardsigmoid", "Hardswish", "Softplus", "Softsign", "LogSigmoid", "Threshold", "Tanhshrink",
    "Softmax", "LogSoftmax", "Softmin", "GLU", "Hardshrink", "Softshrink", "RReLU", "Softmax2d",
]  # fmt: skip


import lucid_core as lc
from lucid_core import Parameter, Tensor

from .. import functional as F
from ..module import Module


class _Inplace(Module):
    """An activation with PyTorch's ``inplace`` flag: when set, the result is written into the input."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU(_Inplace):
    """max(x, 0)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x, inplace=self.inplace)


class ReLU6(_Inplace):
    """min(max(x, 0), 6)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.relu6(x, inplace=self.inplace)


class SELU(_Inplace):
    """Scaled ELU with the self-normalising constants."""

    def forward(self, x: Tensor) -> Tensor:
        return F.selu(x, inplace=self.inplace)


class SiLU(_Inplace):
    """x * sigmoid(x)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.silu(x, inplace=self.inplace)


class Mish(_Inplace):
    """x * tanh(softplus(x))."""

    def forward(self, x: Tensor) -> Tensor:
        return F.mish(x, inplace=self.inplace)


class Hardsigmoid(_Inplace):
    """clip(x / 6 + 1/2, 0, 1)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.hardsigmoid(x, inplace=self.inplace)


class Hardswish(_Inplace):
    """x * hardsigmoid(x)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.hardswish(x, inplace=self.inplace)


class LeakyReLU(Module):
    """x for x > 0, negative_slope * x otherwise."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.leaky_relu(x, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class PReLU(Module):
    """Leaky ReLU with learned slopes: one shared, or one per channel (axis 1); initialised to ``init``."""

    def __init__(
        self, num_parameters: int = 1, init: float = 0.25, device: lc.DeviceLike = None, dtype: lc.DTypeLike = None
    ) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(lc.full((num_parameters,), init, dtype=dtype, device=device))

    def forward(self, x: Tensor) -> Tensor:
        return F.prelu(x, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class ELU(Module):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.elu(x, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

    def forward(self, x: Tensor) -> Tensor:
        return F.celu(x, self.alpha, self.inplace)


class GELU(Module):
    """x * Phi(x); ``approximate="tanh"`` uses the tanh formula."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Sigmoid(Module):
    """1 / (1 + exp(-x))."""

    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)


class Tanh(Module):
    """Hyperbolic tangent."""

    def forward(self, x: Tensor) -> Tensor:
        return F.tanh(x)


class Tanhshrink(Module):
    """x - tanh(x)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.tanhshrink(x)


class Softsign(Module):
    """x / (1 + |x|)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.softsign(x)


class LogSigmoid(Module):
    """log(sigmoid(x)), stable."""

    def forward(self, x: Tensor) -> Tensor:
        return F.logsigmoid(x)


class Hardtanh(Module):
    """x clipped to [min_val, max_val]."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        if min_val > max_val:
            raise ValueError(f"Hardtanh: min_val ({min_val}) must not exceed max_val ({max_val})")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.hardtanh(x, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class Threshold(Module):
    """x where x > threshold, else ``value``."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.threshold(x, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, linear above ``threshold``."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, x: Tensor) -> Tensor:
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class _SoftmaxBase(Module):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    """exp(x) / sum(exp(x)) along ``dim``."""

    def forward(self, x: Tensor) -> Tensor:
        return F.softmax(x, self.dim)


class LogSoftmax(_SoftmaxBase):
    """log(softmax(x)) along ``dim``, in one stable pass."""

    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(x, self.dim)


class Softmin(_SoftmaxBase):
    """softmax(-x) along ``dim``."""

    def forward(self, x: Tensor) -> Tensor:
        return F.softmin(x, self.dim)


class GLU(Module):
    """First half of ``x`` along ``dim`` gated by the sigmoid of the second half."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.glu(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Hardshrink(Module):
    """x where |x| > lambd, else 0."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, x: Tensor) -> Tensor:
        return F.hardshrink(x, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """x shrunk towards 0 by lambd (0 inside [-lambd, lambd])."""

    def forward(self, x: Tensor) -> Tensor:
        return F.softshrink(x, self.lambd)


class RReLU(Module):
    """Randomised leaky ReLU: slope ~ U(lower, upper) per element in training, their mean in eval."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.rrelu(x, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class Softmax2d(Module):
    """Softmax over the channels of an (N, C, H, W) or (C, H, W) input."""

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected a 3-D or 4-D input, got shape {x.shape}")
        return F.softmax(x, -3)
