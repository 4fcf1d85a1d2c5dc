"""Products: matmul, tensordot, vecdot, einsum (the ``linalg`` extension lives in ``lucid_core.linalg``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import amp as _amp
from .. import kernels
from .._autograd import CROSSWISE, Function
from .._forward_ad import add_tangents
from .._tensor import Tensor
from ..amp import autocast_op
from . import _helpers as _h
from . import elementwise as _e
from . import manipulation as _m
from . import reduction as _r

__all__ = ["matmul", "tensordot", "vecdot", "einsum", "outer"]


class Matmul(Function):
    native = True
    saves_inputs = CROSSWISE  # a's gradient reads b, b's reads a

    @staticmethod
    def jvp(ctx, ta, tb):
        a, b = ctx.inputs
        return add_tangents(None if ta is None else matmul(ta, b), None if tb is None else matmul(a, tb))

    @staticmethod
    def forward(ctx, a, b):
        return ctx.xp.matmul(a, b)

    @staticmethod
    def backward(ctx, gy):
        a, b = ctx.inputs
        need_a, need_b = ctx.needs_input_grad
        ca, cb = (_e.conj(a), _e.conj(b)) if _e.is_complex(gy) else (a, b)  # complex: gy @ b^H and a^H @ gy
        ga = _h.sum_to(matmul(gy, _m.matrix_transpose(cb)), a.shape) if need_a else None
        gb = _h.sum_to(matmul(_m.matrix_transpose(ca), gy), b.shape) if need_b else None
        return ga, gb

    @staticmethod
    def backward_raw(ctx, gy):
        a, b = ctx.inputs
        if not _h.real_float(ctx, gy, a, b):
            return NotImplemented
        xp = ctx.xp
        ga = gb = None
        if a._requires_grad:
            ga = _h.sum_to_raw(xp, xp.matmul(gy, _transposed(xp, b._data)), tuple(a._data.shape))
        if b._requires_grad:
            gb = _h.sum_to_raw(xp, xp.matmul(_transposed(xp, a._data), gy), tuple(b._data.shape))
        return ga, gb


def _transposed(xp: Any, x: Any) -> Any:
    """The last two axes swapped, as ``matrix_transpose`` does it (``permute_dims``)."""
    axes = list(range(x.ndim))
    axes[-1], axes[-2] = axes[-2], axes[-1]
    return xp.permute_dims(x, tuple(axes))


def matmul(x1: Tensor, x2: Tensor, /) -> Tensor:
    """Matrix product with batch broadcasting; 1-D operands act as row/column vectors."""
    if _amp.active:  # inside autocast: the operands in its lower-precision dtype (lucid_core.amp)
        (x1, x2), _ = _amp.cast_inputs("matmul", (x1, x2), {})

    if not isinstance(x1, Tensor) or not isinstance(x2, Tensor):
        x1, x2 = _h.binary_operands(x1, x2, "matmul")
        if not isinstance(x1, Tensor) or not isinstance(x2, Tensor):
            raise TypeError("matmul: operands must be tensors, not Python scalars")
    elif x1._data.dtype != x2._data.dtype:
        x1, x2 = _h.binary_operands(x1, x2, "matmul")
    s1, s2 = x1._data.shape, x2._data.shape
    if len(s1) == 0 or len(s2) == 0:
        raise ValueError(f"matmul: operands must have at least 1 dimension, got shapes {tuple(s1)} and {tuple(s2)}")
    if len(s1) >= 2 and len(s2) >= 2:
        if s1[-1] != s2[-2]:
            raise ValueError(f"matmul: shapes {tuple(s1)} and {tuple(s2)} do not align ({s1[-1]} != {s2[-2]})")
        return Matmul.apply(x1, x2)
    a = _m.expand_dims(x1, axis=0) if len(s1) == 1 else x1
    b = _m.expand_dims(x2, axis=-1) if len(s2) == 1 else x2
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"matmul: shapes {tuple(s1)} and {tuple(s2)} do not align ({a.shape[-1]} != {b.shape[-2]})")
    y = Matmul.apply(a, b)
    if len(s2) == 1:
        y = _m.squeeze(y, axis=-1)
    if len(s1) == 1:
        y = _m.squeeze(y, axis=-2 if len(s2) > 1 else -1)
    return y


@autocast_op("linalg_vecdot")
def vecdot(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """Dot product of vectors along ``axis`` (the first operand conjugated), broadcasting the rest."""

    if x1.shape[axis] != x2.shape[axis]:
        raise ValueError(f"vecdot: axis {axis} has size {x1.shape[axis]} in x1 but {x2.shape[axis]} in x2")
    if x1.dtype.kind == "c":
        x1 = _e.conj(x1)
    products = _e.multiply(x1, x2)
    # the standard keeps the promoted input dtype (a plain sum would widen int8/uint8 to 64 bits)
    return _r.sum(products, axis=axis, dtype=products.dtype)


def outer(x1: Tensor, x2: Tensor, /) -> Tensor:
    """Outer product of two vectors."""

    return _m.expand_dims(x1, axis=-1) * _m.expand_dims(x2, axis=0)


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def tensordot(x1: Tensor, x2: Tensor, /, *, axes: int | tuple[Sequence[int], Sequence[int]] = 2) -> Tensor:
    """Sum products over the given axes of ``x1`` and ``x2`` (the last/first ``axes`` when an int)."""
    n1, n2 = x1.ndim, x2.ndim
    if isinstance(axes, int):
        if axes < 0 or axes > min(n1, n2):
            raise ValueError(f"tensordot: axes={axes} is out of range for {n1}-D and {n2}-D operands")
        a1 = list(range(n1 - axes, n1))
        a2 = list(range(axes))
    else:
        a1 = [a % n1 for a in axes[0]]
        a2 = [a % n2 for a in axes[1]]
        if len(a1) != len(a2):
            raise ValueError(f"tensordot: {len(a1)} axes for x1 but {len(a2)} for x2")
    for i, j in zip(a1, a2):
        if x1.shape[i] != x2.shape[j]:
            raise ValueError(f"tensordot: axis {i} of x1 has size {x1.shape[i]} but axis {j} of x2 has {x2.shape[j]}")
    s1 = list(_LETTERS[:n1])
    s2 = list(_LETTERS[n1 : n1 + n2])
    for i, j in zip(a1, a2):
        s2[j] = s1[i]
    out = [c for k, c in enumerate(s1) if k not in a1] + [c for k, c in enumerate(s2) if k not in a2]
    return einsum(f"{''.join(s1)},{''.join(s2)}->{''.join(out)}", x1, x2)


def _parse_einsum(subscripts: str, operands: Sequence[Tensor]) -> tuple[list[str], str]:
    s = subscripts.replace(" ", "")
    if "." in s:
        # expand ellipses into explicit letters so the backward can be written plainly
        lhs, _, rhs = s.partition("->")
        used = set(c for c in s if c.isalpha())
        free = [c for c in _LETTERS if c not in used]
        parts = lhs.split(",")
        nell = 0
        for p, t in zip(parts, operands):
            if "..." in p:
                nell = max(nell, t.ndim - (len(p) - 3))
        ell = "".join(free[:nell])
        new_parts = []
        for p, t in zip(parts, operands):
            if "..." in p:
                k = t.ndim - (len(p) - 3)
                p = p.replace("...", ell[nell - k :])
            new_parts.append(p)
        lhs = ",".join(new_parts)
        if _ == "":
            rhs = ell + "".join(sorted(c for c in lhs if c.isalpha() and lhs.count(c) == 1 and c not in ell))
        else:
            rhs = rhs.replace("...", ell)
        s = f"{lhs}->{rhs}"
    if "->" in s:
        lhs, rhs = s.split("->")
    else:
        lhs = s
        letters = [c for c in lhs if c.isalpha()]
        rhs = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    ins = lhs.split(",")
    if len(ins) != len(operands):
        raise ValueError(f"einsum: {len(ins)} operand subscripts but {len(operands)} operands")
    for p, t in zip(ins, operands):
        if len(p) != t.ndim:
            raise ValueError(f"einsum: subscripts {p!r} name {len(p)} axes but the operand has shape {t.shape}")
    return ins, rhs


class Einsum(Function):
    native = True

    @staticmethod
    def jvp(ctx, _, *ts):
        spec, *xs = ctx.inputs
        # multilinear: one term per operand with a tangent, that operand replaced by it
        terms = [Einsum.apply(spec, *xs[:i], t, *xs[i + 1 :]) for i, t in enumerate(ts) if t is not None]
        return add_tangents(*terms)

    @staticmethod
    def forward(ctx, spec, *xs):
        return kernels.call(ctx.device, "einsum", spec, *xs)

    @staticmethod
    def backward(ctx, gy):

        spec = ctx.inputs[0]
        xs = ctx.inputs[1:]
        others_of = [_e.conj_if_complex(x) for x in xs] if _e.is_complex(gy) else xs
        ins, rhs = spec.split("->")
        parts = ins.split(",")
        grads: list[Any] = [None]
        need = ctx.needs_input_grad[1:]
        for i, x in enumerate(xs):
            if not need[i]:
                grads.append(None)
                continue
            others = [p for j, p in enumerate(parts) if j != i]
            avail = set(rhs).union(*others) if others else set(rhs)
            target = "".join(c for c in parts[i] if c in avail)
            # letters only in this operand (summed out) come back by broadcasting
            sub = ",".join([rhs, *others]) + "->" + _dedup(target)
            g = einsum(sub, gy, *[o for j, o in enumerate(others_of) if j != i])
            if _dedup(target) != parts[i]:
                g = _expand_to(g, _dedup(target), parts[i], x.shape, _m.broadcast_to)
            grads.append(g)
        return tuple(grads)


def _dedup(s: str) -> str:
    out = ""
    for c in s:
        if c not in out:
            out += c
    return out


def _expand_to(g: Tensor, have: str, want: str, shape: tuple[int, ...], broadcast_to: Any) -> Tensor:

    if len(set(want)) != len(want):
        raise NotImplementedError(f"einsum: gradient for repeated subscripts {want!r} (diagonals) is not supported")
    # reshape g (axes in `have` order) so missing letters are size-1, then broadcast
    order = [c for c in want if c in have]
    if order != list(have):
        g = einsum(f"{have}->{''.join(order)}", g)
    shp = tuple(shape[k] if c in have else 1 for k, c in enumerate(want))
    return broadcast_to(_m.reshape(g, shp), shape)


def einsum(subscripts: str, /, *operands: Tensor) -> Tensor:
    """Einstein summation (``"ij,jk->ik"``); differentiable in every operand."""
    if not operands:
        raise ValueError("einsum: needs at least one operand")
    for i, t in enumerate(operands):
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum: operand {i} is a {type(t).__name__}, expected a Tensor")
    ins, rhs = _parse_einsum(subscripts, operands)
    for p in ins:
        if len(set(p)) != len(p):
            raise NotImplementedError(f"einsum: repeated subscripts within one operand ({p!r}) are not supported")
    spec = ",".join(ins) + "->" + rhs
    return Einsum.apply(spec, *operands)
