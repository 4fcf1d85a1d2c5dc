"""``lucid.autograd``: PyTorch's ``torch.autograd``: ``grad``, ``backward``, ``Function``, grad modes, ``gradcheck``."""

from lucid_core import Function, backward, enable_grad, grad, gradcheck, gradgradcheck, no_grad

from ._grad_mode import inference_mode, set_grad_enabled

__all__ = [
    "Function", "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "gradcheck",
    "gradgradcheck",
]  # fmt: skip
