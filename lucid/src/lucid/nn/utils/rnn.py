"""``lucid.nn.utils.rnn``: PyTorch's ``torch.nn.utils.rnn`` (``lucid_nn.utils.rnn``)."""

from lucid_nn.utils.rnn import *  # noqa: F403
from lucid_nn.utils.rnn import __all__  # noqa: F401
