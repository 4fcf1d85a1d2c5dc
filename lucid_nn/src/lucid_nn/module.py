"""The Module base class: parameters, buffers and submodules registered by attribute assignment."""

from __future__ import annotations

__all__ = [
    "Module", "RemovableHandle", "register_module_forward_pre_hook", "register_module_forward_hook",
    "register_module_full_backward_pre_hook", "register_module_full_backward_hook",
]  # fmt: skip

import itertools
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

import lucid_core as lc
from lucid_core import Parameter, Tensor

from ._hooks import BackwardHook

_compiling = lc.compiler.is_compiling
_guard_attr = lc.compiler.guard_attr

# hook tables of every Module, and the flag tables whose entries share a hook's id
_HOOK_FLAGS: dict[str, tuple[str, ...]] = {
    "_forward_pre_hooks": ("_forward_pre_hooks_with_kwargs",),
    "_forward_hooks": ("_forward_hooks_with_kwargs", "_forward_hooks_always_called"),
    "_backward_pre_hooks": (),
    "_backward_hooks": (),
}
_HOOK_TABLES = (*_HOOK_FLAGS, *(f for flags in _HOOK_FLAGS.values() for f in flags))


# hooks that run for every module call, before the module's own (PyTorch's ``_global_*`` tables)
_global_forward_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_forward_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_forward_hooks_with_kwargs: dict[int, bool] = {}
_global_forward_hooks_always_called: dict[int, bool] = {}
_global_backward_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_backward_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()


_EXTRA_STATE_KEY = "_extra_state"


class _IncompatibleKeys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]


class RemovableHandle:
    """Returned by ``register_*_hook``; ``handle.remove()`` takes the hook out again."""

    _next_id = itertools.count()

    def __init__(self, hooks: dict[int, Any], *extra: dict[int, Any]) -> None:
        self._hooks = hooks
        self._extra = extra  # flag tables keyed by the same id (with_kwargs, always_call)
        self.id = next(RemovableHandle._next_id)

    def remove(self) -> None:
        """Unregister the hook this handle was returned for."""
        self._hooks.pop(self.id, None)
        for d in self._extra:
            d.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def _add_global_hook(
    table: OrderedDict[int, Any], hook: Callable[..., Any], *flags: dict[int, bool]
) -> RemovableHandle:
    if not callable(hook):
        raise TypeError(f"a global module hook must be callable, got {type(hook).__name__}")
    handle = RemovableHandle(table, *flags)
    table[handle.id] = hook
    return handle


def register_module_forward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(module, args)`` before every module's forward, before the module's own pre-hooks.

    A non-None result replaces the positional arguments. ``handle.remove()`` unregisters it.
    """
    return _add_global_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(
    hook: Callable[..., Any], *, with_kwargs: bool = False, always_call: bool = False
) -> RemovableHandle:
    """Call ``hook(module, args, output)`` after every module's forward, before the module's own forward hooks.

    ``with_kwargs``: ``hook(module, args, kwargs, output)``; ``always_call``: run even when forward raises.
    A non-None result replaces the output.
    """
    handle = _add_global_hook(
        _global_forward_hooks, hook, _global_forward_hooks_with_kwargs, _global_forward_hooks_always_called
    )
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_full_backward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(module, grad_output)`` for every module when its output gradients are known (before the
    module's own backward pre-hooks); a returned tuple replaces ``grad_output``."""
    return _add_global_hook(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Call ``hook(module, grad_input, grad_output)`` for every module when its input gradients are known
    (before the module's own backward hooks); a returned tuple replaces ``grad_input``."""
    return _add_global_hook(_global_backward_hooks, hook)


def _addindent(s: str, spaces: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class Module:
    """Base class of every layer and model, shaped like PyTorch's ``nn.Module``.

    Assigning a :class:`Parameter`, a ``Module`` or (through :meth:`register_buffer`) a tensor to an
    attribute registers it; ``parameters()``, ``state_dict()``, ``to()`` and friends then find it.
    """

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", OrderedDict())
        for table in _HOOK_TABLES:  # PyTorch's attribute names, so code that inspects them still works
            object.__setattr__(self, table, OrderedDict())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation the module performs; call the module itself (``m(x)``) so hooks run."""
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # -- calling and hooks ---------------------------------------------------------------------------
    def _run_forward_hook(self, hid: int, hook: Callable[..., Any], args: Any, kwargs: Any, result: Any) -> Any:
        """``result`` after forward hook ``hid`` (a hook returning None keeps it)."""
        if hid in self._forward_hooks_with_kwargs or hid in _global_forward_hooks_with_kwargs:
            res = hook(self, args, kwargs, result)
        else:
            res = hook(self, args, result)
        return result if res is None else res

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        compiled = self.__dict__.get("_compiled_call")
        if compiled is not None and not _compiling():  # after Module.compile()
            return compiled(*args, **kwargs)
        return self._call_impl(*args, **kwargs)

    def _call_impl(self, *args: Any, **kwargs: Any) -> Any:
        """The call itself: hooks around ``forward`` (PyTorch's ``_call_impl``)."""
        if _compiling():  # a compiled function's plan holds for this module's mode only (train/eval)
            _guard_attr(self, "training")
        if not (
            self._forward_pre_hooks
            or self._forward_hooks
            or self._backward_hooks
            or self._backward_pre_hooks
            or _global_forward_pre_hooks
            or _global_forward_hooks
            or _global_backward_hooks
            or _global_backward_pre_hooks
        ):
            return self.forward(*args, **kwargs)
        result = None
        called: set[int] = set()  # always_call hooks that already ran
        # the global hooks run first, as in PyTorch's _call_impl
        forward_hooks = [*_global_forward_hooks.items(), *self._forward_hooks.items()]
        always = (self._forward_hooks_always_called, _global_forward_hooks_always_called)
        try:
            for hid, hook in [*_global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()]:
                if hid in self._forward_pre_hooks_with_kwargs:
                    res = hook(self, args, kwargs)
                    if res is not None:
                        if not (isinstance(res, tuple) and len(res) == 2):
                            raise RuntimeError(
                                "forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                f"but got {res}."
                            )
                        args, kwargs = res
                else:
                    res = hook(self, args)
                    if res is not None:
                        args = res if isinstance(res, tuple) else (res,)
            bw_hook = None
            if self._backward_hooks or self._backward_pre_hooks or _global_backward_hooks or _global_backward_pre_hooks:
                bw_hook = BackwardHook(
                    self,
                    [*_global_backward_hooks.values(), *self._backward_hooks.values()],
                    [*_global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()],
                )
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            for hid, hook in forward_hooks:
                if hid in always[0] or hid in always[1]:
                    called.add(hid)
                result = self._run_forward_hook(hid, hook, args, kwargs, result)
            if bw_hook is not None:
                result = bw_hook.setup_output_hook(result)
            return result
        except Exception:
            # forward hooks registered with always_call=True still run (once), then the error propagates
            for hid, hook in forward_hooks:
                if (hid not in always[0] and hid not in always[1]) or hid in called:
                    continue
                try:
                    result = self._run_forward_hook(hid, hook, args, kwargs, result)
                except Exception as exc:  # noqa: BLE001 - the forward's error is the one to raise
                    warnings.warn(
                        "module forward hook with ``always_call=True`` raised an exception that was silenced as "
                        f"another error was raised in forward: {exc}",
                        stacklevel=2,
                    )
            raise

    def _add_hook(self, table: str, hook: Callable[..., Any], prepend: bool, *flags: str) -> RemovableHandle:
        if not callable(hook):
            raise TypeError(f"{type(self).__name__}: a hook must be callable, got {type(hook).__name__}")
        hooks = getattr(self, table)
        handle = RemovableHandle(hooks, *(getattr(self, f) for f in _HOOK_FLAGS[table]))
        hooks[handle.id] = hook
        for f in flags:
            getattr(self, f)[handle.id] = True
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_pre_hook(
        self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """Call ``hook(module, args)`` before forward; a non-None result replaces the positional args.

        With ``with_kwargs`` the hook is ``hook(module, args, kwargs)`` and returns None or ``(args, kwargs)``.
        ``prepend`` runs it before the hooks already registered.
        """
        flags = ("_forward_pre_hooks_with_kwargs",) if with_kwargs else ()
        return self._add_hook("_forward_pre_hooks", hook, prepend, *flags)

    def register_forward_hook(
        self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False, always_call: bool = False
    ) -> RemovableHandle:
        """Call ``hook(module, args, output)`` after forward; a non-None result replaces the output.

        ``with_kwargs`` passes the keyword arguments too (``hook(module, args, kwargs, output)``);
        ``always_call`` runs the hook even when forward raises (then ``output`` is None); ``prepend`` runs it
        before the hooks already registered.
        """
        flags = ("_forward_hooks_with_kwargs",) * with_kwargs + ("_forward_hooks_always_called",) * always_call
        return self._add_hook("_forward_hooks", hook, prepend, *flags)

    def register_full_backward_pre_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_output)`` when the gradients of the module's outputs are known.

        ``grad_output`` is a tuple with one entry per output (None for non-tensors); a returned tuple of the
        same length replaces it.
        """
        return self._add_hook("_backward_pre_hooks", hook, prepend)

    def register_full_backward_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """Call ``hook(module, grad_input, grad_output)`` when the gradients of the module's inputs are known.

        ``grad_input`` has one entry per positional argument (None for non-tensors and for tensors that need no
        gradient; keyword arguments are not included); a returned tuple of the same length replaces it. Each hook
        sees the previous one's result. The module's inputs and outputs pass through identity nodes for this, so
        modifying them in place inside forward is not supported.
        """
        return self._add_hook("_backward_hooks", hook, prepend)

    # -- registration ------------------------------------------------------------------------------
    def _check_init(self, what: str) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {what} before Module.__init__() call")

    @staticmethod
    def _check_name(name: Any, kind: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain ".", got {name!r}')

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a None placeholder) under ``name``."""
        self._check_init("parameters")
        self._check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                "(lucid_nn.Parameter or None required)"
            )
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is state but not a parameter (e.g. running mean); ``persistent`` puts it in state_dict."""
        self._check_init("buffers")
        self._check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (Tensor or None required)"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under ``name``."""
        self._check_init("child modules")
        self._check_name(name, "module")
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            self._check_init("parameters")
            self._remove_from(name, d, self._buffers, self._modules)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                    "(lucid_nn.Parameter or None expected)"
                )
            params[name] = None
            return
        if isinstance(value, Module):
            self._check_init("child modules")
            self._remove_from(name, d, self._parameters, self._buffers)
            self._modules[name] = value
            return
        modules = d.get("_modules")
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as child module '{name}' (Module or None expected)"
                )
            modules[name] = None
            return
        buffers = d.get("_buffers")
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (Tensor or None expected)")
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    @staticmethod
    def _remove_from(name: str, d: dict[str, Any], *stores: dict[str, Any]) -> None:
        d.pop(name, None)
        for s in stores:
            s.pop(name, None)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            s = d.get(store)
            if s is not None and name in s:
                return s[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        keys = (
            set(dir(type(self))) | set(self.__dict__) | set(self._parameters) | set(self._buffers) | set(self._modules)
        )
        return sorted(k for k in keys if not k[0].isdigit())

    # -- traversal ---------------------------------------------------------------------------------
    def named_modules(
        self, memo: set[int] | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """Every module in the tree (self first) with its dotted name."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        """This module and every submodule, depth first."""
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """(name, submodule) pairs of the direct submodules."""
        seen: set[int] = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator[Module]:
        """The direct submodules."""
        for _, m in self.named_children():
            yield m

    def _named_members(
        self, store: str, prefix: str, recurse: bool, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Any]]:
        seen: set[int] = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for mod_prefix, m in mods:
            for k, v in getattr(m, store).items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(v))
                yield mod_prefix + ("." if mod_prefix else "") + k, v

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """Every parameter with its dotted name (each shared parameter once)."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The module's parameters (and its submodules' when recurse), each once."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """(dotted name, buffer) pairs."""
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """The module's buffers (and its submodules' when recurse)."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target: str) -> Module:
        """The module at dotted path ``target`` (``""`` is self)."""
        if target == "":
            return self
        mod: Module = self
        for item in target.split("."):
            sub = mod._modules.get(item) if isinstance(mod, Module) else None
            if sub is None:
                raise AttributeError(f"{type(mod).__name__} has no submodule `{item}` (looking up {target!r})")
            mod = sub
        return mod

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target``."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._parameters or mod._parameters[name] is None:
            raise AttributeError(f"{type(mod).__name__} has no parameter `{name}` (looking up {target!r})")
        return mod._parameters[name]

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path ``target``."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._buffers or mod._buffers[name] is None:
            raise AttributeError(f"{type(mod).__name__} has no buffer `{name}` (looking up {target!r})")
        return mod._buffers[name]

    # -- modes and bulk changes ----------------------------------------------------------------------
    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn`` on every submodule (children first) and on self; returns self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def train(self, mode: bool = True) -> Module:
        """Set training mode on this module and its submodules; returns self."""
        if not isinstance(mode, bool):
            raise ValueError(f"training mode is expected to be boolean, got {type(mode).__name__}")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self) -> Module:
        """Switch to evaluation mode (train(False)); returns self."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set requires_grad on every parameter; returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the parameters' gradients (to None by default)."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad = lc.zeros_like(p.grad)

    def share_memory(self) -> Module:
        """Move every parameter and buffer (and existing gradient) into shared memory, for Hogwild training."""
        for t in [*self.parameters(), *self.buffers()]:
            t.share_memory_()
            if t.grad is not None:
                t.grad.share_memory_()
        return self

    def _apply_inplace(self, fn: Callable[[Tensor], Tensor]) -> Module:
        """Replace every parameter's and buffer's values (and grads) by ``fn`` of them, keeping the objects."""
        for m in self.modules():
            for p in m._parameters.values():
                if p is None:
                    continue
                p.data = fn(p.detach())
                if p.grad is not None:
                    p.grad = fn(p.grad.detach())
            for k, b in m._buffers.items():
                if b is not None:
                    b.data = fn(b.detach())
                    m._buffers[k] = b
        return self

    def to(
        self, device: lc.DeviceLike | lc.DType = None, dtype: lc.DType | None = None, *, memory_format: Any = None
    ) -> Module:
        """Move parameters and buffers to ``device`` and/or cast floating ones to ``dtype``, in place; returns self.

        ``memory_format`` (PyTorch's ``lucid.channels_last``...) is accepted and the parameters keep their layout:
        the numbers are the same in any layout, and ``is_contiguous(memory_format=)`` reports the one held.
        """
        if isinstance(device, lc.DType):
            device, dtype = None, device
        if dtype is not None and dtype.kind not in "fc":
            raise TypeError(f"Module.to only accepts floating point or complex dtypes, got {dtype.name}")

        def convert(t: Tensor) -> Tensor:
            if dtype is not None and t.dtype.kind in "fc" and t.dtype is not dtype:
                t = t.astype(dtype)
            if device is not None:
                t = t.to(device)
            return t

        return self._apply_inplace(convert)

    def cpu(self) -> Module:
        """Move parameters and buffers to the CPU device of their backend (``Tensor.cpu``), in place; returns self."""
        return self._apply_inplace(lambda t: t.cpu())

    def cuda(self, device: lc.DeviceLike = None) -> Module:
        """Move parameters and buffers to a GPU device (``Tensor.cuda``: this backend's, else the first backend with
        one; an error says so where there is none), in place; returns self."""
        return self._apply_inplace(lambda t: t.cuda(device))

    def float(self) -> Module:
        """Cast floating-point parameters and buffers to float32; returns self."""
        return self.to(lc.float32)

    def double(self) -> Module:
        """Cast floating-point parameters and buffers to float64; returns self."""
        return self.to(lc.float64)

    def to_empty(self, *, device: lc.DeviceLike = None, recurse: bool = True) -> Module:
        """Give every parameter and buffer new, uninitialised storage on ``device``; returns self.

        PyTorch uses it to materialise meta-device models; here it allocates (``empty_like``) in place, keeping
        the Parameter objects, so an optimizer built on them still sees them.
        """
        mods = self.modules() if recurse else [self]
        for m in mods:
            for p in m._parameters.values():
                if p is not None:
                    p.data = lc.empty_like(p.detach(), device=device)
                    p.grad = None
            for k, b in m._buffers.items():
                if b is not None:
                    m._buffers[k] = lc.empty_like(b, device=device)
        return self

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """PyTorch's ``Module.compile``: this module's calls go through ``lucid_core.compiler.compile`` from now on.

        Keywords are ``compile``'s (``fullgraph``, ...). The module object stays the same (its ``__call__`` is
        replaced on the instance), so optimizers, state dicts and hooks see no difference."""
        if args:
            raise TypeError("Module.compile takes keyword arguments only (fullgraph=..., mode=...)")
        compiled = lc.compiler.compile(self._call_impl, **kwargs)
        object.__setattr__(self, "_compiled_call", compiled)
        return None

    # -- state dict ----------------------------------------------------------------------------------
    def get_extra_state(self) -> Any:
        """State beyond parameters and buffers to put in ``state_dict`` as ``<prefix>_extra_state``.

        Override together with :meth:`set_extra_state`; the base class has none (and raises, as PyTorch does).
        """
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called. Please file an issue "
            "at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml to report this bug."
        )

    def set_extra_state(self, state: Any) -> None:
        """Restore what :meth:`get_extra_state` returned (called by ``load_state_dict``)."""
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called. Please file an issue "
            "at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml to report this bug."
        )

    def _has_extra_state(self) -> bool:
        return type(self).get_extra_state is not Module.get_extra_state

    def state_dict(
        self, destination: dict[str, Tensor] | None = None, prefix: str = "", keep_vars: bool = False
    ) -> dict[str, Tensor]:
        """Parameters and persistent buffers by PyTorch's dotted names.

        Each value is a detached view sharing its tensor's data (the tensor itself with ``keep_vars``),
        so ``sd[k].copy_(w)`` loads into the model, as in PyTorch, on every backend.
        """
        out: dict[str, Tensor] = OrderedDict() if destination is None else destination
        for name, p in self._parameters.items():
            if p is not None:
                out[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                out[prefix + name] = b if keep_vars else b.detach()
        if self._has_extra_state():
            out[prefix + _EXTRA_STATE_KEY] = self.get_extra_state()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(out, prefix + name + ".", keep_vars)
        return out

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> _IncompatibleKeys:
        """Copy values from ``state_dict`` into parameters and buffers (cast and moved to theirs).

        Returns ``(missing_keys, unexpected_keys)``; with ``strict`` any missing or unexpected key raises.
        A shape mismatch always raises. Errors list every problem at once. ``assign=True`` puts the
        state dict's tensors themselves into the module (dtype and device theirs; each parameter keeps its
        ``requires_grad``) instead of copying into the existing ones. Modules that define
        :meth:`set_extra_state` get their ``_extra_state`` entry.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict).__name__}")
        own: dict[str, tuple[Module, str, str]] = {}
        extra: dict[str, Module] = {}
        for mod_prefix, m in self.named_modules(remove_duplicate=False):
            pre = mod_prefix + "." if mod_prefix else ""
            if type(m).set_extra_state is not Module.set_extra_state:
                extra[pre + _EXTRA_STATE_KEY] = m
            for name, p in m._parameters.items():
                if p is not None:
                    own[pre + name] = (m, "_parameters", name)
            for name, b in m._buffers.items():
                if b is not None and name not in m._non_persistent_buffers_set:
                    own[pre + name] = (m, "_buffers", name)
        missing = [k for k in (*own, *extra) if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own and k not in extra]
        errors = []
        updates = []
        for key, (m, store, name) in own.items():
            if key not in state_dict:
                continue
            target = getattr(m, store)[name]
            value = state_dict[key]
            if not isinstance(value, Tensor):
                try:
                    value = lc.asarray(value, dtype=target.dtype, device=target.device)
                except (TypeError, ValueError) as exc:
                    errors.append(f'While copying the parameter named "{key}", got a {type(value).__name__}: {exc}')
                    continue
            if tuple(value.shape) != tuple(target.shape):
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {tuple(value.shape)} from checkpoint, "
                    f"the shape in current model is {tuple(target.shape)}."
                )
                continue
            updates.append((key, target, value))
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ".")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ".")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        with lc.no_grad():
            for key, target, value in updates:
                if assign:
                    m, store, name = own[key]
                    if store == "_parameters":
                        m._parameters[name] = Parameter(value.detach(), requires_grad=target.requires_grad)
                    else:
                        m._buffers[name] = value
                else:
                    # in place, as PyTorch does: views handed out by state_dict() keep reaching the parameter
                    target.copy_(value.detach())
        for key, m in extra.items():
            if key in state_dict:
                m.set_extra_state(state_dict[key])
        return _IncompatibleKeys(missing, unexpected)

    # -- printing ----------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text inside this module's parentheses in ``repr`` (override in layers)."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        for name, m in self._modules.items():
            lines.append(f"({name}): " + _addindent(repr(m), 2))
        main = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"
