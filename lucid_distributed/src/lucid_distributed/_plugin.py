"""lucid_distributed's own communicators, registered through the public plugin hook like any other.

Cheap to import: the classes load mpi4py / mlx only when a process group opens.
"""

from __future__ import annotations

from collections.abc import Callable

import lucid_core


@lucid_core.hookimpl
def lucid_register_communicators(register: Callable[[type], None]) -> None:
    """Register the ``mpi``, ``mlx`` and ``local`` communicators."""
    from ._local import LocalCommunicator
    from ._mlx import MLXCommunicator
    from ._mpi import MPICommunicator

    register(MPICommunicator)
    register(MLXCommunicator)
    register(LocalCommunicator)
