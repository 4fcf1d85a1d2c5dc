"""A Lucid backend over PyTorch tensors, through ``array_api_compat.torch``.

Devices: ``torch:cpu`` and, when CUDA is available, ``torch:gpu`` (the default then). PyTorch's
own kernels replace Lucid's generic ones where they exist (einsum, erf, logsumexp, the scatter-add
behind indexing gradients, convolutions and their two gradient products, softmax, layer norm, GELU),
and random numbers come from a ``torch.Generator`` per device.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lucid_core import hookimpl
from lucid_core.backend import ArrayAPIBackend, Backend, generic_index_add


class TorchBackend(ArrayAPIBackend):
    """PyTorch as a Lucid backend; torch is imported on first use."""

    def __init__(self) -> None:
        super().__init__(self._namespace, name="torch", device_types=("cpu",))

    @staticmethod
    def _namespace() -> Any:
        import array_api_compat.torch as xp

        return xp

    def load(self) -> None:
        import torch

        if torch.cuda.is_available():
            self.device_types = ("gpu", "cpu")
            self.native_devices = {"gpu": torch.device("cuda"), "cpu": torch.device("cpu")}
        super().load()
        # PyTorch's uint16/32/64 are shell dtypes: they can be created and cast, but most kernels
        # (sum, for one) are missing, so the backend does not advertise them
        for d in ("uint16", "uint32", "uint64"):
            self.dtypes = {k: v for k, v in self.dtypes.items() if k.name != d}
        self.torch = torch
        self._gens: dict[str, Any] = {}
        self.kernels.update(
            einsum=torch.einsum,
            erf=torch.erf,
            logsumexp=lambda x, axes, keepdims: torch.logsumexp(x, dim=axes, keepdim=keepdims) if axes else x,
            index_add=self._index_add,
            **_conv_kernels(torch),
            # the fused nn kernels (lucid_core.kernels): PyTorch's own, same contracts
            softmax=lambda x, axis: torch.softmax(x, dim=axis),
            log_softmax=lambda x, axis: torch.log_softmax(x, dim=axis),
            layer_norm=lambda x, weight, bias, eps: torch.native_layer_norm(x, x.shape[-1:], weight, bias, eps),
            gelu=lambda x, approximate: torch.nn.functional.gelu(x, approximate=approximate),
        )

    def _index_add(self, z: Any, key: Any, values: Any) -> Any:
        keys = key if isinstance(key, tuple) else (key,)
        if all(hasattr(k, "dtype") for k in keys):
            return z.index_put_(keys, values, accumulate=True)  # repeated indices accumulate
        return generic_index_add(self.xp, z, key, values)

    def to_numpy(self, array: Any) -> Any:
        return array.detach().cpu().numpy()

    def move(self, array: Any, source: Any, device: Any) -> Any:
        return array.to(device.native or "cpu")

    def from_foreign(self, array: Any, source: Backend, device: Any) -> Any:
        out = self.torch.tensor(source.to_numpy(array))  # a copy: the source may be read-only
        return out.to(device.native) if device.native is not None else out

    def _gen(self, device: Any) -> Any:
        key = str(device)
        if key not in self._gens:
            self._gens[key] = self.torch.Generator(device=device.native or "cpu")
            self._gens[key].manual_seed(self._seed)
        return self._gens[key]

    def seed(self, seed: int) -> None:
        self._seed = seed
        self._gens = {}

    def get_rng_state(self) -> Any:
        return {k: g.get_state() for k, g in self._gens.items()}

    def set_rng_state(self, state: Any) -> None:
        for k, s in state.items():
            self._gen(self.devices[k.split(":")[1]]).set_state(s)

    def random_normal(self, shape: tuple[int, ...], dtype: Any, device: Any) -> Any:
        g = self._gen(device)
        return self.torch.randn(shape, generator=g, dtype=self.native_dtype(dtype), device=g.device)

    def random_uniform(self, shape: tuple[int, ...], dtype: Any, device: Any) -> Any:
        g = self._gen(device)
        return self.torch.rand(shape, generator=g, dtype=self.native_dtype(dtype), device=g.device)

    def random_integers(self, low: int, high: int, shape: tuple[int, ...], dtype: Any, device: Any) -> Any:
        g = self._gen(device)
        return self.torch.randint(low, high, shape, generator=g, dtype=self.native_dtype(dtype), device=g.device)

    _seed = 0


def _conv_kernels(torch: Any) -> dict[str, Callable[..., Any]]:
    """Lucid's convolution kernels through ``torch.nn.functional.conv{1,2,3}d`` and ``torch.nn.grad``.

    PyTorch pads both sides of an axis alike: uneven ``pads`` pad the input first (and crop the input
    gradient), so every geometry Lucid accepts works.
    """
    functional = torch.nn.functional
    grad = torch.nn.grad
    conv = {1: functional.conv1d, 2: functional.conv2d, 3: functional.conv3d}
    input_grad = {1: grad.conv1d_input, 2: grad.conv2d_input, 3: grad.conv3d_input}
    weight_grad = {1: grad.conv1d_weight, 2: grad.conv2d_weight, 3: grad.conv3d_weight}

    def even(pads: Any) -> list[int] | None:
        return [b for b, _ in pads] if all(b == a for b, a in pads) else None

    def padded(x: Any, pads: Any) -> Any:
        return functional.pad(x, [v for b, a in reversed(pads) for v in (b, a)])  # last axis first

    def conv_bias(x: Any, w: Any, b: Any, stride: Any, dilation: Any, pads: Any, groups: int) -> Any:
        nd, p = x.ndim - 2, even(pads)
        if p is None:
            x, p = padded(x, pads), [0] * (x.ndim - 2)
        return conv[nd](x, w, b, list(stride), p, list(dilation), groups)

    def conv_(x: Any, w: Any, stride: Any, dilation: Any, pads: Any, groups: int) -> Any:
        return conv_bias(x, w, None, stride, dilation, pads, groups)

    def conv_input_grad(gy: Any, w: Any, size: Any, stride: Any, dilation: Any, pads: Any, groups: int) -> Any:
        nd, p = gy.ndim - 2, even(pads)
        shape = [gy.shape[0], w.shape[1] * groups]
        if p is not None:
            return input_grad[nd](shape + list(size), w, gy, list(stride), p, list(dilation), groups)
        full = [s + b + a for s, (b, a) in zip(size, pads)]
        g = input_grad[nd](shape + full, w, gy, list(stride), 0, list(dilation), groups)
        return g[(slice(None), slice(None), *(slice(b, b + s) for s, (b, _) in zip(size, pads)))]

    def conv_weight_grad(x: Any, gy: Any, kernel: Any, stride: Any, dilation: Any, pads: Any, groups: int) -> Any:
        nd, p = x.ndim - 2, even(pads)
        if p is None:
            x, p = padded(x, pads), [0] * nd
        shape = [gy.shape[1], x.shape[1] // groups, *kernel]
        return weight_grad[nd](x, shape, gy, list(stride), p, list(dilation), groups)

    return {
        "conv": conv_,
        "conv_bias": conv_bias,
        "conv_input_grad": conv_input_grad,
        "conv_weight_grad": conv_weight_grad,
    }


@hookimpl
def lucid_register_backends(register: Callable[[Backend], None]) -> None:
    """Register the ``torch`` backend."""
    register(TorchBackend())
