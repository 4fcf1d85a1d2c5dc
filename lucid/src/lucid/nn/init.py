"""``lucid.nn.init``: PyTorch's weight initialisers (``lucid_nn.init``)."""

from lucid_nn.init import *  # noqa: F403
from lucid_nn.init import __all__  # noqa: F401
