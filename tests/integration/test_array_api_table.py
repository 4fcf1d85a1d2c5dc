"""scripts/array_api_table.py records the public suite's totals and shows them in docs/array-api.md."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("array_api_table", ROOT / "scripts" / "array_api_table.py")
table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(table)


def test_record_suite_reads_a_pytest_json_report(tmp_path, monkeypatch):
    report = tmp_path / "report.json"
    report.write_text(
        json.dumps(
            {
                "created": 1796000000.0,
                "summary": {"passed": 3, "failed": 1, "skipped": 2, "total": 6},
                "tests": [
                    {"nodeid": "array_api_tests/test_a.py::test_ok", "outcome": "passed"},
                    {"nodeid": "array_api_tests/test_b.py::test_bad[x]", "outcome": "failed"},
                ],
            }
        )
    )
    rec = table.record_suite(report, None)
    assert (rec["passed"], rec["failed"], rec["skipped"], rec["total"]) == (3, 1, 2, 6)
    assert rec["failures"] == ["test_b.py::test_bad[x]"] and rec["api_version"] == "2025.12"
    assert rec["date"].endswith("UTC") and "ARRAY_API_TESTS_MODULE=lucid_core" in rec["command"]

    monkeypatch.setattr(table, "SUITE", tmp_path / "suite.json")
    table.SUITE.write_text(json.dumps(rec))
    text = "\n".join(table.suite_section())
    assert "**3 passed, 1 failed, 2 skipped** (6 tests)" in text
    assert "- `test_b.py::test_bad[x]`" in text and "git clone --recurse-submodules" in text


def test_the_checked_in_page_shows_the_recorded_totals():
    rec = json.loads((ROOT / "docs" / "array-api-suite.json").read_text())
    page = (ROOT / "docs" / "array-api.md").read_text()
    assert f"**{rec['passed']} passed, {rec['failed']} failed, {rec['skipped']} skipped**" in page
    assert rec["passed"] >= 1354  # issue 13's bar: what array-api-strict passes
