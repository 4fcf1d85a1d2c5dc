"""PyTorch's ``torch.nn.utils.parametrizations``: ``weight_norm`` and ``spectral_norm`` as parametrizations.

State-dict keys are PyTorch's: ``parametrizations.weight.original0`` (g) and ``original1`` (v) for weight
norm, ``parametrizations.weight.original`` plus the ``_u``/``_v`` buffers for spectral norm.
"""

from __future__ import annotations

__all__ = ["weight_norm", "spectral_norm"]


import lucid_core as lc
from lucid_core import Tensor

from ..module import Module
from . import parametrize
from ._norms import norm_except_dim, weight_from


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_from(weight_g, weight_v, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` (norm over every axis but ``dim``); returns module."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


def _normalize(x: Tensor, eps: float) -> Tensor:
    return x / lc.maximum(lc.linalg.vector_norm(x), lc.asarray(eps, dtype=x.dtype, device=x.device))


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(
                f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._reshape_weight_to_matrix(weight)
            h, w = mat.shape
            u = _normalize(lc.empty((h,), dtype=mat.dtype, device=mat.device).normal_(0, 1), eps)
            v = _normalize(lc.empty((w,), dtype=mat.dtype, device=mat.device).normal_(0, 1), eps)
            self.register_buffer("_u", u)
            self.register_buffer("_v", v)
            self._power_method(mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = lc.moveaxis(weight, self.dim, 0)
        return weight.reshape(weight.shape[0], -1)

    def _power_method(self, mat: Tensor, n_power_iterations: int) -> None:
        with lc.no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(_normalize(lc.matmul(mat, self._v), self.eps))
                self._v.copy_(_normalize(lc.matmul(mat.mT, self._u), self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return _normalize(weight, self.eps)
        mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(mat.detach(), self.n_power_iterations)
        u, v = lc.clone(self._u), lc.clone(self._v)
        sigma = lc.vecdot(u, lc.matmul(mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(
    module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim: int | None = None
) -> Module:
    """Divide ``module.<name>`` by its largest singular value, estimated by power iteration in training mode.

    ``dim`` defaults to 1 for transposed convolutions (their output channels), else 0, as in PyTorch.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if "ConvTranspose" in type(module).__name__ else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
