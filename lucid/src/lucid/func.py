"""``lucid.func``: PyTorch's ``torch.func`` (``grad``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``, ``vmap``,
``functional_call``, ``stack_module_state``), from ``lucid_core.func`` and ``lucid_nn``."""

from lucid_core.func import *  # noqa: F403
from lucid_core.func import __all__ as _core_all
from lucid_nn import functional_call, stack_module_state

__all__ = [*_core_all, "functional_call", "stack_module_state"]
