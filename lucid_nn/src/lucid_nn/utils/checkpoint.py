"""Activation checkpointing: keep a segment's inputs, not its activations, and recompute them in backward.

``checkpoint(fn, *args)`` runs ``fn`` once, notes which tensors the result depends on (the tensor arguments
and the leaf tensors such as parameters that ``fn`` reached), then drops the whole graph inside ``fn``: one
node stands in for the segment. Its backward runs ``fn`` again with the random state of the first run
(so dropout draws the same mask), differentiates the recomputed graph and frees it again. Peak memory
over a stack of checkpointed blocks is the blocks' inputs plus one block's activations.
"""

from __future__ import annotations

__all__ = ["checkpoint", "checkpoint_sequential"]

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import lucid_core as lc
from lucid_core import Function, Tensor


def _detached_like(t: Tensor) -> Tensor:
    """A fresh leaf with ``t``'s values that requires grad when ``t`` does (a segment boundary)."""
    d = t.detach()
    if t.requires_grad:
        d.requires_grad_(True)
    return d


def _reached_leaves(outputs: Sequence[Tensor], boundary: set[int]) -> list[Tensor]:
    """Leaf tensors that require grad and that ``outputs`` depend on, other than the boundary tensors."""
    found: dict[int, Tensor] = {}
    seen: set[int] = set()
    stack = []
    for t in outputs:
        if t.grad_fn is None:
            if id(t) not in boundary:
                found.setdefault(id(t), t)
        else:
            stack.append(t.grad_fn)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for x in node.inputs or ():
            if not isinstance(x, Tensor) or not x.requires_grad:
                continue
            if x.grad_fn is not None:
                stack.append(x.grad_fn)
            elif id(x) not in boundary:
                found.setdefault(id(x), x)
    return list(found.values())


class _Segment:
    """What the backward needs to run a segment again: the function, its arguments and the random state."""

    def __init__(self, function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], rng: Any):
        self.function = function
        self.args = args
        self.kwargs = kwargs
        self.rng = rng
        self.arg_idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        self.kw_keys = [k for k, v in kwargs.items() if isinstance(v, Tensor)]

    def run(self) -> tuple[Any, list[Tensor]]:
        """Call the function on fresh leaves made from the tensor arguments; return (result, those leaves)."""
        args = list(self.args)
        kwargs = dict(self.kwargs)
        boundary = []
        for i in self.arg_idx:
            args[i] = _detached_like(args[i])
            boundary.append(args[i])
        for k in self.kw_keys:
            kwargs[k] = _detached_like(kwargs[k])
            boundary.append(kwargs[k])
        with lc.enable_grad():
            out = self.function(*args, **kwargs)
        return out, boundary

    def rerun(self) -> tuple[Any, list[Tensor]]:
        """``run`` again with the random state of the first run; the caller's random state is left as it was."""
        if self.rng is None:
            return self.run()
        now = lc.get_rng_state()
        lc.set_rng_state(self.rng)
        try:
            return self.run()
        finally:
            lc.set_rng_state(now)


def _outputs(out: Any, what: str) -> list[Tensor]:
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [o for o in out if isinstance(o, Tensor)]
    raise TypeError(f"{what}: the checkpointed function must return a Tensor or a tuple/list, got {type(out).__name__}")


class _CheckpointFunction(Function):
    """The node standing in for a checkpointed segment: inputs are its boundary and leaf tensors."""

    @staticmethod
    def forward(ctx: Any, *inputs: Tensor, segment: _Segment, values: tuple[Tensor, ...], n_boundary: int) -> Any:
        ctx.segment = segment
        ctx.n_boundary = n_boundary
        ctx.shapes = [(v.shape, v.dtype) for v in values]
        return values

    @staticmethod
    def backward(ctx: Any, *grads: Tensor | None) -> tuple[Tensor | None, ...]:
        segment: _Segment = ctx.segment
        out, boundary = segment.rerun()
        outs = [o for o in _outputs(out, "checkpoint") if o.requires_grad]
        if [(o.shape, o.dtype) for o in outs] != ctx.shapes:
            raise RuntimeError(
                "checkpoint: recomputing the segment in backward gave outputs "
                f"{[(o.shape, o.dtype.name) for o in outs]}, but the forward gave "
                f"{[(s, d.name) for s, d in ctx.shapes]}; the checkpointed function must compute the same thing "
                "both times (no data-dependent branches on changed state)"
            )
        leaves = list(ctx.inputs[ctx.n_boundary :])
        targets = [b for b in boundary if b.requires_grad] + leaves
        pairs = [(o, g) for o, g in zip(outs, grads) if g is not None]
        if not pairs or not targets:
            return (None,) * len(ctx.inputs)
        # retain_graph: a closure tensor from before the segment may lead into the caller's graph, which
        # the outer backward still has to run
        got = lc.grad(
            [o for o, _ in pairs], targets, grad_outputs=[g for _, g in pairs], retain_graph=True,
            create_graph=lc.is_grad_enabled(), allow_unused=True,
        )  # fmt: skip
        return tuple(got)


def checkpoint(
    function: Callable[..., Any],
    *args: Any,
    use_reentrant: bool | None = False,
    preserve_rng_state: bool = True,
    **kwargs: Any,
) -> Any:
    """``function(*args, **kwargs)`` without keeping its intermediate activations; backward recomputes them.

    Gradients equal those of the plain call. The function must return a Tensor or a tuple/list holding
    tensors, and compute the same thing when run again; it may use parameters and other leaf tensors
    freely. With ``preserve_rng_state`` the recomputation sees the random state of the first run, so
    dropout masks match. ``use_reentrant`` is accepted for PyTorch compatibility: both values use the same
    mechanism, which also works with ``lucid_core.grad`` and with inputs that do not require grad.
    Under ``no_grad`` the function is simply called.
    """
    if not callable(function):
        raise TypeError(f"checkpoint: expected a callable, got {type(function).__name__}")
    if use_reentrant not in (None, True, False):
        raise TypeError(f"checkpoint: use_reentrant must be a bool or None, got {use_reentrant!r}")
    if not lc.is_grad_enabled():
        return function(*args, **kwargs)
    segment = _Segment(function, args, kwargs, lc.get_rng_state() if preserve_rng_state else None)
    out, boundary = segment.run()
    outs = _outputs(out, "checkpoint")
    graph_outs = [o for o in outs if o.requires_grad]
    if not graph_outs:
        return out
    originals = [args[i] for i in segment.arg_idx] + [kwargs[k] for k in segment.kw_keys]
    leaves = _reached_leaves(graph_outs, {id(b) for b in boundary})
    inputs = [o for o, b in zip(originals, boundary) if b.requires_grad]
    values = tuple(o.detach() for o in graph_outs)
    del boundary, graph_outs  # the segment's graph dies here; only its inputs and leaves stay referenced
    new = _CheckpointFunction.apply(
        *inputs, *leaves, segment=segment, values=values, n_boundary=len(inputs)
    )  # fmt: skip
    replaced = dict(zip((id(o) for o in outs if o.requires_grad), new))
    if isinstance(out, Tensor):
        return replaced.get(id(out), out)
    result = [replaced.get(id(o), o.detach() if isinstance(o, Tensor) else o) for o in out]
    return tuple(result) if isinstance(out, tuple) else result


def checkpoint_sequential(
    functions: Iterable[Callable[..., Any]],
    segments: int,
    input: Tensor,
    use_reentrant: bool | None = False,
    preserve_rng_state: bool = True,
) -> Any:
    """Run a Sequential (or a list of modules/functions) in ``segments`` chunks, checkpointing all but the last.

    As PyTorch: chunks of ``len(functions) // segments`` modules; the last chunk takes the rest and runs
    normally (its activations are needed at once by backward anyway).
    """
    from ..containers import Sequential

    if isinstance(functions, Sequential):
        functions = list(functions.children())
    functions = list(functions)
    if isinstance(segments, bool) or not isinstance(segments, int) or not 1 <= segments <= max(len(functions), 1):
        raise ValueError(
            f"checkpoint_sequential: segments must be an int from 1 to the number of functions ({len(functions)}), "
            f"got {segments!r}"
        )

    def run(start: int, end: int) -> Callable[[Any], Any]:
        def forward(x: Any) -> Any:
            for j in range(start, end + 1):
                x = functions[j](x)
            return x

        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve_rng_state)
    return run(end + 1, len(functions) - 1)(input)
