"""The backend contract: what a plugin hands to the core.

A backend is an Array API namespace ``xp`` for the kernels, plus the few things the standard
lacks: its devices, host transfer, random numbers, ``eval`` for lazy libraries, capability
flags, and optional native kernels that replace the core's generic ones. Subclass
:class:`Backend` (or use :class:`ArrayAPIBackend` for any Array API library) and register an
instance from a ``lucid_register_backends`` hook. Everything heavy (importing numpy, mlx, ...)
belongs in :meth:`Backend.load`, which the core calls once, on first use.
"""

from __future__ import annotations

__all__ = [
    "CONTRACT_VERSION", "Backend", "Device", "ArrayAPIBackend", "evaluate", "probe_dtypes",
    # the generic compositions, for backend authors (defined in _composed)
    "generic_einsum", "generic_getitem", "generic_index_add", "take_along_axis_native",
]  # fmt: skip

import importlib
import random
import threading
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from . import _dtypes as dt
from ._composed import generic_einsum, generic_getitem, generic_index_add, take_along_axis_native
from ._dtypes import DType
from ._random import seed_new_backend
from ._threads import threads_new_backend
from .kernels import check_names

_LOAD_LOCK = threading.RLock()  # one backend loads at a time (first uses from several threads)

#: The version of this contract. A backend built for another version is refused.
CONTRACT_VERSION = 1


def _no_registry(name: str) -> Device:
    raise RuntimeError(f"cannot resolve device {name!r}: the backend registry is not loaded")


#: How ``device == "cpu"`` turns a name into a Device. The registry sits above this contract, so it
#: installs its ``resolve_device`` here when it loads (lucid_core/_registry.py) rather than being imported.
_resolve_device: Callable[[str], Device] = _no_registry


def _device_named(name: str) -> Device:
    """The device called ``name`` in this process (how a pickled :class:`Device` comes back)."""
    return importlib.import_module("lucid_core").resolve_device(name)  # the registry sits above this module


class Device:
    """One device of one backend, e.g. ``numpy:cpu`` or ``mlx:gpu``.

    A device carries the namespace its kernels run in (``xp``), so an op dispatches on its
    tensors' device alone, never on a global.
    """

    __slots__ = ("_str", "array_type", "backend", "context", "float_natives", "native", "real_natives", "type", "xp")

    def __init__(self, backend: Backend, type: str, native: Any = None) -> None:  # noqa: A002
        self.backend = backend
        self.type = type
        self.native = native
        self.xp: Any = None
        # filled by the backend on load: the native array type ops return (results of another
        # type go through Backend.canonical) and the native floating dtypes (scalar fast paths)
        self.array_type: Any = None
        self.float_natives: frozenset[Any] = frozenset()  # the native real and complex floating dtypes
        self.real_natives: frozenset[Any] = frozenset()  # the native real floating dtypes
        # a backend whose kernels and operators must run inside a context to land on this device
        # (MLX: ``mx.stream(device)``) sets this to a callable returning a context manager;
        # None (the default) costs nothing on the op path
        self.context: Callable[[], Any] | None = None
        self._str = f"{backend.name}:{type}"

    def __repr__(self) -> str:
        return f"device('{self._str}')"

    def __str__(self) -> str:
        return self._str

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        # pickled by name (a Process's arguments, a Queue): the receiving process resolves its own device
        return _device_named, (self._str,)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Device):
            return self is other
        if isinstance(other, str):
            try:
                return _resolve_device(other) is self
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
        kernels: optional native kernels by name, replacing the composed defaults; the names,
            signatures and defaults are declared in :data:`lucid_core.kernels.KERNELS`.
    """

    contract_version: int = CONTRACT_VERSION
    name: str = ""
    _ready: bool = False  # loaded, seeded and threaded: the lock-free fast path of ensure_loaded
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
        """Whether :meth:`load` has run."""
        return self._devices is not None

    def ensure_loaded(self) -> None:
        """Load the library once; after this ``devices`` and the dtype maps are ready.

        Thread-safe: concurrent first uses wait for one load, and none sees the backend before it is
        seeded (``manual_seed``) and given its thread count.
        """
        if self._ready:
            return
        with _LOAD_LOCK:
            if self._devices is not None:  # loaded by another thread, or re-entered while seeding
                return
            self.load()
            self._check_kernel_names()
            self._from_native = {}
            for ldt, ndt in self.dtypes.items():
                self._from_native.setdefault(ndt, ldt)
            devices = {t: self.make_device(t) for t in self.device_types}
            floats = frozenset(n for d, n in self.dtypes.items() if d.kind in "fc")
            reals = frozenset(n for d, n in self.dtypes.items() if d.kind == "f")
            for dev in devices.values():
                dev.array_type = self.array_types[0] if self.array_types else None
                dev.float_natives = floats
                dev.real_natives = reals
            self._devices = devices
            seed_new_backend(self)
            threads_new_backend(self)
            self._ready = True

    def _check_kernel_names(self) -> None:
        """Warn about kernels registered under names the core never calls (a typo would do nothing)."""
        unknown = check_names(self)
        if unknown:
            warnings.warn(
                f"backend {self.name!r} registers kernels the core does not declare: {', '.join(unknown)}; "
                "see lucid_core.kernels.KERNELS for the names",
                RuntimeWarning,
                stacklevel=3,
            )

    @property
    def devices(self) -> dict[str, Device]:
        """The backend's devices by type, loading the backend on first use."""
        self.ensure_loaded()
        assert self._devices is not None
        return self._devices

    @property
    def default_device(self) -> Device:
        """The first of ``device_types``."""
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
        except Exception as exc:  # noqa: BLE001 - not every library exports DLPack
            reason = f"DLPack failed ({type(exc).__name__}: {exc})"
        if hasattr(array, "__array__") or _exports_buffer(array):
            host = numpy.asarray(array)
            if host.dtype != object:
                return host
        # numpy.asarray would wrap the array in a 0-d object array: a silent wrong value
        raise TypeError(
            f"backend {self.name!r}: cannot bring a {type(array).__module__}.{type(array).__qualname__} to the "
            f"host: {reason}, and it has neither __array__ nor the buffer protocol; the backend must override "
            "Backend.to_numpy(array) to return a NumPy array (Tensor.numpy(), tolist(), item(), printing, "
            "checkpoints and moves to other backends go through it)"
        )

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
        native = _host_dtype(numpy, dtype)
        host = numpy.frombuffer(data, dtype=native.newbyteorder("<")).reshape(shape)
        return self.asarray(host.astype(native), dtype, device, copy=True)

    def from_reader(
        self, read_into: Callable[[memoryview], None], dtype: DType, shape: tuple[int, ...], device: Device
    ) -> Any:
        """An array of ``dtype`` and ``shape`` whose little-endian C-order bytes ``read_into`` writes.

        ``read_into(view)`` must fill the whole writable byte view. The default reads into a NumPy
        host buffer that becomes the array where the library takes host memory without a copy (NumPy),
        so a checkpoint loads with no second copy of its tensors; backends may override it.
        """
        numpy = importlib.import_module("numpy")
        native = _host_dtype(numpy, dtype)
        host = numpy.empty(shape, dtype=native.newbyteorder("<"))
        if host.nbytes:
            # through a uint8 view: the buffer protocol has no format for bfloat16
            read_into(memoryview(host.reshape(-1).view(numpy.uint8)))
        if host.dtype.byteorder == ">" or not host.dtype.isnative:
            host = host.astype(native)
        return self.asarray(host, dtype, device)

    def from_foreign(self, array: Any, source: Backend, device: Device) -> Any:
        """Bring an array of another backend onto ``device`` (DLPack when both sides allow it)."""
        try:
            return device.xp.from_dlpack(array)
        except Exception:  # noqa: BLE001 - fall back to the host copy below
            return self.asarray(source.to_numpy(array), None, device)

    #: ``inplace(op, target, other, alpha) -> bool`` writes ``target op= other * alpha`` into
    #: ``target``'s own memory (``op``: add, subtract, multiply, divide, copy) and says whether it
    #: did; None for libraries with immutable arrays, whose tensors rebind to a new array instead.
    inplace: Callable[..., bool] | None = None

    #: ``share_memory(array) -> array``: a copy of ``array`` in memory that processes share (forked ones, and
    #: others given :meth:`shared_handle`); None where the library's arrays cannot live there (MLX).
    share_memory: Callable[[Any], Any] | None = None

    def shared_handle(self, array: Any) -> Any:
        """A picklable handle on shared ``array`` that :meth:`from_shared_handle` opens in another process."""
        raise RuntimeError(f"the {self.name} backend cannot hand its shared memory to another process")

    def from_shared_handle(self, handle: Any) -> Any:
        """The array that :meth:`shared_handle` described, in this process (the same memory)."""
        raise RuntimeError(f"the {self.name} backend cannot open shared memory from another process")

    #: whether :meth:`view_of` can ever say True (mutable arrays with memory views, as NumPy's). Then
    #: ``inplace`` must also take ``into_view=True``: write into a memory view of another array.
    views_alias: bool = False

    def view_of(self, view: Any, base: Any) -> bool:
        """Whether ``view``'s elements are ``base``'s own memory (a write into one lands in the other).

        The core asks after taking a view (a slice, transpose, reshape) of a tensor: where True, writes
        through the view go straight into memory; elsewhere the core scatters the written values into
        the base's array (always right, one copy of the base). Only read where ``views_alias`` is True.
        """
        return False

    def move(self, array: Any, source: Device, device: Device) -> Any:
        """Move an array between two devices of this backend (a no-op for unified memory)."""
        return array

    def eval(self, *arrays: Any) -> Sequence[Any] | None:
        """Force lazy arrays to be computed (a no-op for eager backends).

        Return None when the arrays were computed where they are (MLX), or one new array per
        argument, in order, to replace them (dask's ``persist``): the core rebinds those into the
        tensors, so a lazy library's graph does not grow over a training loop.
        """
        return None

    def graph_size(self, array: Any) -> int | None:
        """How many pending operations a lazy array holds (dask: its task count); None when unknown.

        Only the conformance kit reads it, to check that graphs stay bounded over training.
        """
        return None

    def set_num_threads(self, n: int) -> None:
        """Use up to ``n`` threads per kernel (``lucid_core.set_num_threads``); the default ignores it.

        Called once when the backend loads and again whenever the setting changes. A backend that
        runs its own thread pool or tunes its library's (BLAS, OpenMP) does it here.
        """

    # -- random numbers ----------------------------------------------------------------------
    #: ``manual_seed(s)`` passes ``s`` itself to :meth:`seed` (a generator that reproduces PyTorch's, which
    #: must see PyTorch's seed), instead of a seed derived from ``s`` and the backend's name
    exact_seed: bool = False

    def seed(self, seed: int) -> None:
        """Reset this backend's random state from ``seed``."""
        raise NotImplementedError(f"backend {self.name!r} has no random number support")

    def get_rng_state(self) -> Any:
        """An opaque, picklable snapshot of the random state."""
        raise NotImplementedError(f"backend {self.name!r} cannot save its random state")

    def set_rng_state(self, state: Any) -> None:
        """Restore a snapshot from :meth:`get_rng_state`."""
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

    # Optional: draws with their affine transform inside, so a backend can do the arithmetic in the order
    # its reference does (the numpy backend reproduces PyTorch's CPU numbers, where a fused multiply-add
    # and float32 parameters make the difference). The defaults compose the three hooks above, so a backend
    # written before these existed keeps working unchanged.
    def random_uniform_range(
        self, shape: tuple[int, ...], dtype: DType, device: Device, low: float, high: float
    ) -> Any:
        """Uniform samples in [low, high) (``Tensor.uniform_(low, high)``)."""
        u = self.random_uniform(shape, dtype, device)
        if (low, high) == (0.0, 1.0):
            return u
        xp = device.xp
        return xp.add(xp.multiply(u, high - low), low)

    def random_normal_scaled(
        self, shape: tuple[int, ...], dtype: DType, device: Device, mean: float, std: float
    ) -> Any:
        """Samples of N(mean, std**2) (``Tensor.normal_(mean, std)``)."""
        z = self.random_normal(shape, dtype, device)
        if (mean, std) == (0.0, 1.0):
            return z
        xp = device.xp
        return xp.add(xp.multiply(z, std), mean)

    def random_permutation(self, n: int, dtype: DType, device: Device) -> Any | None:
        """A random permutation of ``range(n)`` as ``dtype``, or None to let the core sort uniforms."""
        return None

    def random_multinomial(self, probs: Any, num_samples: int, replacement: bool, device: Device) -> Any | None:
        """``num_samples`` category indices (int64) per row of the 2-D weights ``probs``, already checked
        (non-negative, finite, every row's sum > 0), or None to let the core compose them from uniforms."""
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class ArrayAPIBackend(Backend):
    """A backend for any library that follows the Array API standard.

    Random numbers come from a Python RNG (slow but portable) and ``einsum`` and the scatter-add
    behind indexing gradients from generic compositions; override any of them with native ones.

    Args:
        xp: the library's Array API namespace, or a callable returning it (to import lazily).
        name: the backend's name.
        device_types: device types offered, default first.
        capabilities: flags to override (``float64``, ``complex``, ``lazy``, ``data_dependent_shapes``).
        native_devices: the library's device object per device type (e.g. ``{"gpu": "cuda"}``);
            creation functions then receive ``device=`` so arrays land there.
    """

    def __init__(
        self,
        xp: Any,
        name: str,
        device_types: Sequence[str] = ("cpu",),
        capabilities: dict[str, bool] | None = None,
        native_devices: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self._xp_source = xp
        self.name = name
        self.device_types = tuple(device_types)
        self.native_devices = dict(native_devices or {})
        if capabilities:
            self.capabilities.update(capabilities)

    def load(self) -> None:
        xp = (
            self._xp_source()
            if callable(self._xp_source) and not hasattr(self._xp_source, "asarray")
            else self._xp_source
        )
        self.xp = xp
        probe = xp.asarray([0])
        self.array_types = (type(probe),)
        self.dtypes = probe_dtypes(xp, self.name)
        # advertise only what the library holds; a caller's flags may turn capabilities off, never on
        self.capabilities["float64"] = self.capabilities["float64"] and dt.float64 in self.dtypes
        self.capabilities["complex"] = self.capabilities["complex"] and dt.complex64 in self.dtypes
        self._rng = random.Random(0)
        self.kernels.setdefault("einsum", lambda spec, *xs: generic_einsum(xp, spec, *xs))
        self.kernels.setdefault("index_add", lambda z, key, v: generic_index_add(xp, z, key, v))
        self.kernels.setdefault("getitem", lambda x, key: generic_getitem(xp, x, key))

    def make_device(self, type: str) -> Device:  # noqa: A002
        dev = Device(self, type, self.native_devices.get(type))
        dev.xp = self.xp if dev.native is None else _DeviceBound(self.xp, dev.native)
        return dev

    def seed(self, seed: int) -> None:
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


#: The dtypes the core itself creates (default float, indices and ``arange``, comparisons).
_REQUIRED = (dt.float32, dt.int64, dt.bool)


def _host_dtype(numpy: Any, dtype: DType) -> Any:
    """NumPy's dtype for ``dtype`` on the host; bfloat16 is ``ml_dtypes``' (NumPy has none of its own)."""
    if dtype is dt.bfloat16:
        return numpy.dtype(importlib.import_module("ml_dtypes").bfloat16)
    return numpy.dtype(dtype.name)


def probe_dtypes(xp: Any, name: str) -> dict[DType, Any]:
    """The Lucid dtypes a namespace really holds, each mapped to the native dtype its arrays report.

    A dtype counts only if it round-trips: arrays created with it (``asarray``, ``zeros``,
    ``astype``) report it back (JAX without x64 answers float64 with float32: claiming float64
    would train silently in float32).
    Raises ``TypeError`` naming the backend when one the core needs (float32, int64, bool) is missing.
    """
    found: dict[DType, Any] = {}
    refused: dict[DType, str] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # JAX warns as it narrows a requested dtype: we report it below
        for d in dt.ALL_DTYPES:
            native = getattr(xp, d.name, None)
            if native is None:
                continue
            try:
                got = [xp.asarray(0, dtype=native).dtype, xp.zeros((1,), dtype=native).dtype]
                got.append(xp.astype(xp.asarray([1]), native).dtype)
                # `got == native` holds for NumPy's scalar types too (``dtype('float32') == numpy.float32``)
                holds = all(bool(g == got[0]) for g in got) and bool(got[0] == native)
            except Exception as exc:  # noqa: BLE001 - the library lacks this dtype
                refused[d] = f"{type(exc).__name__}: {exc}"
                continue
            if not holds:
                refused[d] = f"asked for {d.name}, its arrays report {got[0]}"
                continue
            found[d] = got[0]
    for d in _REQUIRED:
        if d not in found:
            why = refused.get(d, "the namespace has no such dtype")
            hint = (
                "for JAX, enable 64-bit types (jax.config.update('jax_enable_x64', True)) before loading"
                if d.bits == 64
                else "wrap a library that has it"
            )
            raise TypeError(f"backend {name!r} cannot hold {d.name}, which Lucid needs ({why}); {hint}")
    return found


def evaluate(tensors: Iterable[Any]) -> None:
    """Compute lazy tensors, one :meth:`Backend.eval` call per backend, rebinding each tensor to the
    new array the backend hands back (if any), so its graph is cut where it was evaluated."""
    by_backend: dict[Backend, dict[int, Any]] = {}
    for t in tensors:
        by_backend.setdefault(t._device.backend, {})[id(t)] = t  # each tensor once
    for backend, group in by_backend.items():
        ts = list(group.values())
        out = backend.eval(*[t._data for t in ts])
        if out is None:
            continue
        out = tuple(out)
        if len(out) != len(ts):
            raise RuntimeError(
                f"backend {backend.name!r}: eval returned {len(out)} arrays for {len(ts)} inputs; "
                "it must return None or one array per input, in order"
            )
        for t, array in zip(ts, out):
            t._data = array


def _exports_buffer(array: Any) -> bool:
    """Whether ``array`` exports the Python buffer protocol (array-api-strict, memoryviews)."""
    try:
        memoryview(array)
    except TypeError:
        return False
    return True


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


_CREATION = frozenset({"asarray", "zeros", "ones", "empty", "full", "arange", "linspace", "eye", "from_dlpack"})


class _DeviceBound:
    """An Array API namespace whose creation functions place arrays on one native device."""

    def __init__(self, xp: Any, device: Any) -> None:
        self._xp = xp
        self._device = device

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self._xp, name)
        if name in _CREATION:
            device = self._device

            def bound(*args: Any, **kwargs: Any) -> Any:
                kwargs.setdefault("device", device)
                return fn(*args, **kwargs)

            return bound
        return fn
