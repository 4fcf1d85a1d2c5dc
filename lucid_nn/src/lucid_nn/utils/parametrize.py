"""PyTorch's ``torch.nn.utils.parametrize``: a tensor of a module computed from others on every access.

``register_parametrization(m, "weight", P())`` moves ``m.weight`` to ``m.parametrizations.weight.original``
(``original0``, ``original1``, ... when ``P.right_inverse`` returns several tensors) and makes ``m.weight`` a
property returning ``P(original)``. The module's class becomes a subclass (``ParametrizedLinear``) holding
that property, as in PyTorch, so the state dict has PyTorch's keys.
"""

from __future__ import annotations

__all__ = [
    "cached", "ParametrizationList", "register_parametrization", "is_parametrized", "remove_parametrizations",
    "type_before_parametrizations", "transfer_parametrizations_and_params",
]  # fmt: skip

import contextlib
from collections.abc import Iterator
from typing import Any

import lucid_core as lc
from lucid_core import Parameter, Tensor

from ..containers import ModuleDict, ModuleList
from ..module import Module


@contextlib.contextmanager
def cached() -> Iterator[None]:
    """PyTorch caches parametrized tensors inside this block; Lucid recomputes them (same values)."""
    yield


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order to ``original`` (or ``original0``, ``original1``...)."""

    def __init__(self, modules: list[Module], original: Tensor, unsafe: bool = False) -> None:
        super().__init__(modules)
        self.unsafe = unsafe
        new: Any = original
        with lc.no_grad():
            for m in reversed(list(self)):
                inverse = getattr(m, "right_inverse", None)
                if inverse is not None:
                    new = inverse(new)
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        requires_grad = original.requires_grad
        if self.is_tensor:
            self._register_original("original", new, original, requires_grad)
        else:
            for i, t in enumerate(new):
                self._register_original(f"original{i}", t, original, requires_grad)

    def _register_original(self, name: str, value: Tensor, original: Tensor, requires_grad: bool) -> None:
        if isinstance(original, Parameter):
            self.register_parameter(name, Parameter(value.detach(), requires_grad=requires_grad))
        else:
            self.register_buffer(name, value.detach())

    def right_inverse(self, value: Tensor) -> None:
        """Set the originals so that the parametrized tensor becomes ``value`` (assigning ``m.weight = value``)."""
        with lc.no_grad():
            for m in reversed(list(self)):
                inverse = getattr(m, "right_inverse", None)
                if inverse is None:
                    raise RuntimeError(f"parametrization {type(m).__name__} does not implement right_inverse")
                value = inverse(value)
            if self.is_tensor:
                self.original.copy_(value)
            else:
                for i, t in enumerate(value):
                    getattr(self, f"original{i}").copy_(t)

    def forward(self) -> Tensor:
        """The parametrized tensor: every parametrization applied to the originals in order."""
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in list(self)[1:]:
            x = m(x)
        return x


def _inject_property(module: Module, tensor_name: str) -> None:
    def get(self: Module) -> Tensor:
        return self.parametrizations[tensor_name]()

    def set_(self: Module, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(type(module), tensor_name, property(get, set_))


def _inject_new_class(module: Module) -> None:
    cls = type(module)
    param_cls = type(f"Parametrized{cls.__name__}", (cls,), {"__module__": cls.__module__})
    module.__class__ = param_cls


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has parametrizations (on ``tensor_name``, when given)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def type_before_parametrizations(module: Module) -> type:
    """The module's class before :func:`register_parametrization` subclassed it."""
    return type(module).__bases__[0] if is_parametrized(module) else type(module)


def register_parametrization(
    module: Module, tensor_name: str, parametrization: Module, *, unsafe: bool = False
) -> Module:
    """Make ``module.<tensor_name>`` be ``parametrization(original)``; a second call chains another one."""
    if is_parametrized(module, tensor_name):
        module.parametrizations[tensor_name].append(parametrization)
        return module
    if tensor_name in module._parameters:
        original = module._parameters[tensor_name]
    elif tensor_name in module._buffers:
        original = module._buffers[tensor_name]
    else:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with name "
            f"'{tensor_name}'"
        )
    if original is None:
        raise ValueError(f"register_parametrization: {tensor_name!r} of {type(module).__name__} is None")
    if not unsafe:
        with lc.no_grad():
            out = parametrization(original)
        if not isinstance(out, Tensor) or tuple(out.shape) != tuple(original.shape):
            raise ValueError(
                "Registering a parametrization may not change the shape of the tensor, unless `unsafe` flag is "
                f"enabled.\nunparametrized shape: {tuple(original.shape)}\n"
                f"parametrized shape: {tuple(getattr(out, 'shape', ()))}"
            )
    plist = ParametrizationList([parametrization], original, unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        _inject_new_class(module)
        module.parametrizations = ModuleDict()
    module.parametrizations[tensor_name] = plist
    _inject_property(module, tensor_name)
    return module


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Take the parametrizations off ``tensor_name``: it keeps its current value (``leave_parametrized``) or
    becomes the original again."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if leave_parametrized:
        with lc.no_grad():
            value = plist()
    elif plist.is_tensor:
        value = plist.original
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized "
                         "in terms of a sequence of tensors.")  # fmt: skip
    original = plist.original if plist.is_tensor else plist.original0
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    if isinstance(original, Parameter):
        module.register_parameter(tensor_name, Parameter(value.detach(), requires_grad=original.requires_grad))
    else:
        module.register_buffer(tensor_name, value.detach())
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type(module).__bases__[0]
    return module


def transfer_parametrizations_and_params(
    from_module: Module, to_module: Module, tensor_name: str | None = None
) -> Module:
    """Give ``to_module`` the parametrizations (and their originals' values) of ``from_module``."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        plist = from_module.parametrizations[name]
        if not is_parametrized(to_module, name):
            if not hasattr(to_module, name):
                to_module.register_parameter(name, Parameter(lc.zeros_like(getattr(from_module, name))))
            for p in plist:
                register_parametrization(to_module, name, p, unsafe=plist.unsafe)
        with lc.no_grad():
            keys = ["original"] if plist.is_tensor else [f"original{i}" for i in range(plist.ntensors)]
            for k in keys:
                getattr(to_module.parametrizations[name], k).copy_(getattr(plist, k))
    return to_module
