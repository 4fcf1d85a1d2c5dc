"""``torch.compiler`` for Lucid: graph capture by :mod:`lucid_core.compiler` (see docs/compile.md)."""

from __future__ import annotations

from typing import Any

from lucid_core.compiler import CompiledFunction, CompileError, disable, explain, is_compiling, reset

__all__ = ["CompileError", "CompiledFunction", "compile", "disable", "explain", "is_compiling", "is_dynamo_compiling",
           "reset"]  # fmt: skip


def compile(model: Any = None, **options: Any) -> Any:
    """``torch.compile``: a Module comes back as an ``OptimizedModule`` (same parameters, compiled calls), a function
    as a :class:`CompiledFunction`; usable as ``@lucid.compile`` and ``@lucid.compile(fullgraph=True)``."""
    import lucid_core.compiler as core

    if model is None:
        return lambda m: compile(m, **options)
    from lucid_nn import Module
    from lucid_nn._compiled import compile_module

    if isinstance(model, Module):
        if options.get("disable"):
            return model
        if options.get("dynamic"):
            core.compile(lambda: None, dynamic=True)  # the same refusal, worded once
        options = {k: v for k, v in options.items() if k in ("fullgraph", "backend")}
        return compile_module(model, **options)
    return core.compile(model, **options)


def is_dynamo_compiling() -> bool:
    """PyTorch's name for :func:`is_compiling`."""
    return is_compiling()
