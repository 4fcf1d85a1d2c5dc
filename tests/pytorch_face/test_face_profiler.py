"""``lucid.profiler``: op counts and times in PyTorch's table, ranges, Chrome traces, schedules, and no cost
once the profiler is closed (the op dispatch is handed back untouched)."""

from __future__ import annotations

import json
from pathlib import Path

import lucid
import lucid_core._autograd as autograd
import lucid_core.ops.elementwise as elementwise
from lucid.profiler import ProfilerAction, ProfilerActivity, profile, record_function, schedule


def _work(n: int = 3) -> lucid.Tensor:
    x = lucid.ones(8, 8, requires_grad=True)
    y = x
    for _ in range(n):
        y = (x @ y).tanh()
    return y.sum()


def test_key_averages_counts_each_op_and_the_table_lists_them() -> None:
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with record_function("model_inference"):
            _work(3)
    rows = {r.key: r for r in prof.key_averages()}
    assert rows["Matmul"].count == 3 and rows["Tanh"].count == 3 and rows["model_inference"].count == 1
    inner = sum(r.cpu_time_total for k, r in rows.items() if k != "model_inference")
    assert rows["model_inference"].cpu_time_total >= inner  # a range's total holds the ops inside it
    assert rows["Matmul"].self_cpu_time_total <= rows["Matmul"].cpu_time_total
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=2)
    lines = table.splitlines()
    assert "Self CPU %" in lines[1] and "# of Calls" in lines[1]
    assert len([ln for ln in lines if ln.startswith(("Matmul", "Tanh", "Sum", "model_inference"))]) == 2
    assert lines[-1].startswith("Self CPU time total:")


def test_chrome_trace_has_one_complete_event_per_op(tmp_path: Path) -> None:
    with profile(record_shapes=True) as prof:
        _work(2)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    assert [e["name"] for e in events].count("Matmul") == 2
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in events)
    assert next(e for e in events if e["name"] == "Matmul")["args"]["Input Dims"] == [[8, 8], [8, 8]]


def test_dispatch_is_restored_after_profiling() -> None:
    before = (autograd.Function.__dict__["apply"], autograd.apply_unary, elementwise.apply_unary)
    with profile():
        assert autograd.Function.__dict__["apply"] is not before[0]
        with profile():  # nested profilers share the wrapped dispatch
            _work(1)
        assert autograd.Function.__dict__["apply"] is not before[0]
    assert (autograd.Function.__dict__["apply"], autograd.apply_unary, elementwise.apply_unary) == before


def test_record_function_outside_a_profiler_is_a_no_op_and_decorates() -> None:
    @record_function("step")
    def step() -> float:
        return float(_work(1).item())

    assert step() == step()
    with profile() as prof:
        step()
    assert {r.key: r.count for r in prof.key_averages()}["step"] == 1


def test_schedule_records_only_active_steps_and_calls_on_trace_ready() -> None:
    sched = schedule(wait=1, warmup=1, active=2, repeat=1)
    assert [sched(i) for i in range(5)] == [
        ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE,
        ProfilerAction.NONE,
    ]  # fmt: skip
    ready: list[int] = []
    with profile(schedule=sched, on_trace_ready=lambda p: ready.append(p.key_averages()[0].count)) as prof:
        for _ in range(5):
            lucid.ones(2).exp()  # one Exp per step
            prof.step()
    assert len(ready) == 1 and {r.key: r.count for r in prof.key_averages()}["Exp"] == 2
