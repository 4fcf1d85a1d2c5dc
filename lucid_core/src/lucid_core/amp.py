"""Automatic mixed precision: ``autocast`` and the op policy it applies, as PyTorch's ``torch.amp``.

Inside ``autocast(device_type, dtype)``, an op on PyTorch's lists casts its floating-point tensor arguments on
that device type before it runs:

- *lower precision* ops (products: ``linear``, ``matmul``, ``conv*``, ``bmm``, attention...) to the autocast
  dtype (bfloat16 on the CPU by default, float16 allowed too);
- *float32* ops (losses, ``prod``, ``cdist``, solvers and decompositions, FFTs...) to float32;
- *promote* ops (``cat``, ``stack``...) to the widest floating dtype among their arguments.

Every other op runs in the dtypes it is given (so ``relu`` of a bfloat16 product stays bfloat16, and adding a
float32 tensor to it gives float32, by the usual promotion). float64 tensors are never cast, as in PyTorch. The
cast is an ordinary differentiable ``astype``: gradients flow back to float32 parameters in float32. An op's own
body runs with autocast suspended, so the ops it is built from do not cast again (PyTorch excludes its autocast
dispatch key the same way).

The lists below are data, copied from the PyTorch documentation page "Automatic Mixed Precision package -
torch.amp" (https://pytorch.org/docs/stable/amp.html), sections "CPU Ops that can autocast to bfloat16",
"CPU Ops that can autocast to float32", "CUDA Ops that can autocast to float16", "CUDA Ops that can autocast to
float32" and "CUDA Ops that promote to the widest input type"; the CPU promote list (``stack``, ``cat``,
``index_copy``) is PyTorch's ``autocast_mode.cpp`` registration. Lucid functions opt in with
:func:`autocast_op` (or, on the hottest paths, ``if amp.active: ... cast_inputs(...)``): when no autocast region
is open in any thread, the whole cost is one test of :data:`active`.
"""

from __future__ import annotations

__all__ = [
    "autocast",
    "autocast_op",
    "cast_inputs",
    "is_autocast_enabled",
    "get_autocast_dtype",
    "set_autocast_enabled",
    "set_autocast_dtype",
    "is_autocast_available",
    "is_autocast_cache_enabled",
    "set_autocast_cache_enabled",
    "clear_autocast_cache",
    "device_available",
    "POLICY",
]

import functools
import threading
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from . import _dtypes as dt
from ._tensor import Tensor

F = TypeVar("F", bound=Callable[..., Any])

# -- the op lists (PyTorch's documentation, torch.amp) ----------------------------------------------------------
#: CPU ops that autocast to the lower-precision dtype ("CPU Ops that can autocast to bfloat16")
CPU_LOWER_PRECISION: tuple[str, ...] = (
    "conv1d", "conv2d", "conv3d", "bmm", "mm", "linalg_vecdot", "baddbmm", "addmm", "addbmm", "linear",
    "_convolution", "matmul", "conv_tbc", "mkldnn_rnn_layer", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "prelu", "scaled_dot_product_attention", "_native_multi_head_attention",
)  # fmt: skip
#: CPU ops that autocast to float32 ("CPU Ops that can autocast to float32")
CPU_FLOAT32: tuple[str, ...] = (
    "avg_pool3d", "binary_cross_entropy", "grid_sampler", "polar", "prod", "quantile", "nanquantile", "stft",
    "cdist", "trace", "view_as_complex", "cholesky", "cholesky_inverse", "cholesky_solve", "inverse", "lu_solve",
    "orgqr", "ormqr", "pinverse", "max_pool3d", "max_unpool2d", "max_unpool3d", "adaptive_avg_pool3d",
    "reflection_pad1d", "reflection_pad2d", "replication_pad1d", "replication_pad2d", "replication_pad3d",
    "mse_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d", "hinge_embedding_loss", "poisson_nll_loss",
    "smooth_l1_loss", "cross_entropy_loss", "l1_loss", "huber_loss", "margin_ranking_loss", "soft_margin_loss",
    "triplet_margin_loss", "multi_margin_loss", "ctc_loss", "kl_div", "multilabel_margin_loss",
    "binary_cross_entropy_with_logits", "fft_fft", "fft_ifft", "fft_fft2", "fft_ifft2", "fft_fftn", "fft_ifftn",
    "fft_rfft", "fft_irfft", "fft_rfft2", "fft_irfft2", "fft_rfftn", "fft_irfftn", "fft_hfft", "fft_ihfft",
    "linalg_cond", "linalg_matrix_rank", "linalg_solve", "linalg_cholesky", "linalg_svdvals", "linalg_eigvals",
    "linalg_eigvalsh", "linalg_inv", "linalg_householder_product", "linalg_tensorinv", "linalg_tensorsolve",
    "fake_quantize_per_tensor_affine", "geqrf", "_lu_with_info", "qr", "svd", "triangular_solve",
    "fractional_max_pool2d", "fractional_max_pool3d", "adaptive_max_pool3d", "multilabel_margin_loss_forward",
    "linalg_qr", "linalg_cholesky_ex", "linalg_svd", "linalg_eig", "linalg_eigh", "linalg_lstsq", "linalg_inv_ex",
)  # fmt: skip
#: CPU ops that run in the widest floating dtype of their inputs
CPU_PROMOTE: tuple[str, ...] = ("stack", "cat", "index_copy")
#: CUDA (Lucid: GPU) ops that autocast to the lower-precision dtype ("CUDA Ops that can autocast to float16")
GPU_LOWER_PRECISION: tuple[str, ...] = (
    "__matmul__", "addbmm", "addmm", "addmv", "addr", "baddbmm", "bmm", "chain_matmul", "multi_dot", "conv1d",
    "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "GRUCell", "linear",
    "LSTMCell", "matmul", "mm", "mv", "prelu", "RNNCell", "scaled_dot_product_attention",
)  # fmt: skip
#: CUDA ops that autocast to float32 ("CUDA Ops that can autocast to float32")
GPU_FLOAT32: tuple[str, ...] = (
    "__pow__", "__rdiv__", "__rpow__", "__rtruediv__", "acos", "asin", "binary_cross_entropy_with_logits", "cosh",
    "cosine_embedding_loss", "cdist", "cosine_similarity", "cross_entropy", "cumprod", "cumsum", "dist", "erfinv",
    "exp", "expm1", "group_norm", "hinge_embedding_loss", "kl_div", "l1_loss", "layer_norm", "log", "log_softmax",
    "log10", "log1p", "log2", "margin_ranking_loss", "mse_loss", "multilabel_margin_loss", "multi_margin_loss",
    "nll_loss", "norm", "normalize", "pdist", "poisson_nll_loss", "pow", "prod", "reciprocal", "rsqrt", "sinh",
    "smooth_l1_loss", "soft_margin_loss", "softmax", "softmin", "softplus", "sum", "renorm", "tan",
    "triplet_margin_loss",
)  # fmt: skip
#: CUDA ops that promote to the widest input type ("CUDA Ops that promote to the widest input type")
GPU_PROMOTE: tuple[str, ...] = (
    "addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "grid_sample", "index_put", "scatter_add",
    "tensordot", "cat", "stack", "index_copy",
)  # fmt: skip


def _policy(lower: tuple[str, ...], f32: tuple[str, ...], promote: tuple[str, ...]) -> dict[str, str]:
    table = {name: "promote" for name in promote}
    table.update({name: "float32" for name in f32})
    table.update({name: "lower" for name in lower})
    return table


#: Lucid device type -> op name -> ``"lower"``, ``"float32"`` or ``"promote"``
POLICY: dict[str, dict[str, str]] = {
    "cpu": _policy(CPU_LOWER_PRECISION, CPU_FLOAT32, CPU_PROMOTE),
    "gpu": _policy(GPU_LOWER_PRECISION, GPU_FLOAT32, GPU_PROMOTE),
}

#: PyTorch's device-type names -> Lucid's device types (a tensor's ``device.type``)
_DEVICE_TYPES = {"cpu": "cpu", "cuda": "gpu", "mps": "gpu", "xpu": "gpu", "gpu": "gpu"}
#: the lower-precision dtypes autocast accepts, as PyTorch's CPU autocast does
_SUPPORTED = (dt.bfloat16, dt.float16)


# -- state: per thread, as PyTorch's; `active` counts the (thread, device type) pairs enabled anywhere ----------
class _State(threading.local):
    def __init__(self) -> None:
        self.enabled: dict[str, bool] = {"cpu": False, "gpu": False}
        self.dtype: dict[str, dt.DType] = {"cpu": dt.bfloat16, "gpu": dt.float16}
        self.cache_enabled = True
        self.nesting = 0
        self.cache: dict[int, tuple[Tensor, dt.DType, Tensor]] = {}
        self.suspended = 0


_state = _State()
_count_lock = threading.Lock()
#: how many (thread, device type) pairs have autocast enabled: 0 means no op needs to look further
active = 0


def _lucid_type(device_type: str) -> str:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    try:
        return _DEVICE_TYPES[device_type.split(":")[0].lower()]
    except KeyError:
        raise RuntimeError(
            f"User specified an unsupported autocast device_type '{device_type}'; "
            f"expected one of {sorted(_DEVICE_TYPES)}"
        ) from None


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast knows ``device_type`` (``"cpu"``, and ``"cuda"``/``"mps"``/``"gpu"`` for GPUs)."""
    return isinstance(device_type, str) and device_type.split(":")[0].lower() in _DEVICE_TYPES


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether autocast is on for ``device_type`` in this thread (PyTorch's default argument: ``"cuda"``)."""
    return _state.enabled[_lucid_type(device_type)]


def set_autocast_enabled(device_type: str, enabled: bool) -> None:
    """Turn autocast on or off for ``device_type`` in this thread (what ``autocast`` does on entry and exit)."""
    global active
    kind = _lucid_type(device_type)
    enabled = bool(enabled)
    if _state.enabled[kind] is enabled:
        return
    _state.enabled[kind] = enabled
    with _count_lock:
        active += 1 if enabled else -1


def get_autocast_dtype(device_type: str) -> dt.DType:
    """The dtype autocast casts lower-precision ops to on ``device_type`` (bfloat16 on the CPU by default)."""
    return _state.dtype[_lucid_type(device_type)]


def set_autocast_dtype(device_type: str, dtype: dt.DType) -> None:
    """Set the lower-precision dtype for ``device_type`` in this thread."""
    _state.dtype[_lucid_type(device_type)] = dtype


def is_autocast_cache_enabled() -> bool:
    """Whether casts of parameters (leaf tensors that require grad) are cached inside autocast regions."""
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Turn the cast cache on or off in this thread."""
    _state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop the cached casts (the outermost ``autocast`` does it on exit)."""
    _state.cache.clear()


def device_available(device_type: str) -> bool:
    """Whether an installed backend has a device of ``device_type``'s kind (``"cuda"``: any GPU backend)."""
    from ._registry import backends

    kind = _lucid_type(device_type)
    return any(d.endswith(":" + kind) for info in backends() for d in info.devices)


class autocast:  # noqa: N801 - PyTorch's name
    """A region (context manager or decorator) in which listed ops run in mixed precision, as ``torch.autocast``.

    Args:
        device_type: ``"cpu"``, or ``"cuda"``/``"mps"``/``"gpu"`` for a GPU backend's devices.
        dtype: the lower-precision dtype (default: bfloat16 on the CPU, float16 on GPUs); bfloat16 and float16
            are supported, anything else warns and disables the region, as PyTorch does.
        enabled: False makes the region turn autocast off (e.g. nested in an enabled one).
        cache_enabled: whether casts of parameters are cached within the region (default: the current setting).
    """

    def __init__(
        self, device_type: str, dtype: dt.DType | None = None, enabled: bool = True, cache_enabled: bool | None = None
    ) -> None:
        self.device = device_type
        self._kind = _lucid_type(device_type)
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dt.as_dtype(dtype)
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        if enabled:
            name = device_type.upper()
            if self._kind == "gpu" and not device_available(device_type):
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
                enabled = False
            elif self.fast_dtype not in _SUPPORTED:
                warnings.warn(
                    f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                    f"{name} Autocast only supports dtypes of lucid.bfloat16, lucid.float16 currently.",
                    stacklevel=2,
                )
                enabled = False
        self._enabled = bool(enabled)

    def __enter__(self) -> autocast:
        self._prev = (_state.enabled[self._kind], _state.dtype[self._kind], _state.cache_enabled)
        set_autocast_enabled(self.device, self._enabled)
        _state.dtype[self._kind] = self.fast_dtype
        _state.nesting += 1
        _state.cache_enabled = self._cache_enabled
        return self

    def __exit__(self, *exc: object) -> None:
        _state.nesting -= 1
        if _state.nesting == 0:
            _state.cache.clear()
        enabled, _state.dtype[self._kind], _state.cache_enabled = self._prev
        set_autocast_enabled(self.device, enabled)

    def __call__(self, func: F) -> F:
        """Use as a decorator: ``func`` runs inside this region."""

        @functools.wraps(func)
        def decorated(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return decorated  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"autocast(device_type={self.device!r}, dtype={self.fast_dtype}, enabled={self._enabled})"


# -- the cast at an op's entry -------------------------------------------------------------------------------------
def _rule(kind: str, op: str | tuple[str, ...]) -> str | None:
    table = POLICY[kind]
    if isinstance(op, str):
        return table.get(op)
    return next((table[name] for name in op if name in table), None)


def _target(op: str | tuple[str, ...], tensors: list[Tensor]) -> dict[str, dt.DType]:
    """Per Lucid device type in use: the dtype ``op``'s floating tensors go to (none: leave them)."""
    out: dict[str, dt.DType] = {}
    for t in tensors:
        kind = t._device.type
        if kind in out or not _state.enabled.get(kind, False):
            continue
        rule = _rule(kind, op)
        if rule == "lower":
            out[kind] = _state.dtype[kind]
        elif rule == "float32":
            out[kind] = dt.float32
        elif rule == "promote":
            floats = [u.dtype for u in tensors if u._device.type == kind and _eligible(u)]
            if floats:
                out[kind] = dt.result_type(*floats)
    return out


def _eligible(t: Tensor) -> bool:
    d = t.dtype
    return d.kind == "f" and d is not dt.float64


def _cast(t: Tensor, targets: dict[str, dt.DType]) -> Tensor:
    to = targets.get(t._device.type)
    if to is None or t.dtype is to or not _eligible(t):
        return t
    cacheable = _state.cache_enabled and t.requires_grad and t.is_leaf
    if cacheable:
        hit = _state.cache.get(id(t))
        if hit is not None and hit[0] is t and hit[1] is to:
            return hit[2]
    out = t.astype(to)
    if cacheable:
        _state.cache[id(t)] = (t, to, out)  # holding ``t`` keeps its id from being reused while cached
    return out


def _tensors_in(values: Any) -> list[Tensor]:
    found: list[Tensor] = []
    for v in values:
        if isinstance(v, Tensor):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            found.extend(u for u in v if isinstance(u, Tensor))
    return found


def _cast_value(v: Any, targets: dict[str, dt.DType]) -> Any:
    if isinstance(v, Tensor):
        return _cast(v, targets)
    if isinstance(v, (list, tuple)) and any(isinstance(u, Tensor) for u in v):
        return type(v)(_cast(u, targets) if isinstance(u, Tensor) else u for u in v)
    return v


def cast_inputs(
    op: str | tuple[str, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``op``'s arguments with their floating tensors cast as the open autocast regions say (unchanged if none).

    ``op`` is PyTorch's name of the op, or several names (the CPU and CUDA lists spell some ops differently).
    """
    if _state.suspended or not any(_state.enabled.values()):
        return args, kwargs
    tensors = _tensors_in(args) + _tensors_in(kwargs.values())
    targets = _target(op, tensors)
    if not targets:
        return args, kwargs
    args = tuple(_cast_value(a, targets) for a in args)
    kwargs = {k: _cast_value(v, targets) for k, v in kwargs.items()}
    return args, kwargs


class _Suspended:
    """Autocast off for the body of an op that has already cast its inputs."""

    __slots__ = ()

    def __enter__(self) -> None:
        _state.suspended += 1

    def __exit__(self, *exc: object) -> None:
        _state.suspended -= 1


suspended = _Suspended()


def autocast_op(*names: str) -> Callable[[F], F]:
    """Decorate the Lucid function that implements PyTorch's op ``names[0]`` (further names: its spellings in the
    other device's list, e.g. ``"cross_entropy_loss", "cross_entropy"``), each a name in :data:`POLICY`'s lists.

    When no autocast region is open anywhere, the wrapper costs one test of :data:`active`.
    """
    unknown = [n for n in names if not any(n in table for table in POLICY.values())]
    if not names or unknown:
        raise ValueError(f"autocast_op: {unknown or names} is on none of PyTorch's autocast lists (amp.POLICY)")
    op: str | tuple[str, ...] = names[0] if len(names) == 1 else names

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            if not active or _state.suspended:
                return fn(*args, **kwargs)
            args, kwargs = cast_inputs(op, args, kwargs)
            with suspended:
                return fn(*args, **kwargs)

        run.__autocast_op__ = op  # type: ignore[attr-defined]
        return run  # type: ignore[return-value]

    return decorate
