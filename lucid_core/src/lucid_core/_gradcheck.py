"""Finite-difference checks of analytic gradients (like ``torch.autograd.gradcheck``)."""

from __future__ import annotations

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]

from collections.abc import Callable, Sequence
from typing import Any

from ._autograd import grad, no_grad
from ._tensor import Tensor
from .ops.creation import zeros, zeros_like
from .ops.random import randn


class GradcheckError(AssertionError):
    """An analytic gradient disagrees with central finite differences."""


def _as_outputs(out: Any) -> list[Tensor]:
    if isinstance(out, Tensor):
        return [out]
    return [o for o in out if isinstance(o, Tensor)]


def _flat_values(ts: Sequence[Tensor]) -> list[float]:
    vals: list[float] = []
    for t in ts:
        v = t.detach().reshape(-1).tolist() if t.ndim else [t.item()]
        vals.extend(float(x) if not isinstance(x, complex) else x for x in v)
    return vals


def _perturbed(x: Tensor, index: int, delta: float) -> Tensor:

    bump = zeros((x.size,), dtype=x.dtype, device=x.device)
    bump[index] = delta
    return (x.detach() + bump.reshape(x.shape)).requires_grad_(x.requires_grad)


def _numerical_jacobian(
    fn: Callable[..., Any], inputs: list[Any], wrt: list[int], eps: float
) -> list[list[list[float]]]:
    """``J[k][i][o]``: d output-element o / d element i of input ``wrt[k]``."""
    jac = []
    for k in wrt:
        x = inputs[k]
        cols = []
        for i in range(x.size):
            args = list(inputs)
            # fn runs with grad mode on: gradgradcheck's fn itself takes a gradient
            with no_grad():
                args[k] = _perturbed(x, i, eps)
            plus = _flat_values(_as_outputs(fn(*args)))
            with no_grad():
                args[k] = _perturbed(x, i, -eps)
            minus = _flat_values(_as_outputs(fn(*args)))
            cols.append([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
        jac.append(cols)
    return jac


def gradcheck(
    fn: Callable[..., Any],
    inputs: Sequence[Any],
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
) -> bool:
    """Check ``fn``'s analytic gradients against central differences for every input that requires grad.

    Use float64 inputs: float32 round-off swamps the differences. Every output element is
    checked, through one backward pass per output element.
    """
    inputs = list(inputs)
    wrt = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not wrt:
        raise ValueError("gradcheck: no input requires grad")
    for i in wrt:
        if inputs[i].dtype.kind not in "fc" or inputs[i].dtype.bits < 64:
            raise ValueError(f"gradcheck: input {i} is {inputs[i].dtype.name}; use float64 inputs")
    outs = _as_outputs(fn(*inputs))
    sizes = [o.size for o in outs]
    numerical = _numerical_jacobian(fn, inputs, wrt, eps)
    # analytic rows: one backward per output element

    analytic = [[[0.0] * sum(sizes) for _ in range(inputs[k].size)] for k in wrt]
    col = 0
    for oi, o in enumerate(outs):
        if not o.requires_grad:
            col += o.size
            continue
        for j in range(o.size):
            seeds = []
            for ok, other in enumerate(outs):
                s = zeros_like(other)
                if ok == oi:
                    flat = s.reshape(-1)
                    flat[j] = 1.0
                    s = flat.reshape(other.shape)
                seeds.append(s)
            live = [(t, s) for t, s in zip(outs, seeds) if t.requires_grad]
            gs = grad(
                [t for t, _ in live],
                [inputs[k] for k in wrt],
                [s for _, s in live],
                retain_graph=True,
                allow_unused=True,
            )
            for kk, g in enumerate(gs):
                if g is None:
                    continue
                for i, v in enumerate(_flat_values([g])):
                    analytic[kk][i][col + j] = v
        col += o.size
    for kk, k in enumerate(wrt):
        for i in range(inputs[k].size):
            for o in range(sum(sizes)):
                a = analytic[kk][i][o]
                n = numerical[kk][i][o]
                both_nan = a != a and n != n
                if not both_nan and not abs(a - n) <= atol + rtol * abs(n):
                    msg = (
                        f"gradcheck: gradient mismatch for input {k}, element {i}, output element {o}: "
                        f"analytic {a!r} vs numerical {n!r} (atol={atol}, rtol={rtol})"
                    )
                    if raise_exception:
                        raise GradcheckError(msg)
                    return False
    return True


def gradgradcheck(
    fn: Callable[..., Any],
    inputs: Sequence[Any],
    grad_outputs: Sequence[Tensor] | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
) -> bool:
    """Check second derivatives: the gradient of ``fn`` (taken with ``create_graph=True``) is itself gradchecked."""
    inputs = list(inputs)
    wrt = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    outs = _as_outputs(fn(*inputs))
    if grad_outputs is None:
        grad_outputs = [randn(*o.shape, dtype=o.dtype, device=o.device) for o in outs]
    vs = [g.detach() for g in grad_outputs]

    def first_derivative(*args: Any) -> tuple[Tensor, ...]:
        ys = _as_outputs(fn(*args))
        gs = grad(ys, [args[i] for i in wrt], vs, create_graph=True, allow_unused=True)

        return tuple(g if g is not None else zeros_like(args[i]) for g, i in zip(gs, wrt))

    return gradcheck(first_derivative, inputs, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception)
