"""``torch.nn.utils.weight_norm``, the older form: parameters ``<name>_g`` and ``<name>_v``, and ``<name>``
recomputed from them before every forward (a forward pre-hook)."""

from __future__ import annotations

__all__ = ["weight_norm", "remove_weight_norm"]

from typing import Any

from lucid_core import Parameter

from ..module import Module
from ._norms import norm_except_dim, weight_from


class _WeightNormHook:
    def __init__(self, name: str, dim: int | None) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute(self, module: Module) -> Any:
        return weight_from(getattr(module, self.name + "_g"), getattr(module, self.name + "_v"), self.dim)

    def __call__(self, module: Module, inputs: Any) -> None:
        object.__setattr__(module, self.name, self.compute(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Split ``module.<name>`` into a magnitude ``<name>_g`` and a direction ``<name>_v``; returns module."""
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, _WeightNormHook) and hook.name == name:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    weight = module._parameters.get(name)
    if weight is None:
        raise ValueError(f"weight_norm: {type(module).__name__} has no parameter {name!r}")
    fn = _WeightNormHook(name, dim)
    del module._parameters[name]
    module.register_parameter(name + "_g", Parameter(norm_except_dim(weight.detach(), fn.dim)))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    object.__setattr__(module, name, fn.compute(module))
    handle = module.register_forward_pre_hook(fn)
    object.__setattr__(fn, "handle", handle)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`weight_norm`: ``<name>`` becomes one parameter again, with its current value."""
    for hook in list(module._forward_pre_hooks.values()):
        if isinstance(hook, _WeightNormHook) and hook.name == name:
            weight = hook.compute(module).detach()
            hook.handle.remove()
            del module._parameters[name + "_g"]
            del module._parameters[name + "_v"]
            module.__dict__.pop(name, None)
            module.register_parameter(name, Parameter(weight))
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
