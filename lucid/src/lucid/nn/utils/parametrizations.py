"""``lucid.nn.utils.parametrizations``: PyTorch's ``torch.nn.utils.parametrizations``
(``lucid_nn.utils.parametrizations``)."""

from lucid_nn.utils.parametrizations import *  # noqa: F403
from lucid_nn.utils.parametrizations import __all__  # noqa: F401
