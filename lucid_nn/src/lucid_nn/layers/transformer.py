"""Attention layers: MultiheadAttention and the Transformer encoder/decoder stacks (PyTorch's names and init)."""

from __future__ import annotations

__all__ = [
    "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
    "TransformerDecoder", "Transformer",
]  # fmt: skip

import copy
from collections.abc import Callable
from typing import Any

import lucid_core as lc
from lucid_core import Parameter, Tensor

from .. import functional as F
from .. import init
from ..containers import ModuleList
from ..functional._attention import _causal_mask
from ..module import Module
from .dropout import Dropout
from .linear import Linear
from .normalization import LayerNorm


class NonDynamicallyQuantizableLinear(Linear):
    """A plain Linear under PyTorch's name for MultiheadAttention's ``out_proj`` (so reprs match)."""


class MultiheadAttention(Module):
    """Attention from ``num_heads`` heads of size embed_dim / num_heads, projected back to ``embed_dim``.

    Args:
        dropout: dropout on the attention weights in training.
        add_bias_kv: learn ``bias_k``/``bias_v`` appended to the keys and values.
        kdim: key feature size (separate ``q/k/v_proj_weight`` when it differs from embed_dim).
        vdim: value feature size (likewise).
        batch_first: inputs and outputs are (N, L, E) instead of (L, N, E).

    ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)`` returns ``(output, weights or None)``. Bool masks mark
    positions that may NOT be attended; float masks are added to the scores.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
    ) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"MultiheadAttention: embed_dim and num_heads must be positive, got {embed_dim} and {num_heads}"
            )
        if embed_dim % num_heads:
            raise ValueError(
                f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})"
            )
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        kw = {"dtype": dtype, "device": device}
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(lc.empty((embed_dim, embed_dim), **kw))
            self.k_proj_weight = Parameter(lc.empty((embed_dim, self.kdim), **kw))
            self.v_proj_weight = Parameter(lc.empty((embed_dim, self.vdim), **kw))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(lc.empty((3 * embed_dim, embed_dim), **kw))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(lc.empty((3 * embed_dim,), **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(lc.empty((1, 1, embed_dim), **kw))
            self.bias_v = Parameter(lc.empty((1, 1, embed_dim), **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """PyTorch's init: xavier_uniform projections, zero biases, xavier_normal bias_k/bias_v."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        for t, what in ((query, "query"), (key, "key"), (value, "value")):
            if not isinstance(t, Tensor):
                raise TypeError(f"MultiheadAttention: {what} must be a Tensor, got {type(t).__name__}")
        batched = query.ndim == 3
        if self.batch_first and batched:
            same_kv = key is value
            if query is key:
                query = key = lc.swapaxes(query, 0, 1)
            else:
                query = lc.swapaxes(query, 0, 1)
                key = lc.swapaxes(key, 0, 1)
            value = key if same_kv else lc.swapaxes(value, 0, 1)
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
            self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal,
        )  # fmt: skip
        if self.batch_first and batched:
            out = lc.swapaxes(out, 0, 1)
        return out, weights


def _activation(activation: str | Callable[[Tensor], Tensor], name: str) -> Callable[[Tensor], Tensor]:
    if callable(activation):
        return activation
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise ValueError(f"{name}: activation should be 'relu', 'gelu' or a callable, got {activation!r}")


def _clones(module: Module, n: int) -> ModuleList:
    """``n`` independent deep copies of ``module`` (tensors are cloned through Lucid ops, not pickled)."""
    copies = []
    for _ in range(n):
        memo: dict[int, Any] = {}
        for t in list(module.parameters()) + list(module.buffers()):
            if isinstance(t, Parameter):
                memo[id(t)] = Parameter(lc.clone(t.detach()), requires_grad=t.requires_grad)
            else:
                memo[id(t)] = lc.clone(t.detach())
        copies.append(copy.deepcopy(module, memo))
    return ModuleList(copies)


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual connection and LayerNorm.

    Args:
        dim_feedforward: hidden size of the feed-forward block.
        activation: ``"relu"``, ``"gelu"`` or a callable.
        norm_first: normalise before each block (pre-LN) instead of after the residual sum.
        batch_first: inputs are (N, L, E) instead of (L, N, E).
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
    ) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation, "TransformerEncoderLayer")

    def _sa_block(
        self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None, is_causal: bool
    ) -> Tensor:
        x = self.self_attn(
            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False, is_causal=is_causal
        )[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))


class TransformerEncoder(Module):
    """``num_layers`` independent copies of ``encoder_layer`` applied in turn, then an optional ``norm``."""

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        if num_layers <= 0:
            raise ValueError(f"TransformerEncoder: num_layers must be positive, got {num_layers}")
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal))
        return self.norm(x) if self.norm is not None else x


class TransformerDecoderLayer(Module):
    """Self-attention, attention over ``memory``, then a feed-forward block; residuals and LayerNorms.

    Args:
        norm_first: normalise before each block (pre-LN) instead of after the residual sum.
        batch_first: inputs are (N, L, E) instead of (L, N, E).
    """

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = "relu",
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
    ) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw)
        self.multihead_attn = MultiheadAttention(
            d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw
        )
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation, "TransformerDecoderLayer")

    def _sa_block(
        self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None, is_causal: bool
    ) -> Tensor:
        x = self.self_attn(
            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False, is_causal=is_causal
        )[0]
        return self.dropout1(x)

    def _mha_block(
        self, x: Tensor, mem: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None, is_causal: bool
    ) -> Tensor:
        x = self.multihead_attn(
            x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False, is_causal=is_causal
        )[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
        return self.norm3(x + self._ff_block(x))


class TransformerDecoder(Module):
    """``num_layers`` independent copies of ``decoder_layer`` applied in turn, then an optional ``norm``."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        if num_layers <= 0:
            raise ValueError(f"TransformerDecoder: num_layers must be positive, got {num_layers}")
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        x = tgt
        for layer in self.layers:
            x = layer(
                x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask, tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=bool(tgt_is_causal),
                memory_is_causal=memory_is_causal,
            )  # fmt: skip
        return self.norm(x) if self.norm is not None else x


class Transformer(Module):
    """The encoder-decoder model of "Attention Is All You Need", with PyTorch's arguments and state-dict keys.

    ``encoder`` is a :class:`TransformerEncoder` of ``num_encoder_layers`` layers followed by a LayerNorm,
    ``decoder`` a :class:`TransformerDecoder` likewise, so ``nn.Transformer`` weights saved from PyTorch load.

    Args:
        d_model: feature size of inputs and outputs.
        nhead: attention heads (must divide ``d_model``).
        dim_feedforward: hidden size of each feed-forward block.
        dropout: dropout probability everywhere in the layers.
        activation: ``"relu"``, ``"gelu"`` or a callable, in the feed-forward blocks.
        custom_encoder: a module used instead of the default encoder (called as ``encoder(src, mask=...,
            src_key_padding_mask=..., is_causal=...)``).
        custom_decoder: likewise for the decoder (``decoder(tgt, memory, tgt_mask=..., ...)``).
        batch_first: inputs and outputs are (N, L, E) instead of (L, N, E).
        norm_first: pre-LN layers (normalise before attention and feed-forward).
        bias: whether Linear and LayerNorm layers have biases.

    Every weight with more than one dimension is re-initialised with ``xavier_uniform_``, as in PyTorch.
    """

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = "relu",
        custom_encoder: Module | None = None,
        custom_decoder: Module | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: lc.DeviceLike = None,
        dtype: lc.DTypeLike = None,
    ) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        layer_kw = {
            "dim_feedforward": dim_feedforward, "dropout": dropout, "activation": activation,
            "layer_norm_eps": layer_norm_eps, "batch_first": batch_first, "norm_first": norm_first, "bias": bias,
        }  # fmt: skip
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(d_model, nhead, **layer_kw, **kw),
                num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw),
            )
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(d_model, nhead, **layer_kw, **kw),
                num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw),
            )
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def _reset_parameters(self) -> None:
        """PyTorch's init: xavier_uniform on every parameter of two or more dimensions."""
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """Encode ``src`` into a memory, then decode ``tgt`` attending to it; returns the decoder output.

        Shapes (batch_first=False): src (S, N, E), tgt (T, N, E), src_mask (S, S), tgt_mask (T, T),
        memory_mask (T, S), *_key_padding_mask (N, S) or (N, T); unbatched inputs drop N. Bool masks mark
        positions that may NOT be attended; float masks are added to the attention scores. The ``*_is_causal``
        flags are hints that the matching mask is causal (a causal mask is built when the mask is None).
        """
        for t, what in ((src, "src"), (tgt, "tgt")):
            if not isinstance(t, Tensor):
                raise TypeError(f"Transformer: {what} must be a Tensor, got {type(t).__name__}")
        if src.ndim != tgt.ndim or src.ndim not in (2, 3):
            raise ValueError(
                f"Transformer: src and tgt must both be 3-D (batched) or 2-D (unbatched), got shapes "
                f"{src.shape} and {tgt.shape}"
            )
        if src.ndim == 3:
            b = 0 if self.batch_first else 1
            if src.shape[b] != tgt.shape[b]:
                raise RuntimeError(
                    f"the batch number of src and tgt must be equal, got {src.shape[b]} and {tgt.shape[b]} "
                    f"(batch_first={self.batch_first})"
                )
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError(
                f"the feature number of src and tgt must be equal to d_model ({self.d_model}), got "
                f"{src.shape[-1]} and {tgt.shape[-1]}"
            )
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(
            tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask, tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )  # fmt: skip

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: lc.DeviceLike = None, dtype: lc.DTypeLike = None) -> Tensor:
        """A (sz, sz) float mask: 0 on and below the diagonal, -inf above (position i sees positions <= i)."""
        if isinstance(sz, bool) or not isinstance(sz, int) or sz < 0:
            raise ValueError(f"generate_square_subsequent_mask: sz must be a non-negative int, got {sz!r}")
        return _causal_mask(sz, sz, lc.float32 if dtype is None else dtype, device)
