"""PyTorch's keywords on the namespace's functions: a TypeError that names Lucid's spelling.

The namespace follows the Array API standard (``lc.sum(x, axis=1, keepdims=True)``); a PyTorch user
writes ``dim=1, keepdim=True`` and Python's own error (``got an unexpected keyword argument 'dim'``)
does not say what to write instead. :func:`add_keyword_hints` wraps, once at import, every namespace
function that has one of the renamed parameters; the wrapper costs one call on success and looks at
the keywords only after a TypeError.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, MutableMapping
from typing import Any

#: PyTorch's keyword -> Lucid's spellings, the first one the function has is named in the error
PYTORCH_KEYWORDS: dict[str, tuple[str, ...]] = {
    "dim": ("axis", "axes"),
    "dims": ("axes", "axis"),
    "keepdim": ("keepdims",),
    "size": ("shape",),
    "end": ("stop",),
    "steps": ("num",),
    "unbiased": ("correction",),
    "shifts": ("shift",),
}
_NOTES = {"unbiased": " (unbiased=True is correction=1; the Array API's default is correction=0)"}
_LUCID_NAMES = frozenset(name for names in PYTORCH_KEYWORDS.values() for name in names)


def keyword_hint(qualname: str, params: MutableMapping[str, inspect.Parameter] | Any, kwargs: dict[str, Any]) -> str:
    """The message for PyTorch keywords in ``kwargs`` that ``params`` lacks; empty if there are none."""
    fixes = []
    for key in kwargs:
        if key in params and params[key].kind is not inspect.Parameter.POSITIONAL_ONLY:
            continue
        for lucid in PYTORCH_KEYWORDS.get(key, ()):
            if lucid in params:
                fixes.append(f"{lucid}= instead of PyTorch's {key}={_NOTES.get(key, '')}")
                break
    if not fixes:
        return ""
    return f"{qualname}(): use " + "; ".join(fixes) + ". Lucid's namespace follows the Array API standard"


def _with_hint(fn: Callable[..., Any], qualname: str, params: Any) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TypeError:
            hint = keyword_hint(qualname, params, kwargs) if kwargs else ""
            if not hint:
                raise
        raise TypeError(hint)

    return call


def add_keyword_hints(namespace: MutableMapping[str, Any], prefix: str) -> None:
    """Wrap each public function of ``namespace`` that has a parameter PyTorch spells differently."""
    for name, fn in list(namespace.items()):
        if name.startswith("_") or not inspect.isfunction(fn):
            continue
        params = inspect.signature(fn).parameters
        if _LUCID_NAMES.isdisjoint(params) or any(p.kind is p.VAR_KEYWORD for p in params.values()):
            continue
        namespace[name] = _with_hint(fn, prefix + name, params)
