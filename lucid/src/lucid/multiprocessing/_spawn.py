"""``spawn``/``start_processes``: run ``fn(i, *args)`` in ``nprocs`` processes, as ``torch.multiprocessing.spawn``."""

from __future__ import annotations

__all__ = ["ProcessContext", "ProcessExitedException", "ProcessRaisedException", "spawn", "start_processes"]

import multiprocessing
import traceback
from collections.abc import Callable
from typing import Any


class ProcessRaisedException(Exception):  # noqa: N818 - PyTorch's name
    """A spawned process raised: its traceback is in the message."""

    def __init__(self, msg: str, error_index: int, error_pid: int | None) -> None:
        super().__init__(msg)
        self.error_index = error_index
        self.pid = error_pid


class ProcessExitedException(Exception):  # noqa: N818 - PyTorch's name
    """A spawned process ended with a non-zero exit code (or a signal)."""

    def __init__(self, msg: str, error_index: int, error_pid: int | None, exit_code: int | None) -> None:
        super().__init__(msg)
        self.error_index = error_index
        self.pid = error_pid
        self.exit_code = exit_code


def _wrap(fn: Callable[..., Any], i: int, args: tuple[Any, ...], errors: Any) -> None:
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:  # noqa: BLE001 - handed to the parent, which raises it
        errors.put((i, traceback.format_exc()))
        raise SystemExit(1) from None


class ProcessContext:
    """The processes :func:`start_processes` started; :meth:`join` waits and raises the first failure."""

    def __init__(self, processes: list[Any], errors: Any) -> None:
        self.processes = processes
        self.error_queue = errors

    def pids(self) -> list[int | None]:
        """The processes' ids."""
        return [p.pid for p in self.processes]

    def join(self, timeout: float | None = None) -> bool:
        """Wait for every process; True once all ended well. A failed one stops the others and raises."""
        for p in self.processes:
            p.join(timeout)
        if any(p.is_alive() for p in self.processes):
            return False
        failed = [(i, p) for i, p in enumerate(self.processes) if p.exitcode != 0]
        if not failed:
            return True
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        if not self.error_queue.empty():
            i, tb = self.error_queue.get()
            raise ProcessRaisedException(f"\n\n-- Process {i} terminated with the following error:\n{tb}", i,
                                         self.processes[i].pid)  # fmt: skip
        i, p = failed[0]
        raise ProcessExitedException(f"process {i} terminated with exit code {p.exitcode}", i, p.pid, p.exitcode)


def start_processes(
    fn: Callable[..., Any],
    args: tuple[Any, ...] = (),
    nprocs: int = 1,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
) -> ProcessContext | None:
    """Start ``fn(i, *args)`` for ``i`` in ``range(nprocs)`` with ``start_method``; wait for them if ``join``."""
    ctx = multiprocessing.get_context(start_method)
    errors = ctx.SimpleQueue()
    processes = []
    for i in range(nprocs):
        p = ctx.Process(target=_wrap, args=(fn, i, args, errors), daemon=daemon)
        p.start()
        processes.append(p)
    context = ProcessContext(processes, errors)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(
    fn: Callable[..., Any], args: tuple[Any, ...] = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
    start_method: str = "spawn",
) -> ProcessContext | None:  # fmt: skip
    """``torch.multiprocessing.spawn``: :func:`start_processes` with the ``spawn`` method by default."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
