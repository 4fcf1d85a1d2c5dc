"""``functional_call`` and ``stack_module_state``: run a module with other tensors as its parameters and buffers.

torch.func's: the module's own tensors are swapped out for the call and put back after (even when it raises),
so a function of the parameters, ``lambda p: functional_call(model, p, (x,))``, can be differentiated,
vectorised (``vmap`` over ``stack_module_state``'s stacked copies: model ensembling) or evaluated at any point.
"""

from __future__ import annotations

__all__ = ["functional_call", "stack_module_state"]

from collections.abc import Mapping, Sequence
from typing import Any

import lucid_core as lc
from lucid_core import Tensor

from .module import Module


def _slots(module: Module) -> dict[str, tuple[Module, str, str]]:
    """Every parameter and buffer name (tied names too) -> (owning module, store, attribute)."""
    out: dict[str, tuple[Module, str, str]] = {}
    for prefix, mod in module.named_modules(remove_duplicate=False):
        for store in ("_parameters", "_buffers"):
            for attr, value in mod.__dict__[store].items():
                if value is not None:
                    out[(prefix + "." if prefix else "") + attr] = (mod, store, attr)
    return out


def _merge(dicts: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    if isinstance(dicts, Mapping):
        return dict(dicts)
    merged: dict[str, Any] = {}
    for d in dicts:
        repeated = sorted(set(merged) & set(d))
        if repeated:
            raise ValueError(
                f"functional_call: {repeated} appeared in multiple dictionaries; behavior of functional call is "
                "ambiguous"
            )
        merged.update(d)
    return merged


def functional_call(
    module: Module,
    parameter_and_buffer_dicts: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """``module(*args, **kwargs)`` with the named tensors standing in for its parameters and buffers.

    Args:
        parameter_and_buffer_dicts: ``{dotted name: tensor}`` (or a sequence of such dicts, with distinct keys);
            names not given keep the module's own tensors.
        tie_weights: a tensor given for one of several tied names (one Parameter registered under two names)
            stands in for all of them, as in the module.
        strict: every parameter and buffer must be given, and no other name.
    """
    given = _merge(parameter_and_buffer_dicts)
    slots = _slots(module)
    unknown = sorted(set(given) - set(slots))
    if strict:
        missing = sorted(set(slots) - set(given))
        if missing or unknown:
            raise RuntimeError(
                f"functional_call: Error(s) in reparametrizing for {type(module).__name__}: "
                f"missing key(s): {missing}, unexpected key(s): {unknown}"
            )
    if unknown:
        raise RuntimeError(f"functional_call: unexpected key(s) {unknown}: not parameters or buffers of the module")
    if tie_weights:
        groups: dict[int, list[str]] = {}
        for name, (mod, store, attr) in slots.items():
            groups.setdefault(id(mod.__dict__[store][attr]), []).append(name)
        for names in groups.values():
            if len(names) < 2:
                continue
            values = [given[n] for n in names if n in given]
            if not values:
                continue
            if any(v is not values[0] for v in values[1:]):
                raise ValueError(
                    f"functional_call got multiple values for keys {sorted(n for n in names if n in given)}, "
                    "which are tied. Consider using tie_weights=False"
                )
            for n in names:
                given[n] = values[0]
    saved = []
    try:
        for name, value in given.items():
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"functional_call: the value for {name!r} is a {type(value).__name__}, expected a Tensor"
                )
            mod, store, attr = slots[name]
            table = mod.__dict__[store]
            saved.append((table, attr, table[attr]))
            table[attr] = value
        if args is None:
            args = ()
        elif not isinstance(args, tuple):
            args = (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for table, attr, old in reversed(saved):
            table[attr] = old


def stack_module_state(models: Sequence[Module]) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """``(params, buffers)``: each name's tensors of ``models`` stacked on a new first axis (for ``vmap``).

    The stacked parameters are new leaves that require grad where the originals do; all models must share one
    structure.
    """
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    first = type(models[0])
    if not all(type(m) is first for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(named: list[dict[str, Tensor]], params: bool) -> dict[str, Tensor]:
        out = {}
        for name in named[0]:
            t = lc.stack([d[name].detach() for d in named])
            if params and named[0][name].requires_grad:
                t.requires_grad_()
            out[name] = t
        return out

    params = stacked([dict(m.named_parameters()) for m in models], True)
    buffers = stacked([dict(m.named_buffers()) for m in models], False)
    return params, buffers
