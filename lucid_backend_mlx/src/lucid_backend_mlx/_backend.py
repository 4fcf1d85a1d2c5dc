"""The MLX backend: lazy arrays on MLX's CPU (float64 included) and, where present, its GPU."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import lucid_core as lc
from lucid_core import DType
from lucid_core.backend import Backend, Device

from ._cnn import cnn_kernels

_MAX_EXACT_RANGE = 1 << 24  # mx.random.randint draws through float32: exact up to 2**24 values


class MLXBackend(Backend):
    """MLX arrays: lazy, unified memory, float64 on the CPU only, complex64 but no complex128.

    Gaps in MLX are filled in :mod:`._namespace` (boolean masks and ``nonzero`` through one host
    sync for the count, integer matmul through float64 on the CPU, float64-accurate exp/sin/cos/erf).
    """

    name = "mlx"
    #: check integer-array indices against the axis size, raising IndexError as NumPy does (MLX reads
    #: memory past the array instead: a silent wrong result); costs one host sync per advanced index, so a
    #: program that has checked its indices itself may turn it off (``lucid_core.get_backend("mlx")``)
    check_index_bounds = True
    #: run the forward convolution and its input gradient through ``mx.conv_general`` on the CPU device
    #: too (on the GPU always); off because MLX's CPU convolution is slower than im2col + matmul there
    conv_general_on_cpu = False
    # the real list is known once MLX is imported (load); "gpu" here lets `resolve_device("gpu")`
    # try this backend before it is loaded
    device_types = ("gpu", "cpu")

    def __init__(self) -> None:
        super().__init__()
        self.capabilities.update({"float64": True, "complex": True, "lazy": True, "data_dependent_shapes": True})

    def load(self) -> None:
        import mlx.core as mx

        from . import _namespace as ns

        self.mx = mx
        self._ns = ns
        self._array = mx.array
        self.array_types = (mx.array,)
        self.device_types = ("gpu", "cpu") if gpu_available(mx) else ("cpu",)
        self.dtypes = {d: ns.DTYPES_BY_NAME[d.name] for d in (
            lc.bool, lc.int8, lc.int16, lc.int32, lc.int64, lc.uint8, lc.uint16, lc.uint32, lc.uint64,
            lc.float16, lc.bfloat16, lc.float32, lc.float64, lc.complex64,
        )}  # fmt: skip
        self.xp = ns.MLXNamespace(None, "mlx:" + self.device_types[0], float64=self.device_types[0] == "cpu")
        self._key = mx.random.key(0)

        def index_add(z: Any, key: Any, values: Any) -> Any:
            return z.at[ns.expand_bool_keys(key)].add(values)

        def getitem(x: Any, key: Any) -> Any:
            key = ns.expand_bool_keys(key)
            if self.check_index_bounds:
                ns.check_index_bounds(x.shape, key)
            return x[key]

        def setitem(x: Any, key: Any, value: Any) -> Any:
            key = ns.expand_bool_keys(key)
            if self.check_index_bounds:
                ns.check_index_bounds(x.shape, key)
            x[key] = value  # in place: tensors sharing this array see it, as with NumPy
            return x

        def cumulative_prod(x: Any, axis: int, include_initial: bool) -> Any:
            return ns.cumulative_prod(x, axis=axis, include_initial=include_initial)

        def shifted(x: Any, axis: int) -> Any:
            m = mx.max(x, axis=axis, keepdims=True)
            return x - mx.where(mx.isinf(m) | mx.isnan(m), mx.zeros_like(m), m)

        def softmax(x: Any, axis: int) -> Any:
            if ns._is_f64(x):  # MLX's fused kernel is float32-accurate only
                e = ns.exp(shifted(x, axis))
                return e / mx.sum(e, axis=axis, keepdims=True)
            return mx.softmax(x, axis=axis, precise=True)

        def log_softmax(x: Any, axis: int) -> Any:
            s = shifted(x, axis)  # exact shift first: x - logsumexp(x) would lose digits at large |x|
            return s - ns.logsumexp(s, (axis,), True)

        self.kernels = {
            "erf": ns.erf,
            "softmax": softmax,
            "log_softmax": log_softmax,
            "sigmoid": ns.sigmoid,
            "logsumexp": ns.logsumexp,
            "einsum": ns.einsum,
            "index_add": index_add,
            "getitem": getitem,
            "setitem": setitem,
            "cumulative_prod": cumulative_prod,
            **cnn_kernels(mx, self),
            **_nn_kernels(mx, self),
        }

    def make_device(self, type: str) -> Device:  # noqa: A002
        mx = self.mx
        native = mx.gpu if type == "gpu" else mx.cpu
        dev = Device(self, type, native)
        if len(self.device_types) == 1:
            dev.xp = self.xp  # one device: MLX's functions unwrapped
        else:
            dev.xp = self._ns.MLXNamespace(native, f"mlx:{type}", float64=type == "cpu")
            # operators and kernels inside an op's forward run on this device's stream
            dev.context = lambda: mx.stream(native)
        return dev

    def device_of(self, array: Any) -> Device:
        """MLX arrays live in unified memory and carry no device: they belong to the default one."""
        return self.default_device

    # -- arrays and host transfer -----------------------------------------------------------------
    def asarray(self, obj: Any, dtype: Any, device: Device, copy: bool | None = None) -> Any:
        native = None if dtype is None else self.native_dtype(dtype)
        return device.xp.asarray(obj, dtype=native, copy=copy)

    def canonical(self, array: Any) -> Any:
        return array if type(array) is self._array else self.mx.array(array)

    def to_list(self, array: Any) -> Any:
        return array.tolist()

    def to_numpy(self, array: Any) -> Any:
        if array.dtype == self.mx.bfloat16:
            # neither DLPack nor the buffer protocol carries bfloat16: its bits go as uint16, typed on the host
            # with ml_dtypes' bfloat16 (the NumPy backend's)
            try:
                ml_dtypes = importlib.import_module("ml_dtypes")
            except ImportError:
                raise ImportError(
                    "a bfloat16 MLX tensor reaches NumPy as an ml_dtypes.bfloat16 array: pip install ml_dtypes "
                    "(or lucid-backend-mlx[host-bfloat16]), or cast it first with .float()"
                ) from None
            host = super().to_numpy(self.mx.view(array, self.mx.uint16))
            return host.view(ml_dtypes.bfloat16)
        return super().to_numpy(array)

    def from_reader(
        self, read_into: Callable[[memoryview], None], dtype: DType, shape: tuple[int, ...], device: Device
    ) -> Any:
        """The bytes go straight into a fresh MLX array: MLX's memory is the host's (unified), and an evaluated
        array exposes it writable through the buffer protocol, so a checkpoint's tensor is held once, not as a
        host buffer plus MLX's copy of it. Dtypes the buffer protocol cannot express take the default path."""
        mx = self.mx
        if dtype.name == "float64" and device.type == "gpu":
            return super().from_reader(read_into, dtype, shape, device)  # refused there with MLX's message
        out = mx.zeros(shape, dtype=self.native_dtype(dtype), stream=device.native)
        mx.eval(out)
        try:
            view = memoryview(out)
        except (TypeError, ValueError, BufferError):
            return super().from_reader(read_into, dtype, shape, device)
        if view.readonly or not view.c_contiguous or view.nbytes != out.nbytes:
            view.release()
            return super().from_reader(read_into, dtype, shape, device)
        try:
            if view.nbytes:
                read_into(view.cast("B"))
        finally:
            view.release()
        return out

    def from_foreign(self, array: Any, source: Backend, device: Device) -> Any:
        # MLX cannot wrap foreign memory: the data is copied once, keeping its dtype (MLX would narrow float64)
        out = device.xp.asarray(source.to_numpy(array))
        return out

    def move(self, array: Any, source: Device, device: Device) -> Any:
        if device.type == "gpu" and array.dtype == self.mx.float64:
            raise TypeError(self._ns.float64_error(str(device)))
        return array  # unified memory: the same buffer serves both devices

    def eval(self, *arrays: Any) -> None:
        if arrays:
            self.mx.eval(*arrays)

    # -- random numbers: a counter-based MLX key, split for each draw ------------------------------
    def seed(self, seed: int) -> None:
        self._key = self.mx.random.key(seed % (1 << 64))

    def get_rng_state(self) -> Any:
        return {"key": self._key.tolist()}

    def set_rng_state(self, state: Any) -> None:
        if not isinstance(state, dict) or "key" not in state:
            raise ValueError("set_rng_state: expected the dict made by MLXBackend.get_rng_state()")
        self._key = self.mx.array(state["key"], dtype=self.mx.uint32)

    def _next_key(self) -> Any:
        keys = self.mx.random.split(self._key)
        self._key = keys[0]
        return keys[1]

    def _check_float(self, dtype: Any, device: Device) -> Any:
        native = self.native_dtype(dtype)
        if native == self.mx.float64 and device.type == "gpu":
            raise TypeError(self._ns.float64_error(str(device)))
        return native

    def _bits(self, shape: tuple[int, ...], device: Device) -> Any:
        """Uniform 54-bit integers (three exact 18-bit draws), for float64 and wide integer ranges."""
        mx = self.mx
        out = None
        for _ in range(3):
            part = mx.random.randint(0, 1 << 18, shape, dtype=mx.int64, key=self._next_key(), stream=device.native)
            out = part if out is None else out * (1 << 18) + part
        return out

    def random_uniform(self, shape: tuple[int, ...], dtype: Any, device: Device) -> Any:
        mx = self.mx
        native = self._check_float(dtype, device)
        if native == mx.float64:
            return self._bits(shape, device).astype(mx.float64) * (2.0**-54)
        u = mx.random.uniform(shape=shape, dtype=mx.float32, key=self._next_key(), stream=device.native)
        return u if native == mx.float32 else u.astype(native)

    def random_normal(self, shape: tuple[int, ...], dtype: Any, device: Device) -> Any:
        mx = self.mx
        native = self._check_float(dtype, device)
        if native == mx.float64:
            # Box-Muller on two float64 uniforms (MLX draws normals in float32 only)
            u1 = 1.0 - self.random_uniform(shape, dtype, device)
            u2 = self.random_uniform(shape, dtype, device)
            return mx.sqrt(-2.0 * mx.log(u1)) * self._ns.cos64(2.0 * 3.141592653589793 * u2)
        z = mx.random.normal(shape=shape, dtype=mx.float32, key=self._next_key(), stream=device.native)
        return z if native == mx.float32 else z.astype(native)

    def random_integers(self, low: int, high: int, shape: tuple[int, ...], dtype: Any, device: Device) -> Any:
        mx = self.mx
        native = self.native_dtype(dtype)
        span = high - low
        if span <= _MAX_EXACT_RANGE:
            out = mx.random.randint(low, high, shape, dtype=mx.int64, key=self._next_key(), stream=device.native)
        else:
            out = low + self._bits(shape, device) % span
        return out if native == mx.int64 else out.astype(native)


def gpu_available(mx: Any) -> bool:
    """Whether this MLX build has a usable GPU (Metal on Apple silicon, or the CUDA build)."""
    for probe in (lambda: mx.metal.is_available(), lambda: mx.cuda.is_available(), lambda: mx.is_available(mx.gpu)):
        try:
            if probe():
                return True
        except Exception:  # noqa: BLE001 - a build without that module has no such GPU
            continue
    return False


def _nn_kernels(mx: Any, backend: Any) -> dict[str, Any]:
    """Fused nn kernels mapped to MLX's own (``mx.fast.layer_norm``, ``mx.fast.scaled_dot_product_attention``)
    for float32; other dtypes (float64 is float32-accurate in MLX's fused kernels) take the composed defaults.
    What backward needs besides the output (mean and rstd, attention weights) stays a lazy expression,
    computed only when a backward reads it."""
    import types

    from lucid_core.kernels import KERNELS

    composed = types.SimpleNamespace(xp=backend.xp, backend=backend)  # the composed defaults, MLX namespace

    def layer_norm(x: Any, weight: Any, bias: Any, eps: float) -> tuple[Any, Any, Any]:
        if x.dtype != mx.float32 or x.ndim == 0:
            return KERNELS["layer_norm"].default(composed, x, weight, bias, eps)
        mean = mx.mean(x, axis=-1, keepdims=True)
        rstd = mx.rsqrt(mx.var(x, axis=-1, keepdims=True) + eps)
        return mx.fast.layer_norm(x, weight, bias, eps), mean, rstd

    def sdpa(q: Any, k: Any, v: Any, scale: float, causal: bool) -> tuple[Any, Any]:
        # MLX's fused kernel takes (B, heads, T, D); its causal mask is aligned bottom-right, Lucid's
        # (PyTorch's) top-left: the same only for as many queries as keys
        if q.dtype != mx.float32 or q.ndim != 4 or (causal and q.shape[-2] != k.shape[-2]):
            return KERNELS["scaled_dot_product_attention"].default(composed, q, k, v, scale, causal)
        out = mx.fast.scaled_dot_product_attention(q, k, v, scale=scale, mask="causal" if causal else None)
        s = mx.matmul(q, mx.swapaxes(k, -1, -2)) * scale
        if causal:
            keep = mx.arange(s.shape[-1])[None, :] <= mx.arange(s.shape[-2])[:, None]
            s = mx.where(keep, s, mx.array(-float("inf"), dtype=s.dtype))
        return out, mx.softmax(s, axis=-1, precise=True)

    return {"layer_norm": layer_norm, "scaled_dot_product_attention": sdpa}
