"""``autograd.functional``: PyTorch's ``jacobian``, ``hessian``, ``vjp``, ``jvp``, ``hvp`` and ``vhp``.

The same transforms as :mod:`lucid_core.func`, with ``torch.autograd.functional``'s calling convention: inputs a
Tensor or a tuple of them, results shaped like them, detached unless ``create_graph=True``, and ``strict=True``
refusing an output that does not depend on an input. ``jvp`` here is true forward mode (PyTorch's runs the
double-backward trick; the numbers are the same). ``vectorize`` is accepted; the Jacobians loop over basis
vectors either way.
"""

from __future__ import annotations

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

from collections.abc import Callable
from typing import Any

from .. import _autograd
from .._tensor import Tensor
from ..ops import creation as _c
from ..ops import manipulation as _m
from . import _transforms as T


def _as_tuple(x: Any, what: str, fn: str) -> tuple[bool, tuple[Tensor, ...]]:
    is_tuple = isinstance(x, (tuple, list))
    xs = tuple(x) if is_tuple else (x,)
    for i, t in enumerate(xs):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"The {what} given to {fn} must be either a Tensor or a tuple of Tensors but the value at index "
                f"{i} has type {type(t).__name__}."
            )
    return is_tuple, xs


def _grad_leaves(xs: tuple[Tensor, ...], create_graph: bool) -> tuple[Tensor, ...]:
    """Fresh leaves of ``xs`` that need grad (connected to ``xs`` when a graph is to be built)."""
    out = []
    for x in xs:
        if create_graph and x._requires_grad:
            y = _m.Reshape.apply(x, tuple(x.shape))
        else:
            y = x.detach().requires_grad_()
        out.append(y)
    return tuple(out)


def _finish(ts: tuple[Any, ...], create_graph: bool) -> tuple[Any, ...]:
    return tuple(t if create_graph or t is None else t.detach() for t in ts)


def _unused(i: int, j: int, kind: str = "independent of input") -> RuntimeError:
    return RuntimeError(f"Output {i} of the user-provided function is {kind} {j}. This is not allowed in strict mode.")


def vjp(
    func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False
) -> tuple[Any, Any]:
    """``(func(inputs), v^T J)``: the vector-Jacobian product, shaped like ``inputs``."""
    in_tuple, xs = _as_tuple(inputs, "inputs", "vjp")
    with _autograd.enable_grad():
        leaves = _grad_leaves(xs, create_graph)
        out = func(*leaves)
        out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "vjp")
        if v is None:
            if len(outs) != 1 or outs[0].numel() != 1:
                raise RuntimeError(
                    "The vector v can only be None if the user-provided function returns a single Tensor with a "
                    "single element."
                )
            vs: tuple[Tensor, ...] = (_c.ones_like(outs[0]),)
        else:
            _, vs = _as_tuple(v, "v", "vjp")
            if len(vs) != len(outs):
                raise RuntimeError(f"v is a tuple of invalid length: should be {len(outs)} but got {len(vs)}.")
            for a, b in zip(vs, outs):
                if a.shape != b.shape:
                    raise RuntimeError(f"Entry in v has invalid size: should be {b.shape} but got {a.shape}.")
        pairs = [(o, g) for o, g in zip(outs, vs) if o._requires_grad]
        grads: list[Any] = [None] * len(leaves)
        if pairs:
            grads = list(_autograd.grad([p[0] for p in pairs], list(leaves), [p[1] for p in pairs],
                                        create_graph=create_graph, allow_unused=True))  # fmt: skip
    if strict:
        for j, g in enumerate(grads):
            if g is None:
                raise RuntimeError(
                    f"The output of the user-provided function is independent of input {j}. This is not allowed in "
                    "strict mode."
                )
    res = _finish(tuple(_c.zeros_like(x) if g is None else g for g, x in zip(grads, xs)), create_graph)
    out_res = _finish(outs, create_graph)
    return (out_res if out_tuple else out_res[0]), (res if in_tuple else res[0])


def jvp(
    func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False
) -> tuple[Any, Any]:
    """``(func(inputs), J v)`` by forward mode, shaped like the outputs."""
    _, xs = _as_tuple(inputs, "inputs", "jvp")
    if v is None:
        if len(xs) != 1 or xs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the input to the user-provided function is a single Tensor with a "
                "single element."
            )
        vs: tuple[Tensor, ...] = (_c.ones_like(xs[0]),)
    else:
        _, vs = _as_tuple(v, "v", "jvp")
        if len(vs) != len(xs):
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(xs)} but got {len(vs)}.")
        for a, b in zip(vs, xs):
            if a.shape != b.shape:
                raise RuntimeError(f"Entry in v has invalid size: should be {b.shape} but got {a.shape}.")
    prims = xs if create_graph else tuple(x.detach() for x in xs)
    out, tan = T.jvp(lambda *a: func(*a), prims, tuple(vs))
    out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "jvp")
    tans = tan if out_tuple else (tan,)
    return (_finish(outs, create_graph) if out_tuple else _finish(outs, create_graph)[0]), (
        _finish(tuple(tans), create_graph) if out_tuple else _finish(tuple(tans), create_graph)[0]
    )


def jacobian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:  # fmt: skip
    """The Jacobian of ``func`` at ``inputs``: a Tensor, a tuple (per input or per output) or a tuple of tuples."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    in_tuple, xs = _as_tuple(inputs, "inputs", "jacobian")
    prims = xs if create_graph else tuple(x.detach() for x in xs)
    out_tuple = [False]

    def f(*a: Any) -> Any:
        o = func(*a)
        out_tuple[0], os_ = _as_tuple(o, "outputs of the user-provided function", "jacobian")
        return os_

    transform = T.jacrev if strategy == "reverse-mode" else T.jacfwd
    jac = transform(f, tuple(range(len(xs))))(*prims)  # jac[output][input]
    jac = tuple(tuple(b if create_graph else b.detach() for b in row) for row in jac)
    if strict:
        _check_strict_jac(f, prims)
    if out_tuple[0] and in_tuple:
        return jac
    if out_tuple[0]:
        return tuple(row[0] for row in jac)
    if in_tuple:
        return jac[0]
    return jac[0][0]


def _check_strict_jac(f: Callable[..., Any], xs: tuple[Tensor, ...]) -> None:
    with _autograd.enable_grad():
        leaves = _grad_leaves(xs, False)
        outs = f(*leaves)
        for i, o in enumerate(outs):
            gs = (
                _autograd.grad(o, list(leaves), _c.ones_like(o), retain_graph=True, allow_unused=True)
                if o._requires_grad else (None,) * len(leaves)
            )  # fmt: skip
            for j, g in enumerate(gs):
                if g is None:
                    raise _unused(i, j)


def _scalar(func: Callable[..., Any], fn: str) -> Callable[..., Tensor]:
    def f(*a: Any) -> Tensor:
        out = func(*a)
        if isinstance(out, (tuple, list)):
            if len(out) != 1:
                raise RuntimeError(f"The function given to {fn} should return a single Tensor")
            out = out[0]
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError(f"The Tensor returned by the function given to {fn} should contain a single element")
        return _m.reshape(out, ())

    return f


def hessian(func: Callable[..., Any], inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:  # fmt: skip
    """The Hessian of a scalar ``func`` at ``inputs`` (a tuple of tuples for several inputs)."""
    in_tuple, xs = _as_tuple(inputs, "inputs", "hessian")
    f = _scalar(func, "hessian")
    prims = xs if create_graph else tuple(x.detach() for x in xs)
    h = T.hessian(f, tuple(range(len(xs))))(*prims)
    h = tuple(tuple(b if create_graph else b.detach() for b in row) for row in h)
    return h if in_tuple else h[0][0]


def _second(
    func: Callable[..., Any], inputs: Any, v: Any, create_graph: bool, fn: str, forward: bool
) -> tuple[Any, Any]:
    in_tuple, xs = _as_tuple(inputs, "inputs", fn)
    if v is None:
        if len(xs) != 1 or xs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the input to the user-provided function is a single Tensor with a "
                "single element."
            )
        vs: tuple[Tensor, ...] = (_c.ones_like(xs[0]),)
    else:
        _, vs = _as_tuple(v, "v", fn)
        if len(vs) != len(xs):
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(xs)} but got {len(vs)}.")
        for a, b in zip(vs, xs):
            if a.shape != b.shape:
                raise RuntimeError(f"Entry in v has invalid size: should be {b.shape} but got {a.shape}.")
    f = _scalar(func, fn)
    prims = xs if create_graph else tuple(x.detach() for x in xs)
    g = T.grad(f, tuple(range(len(xs))))
    if forward:  # H v: forward over reverse
        _, res = T.jvp(g, prims, tuple(vs))
    else:  # v^T H: reverse over reverse
        _, vjp_fn = T.vjp(g, *prims)
        res = vjp_fn(tuple(vs))
    value = f(*prims)
    res = _finish(tuple(res), create_graph)
    value = value if create_graph else value.detach()
    return value, (res if in_tuple else res[0])


def hvp(
    func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False
) -> tuple[Any, Any]:
    """``(func(inputs), H v)`` for a scalar ``func`` (forward mode over reverse mode)."""
    return _second(func, inputs, v, create_graph, "hvp", True)


def vhp(
    func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False, strict: bool = False
) -> tuple[Any, Any]:
    """``(func(inputs), v^T H)`` for a scalar ``func`` (reverse mode twice)."""
    return _second(func, inputs, v, create_graph, "vhp", False)
