"""``lucid.nn.modules``: the layers under PyTorch's module paths (``lucid.nn.modules.conv.Conv2d``...).

PyTorch spreads ``torch.nn``'s classes over ``torch.nn.modules.<file>``; programs import from there
(``from torch.nn.modules.module import Module``, ``torch.nn.modules.batchnorm._BatchNorm``,
``torch.nn.modules.utils._pair``). Lucid's layers live in ``lucid_nn`` by family, so each PyTorch file is a
module made here from one table (:data:`LAYOUT`) holding the names of ``lucid_nn`` that PyTorch keeps in
that file; a name Lucid lacks is left out (an ImportError, as for any missing name).
"""

from __future__ import annotations

import sys
import types
from typing import Any

import lucid_nn
from lucid_nn import *  # noqa: F403
from lucid_nn import Module

from . import utils

#: PyTorch 2.13's ``torch.nn.modules`` files and the names each defines (its ``__all__`` and the private base
#: classes programs subclass); tests/pytorch_face/test_face_layout.py checks it against PyTorch's own layout.
LAYOUT: dict[str, tuple[str, ...]] = {
    "activation": (
        "Threshold", "ReLU", "RReLU", "Hardtanh", "ReLU6", "Sigmoid", "Hardsigmoid", "Tanh", "SiLU", "Mish",
        "Hardswish", "ELU", "CELU", "SELU", "GLU", "GELU", "Hardshrink", "LeakyReLU", "LogSigmoid", "Softplus",
        "Softshrink", "MultiheadAttention", "PReLU", "Softsign", "Tanhshrink", "Softmin", "Softmax", "Softmax2d",
        "LogSoftmax",
    ),
    "adaptive": ("AdaptiveLogSoftmaxWithLoss",),
    "batchnorm": (
        "BatchNorm1d", "LazyBatchNorm1d", "BatchNorm2d", "LazyBatchNorm2d", "BatchNorm3d", "LazyBatchNorm3d",
        "SyncBatchNorm", "_NormBase", "_BatchNorm", "_LazyNormBase",
    ),
    "channelshuffle": ("ChannelShuffle",),
    "container": ("Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"),
    "conv": (
        "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d",
        "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "_ConvNd",
        "_ConvTransposeNd",
    ),
    "distance": ("PairwiseDistance", "CosineSimilarity"),
    "dropout": ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout", "_DropoutNd"),
    "flatten": ("Flatten", "Unflatten"),
    "fold": ("Fold", "Unfold"),
    "instancenorm": (
        "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
        "LazyInstanceNorm3d", "_InstanceNorm",
    ),
    "lazy": ("LazyModuleMixin",),
    "linear": ("Bilinear", "Identity", "LazyLinear", "Linear"),
    "loss": (
        "L1Loss", "NLLLoss", "NLLLoss2d", "PoissonNLLLoss", "GaussianNLLLoss", "KLDivLoss", "MSELoss", "BCELoss",
        "BCEWithLogitsLoss", "HingeEmbeddingLoss", "MultiLabelMarginLoss", "SmoothL1Loss", "HuberLoss",
        "SoftMarginLoss", "CrossEntropyLoss", "LinearCrossEntropyLoss", "MultiLabelSoftMarginLoss",
        "CosineEmbeddingLoss", "MarginRankingLoss", "MultiMarginLoss", "TripletMarginLoss",
        "TripletMarginWithDistanceLoss", "CTCLoss", "_Loss", "_WeightedLoss",
    ),
    "module": (
        "register_module_forward_pre_hook", "register_module_forward_hook", "register_module_full_backward_pre_hook",
        "register_module_backward_hook", "register_module_full_backward_hook",
        "register_module_buffer_registration_hook", "register_module_module_registration_hook",
        "register_module_parameter_registration_hook", "Module", "_IncompatibleKeys",
    ),
    "normalization": ("LocalResponseNorm", "CrossMapLRN2d", "LayerNorm", "GroupNorm", "RMSNorm"),
    "padding": (
        "CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
        "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
        "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
    ),
    "pixelshuffle": ("PixelShuffle", "PixelUnshuffle"),
    "pooling": (
        "MaxPool1d", "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "AvgPool1d", "AvgPool2d",
        "AvgPool3d", "FractionalMaxPool2d", "FractionalMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d",
        "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
        "AdaptiveAvgPool3d",
    ),
    "rnn": ("RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"),
    "sparse": ("Embedding", "EmbeddingBag"),
    "transformer": (
        "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer", "TransformerDecoderLayer",
    ),
    "upsampling": ("Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"),
}  # fmt: skip

#: names PyTorch's files define outside their ``__all__`` that programs reach by path (word_language_model's
#: ``torch.serialization.safe_globals`` list names ``torch.nn.modules.linear.NonDynamicallyQuantizableLinear``)
UNLISTED: dict[str, tuple[str, ...]] = {"linear": ("NonDynamicallyQuantizableLinear",)}

#: Lucid's name where it differs from PyTorch's for the same base class
_ALIASES = {"_ConvTransposeNd": "_ConvTranspose"}


def _find(name: str) -> Any:
    """``name`` in lucid_nn: its namespace, its Module file, or (for private bases) its layer files."""
    import lucid_nn.module as module_file

    if hasattr(lucid_nn, name):
        return getattr(lucid_nn, name)
    if hasattr(module_file, name):
        return getattr(module_file, name)
    own = _ALIASES.get(name, name)
    for mod in list(sys.modules.values()):
        if getattr(mod, "__name__", "").startswith(("lucid_nn.layers.", "lucid_nn.containers")) and hasattr(mod, own):
            return getattr(mod, own)
    return None


def _make(file: str, names: tuple[str, ...]) -> types.ModuleType:
    mod = types.ModuleType(f"{__name__}.{file}", f"``torch.nn.modules.{file}``'s names in Lucid.")
    found = {n: v for n in names if (v := _find(n)) is not None}
    mod.__dict__.update(found)
    mod.__all__ = [n for n in found if not n.startswith("_")]  # type: ignore[attr-defined]
    mod.__dict__.update({n: v for n in UNLISTED.get(file, ()) if (v := _find(n)) is not None})
    return mod


import lucid_nn.layers  # noqa: E402 - every layer file loaded, so _find sees the private bases

for _file, _names in LAYOUT.items():
    _mod = _make(_file, _names)
    sys.modules[_mod.__name__] = _mod
    globals()[_file] = _mod
del _file, _names, _mod

__all__ = ["Module", "utils", *LAYOUT, *lucid_nn.__all__]
