"""``lucid.optim.lr_scheduler``: PyTorch's learning-rate schedulers (``lucid_optim.lr_scheduler``)."""

from lucid_optim.lr_scheduler import *  # noqa: F403
from lucid_optim.lr_scheduler import __all__  # noqa: F401
