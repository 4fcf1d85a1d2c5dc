"""Lucid's optimizers and learning-rate schedulers, matching PyTorch's numbers.

Optimizers take an iterable of :class:`lucid_core.Parameter` (or param-group dicts) and
PyTorch's keyword arguments; schedulers live in :mod:`lucid_optim.lr_scheduler`.
"""

from . import lr_scheduler
from .adafactor import Adafactor
from .adam import Adam, Adamax, AdamW, NAdam, RAdam
from .adaptive import Adadelta, Adagrad, RMSprop
from .lbfgs import LBFGS
from .lion import Lion
from .optimizer import Optimizer, ParamsT
from .rprop import Rprop
from .sgd import ASGD, SGD

__all__ = [
    "Optimizer", "ParamsT", "lr_scheduler",
    "SGD", "ASGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Adagrad", "Adadelta", "Rprop",
    "LBFGS", "Lion", "Adafactor",
]  # fmt: skip
