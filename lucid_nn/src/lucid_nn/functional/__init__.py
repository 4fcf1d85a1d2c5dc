"""Functional forms of every layer: ``import lucid_nn.functional as F``."""

from ._activation import *  # noqa: F403
from ._activation import __all__ as _activation_all
from ._attention import *  # noqa: F403
from ._attention import __all__ as _attention_all
from ._conv import *  # noqa: F403
from ._conv import __all__ as _conv_all
from ._loss import *  # noqa: F403
from ._loss import __all__ as _loss_all
from ._misc import *  # noqa: F403
from ._misc import __all__ as _misc_all
from ._pooling import *  # noqa: F403
from ._pooling import __all__ as _pooling_all
from ._recurrent import *  # noqa: F403
from ._recurrent import __all__ as _recurrent_all

__all__ = [
    *_activation_all, *_loss_all, *_misc_all,
    *_conv_all, *_pooling_all, *_attention_all, *_recurrent_all,
]  # fmt: skip
