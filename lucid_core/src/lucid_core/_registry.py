"""The backend registry: pluggy plugins found through the ``lucid`` entry-point group.

Discovery is lazy (first use, not ``import lucid_core``) and happens once. Each entry point
loads in its own try/except so one broken plugin cannot take the others down.

Thread safety: discovery, registration and a backend's first load run under one re-entrant lock, so
threads that make their first tensors at once all wait for the same discovery and see every backend
(the flag that says discovery is done is set only when it is). A plugin that uses Lucid while it loads
(the same thread, re-entering) sees the backends registered so far, as before.
"""

from __future__ import annotations

import os
import threading
import warnings
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

import pluggy

from . import backend as _backend
from . import hookspecs
from ._random import _rng, seed_new_backend
from ._threads import store_num_threads
from ._typing import DeviceLike
from .backend import CONTRACT_VERSION, Backend, Device


class PluginError(RuntimeError):
    """A plugin failed to load or registered an invalid backend."""


#: guards discovery, the registries and first loads (re-entrant: plugins may use Lucid while loading)
_lock = threading.RLock()


class _PluginManager(pluggy.PluginManager):
    """pluggy's manager that also collects backends from plugins registered in-process."""

    def register(self, plugin: Any, name: str | None = None) -> str | None:
        with _lock:
            registered = super().register(plugin, name)
            if _state.discovered and registered is not None:
                _collect(plugin, registered, distribution=None, version=None)
            return registered

    def unregister(self, plugin: Any = None, name: str | None = None) -> Any:
        with _lock:
            return self._unregister(plugin, name)

    def _unregister(self, plugin: Any, name: str | None) -> Any:
        pname = name if name is not None else self.get_name(plugin)
        removed = super().unregister(plugin, name)
        for bname, b in list(_state.backends.items()):
            if b.plugin == pname:
                unregister_backend(bname)
        for cname, (plugin, _) in list(_state.communicators.items()):
            if plugin == pname:
                del _state.communicators[cname]
        _state.communicator_errors.pop(pname, None)
        _state.collected.discard(pname)
        _state.errors.pop(pname, None)
        return removed


plugin_manager = _PluginManager("lucid")
plugin_manager.add_hookspecs(hookspecs)


class _State:
    def __init__(self) -> None:
        self.discovered = False  # set when discovery has finished, never before
        self.discovering = False  # discovery is under way on the thread holding _lock
        self.backends: dict[str, Backend] = {}
        self.default_device: Device | None = None
        self.default_spec: str | None = None
        # plugins that failed: name -> (distribution, version, error), listed by backends()
        self.errors: dict[str, tuple[str | None, str | None, str]] = {}
        self.collected: set[str] = set()
        self.warned_gpu_fallback = False  # "gpu" without a GPU warns once per process
        # communicator name -> (plugin name or None, class), for lucid_distributed
        self.communicators: dict[str, tuple[str | None, type]] = {}
        self.communicator_errors: dict[str, str] = {}  # plugin name -> what went wrong


_state = _State()


def _strict() -> bool:
    return os.environ.get("LUCID_STRICT_PLUGINS", "") not in ("", "0", "false", "False")


def _report(message: str, exc: BaseException | None = None) -> None:
    if _strict():
        raise PluginError(message) from exc
    warnings.warn(message, RuntimeWarning, stacklevel=3)


def _collect(plugin: Any, plugin_name: str, distribution: str | None, version: str | None) -> None:
    """Call one plugin's registration hooks (backends, communicators), validating what each registers."""
    if plugin_name in _state.collected:
        return
    _state.collected.add(plugin_name)
    where = f"plugin {plugin_name!r}" + (f" (distribution {distribution} {version})" if distribution else "")
    _collect_communicators(plugin, plugin_name, where)
    impl = getattr(plugin, "lucid_register_backends", None)
    if impl is None:
        return

    def register(backend: Backend) -> None:
        if isinstance(backend, Backend):
            backend.plugin, backend.distribution, backend.version = plugin_name, distribution, version
        try:
            register_backend(backend)
        except (PluginError, TypeError, ValueError) as exc:
            raise PluginError(f"{where}: {exc}") from exc

    try:
        impl(register=register)
    except Exception as exc:  # noqa: BLE001 - one broken plugin must not break the rest
        _state.errors[plugin_name] = (distribution, version, f"{type(exc).__name__}: {exc}")
        _report(f"lucid: {where} failed to register its backends: {type(exc).__name__}: {exc}", exc)


def _collect_communicators(plugin: Any, plugin_name: str, where: str) -> None:
    """Call one plugin's ``lucid_register_communicators`` hook; a failure is reported like a backend's."""
    impl = getattr(plugin, "lucid_register_communicators", None)
    if impl is None:
        return

    def register(cls: type) -> None:
        try:
            register_communicator(cls, plugin=plugin_name)
        except (PluginError, TypeError, ValueError) as exc:
            raise PluginError(f"{where}: {exc}") from exc

    try:
        impl(register=register)
    except Exception as exc:  # noqa: BLE001 - one broken plugin must not break the rest
        _state.communicator_errors[plugin_name] = f"{where}: {type(exc).__name__}: {exc}"
        _report(f"lucid: {where} failed to register its communicators: {type(exc).__name__}: {exc}", exc)


def register_communicator(cls: type, plugin: str | None = None) -> type:
    """Register a communicator class for ``lucid_distributed`` under ``cls.name``; two with one name are an error."""
    name = getattr(cls, "name", None)
    if not callable(cls) or not isinstance(name, str) or not name or ":" in name:
        raise TypeError(
            f"register_communicator: expected a class with a non-empty string `name` attribute, got {cls!r}"
        )
    existing = _state.communicators.get(name)
    if existing is not None and existing[1] is not cls:
        first = f"plugin {existing[0]!r}" if existing[0] else "register_communicator()"
        second = f"plugin {plugin!r}" if plugin else "register_communicator()"
        raise PluginError(f"two communicators are named {name!r}: one from {first}, one from {second}")
    _state.communicators[name] = (plugin, cls)
    return cls


def communicators() -> dict[str, type]:
    """Every registered communicator class by name (plugins are discovered first)."""
    discover()
    return {name: cls for name, (_, cls) in sorted(_state.communicators.items())}


def communicator_errors() -> list[str]:
    """Why communicator plugins failed to register (for error messages that list what is installed)."""
    discover()
    return list(_state.communicator_errors.values())


def discover() -> None:
    """Load every plugin of the ``lucid`` entry-point group once (``LUCID_LOAD_PLUGINS`` filters).

    Thread-safe: a second thread waits until the first has finished; a plugin re-entering (the same
    thread, while discovery runs) returns at once, as before.
    """
    if _state.discovered:
        return
    with _lock:
        if _state.discovered or _state.discovering:
            return
        _state.discovering = True
        try:
            _discover()
        finally:
            _state.discovering = False
            _state.discovered = True


def _discover() -> None:
    allow = os.environ.get("LUCID_LOAD_PLUGINS")
    allowed = None if allow is None else {a.strip() for a in allow.split(",") if a.strip()}
    for ep in entry_points(group="lucid"):
        if allowed is not None and ep.name not in allowed:
            continue
        dist = getattr(ep, "dist", None)
        dname = dist.name if dist is not None else None
        dver = dist.version if dist is not None else None
        try:
            module = ep.load()
            if plugin_manager.get_plugin(ep.name) is None:
                pluggy.PluginManager.register(plugin_manager, module, name=ep.name)
        except Exception as exc:  # noqa: BLE001
            _state.errors[ep.name] = (dname, dver, f"{type(exc).__name__}: {exc}")
            _report(
                f"lucid: plugin {ep.name!r} (distribution {dname} {dver}) failed to load: {type(exc).__name__}: {exc}",
                exc,
            )
            continue
        _collect(module, ep.name, dname, dver)
    # plugins registered in-process before discovery ran
    for plugin in plugin_manager.get_plugins():
        pname = plugin_manager.get_name(plugin)
        if pname is not None:
            _collect(plugin, pname, None, None)


def register_backend(backend: Backend) -> Backend:
    """Register a backend at run time (notebooks, tests); two backends with one name are an error."""
    with _lock:
        return _register_backend(backend)


def _register_backend(backend: Backend) -> Backend:
    if not isinstance(backend, Backend):
        raise TypeError(f"register_backend: expected a lucid_core.backend.Backend, got {type(backend).__name__}")
    if not backend.name or not isinstance(backend.name, str) or ":" in backend.name:
        raise ValueError(f"register_backend: backend name must be a non-empty string without ':', got {backend.name!r}")
    if backend.contract_version != CONTRACT_VERSION:
        raise PluginError(
            f"backend {backend.name!r} was built for backend contract version {backend.contract_version}, "
            f"but this lucid_core needs version {CONTRACT_VERSION}"
        )
    existing = _state.backends.get(backend.name)
    if existing is not None and existing is not backend:
        raise PluginError(
            f"two backends are named {backend.name!r}: one from {_origin(existing)}, one from {_origin(backend)}"
        )
    _state.backends[backend.name] = backend
    _state.default_device = None
    return backend


def unregister_backend(name: str) -> None:
    """Remove a backend registered earlier (its existing tensors keep working)."""
    with _lock:
        _unregister_backend(name)


def _unregister_backend(name: str) -> None:
    if _state.backends.pop(name, None) is None:
        raise KeyError(f"no backend named {name!r} is registered; registered: {sorted(_state.backends)}")
    _state.default_device = None


def _origin(b: Backend) -> str:
    if b.distribution:
        return f"plugin {b.plugin!r} (distribution {b.distribution} {b.version})"
    if b.plugin:
        return f"plugin {b.plugin!r}"
    return "register_backend()"


def get_backend(name: str) -> Backend:
    """The registered backend named ``name``, loaded and ready."""
    discover()
    try:
        b = _state.backends[name]
    except KeyError:
        raise ValueError(
            f"no backend named {name!r}; installed backends: {_installed()}{_install_hint(name)}"
        ) from None
    b.ensure_loaded()
    return b


def _installed() -> str:
    names = sorted(_state.backends)
    return ", ".join(names) if names else "none"


#: Lucid's own backends: name -> (distribution, what it runs on); named in messages when one is missing
KNOWN_BACKENDS = {
    "numpy": ("lucid-backend-numpy", "NumPy, on the CPU"),
    "mlx": ("lucid-backend-mlx", "MLX: the GPU on Apple silicon, the CPU on Linux"),
}


def _install_hint(name: str | None = None) -> str:
    """What to install: backend ``name`` if it is one of Lucid's, any backend if none is installed, else nothing."""
    if name in KNOWN_BACKENDS and name not in _state.backends:
        dist, what = KNOWN_BACKENDS[name]
        failed = _state.errors.get(name)
        if failed is not None:
            return f"; its plugin is installed ({failed[0]} {failed[1]}) but failed to load: {failed[2]}"
        return (
            f"; the {name!r} backend ({what}) is installed with `pip install {dist}` "
            f"(from a checkout of Lucid: `pip install ./{dist.replace('-', '_')}`)"
        )
    if _state.backends:
        return ""
    options = " or ".join(f"`pip install {dist}` ({what})" for dist, what in KNOWN_BACKENDS.values())
    checkout = KNOWN_BACKENDS["numpy"][0].replace("-", "_")
    return f"; install a backend: {options} (from a checkout of Lucid: `pip install ./{checkout}`)"


@dataclass(frozen=True)
class BackendInfo:
    """A row of :func:`backends`: what is installed and whether it works."""

    name: str
    devices: tuple[str, ...]
    distribution: str | None
    version: str | None
    status: str


def backends() -> list[BackendInfo]:
    """Every backend with its devices, distribution, version and status (``ok`` or the error).

    Plugins that failed to load or to register are listed too, under the plugin's name.
    """
    discover()
    rows = []
    for name, b in sorted(_state.backends.items()):
        try:
            b.ensure_loaded()
            devs = tuple(str(d) for d in b.devices.values())
            status = "ok"
        except Exception as exc:  # noqa: BLE001 - report, don't raise, in a listing
            devs, status = (), f"error: {type(exc).__name__}: {exc}"
        rows.append(BackendInfo(name, devs, b.distribution, b.version, status))
    for plugin, (dist, ver, error) in sorted(_state.errors.items()):
        if not any(b.plugin == plugin for b in _state.backends.values()):
            rows.append(BackendInfo(plugin, (), dist, ver, f"error: plugin failed: {error}"))
    return rows


def _all_devices() -> list[str]:
    out = []
    for b in _state.backends.values():
        try:
            out.extend(str(d) for d in b.devices.values())
        except Exception:  # noqa: BLE001 - a broken backend offers no device
            continue
    return out


def resolve_device(spec: Any) -> Device:
    """Turn ``"cpu"``, ``"gpu"``, ``"numpy"``, ``"mlx:gpu"`` or a :class:`Device` into a Device."""
    if isinstance(spec, Device):
        return spec
    if spec is None:
        return default_device()
    if not isinstance(spec, str):
        raise TypeError(f"device must be a string such as 'cpu' or 'mlx:gpu', or a Device, got {type(spec).__name__}")
    discover()
    s = spec.strip().lower()
    if s in _GPU_SPELLINGS or s.startswith("cuda:"):
        s = "gpu"  # PyTorch's names for its GPUs: code written for "cuda" or "mps" runs on ours
    if s in ("cpu", "gpu"):
        order = list(_state.backends.values())
        if s == "cpu" and "numpy" in _state.backends:
            order.remove(_state.backends["numpy"])
            order.insert(0, _state.backends["numpy"])
        for b in order:
            if s in b.device_types:
                try:
                    return b.devices[s]
                except Exception:  # noqa: BLE001 - a broken backend cannot serve the device
                    continue
        if s == "gpu":
            return _gpu_fallback()
        hint = _install_hint("numpy" if _state.backends else None)
        raise RuntimeError(
            f"no installed backend offers a {s!r} device; available devices: {_all_devices() or 'none'}{hint}"
        )
    name, _, kind = s.partition(":")
    b = _state.backends.get(name)
    if b is None:
        raise ValueError(
            f"unknown device {spec!r}: no backend named {name!r}; installed backends: {_installed()}"
            f"{_install_hint(name)}"
        )
    devs = b.devices
    if not kind:
        return b.default_device
    if kind not in devs:
        raise RuntimeError(
            f"backend {name!r} has no {kind!r} device on this machine; it offers {[str(d) for d in devs.values()]}"
        )
    return devs[kind]


_GPU_SPELLINGS = ("cuda", "mps")


def _gpu_fallback() -> Device:
    """``"gpu"`` on a machine without one: the default CPU device, after one warning.

    As the original Lucid did on machines without Metal, so GPU-first scripts still run;
    ``LUCID_STRICT_DEVICE=1`` makes it an error instead.
    """
    available = _all_devices()
    if os.environ.get("LUCID_STRICT_DEVICE", "") not in ("", "0"):
        raise RuntimeError(
            f"no installed backend offers a 'gpu' device (available devices: {available or 'none'}); "
            f"LUCID_STRICT_DEVICE is set, so Lucid does not fall back to another device{_install_hint('mlx')}"
        )
    best = resolve_device("cpu")
    if not _state.warned_gpu_fallback:
        _state.warned_gpu_fallback = True
        warnings.warn(
            f"no installed backend offers a 'gpu' device; using {best} instead "
            f"(set LUCID_STRICT_DEVICE=1 to make this an error){_install_hint('mlx')}",
            RuntimeWarning,
            stacklevel=3,
        )
    return best


_backend._resolve_device = resolve_device  # `device == "cpu"` resolves names through the registry


def default_device() -> Device:
    """The device new tensors go to: ``set_default_device``, else ``$LUCID_DEVICE``, else ``"cpu"``."""
    dev = _state.default_device
    if dev is None:
        spec = _state.default_spec or os.environ.get("LUCID_DEVICE") or "cpu"
        dev = _state.default_device = resolve_device(spec)
    return dev


def set_default_device(device: DeviceLike) -> None:
    """Make ``device`` (e.g. ``"mlx"``) the device of newly created tensors."""
    dev = resolve_device(device)
    _state.default_spec = str(dev)
    _state.default_device = dev


def get_default_device() -> Device:
    """The current default device."""
    return default_device()


# -- the random state of every backend (the host RNG and the seed itself are in _random) ---------------
def manual_seed(seed: int) -> None:
    """Seed every backend's generator and the host RNG; the same seed repeats a run exactly."""
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"manual_seed: seed must be an int, got {type(seed).__name__}")
    _rng.seed = seed
    _rng.host.seed(seed)
    for b in _state.backends.values():
        if b.loaded:
            seed_new_backend(b)


def get_rng_state() -> dict[str, Any]:
    """A picklable snapshot of every random stream (host and loaded backends), for checkpoints."""
    state: dict[str, Any] = {"seed": _rng.seed, "host": _rng.host.getstate(), "backends": {}}
    for name, b in _state.backends.items():
        if b.loaded:
            try:
                state["backends"][name] = b.get_rng_state()
            except NotImplementedError:
                pass
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore a snapshot from :func:`get_rng_state`."""
    if not isinstance(state, dict) or "host" not in state:
        raise ValueError("set_rng_state: expected a dict made by lucid_core.get_rng_state()")
    _rng.seed = state.get("seed")
    _rng.host.setstate(state["host"])
    for name, s in state.get("backends", {}).items():
        get_backend(name).set_rng_state(s)


def set_num_threads(n: int) -> None:
    """Let backends use ``n`` threads per kernel from now on (1: everything on the calling thread)."""
    n = store_num_threads(n)
    for b in list(_state.backends.values()):
        if b.loaded:
            b.set_num_threads(n)
