"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict, Identity, Container and a
single-device DataParallel."""

from __future__ import annotations

__all__ = [
    "Identity", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Container",
    "DataParallel",
]  # fmt: skip

import operator
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from lucid_core import Parameter, Tensor

from .module import Module, _addindent


class Identity(Module):
    """Returns its input unchanged (accepts and ignores any constructor arguments)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, x: Any) -> Any:
        return x


def _index(idx: Any, n: int, kind: str) -> int:
    i = operator.index(idx)
    if not -n <= i < n:
        raise IndexError(f"{kind}: index {i} is out of range for length {n}")
    return i + n if i < 0 else i


class Sequential(Module):
    """Modules applied one after another: ``Sequential(a, b)`` or ``Sequential(OrderedDict(name=a))``."""

    def __init__(self, *args: Module | dict[str, Module]) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], (OrderedDict, dict)):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        keys = list(self._modules)
        return self._modules[keys[_index(idx, len(keys), "Sequential")]]

    def __setitem__(self, idx: int, module: Module) -> None:
        keys = list(self._modules)
        setattr(self, keys[_index(idx, len(keys), "Sequential")], module)

    def __delitem__(self, idx: int | slice) -> None:
        keys = list(self._modules)
        if isinstance(idx, slice):
            for k in keys[idx]:
                delattr(self, k)
        else:
            delattr(self, keys[_index(idx, len(keys), "Sequential")])
        # keep the numbering contiguous, as PyTorch does
        items = list(self._modules.items())
        self._modules.clear()
        for i, (k, m) in enumerate(items):
            self._modules[str(i) if k.isdigit() else k] = m

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module) -> Sequential:
        """Add a module at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> Sequential:
        """Add modules at the end; returns self."""
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Insert a module before index; returns self."""
        mods = list(self._modules.values())
        n = len(mods)
        if not -n <= index <= n:
            raise IndexError(f"Sequential.insert: index {index} is out of range for length {n}")
        mods.insert(index if index >= 0 else index + n, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)
        return self

    def forward(self, x: Any) -> Any:
        for m in self._modules.values():
            x = m(x)
        return x


class ModuleList(Module):
    """A list of modules whose parameters are registered (no forward of its own)."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self), "ModuleList"))]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, str(_index(idx, len(self), "ModuleList")), module)

    def __delitem__(self, idx: int | slice) -> None:
        mods = list(self._modules.values())
        if isinstance(idx, slice):
            del mods[idx]
        else:
            del mods[_index(idx, len(mods), "ModuleList")]
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def append(self, module: Module) -> ModuleList:
        """Add a module at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Add modules at the end; returns self."""
        if isinstance(modules, (Module, str)) or not isinstance(modules, Iterable):
            raise TypeError(
                f"ModuleList.extend should be called with an iterable of modules, got {type(modules).__name__}"
            )
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Insert a module before index."""
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)

    def __repr__(self) -> str:
        # PyTorch folds runs of identical children: "(0-2): 3 x Linear(...)"
        mods = list(self._modules.items())
        if not mods:
            return "ModuleList()"
        lines = []
        start = 0
        reprs = [repr(m) for _, m in mods]
        while start < len(mods):
            end = start
            while end + 1 < len(mods) and reprs[end + 1] == reprs[start]:
                end += 1
            body = _addindent(reprs[start], 2)
            if end == start:
                lines.append(f"({mods[start][0]}): {body}")
            else:
                lines.append(f"({mods[start][0]}-{mods[end][0]}): {end - start + 1} x {body}")
            start = end + 1
        return "ModuleList(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of modules whose parameters are registered."""

    def __init__(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def keys(self) -> Iterable[str]:
        """The keys in insertion order."""
        return self._modules.keys()

    def values(self) -> Iterable[Module]:
        """The modules in insertion order."""
        return self._modules.values()

    def items(self) -> Iterable[tuple[str, Module]]:
        """(key, module) pairs in insertion order."""
        return self._modules.items()

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def pop(self, key: str) -> Module:
        """Remove the module under key and return it."""
        return self._modules.pop(key)

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Add modules from a mapping or from (key, module) pairs."""
        items = modules.items() if isinstance(modules, Mapping) else modules
        for k, m in items:
            self[k] = m


class ParameterList(Module):
    """A list of parameters, registered as ``"0"``, ``"1"``, ... (tensors are wrapped as Parameters)."""

    def __init__(self, values: Iterable[Tensor] | None = None) -> None:
        super().__init__()
        if values is not None:
            self.extend(values)

    def __len__(self) -> int:
        return len(self._parameters)

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            return type(self)(list(self._parameters.values())[idx])
        return self._parameters[str(_index(idx, len(self), "ParameterList"))]

    def __setitem__(self, idx: int, value: Tensor) -> None:
        self.register_parameter(str(_index(idx, len(self), "ParameterList")), _as_param(value))

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self._parameters.values())

    def __iadd__(self, values: Iterable[Tensor]) -> ParameterList:
        return self.extend(values)

    def append(self, value: Tensor) -> ParameterList:
        """Add a parameter at the end; returns self."""
        self.register_parameter(str(len(self)), _as_param(value))
        return self

    def extend(self, values: Iterable[Tensor]) -> ParameterList:
        """Add parameters at the end; returns self."""
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"({k}): {_param_summary(p)}" for k, p in self._parameters.items())


class ParameterDict(Module):
    """An ordered dict of parameters (tensors are wrapped as Parameters)."""

    def __init__(self, parameters: Mapping[str, Tensor] | Iterable[tuple[str, Tensor]] | None = None) -> None:
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Parameter:
        return self._parameters[key]

    def __setitem__(self, key: str, value: Tensor) -> None:
        self.register_parameter(key, _as_param(value))

    def __delitem__(self, key: str) -> None:
        del self._parameters[key]

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self) -> Iterator[str]:
        return iter(self._parameters)

    def __contains__(self, key: object) -> bool:
        return key in self._parameters

    def keys(self) -> Iterable[str]:
        """The keys in insertion order."""
        return self._parameters.keys()

    def values(self) -> Iterable[Parameter]:
        """The parameters in insertion order."""
        return self._parameters.values()

    def items(self) -> Iterable[tuple[str, Parameter]]:
        """(key, parameter) pairs in insertion order."""
        return self._parameters.items()

    def pop(self, key: str) -> Parameter:
        """Remove the parameter under key and return it."""
        return self._parameters.pop(key)

    def update(self, parameters: Mapping[str, Tensor] | Iterable[tuple[str, Tensor]]) -> None:
        """Add parameters from a mapping or from (key, parameter) pairs."""
        items = parameters.items() if isinstance(parameters, Mapping) else parameters
        for k, v in items:
            self[k] = v

    def extra_repr(self) -> str:
        return "\n".join(f"({k}): {_param_summary(p)}" for k, p in self._parameters.items())


def _as_param(value: Any) -> Parameter:
    if isinstance(value, Parameter):
        return value
    if isinstance(value, Tensor):
        return Parameter(value)
    raise TypeError(f"expected a Parameter or a Tensor, got {type(value).__name__}")


def _param_summary(p: Parameter) -> str:
    size = "x".join(str(s) for s in p.shape)
    return f"Parameter containing: [Tensor of size {size} ({p.dtype.name}) on {p.device}]"


class Container(Module):
    """PyTorch's deprecated ``nn.Container``: a Module whose keyword arguments become its submodules."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        warnings.warn("nn.Container is deprecated. All of it's functionality is now implemented in nn.Module. "
                      "Subclass that instead.", DeprecationWarning, stacklevel=2)  # fmt: skip
        for key, value in kwargs.items():
            self.add_module(key, value)


class DataParallel(Module):
    """PyTorch's ``DataParallel`` on one device: runs ``module`` as is (replicating across GPUs needs CUDA,
    which Lucid has not; use ``lucid_distributed``'s DistributedDataParallel across processes). The wrapped
    model is ``self.module``, so state dict keys gain PyTorch's ``module.`` prefix."""

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.device_ids: list[Any] = [] if device_ids is None else list(device_ids)
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)
