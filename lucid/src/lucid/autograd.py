"""``lucid.autograd``: PyTorch's ``torch.autograd``: ``grad``, ``backward``, ``Function``, grad modes, ``gradcheck``,
``functional`` (jacobian, hessian, vjp, jvp, hvp, vhp) and ``forward_ad`` (dual tensors)."""

import sys
from typing import Any

from lucid_core import Function, Tensor, backward, enable_grad, forward_ad, grad, gradcheck, gradgradcheck, no_grad
from lucid_core.func import _functional as functional

from ._grad_mode import inference_mode, set_grad_enabled


class _VariableMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableMeta):
    """PyTorch's pre-0.4 wrapper, kept as PyTorch keeps it: ``Variable(t, requires_grad=False)`` is a new leaf
    sharing ``t``'s data (``t.detach()``, requiring grad if asked), and every tensor is a ``Variable``."""

    def __new__(cls, data: Tensor, requires_grad: bool = False, volatile: bool = False) -> Tensor:  # type: ignore[misc]
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        return out.requires_grad_() if requires_grad else out


__all__ = [
    "Function", "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "gradcheck",
    "gradgradcheck", "Variable", "functional", "forward_ad",
]  # fmt: skip

# ``import lucid.autograd.functional`` / ``from lucid.autograd.forward_ad import dual_level`` as with torch
sys.modules.setdefault(__name__ + ".functional", functional)
sys.modules.setdefault(__name__ + ".forward_ad", forward_ad)
