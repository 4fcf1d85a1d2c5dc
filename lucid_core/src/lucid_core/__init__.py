"""Lucid's core: tensors with define-by-run autograd over pluggable array backends.

The namespace follows the Python Array API standard (``asarray``, ``matmul``,
``sum(x, axis=...)``, ``permute_dims``, dtypes, ``__array_namespace_info__``) and adds
autograd (``Tensor.backward``, ``grad``, ``no_grad``, custom ``Function``s). Backends are
plugins (``lucid_backend_numpy``, ``lucid_backend_mlx``, ...) found through the ``lucid``
entry-point group the first time a tensor is made. This package imports no array library.
"""

from __future__ import annotations

from . import _dtypes as _dt
from . import _views as _views  # views that alias their base (loaded early: Tensor's write path calls it)
from . import amp as amp  # mixed precision: autocast and PyTorch's op lists (a submodule, as torch.amp)
from . import compiler as compiler  # graph capture: compile(fn) records one run and replays it (a submodule)
from . import fft, linalg
from . import fused as fused  # optimizers' fused updates (a submodule, not in the Array API namespace)
from . import special as special  # torch.special's engine (a submodule, not in the Array API namespace)
from ._autograd import (
    Function,
    backward,
    enable_grad,
    grad,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from ._bytes import frombuffer, fromreader
from ._dtypes import (
    DType,
    bfloat16,
    bool,
    can_cast,
    complex64,
    complex128,
    finfo,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float8_e8m0fnu,
    float16,
    float32,
    float64,
    get_default_dtype,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    isdtype,
    result_type,
    set_default_dtype,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ._format import attach as _attach_format
from ._format import set_printoptions
from ._generator import Generator
from ._generator import attach as _attach_random
from ._gradcheck import GradcheckError, gradcheck, gradgradcheck
from ._info import __array_namespace_info__
from ._keywords import add_keyword_hints as _add_keyword_hints
from ._random import host_rng, initial_seed
from ._registry import (
    PluginError,
    backends,
    communicator_errors,
    communicators,
    default_device,
    get_backend,
    get_default_device,
    get_rng_state,
    manual_seed,
    plugin_manager,
    register_backend,
    register_communicator,
    resolve_device,
    set_default_device,
    set_num_threads,
    set_rng_state,
    unregister_backend,
)
from ._tensor import Tensor
from ._tensor_methods import attach as _attach_tensor_methods
from ._tensor_operators import Parameter
from ._threads import get_num_threads
from ._typing import DeviceLike, DTypeLike
from .backend import ArrayAPIBackend, Backend, Device, evaluate
from .hookspecs import hookimpl
from .ops.complex import *  # noqa: F403
from .ops.complex import __all__ as _complex_all
from .ops.creation import *  # noqa: F403
from .ops.creation import __all__ as _creation_all
from .ops.elementwise import *  # noqa: F403
from .ops.elementwise import __all__ as _elementwise_all
from .ops.indexing import *  # noqa: F403
from .ops.indexing import __all__ as _indexing_all
from .ops.manipulation import *  # noqa: F403
from .ops.manipulation import __all__ as _manipulation_all
from .ops.products import *  # noqa: F403
from .ops.products import __all__ as _products_all
from .ops.random import *  # noqa: F403
from .ops.random import __all__ as _random_all
from .ops.reduction import *  # noqa: F403
from .ops.reduction import __all__ as _reduction_all
from .ops.searching import *  # noqa: F403
from .ops.searching import __all__ as _searching_all
from .ops.sets import *  # noqa: F403
from .ops.sets import __all__ as _sets_all
from .ops.utility import *  # noqa: F403
from .ops.utility import __all__ as _utility_all

# Tensor's operators and methods are ops: put on the class now that the ops exist (the one install step)
_attach_tensor_methods()
_attach_format(Tensor)  # __format__ and PyTorch's layout properties
_attach_random(Tensor)  # generator= on the in-place random methods

__version__ = "0.1.0"
__array_api_version__ = "2024.12"

e = 2.718281828459045
pi = 3.141592653589793
inf = float("inf")
nan = float("nan")
newaxis = None


def eval(*tensors: Tensor) -> None:  # noqa: A001 - MLX's name
    """Compute lazy tensors now, all in one backend call per backend (a no-op on eager backends)."""
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"eval: expected Tensors, got {type(t).__name__}")
    evaluate(tensors)  # rebinds the arrays a lazy backend hands back (dask's persist)


__all__ = [
    "Function", "Tensor", "Parameter", "DType", "Backend", "ArrayAPIBackend", "Device", "PluginError",
    "DeviceLike", "DTypeLike",
    "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
    "result_type", "can_cast", "isdtype", "finfo", "iinfo", "get_default_dtype", "set_default_dtype",
    "Generator", "set_printoptions",
    "gradcheck", "gradgradcheck", "GradcheckError",
    "get_num_threads", "set_num_threads",
    "manual_seed", "initial_seed", "get_rng_state", "set_rng_state", "host_rng",
    "backends", "get_backend", "register_backend", "unregister_backend", "plugin_manager", "hookimpl",
    "register_communicator", "communicators", "communicator_errors",
    "set_default_device", "get_default_device", "default_device", "resolve_device",
    "eval", "frombuffer", "fromreader",
    "e", "pi", "inf", "nan", "newaxis", "__array_namespace_info__", "__array_api_version__",
    *_creation_all, *_elementwise_all, *_indexing_all, *_products_all, *_manipulation_all,
    *_random_all, *_reduction_all, *_searching_all, *_complex_all, *_sets_all, *_utility_all, "linalg", "fft",
]  # fmt: skip

# PyTorch's keywords (`lc.sum(x, dim=1)`) raise a TypeError that names Lucid's spelling (`axis=`)
_add_keyword_hints(globals(), "lucid_core.")
_add_keyword_hints(vars(linalg), "lucid_core.linalg.")
_add_keyword_hints(vars(fft), "lucid_core.fft.")

del _dt, _add_keyword_hints, _attach_tensor_methods, _attach_format, _attach_random
