"""``lucid.nn.functional``: PyTorch's ``torch.nn.functional`` (``lucid_nn.functional``, which keeps ``dim=``)."""

from lucid_nn.functional import *  # noqa: F403
from lucid_nn.functional import __all__  # noqa: F401
