"""Hook specifications for Lucid plugins: the plugin author's documentation.

A plugin is a module (or object) with functions marked ``@lucid_core.hookimpl``, found through
the ``lucid`` entry-point group or registered in-process with ``lucid_core.plugin_manager``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from .backend import Backend

hookspec = pluggy.HookspecMarker("lucid")
hookimpl = pluggy.HookimplMarker("lucid")


@hookspec
def lucid_register_backends(register: Callable[[Backend], None]) -> None:
    """Register backends by calling ``register(backend)`` once per :class:`~lucid_core.backend.Backend`.

    Keep this cheap: build the backend object here, but import the array library in
    ``Backend.load()``, which the core calls on first use. The core validates each backend as
    it arrives (contract version, unique name) and reports problems naming this plugin.
    """


# -- communicators (used by lucid_distributed; the core only keeps the registry) ---------------


@hookspec
def lucid_register_communicators(register: Callable[[type], None]) -> None:
    """Register communicators by calling ``register(cls)`` once per communicator class.

    A communicator moves tensors between processes for ``lucid_distributed``
    (``init_process_group(backend=cls.name)``); ``cls`` has a string ``name`` attribute and is
    called with keyword options when a process group opens. Keep this hook cheap: import the
    transport library (mpi4py, mlx) when the class is instantiated, not here. The core checks
    each name as it arrives (non-empty, unique) and reports problems naming this plugin.
    """


# -- graph capture (lucid_core.compiler) ---------------------------------------------------------------
@hookspec(firstresult=True)
def lucid_compile_plan(backend: Backend, pure: Callable[..., tuple]) -> Callable[..., tuple] | None:
    """Take over a compiled function's plan: return a faster equivalent of ``pure``, or None to decline.

    ``pure(*arrays) -> tuple of arrays`` is the plan as a pure function of native arrays of ``backend`` (every
    step an op's forward, a node's ``backward_raw`` or a sum; no in-place writes, draws, value reads or Python
    calls: plans that have them are not offered). The core calls the returned function instead on every replay
    and checks nothing about it: it must give ``pure``'s results (the MLX plugin returns ``mx.compile(pure)``).
    """
