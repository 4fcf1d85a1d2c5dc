"""Functional forms of every layer: ``import lucid_nn.functional as F``."""

from ._activation import *  # noqa: F403
from ._activation import __all__ as _activation_all
from ._attention import *  # noqa: F403
from ._attention import __all__ as _attention_all
from ._conv import *  # noqa: F403
from ._conv import __all__ as _conv_all
from ._loss import *  # noqa: F403
from ._loss import __all__ as _loss_all
from ._loss_margin import *  # noqa: F403
from ._loss_margin import __all__ as _loss_margin_all
from ._misc import *  # noqa: F403
from ._misc import __all__ as _misc_all
from ._pooling import *  # noqa: F403
from ._pooling import __all__ as _pooling_all
from ._recurrent import *  # noqa: F403
from ._recurrent import __all__ as _recurrent_all
from ._vision import *  # noqa: F403
from ._vision import __all__ as _vision_all

__all__ = [
    *_activation_all, *_loss_all, *_misc_all,
    *_conv_all, *_pooling_all, *_attention_all, *_recurrent_all, *_loss_margin_all, *_vision_all,
]  # fmt: skip

# the losses also take PyTorch's legacy ``size_average=``/``reduce=`` (see _legacy)
from ._legacy import accept_legacy as _accept_legacy

for _name in _loss_all + _loss_margin_all:
    globals()[_name] = _accept_legacy(globals()[_name])
del _name
