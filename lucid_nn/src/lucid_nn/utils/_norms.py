"""The norm behind weight normalisation: the 2-norm over every axis but one."""

from __future__ import annotations

import lucid_core as lc
from lucid_core import Tensor


def norm_except_dim(v: Tensor, dim: int | None) -> Tensor:
    """``||v||`` over every axis except ``dim`` (kept with size 1); ``dim`` None or -1: over all of ``v``."""
    if dim is None or dim == -1:
        return lc.linalg.vector_norm(v)
    dim = dim % v.ndim
    axes = tuple(a for a in range(v.ndim) if a != dim)
    return lc.linalg.vector_norm(v, axis=axes, keepdims=True)


def weight_from(g: Tensor, v: Tensor, dim: int | None) -> Tensor:
    """``v * (g / ||v||)``, PyTorch's ``_weight_norm``."""
    return v * (g / norm_except_dim(v, dim))
