"""``lucid_core.forward_ad``: PyTorch's ``torch.autograd.forward_ad`` (dual levels, ``make_dual``, ``unpack_dual``).

See :mod:`lucid_core._forward_ad` for how tangents travel with the ops.
"""

from ._forward_ad import UnpackedDualTensor, dual_level, enter_dual_level, exit_dual_level, make_dual, unpack_dual

__all__ = ["dual_level", "make_dual", "unpack_dual", "UnpackedDualTensor", "enter_dual_level", "exit_dual_level"]
