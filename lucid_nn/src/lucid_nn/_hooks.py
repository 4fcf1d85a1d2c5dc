"""Module backward hooks: identity nodes around a module's inputs and outputs capture their gradients.

As in PyTorch, ``register_full_backward_hook`` works by passing the module's tensor inputs and outputs
through an identity :class:`~lucid_core.Function`. The node on the outputs sees ``grad_output`` first
(and runs the backward pre-hooks, which may replace it); the node on the inputs sees ``grad_input``,
calls the hooks with both, and sends on whatever gradient they return.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import lucid_core as lc
from lucid_core import Function, Tensor


class _BackwardHookIdentity(Function):
    """Identity on tensors whose backward calls ``ctx.on_grads(grads)``, which may replace the gradients."""

    jvp = staticmethod(lambda ctx, *tangents: tangents)  # identity: tangents pass unchanged

    @staticmethod
    def forward(ctx: Any, *tensors: Tensor) -> tuple[Tensor, ...]:
        return tensors

    @staticmethod
    def backward(ctx: Any, *grads: Tensor | None) -> tuple[Tensor | None, ...]:
        return ctx.on_grads(grads)


class _Wrapped:
    """The tensors of one argument (or output) tuple that went through an identity node.

    ``grads`` turns the node's gradients into PyTorch's hook tuple: one entry per value, None for
    non-tensors, and zeros for tensors that got no gradient (PyTorch's Functions materialise those).
    """

    def __init__(self, values: tuple[Any, ...], on_grads: Callable[..., Any]) -> None:
        self.n = len(values)
        self.tensor_idx = [i for i, v in enumerate(values) if isinstance(v, Tensor)]
        self.grad_idx = [i for i in self.tensor_idx if values[i].requires_grad]
        self.specs = {i: (values[i].shape, values[i].dtype, values[i].device) for i in self.tensor_idx}
        self.values = values
        if self.grad_idx:
            # only tensors that need gradients become node outputs: integer and constant tensors stay leaves
            outs = _BackwardHookIdentity.apply(*(values[i] for i in self.grad_idx))
            outs[0].grad_fn.on_grads = on_grads  # the node is the ctx its backward receives
            new = list(values)
            for i, t in zip(self.grad_idx, outs):
                new[i] = t
            self.values = tuple(new)

    def pack(self, grads: Sequence[Tensor | None]) -> tuple[Tensor | None, ...]:
        res: list[Tensor | None] = [None] * self.n
        for i in self.tensor_idx:
            shape, dtype, device = self.specs[i]
            res[i] = lc.zeros(shape, dtype=dtype, device=device)
        for i, g in zip(self.grad_idx, grads):
            if g is not None:
                res[i] = g
        return tuple(res)

    def unpack(self, res: Sequence[Any], grads: Sequence[Tensor | None], who: str, what: str) -> tuple[Any, ...]:
        """The node's gradients from a hook's tuple, after checking what the hook replaced."""
        new = tuple(res[i] for i in self.grad_idx)
        for n, o in zip(new, grads):
            if n is None or n is o:
                continue
            if not isinstance(n, Tensor):
                raise TypeError(f"{who} returned a {type(n).__name__} in {what}; expected Tensors or None")
            if o is not None and n.shape != o.shape:
                raise RuntimeError(f"{who} returned {what} of shape {n.shape} where shape {o.shape} was expected")
        return new


def _wants_node(values: tuple[Any, ...]) -> bool:
    return lc.is_grad_enabled() and any(isinstance(v, Tensor) and v.requires_grad for v in values)


class BackwardHook:
    """One forward call's backward hooks: links the gradients seen at the outputs with those at the inputs."""

    def __init__(self, module: Any, hooks: Iterable[Callable[..., Any]], pre_hooks: Iterable[Callable[..., Any]]):
        self.module = module
        self.hooks = list(hooks)
        self.pre_hooks = list(pre_hooks)
        self.grad_outputs: tuple[Tensor | None, ...] | None = None
        self.n_inputs = 0
        self.inputs: _Wrapped | None = None
        self.outputs: _Wrapped | None = None

    def setup_input_hook(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """Wrap the positional tensor inputs; their gradients reach the hooks as ``grad_input``."""
        self.n_inputs = len(args)
        if not _wants_node(args):
            return args
        self.inputs = _Wrapped(args, self._on_input_grads)
        return self.inputs.values

    def setup_output_hook(self, result: Any) -> Any:
        """Wrap the output tensor (or the tensors of an output tuple); their gradients are ``grad_output``."""
        if not isinstance(result, (Tensor, tuple)):
            warnings.warn(
                f"For backward hooks to be called, module output should be a Tensor or a tuple of Tensors but "
                f"received {type(result)}",
                stacklevel=3,
            )
            return result
        single = not isinstance(result, tuple)
        values = (result,) if single else result
        if not _wants_node(values):
            return result
        self.outputs = _Wrapped(values, self._on_output_grads)
        return self.outputs.values[0] if single else self.outputs.values

    def _on_output_grads(self, grads: tuple[Tensor | None, ...]) -> tuple[Tensor | None, ...]:
        assert self.outputs is not None
        self.grad_outputs = self.outputs.pack(grads)
        for hook in self.pre_hooks:
            res = hook(self.module, self.grad_outputs)
            if res is None:
                continue
            res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
            if len(res) != len(self.grad_outputs):
                raise RuntimeError(
                    f"Backward pre hook returned an invalid number of grad_output, got {len(res)}, but expected "
                    f"{len(self.grad_outputs)}"
                )
            self.grad_outputs = res
        local = self.grad_outputs
        if self.inputs is None:
            # no input needs a gradient, so no input node runs: call the hooks from here
            grad_inputs = (None,) * self.n_inputs
            for hook in self.hooks:
                res = hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple) and all(r is None for r in res)):
                    raise RuntimeError(
                        "Backward hook for Modules where no input requires gradient should always return None or "
                        "None for all gradients."
                    )
            self.grad_outputs = None
        return self.outputs.unpack(local, grads, "Backward pre hook", "grad_output")

    def _on_input_grads(self, grads: tuple[Tensor | None, ...]) -> tuple[Tensor | None, ...]:
        if self.grad_outputs is None:
            # the gradient reached the inputs without passing the outputs (e.g. a double backward)
            return grads
        assert self.inputs is not None
        res = self.inputs.pack(grads)
        for hook in self.hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
            if len(out) != len(res):
                raise RuntimeError(
                    f"Backward hook returned an invalid number of grad_input, got {len(out)}, but expected {len(res)}"
                )
            res = out
        self.grad_outputs = None
        return self.inputs.unpack(res, grads, "Backward hook", "grad_input")
