"""Affine layers and shape helpers: Linear, Bilinear, Flatten, Unflatten."""

from __future__ import annotations

__all__ = ["Linear", "Bilinear", "Flatten", "Unflatten"]

import math
from collections.abc import Sequence

import lucid_core as lc
from lucid_core import Parameter, Tensor

from .. import functional as F
from .. import init
from ..module import Module


class Linear(Module):
    """y = x @ weight.T + bias.

    Args:
        in_features: size of each input sample.
        out_features: size of each output sample.
        bias: whether to learn an additive bias.

    weight ~ kaiming_uniform(a=sqrt(5)) and bias ~ U(-1/sqrt(in), 1/sqrt(in)), as in PyTorch.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
    ) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(lc.empty((out_features, in_features), dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(lc.empty((out_features,), dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw the weights as PyTorch does (Kaiming-uniform weight, uniform bias)."""
        init._reset_weight_and_bias(self.weight, self.bias)

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """y_k = x1 @ weight[k] @ x2 + bias_k; weight and bias ~ U(-1/sqrt(in1), 1/sqrt(in1))."""

    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        bias: bool = True,
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
    ) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(lc.empty((out_features, in1_features, in2_features), dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(lc.empty((out_features,), dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw the weights as PyTorch does (uniform in +-1/sqrt(in1_features))."""
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.bilinear(x1, x2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )


class Flatten(Module):
    """Flatten axes ``start_dim`` .. ``end_dim`` into one."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, x: Tensor) -> Tensor:
        return lc.flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split axis ``dim`` into ``unflattened_size``."""

    def __init__(self, dim: int, unflattened_size: Sequence[int]) -> None:
        super().__init__()
        self.dim = dim
        self.unflattened_size = tuple(unflattened_size)

    def forward(self, x: Tensor) -> Tensor:
        d = self.dim % x.ndim
        known = 1
        for s in self.unflattened_size:
            if s != -1:
                known *= s
        if -1 not in self.unflattened_size and known != x.shape[d]:
            raise ValueError(
                f"Unflatten: unflattened_size {self.unflattened_size} has {known} elements but dim {self.dim} "
                f"of the input has size {x.shape[d]}"
            )
        return x.reshape(*x.shape[:d], *self.unflattened_size, *x.shape[d + 1 :])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
