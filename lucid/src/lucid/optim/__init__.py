"""``lucid.optim``: PyTorch's optimizers (``lucid_optim``); schedulers in ``lucid.optim.lr_scheduler``."""

from lucid_optim import *  # noqa: F403
from lucid_optim import __all__  # noqa: F401

from . import lr_scheduler  # noqa: F401 - replaces lucid_optim's, so the name is lucid.optim.lr_scheduler
