"""The Optimizer base: parameter groups, per-parameter state, state_dict, and the step loop.

A concrete optimizer states only its math: :meth:`Optimizer.init_single` fills a parameter's
state on its first step and :meth:`Optimizer.apply_single` updates one parameter in place from
its gradient (MLX's ``init_single``/``apply_single`` split). The base walks the groups, skips
parameters without gradients, applies ``maximize`` and (where the class asks for it through
:attr:`Optimizer.weight_decay_style`) ``weight_decay``, and evaluates everything once at the end.
"""

from __future__ import annotations

__all__ = ["Optimizer", "ParamsT"]

import copy
import difflib
import inspect
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Literal

import lucid_core as lc
from lucid_core import Parameter, Tensor

#: what an optimizer takes: Parameters, or param-group dicts ``{"params": [...], **hyperparameters}``
ParamsT = Iterable[Parameter] | Iterable[dict[str, Any]]
#: ``step``'s optional closure: re-evaluates the model and returns the loss
Closure = Callable[[], Tensor | float]


class _Required:
    """Marks a hyperparameter with no default (PyTorch's ``required``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


class Optimizer:
    """Base class of every optimizer: holds ``param_groups`` and ``state``, runs ``step``.

    Args:
        params: an iterable of :class:`lucid_core.Parameter`, or of dicts
            ``{"params": [...], **hyperparameters}`` (one per parameter group).
        defaults: every hyperparameter the optimizer understands, with the value for groups that do not
            set their own; a group naming any other key is an error (a typo would otherwise be ignored).
        overrides: what a concrete optimizer got as the seed's ``defaults=`` keyword: values replacing
            those in ``defaults``. A key ``defaults`` lacks raises, and so does a key whose keyword argument
            was given too, with another value (it differs from both its declared default and the override).
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # a compiled function (lucid_core.compiler) calls step and zero_grad as themselves on every replay, so their
        # Python state (step counts, lazily made moments, hyperparameters a scheduler changed) is never baked in
        super().__init_subclass__(**kwargs)
        for name in ("step", "zero_grad"):
            fn = cls.__dict__.get(name)
            if fn is not None and not getattr(fn, "__lucid_opaque__", False):
                setattr(cls, name, lc.compiler.opaque(fn, idempotent=name == "zero_grad"))

    #: how :meth:`step` applies a group's ``weight_decay`` before :meth:`apply_single`: ``"l2"`` adds
    #: ``weight_decay * param`` to the gradient (after ``maximize``), ``"decoupled"`` multiplies the
    #: parameter by ``1 - lr * weight_decay`` (AdamW); a group's ``decoupled_weight_decay`` flag, where
    #: the optimizer has one, picks ``"decoupled"``. ``None``: the base leaves ``weight_decay`` alone.
    weight_decay_style: ClassVar[Literal["l2", "decoupled"] | None] = None

    def __init__(self, params: ParamsT, defaults: dict[str, Any], *, overrides: dict[str, Any] | None = None) -> None:
        if not isinstance(defaults, dict):
            raise TypeError(f"{type(self).__name__}: defaults must be a dict, got {type(defaults).__name__}")
        self.defaults: dict[str, Any] = self._merge_overrides(dict(defaults), overrides)
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        if isinstance(params, Tensor):
            raise TypeError(
                f"{type(self).__name__}: params must be an iterable of Parameters or dicts, got a single "
                f"{type(params).__name__}; wrap it in a list"
            )
        if isinstance(params, dict):
            params = [params]
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__} got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    # -- groups ----------------------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (with optional hyperparameters) to optimize."""
        if not isinstance(param_group, dict):
            raise TypeError(f"a param group must be a dict, got {type(param_group).__name__}")
        group = dict(param_group)
        if "params" not in group:
            raise ValueError("a param group needs a 'params' entry")
        params = group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, (set, frozenset)):
            raise TypeError("a param group's params must be an ordered collection (list, tuple, generator), not a set")
        else:
            params = list(params)
        for p in params:
            if not isinstance(p, Parameter):
                raise TypeError(f"{type(self).__name__} can only optimize Parameters, got {type(p).__name__}")
        if not params:
            raise ValueError(f"{type(self).__name__}: a param group has an empty parameter list")
        ids = {id(p) for p in params}
        if len(ids) != len(params):
            raise ValueError("a param group contains the same parameter more than once")
        for i, other in enumerate(self.param_groups):
            if any(id(p) in ids for p in other["params"]):
                raise ValueError(f"some parameters appear in more than one parameter group (already in group {i})")
        group["params"] = params
        for key, value in self.defaults.items():
            if value is required and key not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {key}")
            group.setdefault(key, value)
        # PyTorch keeps any extra key in a group (programs tag groups with "name" or "lr_scale"), so we do
        # too; a key one typo away from a hyperparameter would be silently ignored there, so it raises here
        extra = set(group) - set(self.defaults) - {"params", "initial_lr"} - _SCHEDULER_KEYS
        typos = {k: difflib.get_close_matches(k, list(self.defaults), n=1, cutoff=0.8) for k in sorted(extra)}
        typos = {k: m[0] for k, m in typos.items() if m}
        if typos:
            said = ", ".join(f"{k!r} (did you mean {m!r}?)" for k, m in typos.items())
            raise ValueError(
                f"{type(self).__name__}: unknown hyperparameter(s) {said}; expected some of {sorted(self.defaults)}"
            )
        self._check_group(group)
        self.param_groups.append(group)

    def _merge_overrides(self, given: dict[str, Any], overrides: dict[str, Any] | None) -> dict[str, Any]:
        """``given`` updated from ``overrides``, refusing unknown keys and keyword/override conflicts."""
        if overrides is None:
            return given
        name = type(self).__name__
        if not isinstance(overrides, dict):
            raise TypeError(f"{name}: defaults must be a dict, got {type(overrides).__name__}")
        unknown = sorted(set(overrides) - set(given))
        if unknown:
            raise ValueError(
                f"{name}: unknown hyperparameter(s) {unknown} in defaults; expected some of {sorted(given)}"
            )
        declared = inspect.signature(type(self).__init__).parameters
        for key, value in overrides.items():
            if key not in declared:
                continue
            keyword = given[key]
            if not _same(keyword, declared[key].default) and not _same(keyword, value):
                raise ValueError(
                    f"{name}: {key} is given twice, as the keyword {key}={keyword!r} and in defaults= as "
                    f"{value!r}; pass it one way"
                )
        return {**given, **overrides}

    def _check_group(self, group: dict[str, Any]) -> None:
        """Raise ValueError for invalid hyperparameters (subclasses extend this)."""
        lr = group.get("lr")
        if isinstance(lr, (int, float)) and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr} (expected lr >= 0)")
        wd = group.get("weight_decay")
        if isinstance(wd, (int, float)) and wd < 0.0:
            raise ValueError(f"Invalid weight_decay value: {wd} (expected weight_decay >= 0)")

    # -- gradients and steps ------------------------------------------------------------------
    @lc.compiler.opaque(idempotent=True)
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's gradient: to ``None`` (default) or to zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad = lc.zeros_like(p.grad)

    def init_single(self, param: Parameter, state: dict[str, Any], group: dict[str, Any]) -> None:
        """Fill ``state`` for ``param`` before its first update (override)."""

    def apply_single(self, param: Parameter, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        """Update ``param`` in place from ``grad`` (already negated for ``maximize``) (override)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement apply_single")

    @lc.compiler.opaque
    def step(self, closure: Closure | None = None) -> Tensor | float | None:
        """Update every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = None
        if closure is not None:
            with lc.enable_grad():
                loss = closure()
        touched: list[Tensor] = []
        with lc.no_grad():
            for group in self.param_groups:
                maximize = group.get("maximize", False)
                decay = self._weight_decay(group)
                for p in group["params"]:
                    grad = p.grad
                    if grad is None:
                        continue
                    state = self.state[p]
                    if not state:
                        self.init_single(p, state, group)
                    g = -grad if maximize else grad
                    if decay == "l2":
                        g = g + p * group["weight_decay"]
                    elif decay == "decoupled":
                        p.mul_(1 - group["lr"] * group["weight_decay"])
                    self.apply_single(p, g, state, group)
                    touched.extend((p, grad))
                    touched.extend(v for v in state.values() if isinstance(v, Tensor))
        if touched:
            # one evaluation of the whole step on lazy backends; what a backend hands back (dask's
            # persist) is rebound into the parameters, grads and state, so their graphs stay bounded
            lc.eval(*touched)
        return loss

    def _weight_decay(self, group: dict[str, Any]) -> Literal["l2", "decoupled"] | None:
        """How this step decays ``group``'s parameters (see :attr:`weight_decay_style`); None: not at all."""
        if self.weight_decay_style is None or group.get("weight_decay", 0) == 0:
            return None
        return "decoupled" if group.get("decoupled_weight_decay", False) else self.weight_decay_style

    # -- serialization ----------------------------------------------------------------------------
    def _flat_params(self) -> list[Parameter]:
        return [p for g in self.param_groups for p in g["params"]]

    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: state}, "param_groups": [...]}`` with parameters replaced by indices."""
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: copy.deepcopy(v) for k, v in group.items() if k != "params"}
            start = len(index)
            for i, p in enumerate(group["params"]):
                index.setdefault(id(p), start + i)
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: _copy_state(st) for p, st in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore hyperparameters and state saved by :meth:`state_dict` onto the current parameters."""
        if not isinstance(state_dict, dict) or "state" not in state_dict or "param_groups" not in state_dict:
            raise ValueError("load_state_dict expects a dict with 'state' and 'param_groups' (Optimizer.state_dict())")
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(
                f"loaded state dict has {len(saved_groups)} parameter groups, "
                f"this optimizer has {len(self.param_groups)}"
            )
        for i, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(
                    f"loaded state dict's group {i} has {len(saved['params'])} parameters, this optimizer's "
                    f"group {i} has {len(group['params'])}"
                )
        by_index = {}
        for saved, group in zip(saved_groups, self.param_groups):
            for idx, p in zip(saved["params"], group["params"]):
                by_index[idx] = p
        new_state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        for idx, st in state_dict["state"].items():
            key = int(idx)
            if key not in by_index:
                raise ValueError(f"loaded state dict has state for parameter index {key}, which no group lists")
            p = by_index[key]
            new_state[p] = {k: _to_param(v, p) for k, v in _copy_state(st).items()}
        self.state = new_state
        for saved, group in zip(saved_groups, self.param_groups):
            params = group["params"]
            group.clear()
            group.update({k: copy.deepcopy(v) for k, v in saved.items() if k != "params"})
            group["params"] = params

    # -- display ----------------------------------------------------------------------------------
    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(group):
                if key != "params":
                    lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


# keys the schedulers write into groups (CyclicLR / OneCycleLR)
_SCHEDULER_KEYS = frozenset({"max_lr", "min_lr", "max_momentum", "base_momentum"})


def _copy_state(state: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of one parameter's state; tensors get their own storage."""
    out: dict[str, Any] = {}
    for k, v in state.items():
        if isinstance(v, Tensor):
            out[k] = _clone(v)
        elif isinstance(v, list):
            out[k] = [_clone(x) if isinstance(x, Tensor) else copy.deepcopy(x) for x in v]
        else:
            out[k] = copy.deepcopy(v)
    return out


def _clone(t: Tensor) -> Tensor:
    with lc.no_grad():
        return lc.clone(t.detach())


def _to_param(value: object, param: Parameter) -> object:
    """Move a state tensor onto ``param``'s device (floating state also takes its dtype)."""
    if isinstance(value, list):
        return [_to_param(v, param) for v in value]
    if not isinstance(value, Tensor):
        return value
    dtype = param.dtype if value.dtype.kind == "f" and param.dtype.kind == "f" else None
    with lc.no_grad():
        return value.to(param.device, dtype)


def _same(a: object, b: object) -> bool:
    """Equal, counting a list and a tuple with equal items as equal (``betas=[0.9, 0.99]``)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return tuple(a) == tuple(b)
    return bool(a == b)


def fusable(hyper: Iterable[Any], *ts: Tensor) -> bool:
    """Whether ``lucid_core.fused`` takes an update: hyperparameters that are Python numbers (a tensor ``lr``
    keeps the per-op update), and tensors of one device, one floating dtype and one shape."""
    for h in hyper:
        if type(h) is not float and type(h) is not int:
            return False
    return lc.fused.fits(*ts)


def lerp_(a: Tensor, b: Tensor, weight: float) -> Tensor:
    """``a += weight * (b - a)`` in place, in PyTorch's rounding order."""
    if weight < 0.5:
        return a.add_(lc.multiply(lc.subtract(b, a), weight))
    return a.copy_(lc.subtract(b, lc.multiply(lc.subtract(b, a), 1.0 - weight)))
