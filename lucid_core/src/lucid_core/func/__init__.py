"""``lucid_core.func``: composable function transforms, PyTorch 2.13's ``torch.func``.

``grad``, ``grad_and_value``, ``vjp``, ``jvp`` (true forward mode), ``linearize``, ``jacrev``, ``jacfwd``,
``hessian`` and, where the batching module is present, ``vmap``. ``functional_call`` and ``stack_module_state``
live in ``lucid_nn`` (they need modules); the PyTorch face's ``lucid.func`` gathers all of them.
"""

from __future__ import annotations

from ._transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian"]

try:  # vmap is built beside these (its own module); the transforms above stand without it
    from ._vmap import vmap
except ImportError:  # pragma: no cover - only while the batching module is absent
    pass
else:
    __all__ += ["vmap"]
