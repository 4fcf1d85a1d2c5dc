"""The pytrees ``lucid_core.func`` walks: tuples (named ones too), lists and dicts of leaves, as torch.func's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: a spec: None for a leaf, else (kind, aux, child specs); kind is "tuple", "namedtuple", "list" or "dict"
Spec = Any


def flatten(tree: Any) -> tuple[list[Any], Spec]:
    """The leaves of ``tree`` in order, and the structure to rebuild it with :func:`unflatten`."""
    leaves: list[Any] = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree: Any, leaves: list[Any]) -> Spec:
    if isinstance(tree, dict):
        keys = list(tree)
        return ("dict", keys, [_flatten(tree[k], leaves) for k in keys])
    if isinstance(tree, tuple):
        kind = "namedtuple" if hasattr(tree, "_fields") else "tuple"
        return (kind, type(tree), [_flatten(v, leaves) for v in tree])
    if isinstance(tree, list):
        return ("list", None, [_flatten(v, leaves) for v in tree])
    leaves.append(tree)
    return None


def unflatten(leaves: list[Any], spec: Spec) -> Any:
    """The tree of ``spec`` with ``leaves`` (in :func:`flatten`'s order) put back."""
    it = iter(leaves)
    out = _unflatten(it, spec)
    rest = sum(1 for _ in it)
    if rest:
        raise ValueError(f"unflatten: {rest} leaves too many for the structure")
    return out


def _unflatten(it: Any, spec: Spec) -> Any:
    if spec is None:
        return next(it)
    kind, aux, children = spec
    vals = [_unflatten(it, c) for c in children]
    if kind == "dict":
        return dict(zip(aux, vals))
    if kind == "namedtuple":
        return aux(*vals)
    if kind == "tuple":
        return tuple(vals)
    return vals


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    """``tree`` with ``fn`` applied to every leaf."""
    leaves, spec = flatten(tree)
    return unflatten([fn(x) for x in leaves], spec)


def describe(spec: Spec) -> str:
    """A short text of a structure, for error messages."""
    if spec is None:
        return "*"
    kind, aux, children = spec
    inner = ", ".join(describe(c) for c in children)
    if kind == "dict":
        return "{" + ", ".join(f"{k!r}: {describe(c)}" for k, c in zip(aux, children)) + "}"
    return f"[{inner}]" if kind == "list" else f"({inner})"


def same_structure(a: Spec, b: Spec) -> bool:
    """Whether two specs describe the same tree (dict keys in any order are not the same: as torch's pytree)."""
    if a is None or b is None:
        return a is b
    if a[0] != b[0] or len(a[2]) != len(b[2]):
        return False
    if a[0] == "dict" and a[1] != b[1]:
        return False
    return all(same_structure(x, y) for x, y in zip(a[2], b[2]))
