"""``lucid.nn.utils``: ``clip_grad_norm_``, ``clip_grad_value_``, ``parameters_to_vector``... (``lucid_nn.utils``)."""

from lucid_nn.utils import *  # noqa: F403
from lucid_nn.utils import __all__  # noqa: F401
