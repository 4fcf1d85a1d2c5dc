"""Compiled modules: ``compile_module(m)`` (``torch.compile(module)``) and ``Module.compile()`` (in place).

A compiled module's forward is a :class:`lucid_core.compiler.CompiledFunction` of the module's own call (hooks
included): under ``no_grad`` it replays the recorded forward; with grad, its outputs get the recorded backward
(``CompiledBackward``), so ``loss.backward()`` and the optimizer work as with the eager module.
"""

from __future__ import annotations

from typing import Any

import lucid_core as lc

from .module import Module


class OptimizedModule(Module):
    """What ``compile_module`` returns: ``_orig_mod`` compiled; attributes and state are the original module's."""

    def __init__(self, mod: Module, **options: Any) -> None:
        super().__init__()
        self._modules["_orig_mod"] = mod
        object.__setattr__(self, "_compiled_call", lc.compiler.compile(mod._call_impl, **options))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._compiled_call(*args, **kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._compiled_call(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)

    def state_dict(self, *args: Any, **kwargs: Any) -> Any:  # the original module's keys, as PyTorch's wrapper
        return self._modules["_orig_mod"].state_dict(*args, **kwargs)

    def load_state_dict(self, *args: Any, **kwargs: Any) -> Any:
        return self._modules["_orig_mod"].load_state_dict(*args, **kwargs)

    def explain(self) -> str:
        """What the compiled forward captured (``lucid_core.compiler.CompiledFunction.explain``)."""
        return self._compiled_call.explain()


def compile_module(mod: Module, **options: Any) -> OptimizedModule:
    """``mod`` wrapped so that its calls go through one compiled function (``torch.compile(module)``)."""
    return OptimizedModule(mod, **options)
