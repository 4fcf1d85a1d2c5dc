"""The Array API ``fft`` extension, with gradients (PyTorch's conjugate convention for complex tensors).

Transforms run through the backend namespace's ``xp.fft``; a backend without the extension
raises ``NotImplementedError`` naming it. The gradient of a transform is the adjoint
transform with the dual normalisation (``"backward"`` <-> ``"forward"``), cut or zero-padded
back to the input's length; a real input gets the real part, as in PyTorch.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any, Literal

from . import _dtypes as dt
from ._autograd import Function
from ._tensor import Tensor, check_tensor
from ._typing import DeviceLike, DTypeLike
from .amp import autocast_op
from .ops.complex import imag as imag_
from .ops.complex import real
from .ops.creation import asarray, zeros
from .ops.elementwise import abs as abs_
from .ops.elementwise import conj
from .ops.manipulation import concat, reshape, roll

__all__ = [
    "fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
    "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]  # fmt: skip

Norm = Literal["backward", "ortho", "forward"]
_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _kernel(ctx: Any, name: str) -> Any:
    fn = getattr(getattr(ctx.xp, "fft", None), name, None)
    if fn is None:
        raise NotImplementedError(
            f"fft.{name}: backend {ctx.device.backend.name!r} does not provide fft.{name} "
            "(its Array API namespace lacks the fft extension or this function)"
        )
    return fn


def _fit(g: Tensor, axis: int, size: int) -> Tensor:
    """Cut or zero-pad ``g`` along ``axis`` to ``size`` (the adjoint of the transform's own cut/pad)."""
    cur = g.shape[axis]
    if cur == size:
        return g
    if cur > size:
        key = (slice(None),) * axis + (slice(0, size),)
        return g[key]
    shape = list(g.shape)
    shape[axis] = size - cur
    return concat([g, zeros(tuple(shape), dtype=g.dtype, device=g.device)], axis=axis)


def _fit_all(g: Tensor, axes: Sequence[int], shape: Sequence[int]) -> Tensor:
    for a in axes:
        g = _fit(g, a, shape[a])
    return g


def _check(x: Any, name: str, norm: str) -> Tensor:
    check_tensor(x, f"fft.{name}")
    if x.dtype.kind not in "fc":
        raise TypeError(f"fft.{name}: expected a floating-point or complex tensor, got {x.dtype.name}")
    if norm not in _DUAL:
        raise ValueError(f"fft.{name}: norm must be 'backward', 'ortho' or 'forward', got {norm!r}")
    return x


def _axes_and_sizes(x: Tensor, s: Sequence[int] | None, axes: Sequence[int] | None, name: str) -> tuple[Any, Any]:
    """Normalised axes and output lengths of an n-dimensional transform."""
    if axes is None:
        axes = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    axes = tuple(a % x.ndim for a in axes)
    if s is None:
        s = tuple(x.shape[a] for a in axes)
    elif len(s) != len(axes):
        raise ValueError(f"fft.{name}: s has {len(s)} entries but axes has {len(axes)}")
    s = tuple(x.shape[a] if n == -1 else n for n, a in zip(s, axes))
    return axes, s


class _C2C(Function):
    """fft/ifft/fftn/ifftn: complex-to-complex transforms."""

    native = True
    linear = True  # forward mode: the op itself on the tangents

    @staticmethod
    def forward(ctx, x, inverse, s, axes, norm):
        return _kernel(ctx, "ifftn" if inverse else "fftn")(x, s=s, axes=axes, norm=norm)

    @staticmethod
    def backward(ctx, gy):
        x, inverse, _s, axes, norm = ctx.inputs
        g = _C2C.apply(gy, not inverse, tuple(gy.shape[a] for a in axes), axes, _DUAL[norm])
        g = _fit_all(g, axes, x.shape)
        return (real(g) if x.dtype.kind == "f" else g), None, None, None, None


class _R2C(Function):
    """rfft/rfftn: real input, one-sided complex output along the last transformed axis."""

    native = True
    linear = True  # forward mode: the op itself on the tangents

    @staticmethod
    def forward(ctx, x, s, axes, norm):
        return _kernel(ctx, "rfftn")(x, s=s, axes=axes, norm=norm)

    @staticmethod
    def backward(ctx, gy):
        x, s, axes, norm = ctx.inputs
        g = _fit(gy, axes[-1], s[-1])  # the dropped negative frequencies get zero gradient
        g = real(_C2C.apply(g, True, tuple(s), axes, _DUAL[norm]))
        return _fit_all(g, axes, x.shape), None, None, None


class _C2R(Function):
    """irfft/irfftn: one-sided complex input, real output of lengths ``s``."""

    native = True
    linear = True  # forward mode: the op itself on the tangents

    @staticmethod
    def forward(ctx, x, s, axes, norm):
        return _kernel(ctx, "irfftn")(x, s=s, axes=axes, norm=norm)

    @staticmethod
    def backward(ctx, gy):
        x, s, axes, norm = ctx.inputs
        g = _R2C.apply(gy, tuple(gy.shape[a] for a in axes), axes, _DUAL[norm])
        # each interior frequency stands for itself and its mirrored conjugate
        last = axes[-1]
        half = g.shape[last]
        doubled = s[-1] - half
        w = [1.0] + [2.0] * doubled + [1.0] * (half - 1 - doubled) if half else []
        wshape = [1] * g.ndim
        wshape[last] = half
        wdt = dt.float64 if g.dtype is dt.complex128 else dt.float32
        g = g * reshape(asarray(w, dtype=wdt, device=g.device), tuple(wshape))
        return _fit_all(g, axes, x.shape), None, None, None


@autocast_op("fft_fft")
def fft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Tensor:
    """The one-dimensional discrete Fourier transform along ``axis`` (cut or zero-padded to ``n``)."""
    x = _check(x, "fft", norm)
    return fftn(x, s=None if n is None else (n,), axes=(axis,), norm=norm)


@autocast_op("fft_ifft")
def ifft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Tensor:
    """The one-dimensional inverse discrete Fourier transform."""
    x = _check(x, "ifft", norm)
    return ifftn(x, s=None if n is None else (n,), axes=(axis,), norm=norm)


@autocast_op("fft_fftn")
def fftn(
    x: Tensor, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = "backward"
) -> Tensor:
    """The n-dimensional discrete Fourier transform over ``axes`` (all axes by default)."""
    x = _check(x, "fftn", norm)
    ax, sz = _axes_and_sizes(x, s, axes, "fftn")
    return _C2C.apply(x, False, sz, ax, norm)


@autocast_op("fft_ifftn")
def ifftn(
    x: Tensor, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = "backward"
) -> Tensor:
    """The n-dimensional inverse discrete Fourier transform."""
    x = _check(x, "ifftn", norm)
    ax, sz = _axes_and_sizes(x, s, axes, "ifftn")
    return _C2C.apply(x, True, sz, ax, norm)


def _real_input(x: Tensor, name: str) -> None:
    if x.dtype.kind != "f":
        raise TypeError(f"fft.{name}: expected a real floating-point tensor, got {x.dtype.name}")


@autocast_op("fft_rfft")
def rfft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Tensor:
    """The one-dimensional transform of a real signal: the ``n // 2 + 1`` non-negative frequencies."""
    x = _check(x, "rfft", norm)
    return rfftn(x, s=None if n is None else (n,), axes=(axis,), norm=norm)


@autocast_op("fft_rfftn")
def rfftn(
    x: Tensor, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = "backward"
) -> Tensor:
    """The n-dimensional transform of a real signal (one-sided along the last of ``axes``)."""
    x = _check(x, "rfftn", norm)
    _real_input(x, "rfftn")
    ax, sz = _axes_and_sizes(x, s, axes, "rfftn")
    return _R2C.apply(x, sz, ax, norm)


@autocast_op("fft_irfft")
def irfft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Tensor:
    """The inverse of :func:`rfft`: a real signal of length ``n`` (default ``2 * (m - 1)``)."""
    x = _check(x, "irfft", norm)
    return irfftn(x, s=None if n is None else (n,), axes=(axis,), norm=norm)


@autocast_op("fft_irfftn")
def irfftn(
    x: Tensor, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: Norm = "backward"
) -> Tensor:
    """The inverse of :func:`rfftn`; the last output length defaults to ``2 * (m - 1)``."""
    x = _check(x, "irfftn", norm)
    if x.dtype.kind == "f":
        x = x.astype(dt.complex128 if x.dtype is dt.float64 else dt.complex64)
    ax, sz = _axes_and_sizes(x, s, axes, "irfftn")
    if s is None:
        sz = (*sz[:-1], 2 * (x.shape[ax[-1]] - 1))
    return _C2R.apply(x, sz, ax, norm)


@autocast_op("fft_hfft")
def hfft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Tensor:
    """The transform of a Hermitian-symmetric signal given by its first half: a real spectrum."""
    x = _check(x, "hfft", norm)
    if x.dtype.kind == "f":
        x = x.astype(dt.complex128 if x.dtype is dt.float64 else dt.complex64)
    return irfft(conj(x), n=n, axis=axis, norm=_DUAL[norm])  # type: ignore[arg-type]


@autocast_op("fft_ihfft")
def ihfft(x: Tensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Tensor:
    """The inverse of :func:`hfft`: the first half of a Hermitian-symmetric spectrum of a real signal."""
    x = _check(x, "ihfft", norm)
    return conj(rfft(x, n=n, axis=axis, norm=_DUAL[norm]))  # type: ignore[arg-type]


def _freq_tensor(values: list[float], dtype: DTypeLike, device: DeviceLike) -> Tensor:
    d = dt.default_float if dtype is None else dt.as_dtype(dtype)
    if d.kind != "f":
        raise TypeError(f"fft: frequencies need a real floating-point dtype, got {d.name}")
    return asarray(values, dtype=d, device=device)


def fftfreq(n: int, /, *, d: float = 1.0, dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """The sample frequencies of an ``n``-point transform with sample spacing ``d``."""
    if not isinstance(n, int) or isinstance(n, builtins.bool) or n <= 0:
        raise ValueError(f"fft.fftfreq: n must be a positive int, got {n!r}")
    k = list(range((n - 1) // 2 + 1)) + list(range(-(n // 2), 0))
    return _freq_tensor([i / (d * n) for i in k], dtype, device)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """The non-negative sample frequencies of an ``n``-point :func:`rfft`."""
    if not isinstance(n, int) or isinstance(n, builtins.bool) or n <= 0:
        raise ValueError(f"fft.rfftfreq: n must be a positive int, got {n!r}")
    return _freq_tensor([i / (d * n) for i in range(n // 2 + 1)], dtype, device)


def _shift(x: Tensor, axes: int | Sequence[int] | None, sign: int, name: str) -> Tensor:
    check_tensor(x, f"fft.{name}")
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, int):
        axes = (axes,)
    axes = tuple(axes)
    if not axes:
        return x
    return roll(x, shift=tuple(sign * (x.shape[a] // 2) for a in axes), axis=axes)


def fftshift(x: Tensor, /, *, axes: int | Sequence[int] | None = None) -> Tensor:
    """Move the zero frequency to the centre (along ``axes``, all by default)."""
    return _shift(x, axes, 1, "fftshift")


def ifftshift(x: Tensor, /, *, axes: int | Sequence[int] | None = None) -> Tensor:
    """The inverse of :func:`fftshift`."""
    return _shift(x, axes, -1, "ifftshift")


# -- short-time transforms (PyTorch's torch.stft / torch.istft) -------------------------------------------


def _frame_index(n_frames: int, n_fft: int, hop: int, device: Any) -> Tensor:
    """(frames, n_fft) int64 positions of each frame's samples: ``hop * f + k``."""
    from .ops.creation import arange

    starts = reshape(arange(n_frames, device=device) * hop, (n_frames, 1))
    return starts + reshape(arange(n_fft, device=device), (1, n_fft))


class _OverlapAdd(Function):
    """(B, frames, n_fft) -> (B, length): each frame added in at its positions (the adjoint of framing)."""

    native = True
    linear = True  # forward mode: the op itself on the tangents

    @staticmethod
    def forward(ctx, frames, index, length):
        from . import kernels

        xp = ctx.xp
        z = xp.zeros((frames.shape[0], length), dtype=frames.dtype)
        return kernels.call(ctx.device, "index_add", z, (slice(None), index), frames)

    @staticmethod
    def backward(ctx, gy):
        _, index, _ = ctx.inputs
        return gy[:, index], None, None


def _pad_signal(x: Tensor, p: int, mode: str) -> Tensor:
    """``x`` (B, L) padded by ``p`` on both ends: 'reflect', 'constant', 'replicate' or 'circular'."""
    from .ops.manipulation import broadcast_to, flip

    if p == 0:
        return x
    length = x.shape[-1]
    if mode == "reflect":
        if p >= length:
            raise ValueError(f"stft: reflect padding of {p} needs more than {p} samples, got {length}")
        left, right = flip(x[:, 1 : p + 1], axis=-1), flip(x[:, length - p - 1 : length - 1], axis=-1)
    elif mode == "constant":
        left = right = zeros((x.shape[0], p), dtype=x.dtype, device=x.device)
    elif mode == "replicate":
        left = broadcast_to(x[:, :1], (x.shape[0], p))
        right = broadcast_to(x[:, length - 1 :], (x.shape[0], p))
    elif mode == "circular":
        left, right = x[:, length - p :], x[:, :p]
    else:
        raise ValueError(f"stft: pad_mode must be 'reflect', 'constant', 'replicate' or 'circular', got {mode!r}")
    return concat([left, x, right], axis=-1)


def _window_for(window: Tensor | None, win_length: int, n_fft: int, like: Tensor) -> Tensor:
    """The window of ``win_length`` samples (ones by default), zero-padded to ``n_fft`` around the centre."""
    from .ops.creation import ones

    if window is None:
        window = ones(
            (win_length,), dtype=real(like).dtype if like.dtype.kind == "c" else like.dtype, device=like.device
        )
    if window.ndim != 1 or window.shape[0] != win_length:
        raise ValueError(f"stft: expected a 1-D window of win_length = {win_length} samples, got {window.shape}")
    if win_length > n_fft:
        raise ValueError(f"stft: win_length ({win_length}) must not exceed n_fft ({n_fft})")
    left = (n_fft - win_length) // 2
    if win_length == n_fft:
        return window
    z = zeros((n_fft,), dtype=window.dtype, device=window.device)
    return concat([z[:left], window, z[: n_fft - win_length - left]], axis=0)


def stft(
    x: Tensor,
    /,
    n_fft: int,
    *,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: builtins.bool = True,
    pad_mode: str = "reflect",
    normalized: builtins.bool = False,
    onesided: builtins.bool | None = None,
) -> Tensor:
    """The short-time Fourier transform of a (B, L) or (L,) signal: (B, freqs, frames), complex (PyTorch's
    ``stft`` with ``return_complex=True``); differentiable in ``x`` and ``window``."""
    check_tensor(x, "stft")
    if x.ndim not in (1, 2):
        raise ValueError(f"stft: expected a 1-D or 2-D (batch, time) signal, got shape {x.shape}")
    hop = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if hop <= 0 or n_fft <= 0:
        raise ValueError(f"stft: n_fft and hop_length must be positive, got {n_fft} and {hop}")
    batch = x if x.ndim == 2 else reshape(x, (1, x.shape[0]))
    if center:
        batch = _pad_signal(batch, n_fft // 2, pad_mode)
    length = batch.shape[-1]
    if length < n_fft:
        raise ValueError(f"stft: the (padded) signal has {length} samples, fewer than n_fft = {n_fft}")
    n_frames = 1 + (length - n_fft) // hop
    frames = batch[:, _frame_index(n_frames, n_fft, hop, x.device)] * _window_for(window, win_length, n_fft, x)
    side = (x.dtype.kind == "f" and (window is None or window.dtype.kind == "f")) if onesided is None else onesided
    spec = rfft(frames) if side else fft(frames)
    if normalized:
        spec = spec * (1.0 / math.sqrt(n_fft))
    from .ops.manipulation import matrix_transpose

    spec = matrix_transpose(spec)
    return spec if x.ndim == 2 else spec[0]


def istft(
    spec: Tensor,
    /,
    n_fft: int,
    *,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: builtins.bool = True,
    normalized: builtins.bool = False,
    onesided: builtins.bool | None = None,
    length: int | None = None,
    return_complex: builtins.bool = False,
) -> Tensor:
    """The inverse of :func:`stft` by weighted overlap-add: (B, freqs, frames) or (freqs, frames) -> signal."""
    check_tensor(spec, "istft")
    if spec.ndim not in (2, 3) or spec.dtype.kind != "c":
        raise ValueError(
            f"istft: expected a complex (freqs, frames) or (batch, freqs, frames) tensor, got {spec.shape}"
        )
    from .ops.elementwise import where
    from .ops.manipulation import matrix_transpose

    hop = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    batch = spec if spec.ndim == 3 else reshape(spec, (1, *spec.shape))
    side = (batch.shape[1] != n_fft) if onesided is None else onesided
    frames = matrix_transpose(batch)  # (B, frames, freqs)
    if normalized:
        frames = frames * math.sqrt(n_fft)
    if side:
        if return_complex:
            raise ValueError("istft: return_complex=True needs a two-sided (onesided=False) spectrum")
        sig = irfft(frames, n=n_fft)
    else:
        sig = ifft(frames, n=n_fft)
        if not return_complex:
            sig = real(sig)
    n_frames = frames.shape[1]
    w = _window_for(window, win_length, n_fft, real(spec))
    index = _frame_index(n_frames, n_fft, hop, spec.device)
    total = n_fft + hop * (n_frames - 1)
    y = _OverlapAdd.apply(sig * w, index, total)
    env = _OverlapAdd.apply(
        reshape(w * w, (1, 1, n_fft)) * (zeros((1, n_frames, 1), dtype=w.dtype, device=w.device) + 1),
        index,
        total,
    )
    start = n_fft // 2 if center else 0
    end = total - (n_fft // 2 if center else 0) if length is None else start + length
    y, env = y[:, start:end], env[:, start:end]
    small = abs_(env) < 1e-11
    if builtins.bool(small.any().item()):
        raise RuntimeError("istft: the window overlap-add envelope is zero somewhere (window, hop_length mismatch)")
    y = y / where(small, 1.0, env)
    if length is not None and y.shape[-1] < length:
        y = concat([y, zeros((y.shape[0], length - y.shape[-1]), dtype=y.dtype, device=y.device)], axis=-1)
    return y if spec.ndim == 3 else y[0]


def _t_stft(
    input: Tensor,  # noqa: A002 - PyTorch's names
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: builtins.bool = True,
    pad_mode: str = "reflect",
    normalized: builtins.bool = False,
    onesided: builtins.bool | None = None,
    return_complex: builtins.bool | None = None,
) -> Tensor:
    """``torch.stft``: ``return_complex`` must be given for a real input (as PyTorch 2 requires); False gives
    the real and imaginary parts along a new last axis."""
    if return_complex is None and input.dtype.kind != "c" and (window is None or window.dtype.kind != "c"):
        raise RuntimeError(
            "stft requires the return_complex parameter be given for real inputs; pass return_complex=True"
        )
    spec = stft(
        input, n_fft, hop_length=hop_length, win_length=win_length, window=window, center=center,
        pad_mode=pad_mode, normalized=normalized, onesided=onesided,
    )  # fmt: skip
    if return_complex is False:
        from .ops.manipulation import stack

        return stack([real(spec), imag_(spec)], axis=-1)
    return spec


def _t_istft(
    input: Tensor,  # noqa: A002
    n_fft: int,
    hop_length: int | None = None,
    win_length: int | None = None,
    window: Tensor | None = None,
    center: builtins.bool = True,
    normalized: builtins.bool = False,
    onesided: builtins.bool | None = None,
    length: int | None = None,
    return_complex: builtins.bool = False,
) -> Tensor:
    """``torch.istft``: the inverse of ``torch.stft`` (complex input)."""
    return istft(
        input, n_fft, hop_length=hop_length, win_length=win_length, window=window, center=center,
        normalized=normalized, onesided=onesided, length=length, return_complex=return_complex,
    )  # fmt: skip


#: PyTorch's main-namespace short-time transforms, by name; also Tensor methods (``x.stft(...)``).
TORCH_FUNCTIONS = {"stft": _t_stft, "istft": _t_istft}
for _name, _fn in TORCH_FUNCTIONS.items():
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _fn)
del _name, _fn

__all__ += ["stft", "istft"]
