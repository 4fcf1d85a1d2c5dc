"""``lucid.profiler``: PyTorch's ``torch.profiler`` for Lucid's ops on the host.

``with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:`` times every op that runs
through ``lucid_core``'s dispatch (``Function.apply`` and the unary/binary fast paths), and every
``record_function("name")`` range; ``prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10)``
prints PyTorch's table (name, self and total time, calls) and ``prof.export_chrome_trace(path)`` writes
Chrome's trace JSON. Ops are named by their Function (``Matmul``, ``Add``), as in ``grad_fn``.

The dispatch is wrapped only while a profiler records and restored afterwards, so code that is not
profiled pays nothing. Times are host wall-clock times of the calls: on a lazy backend (MLX) an op's time
is its dispatch, and the computation is timed where it is evaluated (``item()``, ``lucid.eval``).
"""

from __future__ import annotations

import enum
import functools
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import lucid_core._autograd as _autograd
from lucid_core import Tensor

__all__ = [
    "profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule", "tensorboard_trace_handler",
    "EventList", "FunctionEventAvg",
]  # fmt: skip


class ProfilerActivity(enum.Enum):
    """What to profile: ``CPU`` (host-side op times); ``CUDA`` is accepted and records nothing here."""

    CPU = "CPU"
    CUDA = "CUDA"
    MPS = "MPS"
    XPU = "XPU"


class ProfilerAction(enum.Enum):
    """What a :func:`schedule` says to do at a step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(
    *, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0, skip_first_wait: int = 0
) -> Callable[[int], ProfilerAction]:
    """PyTorch's step schedule: skip ``skip_first`` steps, then cycles of ``wait``, ``warmup``, ``active`` steps
    (``repeat`` cycles, 0 for ever); the last active step of a cycle is ``RECORD_AND_SAVE``."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError("schedule: wait, warmup, repeat and skip_first must be >= 0 and active > 0")

    def step_action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        cycle = wait + warmup + active
        if repeat and step // cycle >= repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if pos < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return step_action


@dataclass
class _Event:
    name: str
    start_ns: int
    end_ns: int = 0
    children_ns: int = 0
    shapes: list[Any] = field(default_factory=list)
    thread: int = 0
    kind: str = "cpu_op"


class _Recorder:
    """The events of one recording, and the stack of open ranges on each thread."""

    def __init__(self, record_shapes: bool) -> None:
        self.record_shapes = record_shapes
        self.events: list[_Event] = []
        self.local = threading.local()
        self.origin_ns = time.perf_counter_ns()

    def stack(self) -> list[_Event]:
        s = getattr(self.local, "stack", None)
        if s is None:
            s = self.local.stack = []
        return s

    def begin(self, name: str, args: tuple[Any, ...], kind: str = "cpu_op") -> _Event:
        shapes = [list(a.shape) if isinstance(a, Tensor) else [] for a in args] if self.record_shapes else []
        ev = _Event(name, time.perf_counter_ns(), shapes=shapes, thread=threading.get_ident(), kind=kind)
        self.stack().append(ev)
        return ev

    def end(self, ev: _Event) -> None:
        ev.end_ns = time.perf_counter_ns()
        stack = self.stack()
        if stack and stack[-1] is ev:
            stack.pop()
        if stack:
            stack[-1].children_ns += ev.end_ns - ev.start_ns
        self.events.append(ev)


class _Dispatch:
    """Swaps timing wrappers into lucid_core's op dispatch while at least one profiler records."""

    lock = threading.Lock()
    recorders: ClassVar[list[_Recorder]] = []
    saved: ClassVar[list[tuple[Any, str, Any]]] = []

    @classmethod
    def recording(cls) -> _Recorder | None:
        return cls.recorders[-1] if cls.recorders else None

    @classmethod
    def push(cls, rec: _Recorder) -> None:
        with cls.lock:
            cls.recorders.append(rec)
            if len(cls.recorders) == 1:
                cls._install()

    @classmethod
    def pop(cls, rec: _Recorder) -> None:
        with cls.lock:
            if rec in cls.recorders:
                cls.recorders.remove(rec)
            if not cls.recorders:
                for owner, name, original in reversed(cls.saved):
                    setattr(owner, name, original)
                cls.saved.clear()

    @classmethod
    def _install(cls) -> None:
        apply = _autograd.Function.__dict__["apply"].__func__

        def timed_apply(fn_cls: Any, *args: Any, **kwargs: Any) -> Any:
            rec = cls.recording()
            if rec is None:
                return apply(fn_cls, *args, **kwargs)
            ev = rec.begin(fn_cls.__name__, args)
            try:
                return apply(fn_cls, *args, **kwargs)
            finally:
                rec.end(ev)

        cls.saved.append((_autograd.Function, "apply", _autograd.Function.__dict__["apply"]))
        _autograd.Function.apply = classmethod(timed_apply)  # type: ignore[method-assign,assignment]
        for fast in ("apply_unary", "apply_binary"):
            original = getattr(_autograd, fast)
            wrapped = _timed_fast_path(original, cls)
            for mod in list(sys.modules.values()):
                if getattr(mod, "__name__", "").startswith("lucid_core") and getattr(mod, fast, None) is original:
                    cls.saved.append((mod, fast, original))
                    setattr(mod, fast, wrapped)


def _timed_fast_path(original: Callable[..., Any], dispatch: type[_Dispatch]) -> Callable[..., Any]:
    @functools.wraps(original)
    def timed(fn_cls: Any, *args: Any) -> Any:
        rec = dispatch.recording()
        if rec is None:
            return original(fn_cls, *args)
        ev = rec.begin(fn_cls.__name__, args)
        try:
            return original(fn_cls, *args)
        finally:
            rec.end(ev)

    return timed


class record_function:  # noqa: N801 - PyTorch's name
    """A named range in the profile (``with record_function("forward"):`` or as a decorator).

    Its total time includes the ops inside; outside a profiler it does nothing.
    """

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self._event: _Event | None = None
        self._rec: _Recorder | None = None

    def __enter__(self) -> record_function:
        self._rec = _Dispatch.recording()
        if self._rec is not None:
            self._event = self._rec.begin(self.name, (), kind="user_annotation")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._rec is not None and self._event is not None:
            self._rec.end(self._event)
        self._rec = self._event = None

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        name = self.name

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with record_function(name):
                return fn(*args, **kwargs)

        return wrapper


def _fmt_time(us: float) -> str:
    """PyTorch's time format: ``12.345us``, ``1.234ms``, ``1.234s``."""
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


@dataclass
class FunctionEventAvg:
    """The totals of every event with one name (one row of the table)."""

    key: str
    count: int = 0
    cpu_time_total: float = 0.0  # microseconds, children included
    self_cpu_time_total: float = 0.0  # microseconds, children excluded
    input_shapes: list[Any] = field(default_factory=list)

    @property
    def cpu_time(self) -> float:
        """Average total time per call, in microseconds."""
        return self.cpu_time_total / self.count if self.count else 0.0


class EventList(list):  # type: ignore[type-arg]
    """Rows of :class:`FunctionEventAvg`, with PyTorch's :meth:`table`."""

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_name_column_width: int = 55,
              **_: Any) -> str:  # fmt: skip
        """The profile as text: name, self CPU %, self CPU, CPU total %, CPU total, CPU time avg, # of calls."""
        rows = list(self)
        if sort_by is not None:
            key = sort_by.replace("cuda", "cpu").replace("device", "cpu")
            key = key if key in ("cpu_time_total", "self_cpu_time_total", "count", "cpu_time") else "cpu_time_total"
            rows.sort(key=lambda r: getattr(r, key), reverse=True)
        if row_limit is not None and row_limit > 0:
            rows = rows[:row_limit]
        total_self = sum(r.self_cpu_time_total for r in self) or 1.0
        name_w = max(4, min(max_name_column_width, max((len(r.key) for r in rows), default=4)))
        heads = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]
        widths = [name_w, 12, 12, 12, 12, 12, 12]
        line = "-" * (sum(widths) + 2 * (len(widths) - 1))

        def fmt_row(cells: list[str]) -> str:
            return "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))

        out = [line, fmt_row(heads), line]
        for r in rows:
            name = r.key if len(r.key) <= name_w else r.key[: name_w - 3] + "..."
            out.append(fmt_row([
                name, f"{100 * r.self_cpu_time_total / total_self:.2f}%", _fmt_time(r.self_cpu_time_total),
                f"{100 * r.cpu_time_total / total_self:.2f}%", _fmt_time(r.cpu_time_total), _fmt_time(r.cpu_time),
                str(r.count),
            ]))  # fmt: skip
        out += [line, f"Self CPU time total: {_fmt_time(sum(r.self_cpu_time_total for r in self))}", ""]
        return "\n".join(out)


class profile:  # noqa: N801 - PyTorch's name
    """Record op times inside a ``with`` block (or between :meth:`start` and :meth:`stop`).

    Args:
        activities: PyTorch's list of :class:`ProfilerActivity`; only ``CPU`` has events here.
        schedule: a :func:`schedule`; with one, :meth:`step` advances it and only active steps record.
        on_trace_ready: called with the profiler at the end of each active cycle (``RECORD_AND_SAVE``).
        record_shapes: keep the input shapes of each op (the table's grouping stays by name).
        Other PyTorch arguments (``profile_memory``, ``with_stack``, ``with_flops``...) are accepted and ignored.
    """

    def __init__(
        self,
        activities: Iterable[ProfilerActivity] | None = None,
        *,
        schedule: Callable[[int], ProfilerAction] | None = None,
        on_trace_ready: Callable[[profile], Any] | None = None,
        record_shapes: bool = False,
        **_ignored: Any,
    ) -> None:
        self.activities = set(activities) if activities is not None else {ProfilerActivity.CPU}
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.step_num = 0
        self._rec: _Recorder | None = None
        self._events: list[_Event] = []
        self._origin_ns = time.perf_counter_ns()

    # -- recording -------------------------------------------------------------------------------------
    def _action(self) -> ProfilerAction:
        return ProfilerAction.RECORD if self.schedule is None else self.schedule(self.step_num)

    def _begin(self) -> None:
        if self._rec is None and ProfilerActivity.CPU in self.activities:
            self._rec = _Recorder(self.record_shapes)
            _Dispatch.push(self._rec)

    def _finish(self) -> None:
        if self._rec is not None:
            _Dispatch.pop(self._rec)
            self._events = self._rec.events
            self._origin_ns = self._rec.origin_ns
            self._rec = None

    def start(self) -> None:
        """Start recording (when the schedule's first step records)."""
        if self._action() in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._begin()

    def stop(self) -> None:
        """Stop recording; the events so far stay available."""
        saving = self._rec is not None and self.schedule is not None
        self._finish()
        if saving and self.on_trace_ready is not None:
            self.on_trace_ready(self)
        elif self.schedule is None and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def step(self) -> None:
        """Mark the end of a training step (advances the schedule)."""
        before = self._action()
        self.step_num += 1
        after = self._action()
        if before is ProfilerAction.RECORD_AND_SAVE:
            self._finish()
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
        if after in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._begin()
        elif self._rec is not None:
            self._finish()

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- results -------------------------------------------------------------------------------------
    def events(self) -> list[_Event]:
        """The recorded events (of the last recording), in the order they finished."""
        return list(self._rec.events if self._rec is not None else self._events)

    def key_averages(self, group_by_input_shape: bool = False) -> EventList:
        """One row per op name (and input shapes, with ``group_by_input_shape``): calls, total and self time."""
        rows: dict[Any, FunctionEventAvg] = {}
        for ev in self.events():
            key = (ev.name, str(ev.shapes)) if group_by_input_shape else ev.name
            row = rows.get(key)
            if row is None:
                row = rows[key] = FunctionEventAvg(ev.name, input_shapes=ev.shapes)
            total = (ev.end_ns - ev.start_ns) / 1e3
            row.count += 1
            row.cpu_time_total += total
            row.self_cpu_time_total += total - ev.children_ns / 1e3
        return EventList(rows.values())

    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """Write the events as Chrome's trace JSON (open in chrome://tracing or Perfetto)."""
        pid = os.getpid()
        trace = []
        for ev in self.events():
            item: dict[str, Any] = {
                "ph": "X", "cat": ev.kind, "name": ev.name, "pid": pid, "tid": ev.thread,
                "ts": (ev.start_ns - self._origin_ns) / 1e3, "dur": (ev.end_ns - ev.start_ns) / 1e3,
            }  # fmt: skip
            if ev.shapes:
                item["args"] = {"Input Dims": ev.shapes}
            trace.append(item)
        with open(path, "w") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)


def tensorboard_trace_handler(
    dir_name: str, worker_name: str | None = None, use_gzip: bool = False
) -> Callable[..., None]:
    """An ``on_trace_ready`` that writes each trace to ``dir_name/<worker>.<step>.pt.trace.json``."""

    def handler(prof: profile) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{os.uname().nodename}_{os.getpid()}"
        prof.export_chrome_trace(os.path.join(dir_name, f"{worker}.{prof.step_num}.pt.trace.json"))

    return handler
