"""``lucid.nn.utils.parametrize``: PyTorch's ``torch.nn.utils.parametrize`` (``lucid_nn.utils.parametrize``)."""

from lucid_nn.utils.parametrize import *  # noqa: F403
from lucid_nn.utils.parametrize import __all__  # noqa: F401
