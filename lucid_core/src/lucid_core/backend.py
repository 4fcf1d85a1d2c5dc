"""The backend contract: what a plugin hands to the core.

A backend is an Array API namespace ``xp`` for the kernels, plus the few things the standard
lacks: its devices, host transfer, random numbers, ``eval`` for lazy libraries, capability
flags, and optional native kernels that replace the core's generic ones. Subclass
:class:`Backend` (or use :class:`ArrayAPIBackend` for any Array API library) and register an
instance from a ``lucid_register_backends`` hook. Everything heavy (importing numpy, mlx, ...)
belongs in :meth:`Backend.load`, which the core calls once, on first use.
"""

from __future__ import annotations

__all__ = ["CONTRACT_VERSION", "Backend", "Device", "ArrayAPIBackend"]

import importlib
from collections.abc import Callable, Sequence
from typing import Any

from . import _dtypes as dt
from ._dtypes import DType

#: The version of this contract. A backend built for another version is refused.
CONTRACT_VERSION = 1


class Device:
    """One device of one backend, e.g. ``numpy:cpu`` or ``mlx:gpu``.

    A device carries the namespace its kernels run in (``xp``), so an op dispatches on its
    tensors' device alone, never on a global.
    """

    __slots__ = ("_str", "array_type", "backend", "context", "float_natives", "native", "type", "xp")

    def __init__(self, backend: Backend, type: str, native: Any = None) -> None:  # noqa: A002
        self.backend = backend
        self.type = type
        self.native = native
        self.xp: Any = None
        # filled by the backend on load: the native array type ops return (results of another
        # type go through Backend.canonical) and the native floating dtypes (scalar fast paths)
        self.array_type: Any = None
        self.float_natives: frozenset[Any] = frozenset()
        # a backend whose kernels and operators must run inside a context to land on this device
        # (MLX: ``mx.stream(device)``) sets this to a callable returning a context manager;
        # None (the default) costs nothing on the op path
        self.context: Callable[[], Any] | None = None
        self._str = f"{backend.name}:{type}"

    def __repr__(self) -> str:
        return f"device('{self._str}')"

    def __str__(self) -> str:
        return self._str

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Device):
            return self is other
        if isinstance(other, str):
            from ._registry import resolve_device

            try:
                return resolve_device(other) is self
            except (ValueError, RuntimeError):
                return False
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._str)


class Backend:
    """Base class of every backend: subclass it, fill in :meth:`load`, and register an instance.

    Attributes a subclass sets (in ``__init__`` or :meth:`load`):
        name: the backend's name (``"numpy"``); devices are addressed as ``"name:type"``.
        device_types: the device types it offers, in order of preference (``("cpu",)``,
            ``("gpu", "cpu")``); the first is its default.
        xp: an Array API namespace used by the core's generic kernels.
        array_types: the native array type(s), to recognise arrays handed to ``asarray``.
        dtypes: a map from Lucid dtypes to native dtypes, for the dtypes it supports.
        capabilities: flags ``float64``, ``complex``, ``lazy``, ``data_dependent_shapes``.
        kernels: optional native kernels by op name, replacing the generic ones.
    """

    contract_version: int = CONTRACT_VERSION
    name: str = ""
    device_types: tuple[str, ...] = ("cpu",)

    def __init__(self) -> None:
        self.xp: Any = None
        self.array_types: tuple[type, ...] = ()
        self.dtypes: dict[DType, Any] = {}
        self.capabilities: dict[str, bool] = {
            "float64": True,
            "complex": True,
            "lazy": False,
            "data_dependent_shapes": True,
        }
        self.kernels: dict[str, Callable[..., Any]] = {}
        self._from_native: dict[Any, DType] = {}
        self._devices: dict[str, Device] | None = None
        self.distribution: str | None = None
        self.version: str | None = None
        self.plugin: str | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def load(self) -> None:
        """Import the array library and fill ``xp``, ``array_types`` and ``dtypes``."""
        raise NotImplementedError(f"backend {self.name!r} does not implement load()")

    def make_device(self, type: str) -> Device:  # noqa: A002
        """Build the :class:`Device` for ``type``; override to bind ``xp`` to a stream or device."""
        dev = Device(self, type)
        dev.xp = self.xp
        return dev

    @property
    def loaded(self) -> bool:
        return self._devices is not None

    def ensure_loaded(self) -> None:
        """Load the library once; after this ``devices`` and the dtype maps are ready."""
        if self._devices is not None:
            return
        self.load()
        self._from_native = {}
        for ldt, ndt in self.dtypes.items():
            self._from_native.setdefault(ndt, ldt)
        devices = {t: self.make_device(t) for t in self.device_types}
        floats = frozenset(n for d, n in self.dtypes.items() if d.kind in "fc")
        for dev in devices.values():
            dev.array_type = self.array_types[0] if self.array_types else None
            dev.float_natives = floats
        self._devices = devices
        from ._random import seed_new_backend

        seed_new_backend(self)

    @property
    def devices(self) -> dict[str, Device]:
        self.ensure_loaded()
        assert self._devices is not None
        return self._devices

    @property
    def default_device(self) -> Device:
        return self.devices[self.device_types[0]]

    # -- dtypes ----------------------------------------------------------------------------
    def native_dtype(self, dtype: DType) -> Any:
        """The native dtype for a Lucid dtype; a clear error when the backend lacks it."""
        try:
            return self.dtypes[dtype]
        except KeyError:
            raise TypeError(
                f"backend {self.name!r} does not support dtype {dtype.name}; "
                f"it supports {', '.join(d.name for d in self.dtypes)}"
            ) from None

    def lucid_dtype(self, native: Any) -> DType:
        """The Lucid dtype of a native dtype."""
        try:
            return self._from_native[native]
        except KeyError:
            raise TypeError(f"backend {self.name!r}: native dtype {native!r} has no Lucid dtype") from None

    # -- arrays and host transfer ------------------------------------------------------------
    def asarray(self, obj: Any, dtype: DType | None, device: Device, copy: bool | None = None) -> Any:
        """Make a native array on ``device`` from Python data, a native array or a host buffer."""
        native = None if dtype is None else self.native_dtype(dtype)
        if copy is None:
            return device.xp.asarray(obj, dtype=native)
        return device.xp.asarray(obj, dtype=native, copy=copy)

    def canonical(self, array: Any) -> Any:
        """Turn what a kernel returned (e.g. a NumPy scalar) into a native array."""
        return array

    def to_numpy(self, array: Any) -> Any:
        """A NumPy array with the same values (for ``Tensor.numpy()`` and host transfer).

        NumPy is imported here, only when a user asks for a NumPy array.
        """
        numpy = importlib.import_module("numpy")
        try:
            return numpy.from_dlpack(array)
        except Exception:  # noqa: BLE001 - not every library exports DLPack
            return numpy.asarray(array)

    def to_list(self, array: Any) -> Any:
        """Nested Python lists (or a scalar for 0-d), for ``Tensor.tolist()`` and ``item()``."""
        return self.to_numpy(array).tolist()

    def to_bytes(self, array: Any) -> bytes:
        """The raw little-endian bytes of the array in C order (for checkpoints)."""
        host = self.to_numpy(array)
        if host.dtype.byteorder == ">":
            host = host.byteswap().view(host.dtype.newbyteorder("<"))
        return host.tobytes(order="C")

    def from_bytes(self, data: bytes | memoryview, dtype: DType, shape: tuple[int, ...], device: Device) -> Any:
        """An array of ``dtype`` and ``shape`` read from raw little-endian bytes (copied)."""
        numpy = importlib.import_module("numpy")
        host = numpy.frombuffer(data, dtype=numpy.dtype(dtype.name).newbyteorder("<")).reshape(shape)
        return self.asarray(host.astype(dtype.name), dtype, device, copy=True)

    def from_foreign(self, array: Any, source: Backend, device: Device) -> Any:
        """Bring an array of another backend onto ``device`` (DLPack when both sides allow it)."""
        try:
            return device.xp.from_dlpack(array)
        except Exception:  # noqa: BLE001 - fall back to the host copy below
            return self.asarray(source.to_numpy(array), None, device)

    def move(self, array: Any, source: Device, device: Device) -> Any:
        """Move an array between two devices of this backend (a no-op for unified memory)."""
        return array

    def eval(self, *arrays: Any) -> None:
        """Force lazy arrays to be computed (a no-op for eager backends)."""

    def shape(self, array: Any) -> tuple[int, ...]:
        return tuple(array.shape)

    # -- random numbers ----------------------------------------------------------------------
    def seed(self, seed: int) -> None:
        """Reset this backend's random state from ``seed``."""
        raise NotImplementedError(f"backend {self.name!r} has no random number support")

    def get_rng_state(self) -> Any:
        """An opaque, picklable snapshot of the random state."""
        raise NotImplementedError(f"backend {self.name!r} cannot save its random state")

    def set_rng_state(self, state: Any) -> None:
        raise NotImplementedError(f"backend {self.name!r} cannot restore its random state")

    def random_uniform(self, shape: tuple[int, ...], dtype: DType, device: Device) -> Any:
        """Uniform samples in [0, 1)."""
        raise NotImplementedError(f"backend {self.name!r} has no random number support")

    def random_normal(self, shape: tuple[int, ...], dtype: DType, device: Device) -> Any:
        """Standard normal samples."""
        raise NotImplementedError(f"backend {self.name!r} has no random number support")

    def random_integers(self, low: int, high: int, shape: tuple[int, ...], dtype: DType, device: Device) -> Any:
        """Integers drawn uniformly from [low, high)."""
        raise NotImplementedError(f"backend {self.name!r} has no random number support")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class ArrayAPIBackend(Backend):
    """A backend for any library that follows the Array API standard.

    Random numbers come from a Python RNG (slow but portable) unless overridden.

    Args:
        xp: the library's Array API namespace, or a callable returning it (to import lazily).
        name: the backend's name.
        device_types: device types offered, default first.
    """

    def __init__(
        self,
        xp: Any,
        name: str,
        device_types: Sequence[str] = ("cpu",),
        capabilities: dict[str, bool] | None = None,
    ) -> None:
        super().__init__()
        self._xp_source = xp
        self.name = name
        self.device_types = tuple(device_types)
        if capabilities:
            self.capabilities.update(capabilities)

    def load(self) -> None:
        import random

        xp = (
            self._xp_source()
            if callable(self._xp_source) and not hasattr(self._xp_source, "asarray")
            else self._xp_source
        )
        self.xp = xp
        probe = xp.asarray([0])
        self.array_types = (type(probe),)
        for d in dt.ALL_DTYPES:
            native = getattr(xp, d.name, None)
            if native is not None:
                self.dtypes[d] = native
        self._rng = random.Random(0)

    def seed(self, seed: int) -> None:
        import random

        self._rng = random.Random(seed)

    def get_rng_state(self) -> Any:
        return self._rng.getstate()

    def set_rng_state(self, state: Any) -> None:
        self._rng.setstate(state)

    def _host(self, values: list[Any], shape: tuple[int, ...], dtype: DType, device: Device) -> Any:
        arr = device.xp.asarray(values, dtype=self.native_dtype(dtype))
        return device.xp.reshape(arr, shape)

    def random_uniform(self, shape: tuple[int, ...], dtype: DType, device: Device) -> Any:
        n = _numel(shape)
        return self._host([self._rng.random() for _ in range(n)], shape, dtype, device)

    def random_normal(self, shape: tuple[int, ...], dtype: DType, device: Device) -> Any:
        n = _numel(shape)
        return self._host([self._rng.gauss(0.0, 1.0) for _ in range(n)], shape, dtype, device)

    def random_integers(self, low: int, high: int, shape: tuple[int, ...], dtype: DType, device: Device) -> Any:
        n = _numel(shape)
        return self._host([self._rng.randrange(low, high) for _ in range(n)], shape, dtype, device)


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n
