"""MLX kernels of a CNN step: the three convolution products through ``mx.conv_general``.

MLX convolves channels-last arrays (input (N, *S, C), weight (O, *kernel, C/groups)); Lucid's layout is
channels-first, so each kernel moves the channel axis there and back (lazy transposes MLX fuses into the
copy it makes anyway). The two gradient products are MLX's own vector-Jacobian products of the same
convolution, at a zero primal (the products are linear, so the primal's value does not matter).
MLX convolves float32/float16/bfloat16 only, and groups only in 1-D and 2-D: the rest (float64, grouped
3-D) takes the composed defaults. On MLX's CPU device its convolution is slower than the composed
im2col + matmul for the forward and the input gradient (1.5-4x at W2/MNIST sizes, measured; the weight
gradient is ~2x faster), so there those two stay composed unless ``MLXBackend.conv_general_on_cpu``.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from lucid_core.kernels import KERNELS

Pads = tuple[tuple[int, int], ...]


def cnn_kernels(mx: Any, backend: Any) -> dict[str, Callable[..., Any]]:
    """The kernels, closed over ``mlx.core`` and the backend (for the composed float64 fallback)."""
    # the composed defaults use a device only for its namespace and kernel table; the backend's namespace
    # follows the stream the op's forward runs on
    plain = types.SimpleNamespace(backend=backend, xp=backend.xp)

    def composed(name: str) -> Callable[..., Any]:
        default = KERNELS[name].default
        assert default is not None
        return lambda *args: default(plain, *args)

    fallback = {n: composed(n) for n in ("conv", "conv_input_grad", "conv_weight_grad")}
    native_dtypes = (mx.float32, mx.float16, mx.bfloat16)

    def native(a: Any, b: Any, groups: int, cpu_too: bool = True) -> bool:
        # MLX groups channels in 1-D and 2-D convolutions only
        if not cpu_too and not backend.conv_general_on_cpu and mx.default_device().type != mx.DeviceType.gpu:
            return False
        return a.dtype in native_dtypes and b.dtype == a.dtype and (groups == 1 or a.ndim <= 4)

    def last(a: Any) -> Any:
        return mx.moveaxis(a, 1, -1)

    def first(a: Any) -> Any:
        return mx.moveaxis(a, -1, 1)

    def conv_nhwc(xn: Any, wn: Any, stride: Any, dilation: Any, pads: Pads, groups: int) -> Any:
        return mx.conv_general(
            xn,
            wn,
            stride=list(stride),
            padding=([b for b, _ in pads], [a for _, a in pads]),
            kernel_dilation=list(dilation),
            groups=groups,
        )

    def conv(x: Any, w: Any, stride: Any, dilation: Any, pads: Pads, groups: int) -> Any:
        if not native(x, w, groups, cpu_too=False):
            return fallback["conv"](x, w, stride, dilation, pads, groups)
        return first(conv_nhwc(last(x), last(w), stride, dilation, pads, groups))

    def conv_input_grad(gy: Any, w: Any, size: Any, stride: Any, dilation: Any, pads: Pads, groups: int) -> Any:
        if not native(gy, w, groups, cpu_too=False):
            return fallback["conv_input_grad"](gy, w, size, stride, dilation, pads, groups)
        wn = last(w)
        x0 = mx.zeros((gy.shape[0], *tuple(size), w.shape[1] * groups), dtype=gy.dtype)
        _, (gx,) = mx.vjp(lambda a: conv_nhwc(a, wn, stride, dilation, pads, groups), [x0], [last(gy)])
        return first(gx)

    def conv_weight_grad(x: Any, gy: Any, kernel: Any, stride: Any, dilation: Any, pads: Pads, groups: int) -> Any:
        if not native(x, gy, groups):
            return fallback["conv_weight_grad"](x, gy, kernel, stride, dilation, pads, groups)
        xn = last(x)
        w0 = mx.zeros((gy.shape[1], *tuple(kernel), x.shape[1] // groups), dtype=x.dtype)
        _, (gw,) = mx.vjp(lambda a: conv_nhwc(xn, a, stride, dilation, pads, groups), [w0], [last(gy)])
        if gw.shape != w0.shape:  # MLX 0.32's vjp returns a wrong-sized gradient for some strided, unevenly
            # padded geometries (a 1x1 kernel, stride 3, padding (2, 0) on a 1-wide input gave width 2)
            return fallback["conv_weight_grad"](x, gy, kernel, stride, dilation, pads, groups)
        return first(gw)

    return {"conv": conv, "conv_input_grad": conv_input_grad, "conv_weight_grad": conv_weight_grad}
