"""Lucid's neural-network frontend: Module, layers, functional, losses, init, checkpoints.

Shaped like ``torch.nn``: ``import lucid_nn as nn; import lucid_nn.functional as F``.
"""

from lucid_core import Parameter

from . import functional, init, utils
from ._functional_call import functional_call, stack_module_state
from .containers import *  # noqa: F403
from .containers import __all__ as _containers_all
from .layers.activation import *  # noqa: F403
from .layers.activation import __all__ as _activation_all
from .layers.adaptive import *  # noqa: F403
from .layers.adaptive import __all__ as _adaptive_all
from .layers.conv import *  # noqa: F403
from .layers.conv import __all__ as _conv_all
from .layers.dropout import *  # noqa: F403
from .layers.dropout import __all__ as _dropout_all
from .layers.embedding import *  # noqa: F403
from .layers.embedding import __all__ as _embedding_all
from .layers.lazy import *  # noqa: F403
from .layers.lazy import __all__ as _lazy_all
from .layers.linear import *  # noqa: F403
from .layers.linear import __all__ as _linear_all
from .layers.loss import *  # noqa: F403
from .layers.loss import __all__ as _loss_all
from .layers.normalization import *  # noqa: F403
from .layers.normalization import __all__ as _normalization_all
from .layers.padding import *  # noqa: F403
from .layers.padding import __all__ as _padding_all
from .layers.pooling import *  # noqa: F403
from .layers.pooling import __all__ as _pooling_all
from .layers.recurrent import *  # noqa: F403
from .layers.recurrent import __all__ as _recurrent_all
from .layers.shuffle import *  # noqa: F403
from .layers.shuffle import __all__ as _shuffle_all
from .layers.transformer import *  # noqa: F403
from .layers.transformer import __all__ as _transformer_all
from .layers.upsampling import *  # noqa: F403
from .layers.upsampling import __all__ as _upsampling_all
from .module import Module, RemovableHandle
from .serialization import CheckpointError, UnsafeCheckpointError, load, load_metadata, save

__version__ = "0.1.0"

__all__ = [
    "Module", "Parameter", "RemovableHandle", "functional", "init", "utils", "save", "load", "load_metadata",
    "CheckpointError", "UnsafeCheckpointError", "functional_call", "stack_module_state",
    *_containers_all, *_linear_all, *_dropout_all, *_embedding_all, *_normalization_all, *_activation_all,
    *_loss_all, *_conv_all, *_pooling_all, *_upsampling_all, *_recurrent_all, *_transformer_all,
    *_adaptive_all, *_lazy_all, *_padding_all, *_shuffle_all,
]  # fmt: skip
