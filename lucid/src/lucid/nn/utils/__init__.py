"""``lucid.nn.utils``: gradient clipping, parameter vectors, weight and spectral norm, and the ``rnn``,
``parametrize`` and ``parametrizations`` modules (``lucid_nn.utils``), under PyTorch's paths."""

from lucid_nn.utils import *  # noqa: F403
from lucid_nn.utils import __all__  # noqa: F401

from . import parametrizations, parametrize, rnn, stateless  # noqa: F401
