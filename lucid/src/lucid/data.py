"""``lucid.data``: the seeds' spelling of ``lucid.utils.data``."""

from lucid.utils.data import *  # noqa: F403
from lucid.utils.data import DataLoader, __all__  # noqa: F401
