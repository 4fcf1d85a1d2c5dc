"""Attention: scaled dot-product attention and the multi-head attention forward pass (PyTorch's semantics)."""

from __future__ import annotations

import math
from typing import Any

import lucid_core as lc
from lucid_core import Tensor, kernels
from lucid_core._forward_ad import saved_values_suffice
from lucid_core.amp import autocast_op

from ._activation import softmax
from ._misc import dropout, linear

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


def _additive_mask(mask: Tensor, dtype: Any, allowed_is_true: bool, name: str) -> Tensor:
    """A float mask to add to attention scores: 0 where attending is allowed, -inf where it is not."""
    if not isinstance(mask, Tensor):
        raise TypeError(f"{name}: masks must be Tensors, got {type(mask).__name__}")
    if mask.dtype.kind == "b":
        blocked = lc.logical_not(mask) if allowed_is_true else mask
        return lc.where(
            blocked,
            lc.full((), -math.inf, dtype=dtype, device=mask.device),
            lc.zeros((), dtype=dtype, device=mask.device),
        )
    if mask.dtype.kind != "f":
        raise TypeError(f"{name}: a mask must be bool or floating point, got {mask.dtype.name}")
    return mask.astype(dtype) if mask.dtype is not dtype else mask


def _causal_mask(length: int, source: int, dtype: Any, device: Any) -> Tensor:
    """0 on and below the diagonal (top-left aligned), -inf above it."""
    allowed = lc.tril(lc.ones((length, source), dtype=lc.bool, device=device))
    return _additive_mask(allowed, dtype, True, "causal mask")


def _masked_softmax(scores: Tensor, mask: Tensor | None) -> Tensor:
    """Softmax over the last axis; rows whose every entry is masked give zeros (not NaN), as PyTorch's SDPA."""
    if mask is None:
        return softmax(scores, dim=-1)
    scores = scores + mask
    dead = lc.all(lc.equal(mask, -math.inf), axis=-1, keepdims=True)
    if not bool(lc.any(dead)):
        return softmax(scores, dim=-1)
    zero = lc.zeros((), dtype=scores.dtype, device=scores.device)
    w = softmax(lc.where(dead, zero, scores), dim=-1)
    return lc.where(dead, zero, w)


def _fused_attention(q: Tensor, k: Tensor, v: Tensor, scale: float, causal: bool) -> Tensor | None:
    """The ``scaled_dot_product_attention`` kernel where it applies (same batch axes and dtype, floats,
    no empty axis, a causal mask that leaves every row a key), else None (the composed ops)."""
    if not (
        q.ndim == k.ndim == v.ndim
        and q.shape[:-2] == k.shape[:-2] == v.shape[:-2]
        and q.dtype is k.dtype is v.dtype
        and q.dtype.kind == "f"
        and q.size
        and k.size
        and v.size
    ):
        return None
    return _Attention.apply(q, k, v, scale, causal)


class _Attention(lc.Function):
    """softmax(q @ k^T * scale [+ causal mask]) @ v in one node: the ``scaled_dot_product_attention`` kernel.

    First-order backward is the ``scaled_dot_product_attention_grad`` kernel on the saved weights;
    with ``create_graph`` the weights are recomputed and the gradient written in Lucid ops.
    """

    native = True

    @staticmethod
    def jvp(ctx, tq, tk, tv, _scale, _causal):
        q, k, v, scale, causal = ctx.inputs
        return _attention_jvp(q, k, v, tq, tk, tv, scale, causal, ctx.weights)

    @staticmethod
    def forward(ctx, q, k, v, scale, causal):
        out, ctx.weights = kernels.call(ctx.device, "scaled_dot_product_attention", q, k, v, scale, causal)
        return out

    @staticmethod
    def backward(ctx, gy):
        q, k, v, scale, causal = ctx.inputs
        if not lc.is_grad_enabled():
            w = lc.asarray(ctx.weights, device=q.device)
            gq, gk, gv = _AttentionGrad.apply(gy, q, k, v, w, scale, causal)
        else:
            gq, gk, gv = _attention_grads(gy, q, k, v, scale, causal)
        need = ctx.needs_input_grad
        return (gq if need[0] else None), (gk if need[1] else None), (gv if need[2] else None), None, None

    @staticmethod
    def backward_raw(ctx, gy):
        q, k, v, scale, causal = ctx.inputs
        grads = kernels.call(
            ctx.device, "scaled_dot_product_attention_grad", gy, q._data, k._data, v._data, ctx.weights, scale, causal
        )
        return (*(g if x._requires_grad else None for g, x in zip(grads, (q, k, v))), None, None)


def _weights(q: Tensor, k: Tensor, scale: float, causal: bool) -> Tensor:
    """softmax(q @ k^T * scale [+ causal mask]) in Lucid ops: the attention weights, differentiable."""
    scores = lc.matmul(q, lc.matrix_transpose(k)) * scale
    mask = _causal_mask(q.shape[-2], k.shape[-2], scores.dtype, scores.device) if causal else None
    return softmax(scores if mask is None else scores + mask, dim=-1)


def _attention_grads(gy: Tensor, q: Tensor, k: Tensor, v: Tensor, scale: float, causal: bool) -> tuple[Tensor, ...]:
    """(gq, gk, gv) of attention in Lucid ops, the weights recomputed: differentiable again (create_graph)."""
    w = _weights(q, k, scale, causal)
    gv = lc.matmul(lc.matrix_transpose(w), gy)
    dw = lc.matmul(gy, lc.matrix_transpose(v))
    ds = w * (dw - lc.sum(dw * w, axis=-1, keepdims=True)) * scale
    return lc.matmul(ds, k), lc.matmul(lc.matrix_transpose(ds), q), gv


def _attention_jvp(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    tq: Tensor | None,
    tk: Tensor | None,
    tv: Tensor | None,
    scale: float,
    causal: bool,
    saved: Any = None,
) -> Tensor | None:
    """The tangent of attention's output: with P = softmax(S), S = q k^T * scale, dS = (tq k^T + q tk^T) * scale,
    d out = (P * (dS - rowsum(P * dS))) v + P tv. In Lucid ops on recomputed weights, so it nests and
    differentiates again; two products per tangent where the derived rule ran two backward passes. The kernel's
    ``saved`` weights serve where nothing differentiates them again."""
    if tq is None and tk is None and tv is None:
        return None
    if saved is not None and saved_values_suffice(q, k):
        w = lc.asarray(saved, device=q.device)
    else:
        w = _weights(q, k, scale, causal)
    out = None
    if tq is not None or tk is not None:
        ds = None
        if tq is not None:
            ds = lc.matmul(tq, lc.matrix_transpose(k))
        if tk is not None:
            term = lc.matmul(q, lc.matrix_transpose(tk))
            ds = term if ds is None else ds + term
        ds = ds * scale
        dw = w * (ds - lc.sum(w * ds, axis=-1, keepdims=True))
        out = lc.matmul(dw, v)
    if tv is not None:
        term = lc.matmul(w, tv)
        out = term if out is None else out + term
    return out


class _PackedAttention(lc.Function):
    """``_Attention`` on q, k, v stacked along a leading axis of 3 (one self-attention projection): the same
    kernels; backward returns one (3, ...) gradient instead of three to scatter into zeros."""

    native = True

    @staticmethod
    def jvp(ctx, tqkv, _scale, _causal):
        qkv, scale, causal = ctx.inputs
        if tqkv is None:
            return None
        q, k, v = lc.unstack(qkv)
        return _attention_jvp(q, k, v, *lc.unstack(tqkv), scale, causal, ctx.weights)

    @staticmethod
    def forward(ctx, qkv, scale, causal):
        out, ctx.weights = kernels.call(
            ctx.device, "scaled_dot_product_attention", qkv[0, ...], qkv[1, ...], qkv[2, ...], scale, causal
        )
        return out

    @staticmethod
    def backward(ctx, gy):
        qkv, scale, causal = ctx.inputs
        if not lc.is_grad_enabled():
            w = lc.asarray(ctx.weights, device=qkv.device)
            return _PackedAttentionGrad.apply(gy, qkv, w, scale, causal), None, None
        return lc.stack(_attention_grads(gy, *lc.unstack(qkv), scale, causal)), None, None

    @staticmethod
    def backward_raw(ctx, gy):
        qkv, scale, causal = ctx.inputs
        a = qkv._data
        grads = kernels.call(
            ctx.device, "scaled_dot_product_attention_grad", gy, a[0, ...], a[1, ...], a[2, ...], ctx.weights, scale,
            causal,
        )  # fmt: skip
        return ctx.xp.stack(grads), None, None


class _PackedAttentionGrad(lc.Function):
    """The (3, ...) gradient of ``_PackedAttention`` (the ``scaled_dot_product_attention_grad`` kernel)."""

    native = True
    differentiable = False

    @staticmethod
    def forward(ctx, gy, qkv, w, scale, causal):
        grads = kernels.call(
            ctx.device, "scaled_dot_product_attention_grad", gy, qkv[0, ...], qkv[1, ...], qkv[2, ...], w, scale, causal
        )
        return ctx.xp.stack(grads)


class _AttentionGrad(lc.Function):
    """(gq, gk, gv) of ``_Attention`` from its weights (the ``scaled_dot_product_attention_grad`` kernel)."""

    native = True
    differentiable = False

    @staticmethod
    def forward(ctx, gy, q, k, v, w, scale, causal):
        return kernels.call(ctx.device, "scaled_dot_product_attention_grad", gy, q, k, v, w, scale, causal)


@autocast_op("scaled_dot_product_attention")
def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """softmax(q @ k^T * scale + mask) @ v over the last two axes (..., L, E) x (..., S, E) -> (..., L, Ev).

    Args:
        attn_mask: bool (True = may attend) or float (added to the scores), broadcastable to (..., L, S).
        dropout_p: dropout on the attention weights (always applied when > 0, as in PyTorch).
        is_causal: mask out keys after each query (top-left aligned); excludes ``attn_mask``.
        scale: factor on the scores; defaults to 1 / sqrt(E).
        enable_gqa: let query heads (axis -3) share fewer key/value heads.
    """
    name = "scaled_dot_product_attention"
    for t, what in ((query, "query"), (key, "key"), (value, "value")):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}: {what} must be a Tensor, got {type(t).__name__}")
        if t.ndim < 2:
            raise ValueError(f"{name}: {what} needs at least 2 dimensions (..., seq, embed), got shape {t.shape}")
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"{name}: query and key embed sizes differ ({query.shape[-1]} != {key.shape[-1]})")
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(f"{name}: key and value have different lengths ({key.shape[-2]} != {value.shape[-2]})")
    if is_causal and attn_mask is not None:
        raise ValueError(f"{name}: give either attn_mask or is_causal=True, not both")
    if enable_gqa and query.ndim >= 3 and key.ndim >= 3 and query.shape[-3] != key.shape[-3]:
        hq, hk = query.shape[-3], key.shape[-3]
        if hq % hk or value.shape[-3] != hk:
            raise ValueError(f"{name}: {hq} query heads cannot share {hk} key/value heads")
        key = lc.repeat(key, hq // hk, axis=key.ndim - 3)
        value = lc.repeat(value, hq // hk, axis=value.ndim - 3)
    length, source = query.shape[-2], key.shape[-2]
    s = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    if attn_mask is None and dropout_p == 0.0:
        fused = _fused_attention(query, key, value, s, is_causal)
        if fused is not None:
            return fused
    scores = lc.matmul(query, lc.matrix_transpose(key)) * s
    mask = None
    if is_causal:
        mask = _causal_mask(length, source, scores.dtype, scores.device)
    elif attn_mask is not None:
        mask = _additive_mask(attn_mask, scores.dtype, True, name)
    w = _masked_softmax(scores, mask)
    if dropout_p > 0.0:
        w = dropout(w, dropout_p, True)
    return lc.matmul(w, value)


def _in_projection(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim: int,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    use_separate_proj_weight: bool,
    q_proj_weight: Tensor | None,
    k_proj_weight: Tensor | None,
    v_proj_weight: Tensor | None,
) -> tuple[Tensor, Tensor, Tensor]:
    bq = bk = bv = None
    if in_proj_bias is not None:
        bq, bk, bv = lc.split(in_proj_bias, 3)
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise ValueError(
                "multi_head_attention_forward: in_proj_weight is None but use_separate_proj_weight is False"
            )
        if query is key and key is value:  # self-attention: one matmul for all three
            q, k, v = lc.split(linear(query, in_proj_weight, in_proj_bias), 3, axis=-1)
            return q, k, v
        wq, wk, wv = lc.split(in_proj_weight, 3)
    else:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise ValueError("multi_head_attention_forward: use_separate_proj_weight needs q_, k_ and v_proj_weight")
        wq, wk, wv = q_proj_weight, k_proj_weight, v_proj_weight
    return linear(query, wq, bq), linear(key, wk, bk), linear(value, wv, bv)


def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    bias_k: Tensor | None,
    bias_v: Tensor | None,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    training: bool = True,
    key_padding_mask: Tensor | None = None,
    need_weights: bool = True,
    attn_mask: Tensor | None = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None,
    v_proj_weight: Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """Multi-head attention on sequence-first inputs (L, N, E) or unbatched (L, E), as PyTorch's.

    Masks: ``key_padding_mask`` (N, S) and ``attn_mask`` (L, S) or (N * heads, L, S); bool masks mark
    positions that may NOT be attended (True = masked), float masks are added to the scores.
    Returns the output (L, N, E) and the attention weights (N, L, S) averaged over heads, or per head
    (N, heads, L, S), or None when ``need_weights`` is False.
    """
    name = "multi_head_attention_forward"
    if query.ndim not in (2, 3):
        raise ValueError(f"{name}: expected query with 3 dimensions (L, N, E) or 2 (L, E), got shape {query.shape}")
    unbatched = query.ndim == 2
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise ValueError(
            f"{name}: query {query.shape}, key {key.shape} and value {value.shape} must have the same rank"
        )
    if unbatched:
        query, key, value = (lc.expand_dims(t, axis=1) for t in (query, key, value))
        if key_padding_mask is not None:
            key_padding_mask = lc.expand_dims(key_padding_mask, axis=0)
    length, batch, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise ValueError(f"{name}: query has embed size {embed_dim} but the module expects {embed_dim_to_check}")
    if embed_dim % num_heads:
        raise ValueError(f"{name}: embed_dim {embed_dim} is not divisible by num_heads {num_heads}")
    if key.shape[:2] != value.shape[:2] or key.shape[1] != batch:
        raise ValueError(f"{name}: key {key.shape} and value {value.shape} must match in (S, N) and N must be {batch}")
    head_dim = embed_dim // num_heads
    if (
        query is key
        and key is value
        and not use_separate_proj_weight
        and in_proj_weight is not None
        and bias_k is None
        and bias_v is None
        and not add_zero_attn
        and key_padding_mask is None
        and attn_mask is None
        and not need_weights
        and not (dropout_p > 0.0 and training)
        and query.dtype.kind == "f"
        and query.size
        and in_proj_weight.dtype is query.dtype
    ):
        # self-attention from one packed projection: q, k, v stay one tensor, so backward builds one
        # gradient array (three slices' gradients would each be scattered into zeros and summed)
        qkv = linear(query, in_proj_weight, in_proj_bias)
        qkv = lc.permute_dims(lc.reshape(qkv, (length, batch, 3, num_heads, head_dim)), (2, 1, 3, 0, 4))
        out = _PackedAttention.apply(qkv, 1.0 / math.sqrt(head_dim), bool(is_causal))
        return _finish(out, None, length, batch, embed_dim, out_proj_weight, out_proj_bias, unbatched)
    q, k, v = _in_projection(
        query, key, value, embed_dim, in_proj_weight, in_proj_bias, use_separate_proj_weight,
        q_proj_weight, k_proj_weight, v_proj_weight,
    )  # fmt: skip
    dtype, device = q.dtype, q.device
    mask = None
    if attn_mask is not None:
        mask = _additive_mask(attn_mask, dtype, False, name)
        if mask.ndim == 2:
            if mask.shape != (length, key.shape[0]):
                raise ValueError(f"{name}: attn_mask should have shape {(length, key.shape[0])}, got {mask.shape}")
            mask = lc.reshape(mask, (1, 1, *mask.shape))
        elif mask.ndim == 3:
            if mask.shape != (batch * num_heads, length, key.shape[0]):
                raise ValueError(
                    f"{name}: attn_mask should have shape {(batch * num_heads, length, key.shape[0])}, got {mask.shape}"
                )
            mask = lc.reshape(mask, (batch, num_heads, length, key.shape[0]))
        else:
            raise ValueError(f"{name}: attn_mask must be 2-D or 3-D, got shape {mask.shape}")
    elif is_causal:
        mask = lc.reshape(_causal_mask(length, key.shape[0], dtype, device), (1, 1, length, key.shape[0]))
    kpm = None
    if key_padding_mask is not None:
        kpm = _additive_mask(key_padding_mask, dtype, False, name)
        if kpm.shape != (batch, key.shape[0]):
            raise ValueError(f"{name}: key_padding_mask should have shape {(batch, key.shape[0])}, got {kpm.shape}")
    if bias_k is not None and bias_v is not None:
        k = lc.concat([k, lc.broadcast_to(lc.reshape(bias_k, (1, 1, embed_dim)), (1, batch, embed_dim))], axis=0)
        v = lc.concat([v, lc.broadcast_to(lc.reshape(bias_v, (1, 1, embed_dim)), (1, batch, embed_dim))], axis=0)
        mask = None if mask is None else lc.pad(mask, [(0, 0), (0, 0), (0, 0), (0, 1)])
        kpm = None if kpm is None else lc.pad(kpm, [(0, 0), (0, 1)])
    elif (bias_k is None) != (bias_v is None):
        raise ValueError(f"{name}: bias_k and bias_v must both be given or both be None")
    # (seq, N, E) -> (N, heads, seq, head_dim)
    q = lc.permute_dims(lc.reshape(q, (length, batch, num_heads, head_dim)), (1, 2, 0, 3))
    k = lc.permute_dims(lc.reshape(k, (k.shape[0], batch, num_heads, head_dim)), (1, 2, 0, 3))
    v = lc.permute_dims(lc.reshape(v, (v.shape[0], batch, num_heads, head_dim)), (1, 2, 0, 3))
    if add_zero_attn:
        k = lc.pad(k, [(0, 0), (0, 0), (0, 1), (0, 0)])
        v = lc.pad(v, [(0, 0), (0, 0), (0, 1), (0, 0)])
        mask = None if mask is None else lc.pad(mask, [(0, 0), (0, 0), (0, 0), (0, 1)])
        kpm = None if kpm is None else lc.pad(kpm, [(0, 0), (0, 1)])
    if kpm is not None:
        kpm = lc.reshape(kpm, (batch, 1, 1, kpm.shape[-1]))
        mask = kpm if mask is None else mask + kpm
    fused = None
    # the fused kernel knows no mask but the plain causal one (bias_k and add_zero_attn pad it with 0s)
    plain_causal = is_causal and attn_mask is None and bias_k is None and not add_zero_attn
    if not need_weights and kpm is None and (mask is None or plain_causal):
        if not (dropout_p > 0.0 and training):
            fused = _fused_attention(q, k, v, 1.0 / math.sqrt(head_dim), mask is not None)
    if fused is not None:
        out = fused
    else:
        out, w = _weighted_values(q, k, v, head_dim, mask, need_weights, dropout_p if training else 0.0)
    weights = None
    if need_weights:
        weights = lc.mean(w, axis=1) if average_attn_weights else w
    return _finish(out, weights, length, batch, embed_dim, out_proj_weight, out_proj_bias, unbatched)


def _finish(
    out: Tensor,
    weights: Tensor | None,
    length: int,
    batch: int,
    embed_dim: int,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    unbatched: bool,
) -> tuple[Tensor, Tensor | None]:
    """(N, heads, L, head_dim) attention output -> the projected (L, N, E) output, and the weights."""
    out = lc.reshape(lc.permute_dims(out, (2, 0, 1, 3)), (length, batch, embed_dim))
    out = linear(out, out_proj_weight, out_proj_bias)
    if unbatched:
        out = lc.squeeze(out, axis=1)
        if weights is not None:
            weights = lc.squeeze(weights, axis=0)
    return out, weights


def _weighted_values(
    q: Tensor, k: Tensor, v: Tensor, head_dim: int, mask: Tensor | None, need_weights: bool, dropout_p: float
) -> tuple[Tensor, Tensor]:
    """Multi-head attention's (N, heads, L, head_dim) output and weights through the composed ops."""
    scores = lc.matmul(q * (1.0 / math.sqrt(head_dim)), lc.matrix_transpose(k))
    if need_weights:
        w = softmax(scores if mask is None else scores + mask, dim=-1)
    else:
        w = _masked_softmax(scores, mask)
    if dropout_p > 0.0:
        w = dropout(w, dropout_p, True)
    return lc.matmul(w, v), w  # (N, heads, L, head_dim)
