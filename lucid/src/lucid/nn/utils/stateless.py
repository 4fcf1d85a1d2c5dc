"""``lucid.nn.utils.stateless``: PyTorch's ``torch.nn.utils.stateless.functional_call`` (``lucid_nn``'s)."""

from lucid_nn import functional_call

__all__ = ["functional_call"]
