"""Embedding and EmbeddingBag: lookup tables of learned vectors (EmbeddingBag reduces each bag of rows)."""

from __future__ import annotations

__all__ = ["Embedding", "EmbeddingBag"]


import lucid_core as lc
from lucid_core import Parameter, Tensor

from .. import functional as F
from .. import init
from ..module import Module


class Embedding(Module):
    """Rows of a (num_embeddings, embedding_dim) table picked by integer indices; weight ~ N(0, 1).

    Args:
        padding_idx: a row that starts at zero and receives no gradient.
        max_norm: renormalise looked-up rows whose ``norm_type``-norm exceeds it (in place).
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Tensor | None = None,
        _freeze: bool = False,
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
    ) -> None:
        super().__init__()
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(
                    f"Embedding: padding_idx must be within num_embeddings ({num_embeddings}), got {padding_idx}"
                )
            if padding_idx < 0:
                padding_idx += num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        if _weight is None:
            self.weight = Parameter(lc.empty((num_embeddings, embedding_dim), dtype=dtype, device=device))
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(f"Embedding: _weight shape {_weight.shape} != ({num_embeddings}, {embedding_dim})")
            self.weight = Parameter(_weight)
        if _freeze:
            self.weight.requires_grad_(False)

    def reset_parameters(self) -> None:
        """Re-draw the weights from N(0, 1), zeroing the padding_idx row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with lc.no_grad():
                self.weight[self.padding_idx] = 0.0

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
    ) -> Embedding:
        """An Embedding whose table is ``embeddings`` (frozen unless ``freeze=False``)."""
        if embeddings.ndim != 2:
            raise ValueError(f"Embedding.from_pretrained: embeddings must be 2-D, got shape {embeddings.shape}")
        m = cls(
            embeddings.shape[0], embeddings.shape[1], padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
            _weight=embeddings,
        )  # fmt: skip
        m.weight.requires_grad_(not freeze)
        return m

    def forward(self, x: Tensor) -> Tensor:
        return F.embedding(
            x, self.weight, self.padding_idx, self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse
        )

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        return s


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of rows of a (num_embeddings, embedding_dim) table; weight ~ N(0, 1).

    ``forward(input, offsets=None, per_sample_weights=None)``: a 2-D input holds one bag per row; a 1-D
    input is cut into bags at ``offsets``.
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight: Tensor | None = None,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
    ) -> None:
        super().__init__()
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"EmbeddingBag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(
                    f"EmbeddingBag: padding_idx must be within num_embeddings ({num_embeddings}), got {padding_idx}"
                )
            if padding_idx < 0:
                padding_idx += num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(lc.empty((num_embeddings, embedding_dim), dtype=dtype, device=device))
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(f"EmbeddingBag: _weight shape {_weight.shape} != ({num_embeddings}, {embedding_dim})")
            self.weight = Parameter(_weight)

    def reset_parameters(self) -> None:
        """Re-draw the weights from N(0, 1), zeroing the padding_idx row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with lc.no_grad():
                self.weight[self.padding_idx] = 0.0

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
    ) -> EmbeddingBag:
        """An EmbeddingBag whose table is ``embeddings`` (frozen unless ``freeze=False``)."""
        if embeddings.ndim != 2:
            raise ValueError(f"EmbeddingBag.from_pretrained: embeddings must be 2-D, got shape {embeddings.shape}")
        m = cls(
            embeddings.shape[0], embeddings.shape[1], max_norm, norm_type, scale_grad_by_freq, mode, sparse,
            embeddings, include_last_offset, padding_idx,
        )  # fmt: skip
        m.weight.requires_grad_(not freeze)
        return m

    def forward(self, input: Tensor, offsets: Tensor | None = None, per_sample_weights: Tensor | None = None) -> Tensor:
        return F.embedding_bag(
            input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq, self.mode,
            self.sparse, per_sample_weights, self.include_last_offset, self.padding_idx,
        )  # fmt: skip

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s
