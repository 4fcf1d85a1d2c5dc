"""Lucid's PyTorch face: ``import lucid`` gives PyTorch's names and semantics on Lucid tensors.

A PyTorch program runs after replacing the word ``torch`` with ``lucid``: ``lucid.cat``, ``lucid.max(x, 1)``
returning values and indices, ``x.size()``, ``lucid.nn``, ``lucid.nn.functional``, ``lucid.optim``,
``lucid.utils.data``. The face only re-exports and adapts: tensors and autograd are ``lucid_core``'s (whose
namespace follows the Array API standard), layers ``lucid_nn``'s, optimizers ``lucid_optim``'s, data loading
``lucid_data``'s. Submodules load on first use.
"""

from __future__ import annotations

import importlib
import os
from typing import Any, BinaryIO

import lucid_core as _lucid_core
from lucid_core import *  # noqa: F403 - the engine's namespace; the names below adapt it to PyTorch's
from lucid_core import DType as dtype  # noqa: N813 - PyTorch's name for the dtype type
from lucid_core import Tensor
from lucid_core._format import Layout as layout  # noqa: N813 - PyTorch's name for the layout type
from lucid_core._format import jagged, strided
from lucid_core._tensor_methods import Size, ValuesIndices
from lucid_core.amp import (
    autocast,
    clear_autocast_cache,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from lucid_core.func import vmap  # torch.vmap (also lucid.func.vmap)

from . import _functions
from ._batch_norm_kernels import *  # noqa: F403 - SyncBN's batch_norm_* kernels, native_norm, embedding_renorm_
from ._creation import (
    arange,
    as_tensor,
    bernoulli,
    from_numpy,
    multinomial,
    normal,
    rand_like,
    randint,
    randint_like,
    randn_like,
    tensor,
)
from ._device import device
from ._functions import *  # noqa: F403
from ._generator import Generator, default_generator
from ._generator import accepting_generator as _accepting_generator
from ._grad_mode import inference_mode, is_inference_mode_enabled, set_grad_enabled
from ._linalg_names import *  # noqa: F403 - torch.det, torch.lgamma, windows; binds linalg/fft/special
from ._lowrank import *  # noqa: F403 - svd_lowrank, pca_lowrank, lobpcg
from ._namespace_tail import *  # noqa: F403 - torch-level nn ops, view copies, typed tensors, switches
from ._numeric_extra import *  # noqa: F403 - gradient, histogramdd
from ._rnn_ops import *  # noqa: F403 - torch.lstm/gru/rnn_tanh/rnn_relu over flat weights
from ._runtime import *  # noqa: F403 - determinism switches, typename, is_storage
from ._segment import *  # noqa: F403 - segment_reduce
from ._torch_surface import *  # noqa: F403 - rsub, norms, poisson/binomial, cond/while_loop, GradScaler
from .amp import (
    autocast_decrement_nesting,
    autocast_increment_nesting,
    get_autocast_cpu_dtype,
    is_autocast_cpu_enabled,
    set_autocast_cpu_dtype,
    set_autocast_cpu_enabled,
)
from .compiler import compile  # noqa: A004 - torch.compile (lucid.compiler holds the rest)

# these replace names of the star imports above: the default dtype is lucid_core's switch (not _functions'
# fixed float32), and the random functions take PyTorch's generator= (a lucid.Generator)
get_default_dtype = _lucid_core.get_default_dtype
set_default_dtype = _lucid_core.set_default_dtype
set_printoptions = _lucid_core.set_printoptions
rand = _accepting_generator(rand)
randn = _accepting_generator(randn)
randperm = _accepting_generator(randperm)
randint = _accepting_generator(randint)
normal = _accepting_generator(normal, from_input=True)
bernoulli = _accepting_generator(bernoulli, from_input=True)
multinomial = _accepting_generator(multinomial, from_input=True)

# PyTorch's dtype names (``lucid.long`` is int64, ``lucid.float`` float32...)
long = int64
int = int32
float = float32
double = float64
half = float16
short = int16
cfloat = complex64
cdouble = complex128
bool = bool

__version__ = "0.1.0"


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """The smallest dtype both ``type1`` and ``type2`` cast to, as ``torch.promote_types`` (bfloat16 with float16:
    float32)."""
    return _lucid_core.result_type(type1, type2)


# submodules, imported on first attribute access (``import lucid.nn`` works as usual too)
_SUBMODULES = {
    "amp",
    "cpu",
    "nn",
    "distributions",
    "optim",
    "utils",
    "data",
    "distributed",
    "autograd",
    "func",
    "compiler",
    "cuda",
    "backends",
    "accelerator",
    "linalg",
    "fft",
    "special",
    "testing",
    "profiler",
    "onnx",
    "multiprocessing",
    "serialization",
}


# ``lucid.backends`` is PyTorch's module (``lucid.backends.mps``), not lucid_core's listing function
del backends  # noqa: F821


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'lucid' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _SUBMODULES)


def save(obj: Any, f: str | os.PathLike[str] | BinaryIO, *args: Any, **kwargs: Any) -> None:
    """``torch.save``: state dicts as safetensors, any other object pickled (see :mod:`lucid.serialization`)."""
    from . import serialization

    return serialization.save(obj, f, *args, **kwargs)


def load(f: str | os.PathLike[str] | BinaryIO, *args: Any, **kwargs: Any) -> Any:
    """``torch.load(f, map_location=None, *, weights_only=True)``: see :func:`lucid.serialization.load`.

    A pickled object loads weights-only by default (PyTorch 2.13's allow-list, extended with
    ``lucid.serialization.safe_globals``); a damaged file raises ``lucid.nn.CheckpointError`` (a ValueError)
    naming the file and the fault.
    """
    from . import serialization

    return serialization.load(f, *args, **kwargs)
