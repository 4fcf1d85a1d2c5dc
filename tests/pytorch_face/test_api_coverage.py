"""docs/api-coverage.md stays true: every name it lists as present exists, and its numbers are the script's.

Names added to lucid since the page was written do not fail here (rerun ``python scripts/api_coverage.py``
to count them); a name that disappears, or a page edited by hand, does.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import types
from pathlib import Path

import pytest

import lucid

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("api_coverage", ROOT / "scripts" / "api_coverage.py")
coverage = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = coverage  # its dataclass looks its module up while the module runs
_spec.loader.exec_module(coverage)

SURFACE = coverage.load_surface()
PRESENT = json.loads(coverage.PRESENT.read_text())
DOC = coverage.DOC.read_text()


def _recorded() -> dict[str, set[str]]:
    """The names api_present.json says lucid has, per group."""
    return {g: set(PRESENT["groups"][g]["present"]) for g in coverage.GROUPS}


@pytest.mark.parametrize("group", coverage.GROUPS)
def test_every_name_recorded_as_present_still_exists(group: str) -> None:
    kinds = {e["name"]: e["kind"] for e in SURFACE["groups"][group]["names"]}
    space = coverage._spaces()[group]
    gone = sorted(n for n in _recorded()[group] if not coverage.has_name(space, n, kinds[n]))
    assert not gone, f"{group}: names docs/api-coverage.md lists as present are gone: {gone}"


def test_recorded_names_are_names_of_the_surface() -> None:
    for group, names in _recorded().items():
        known = {e["name"] for e in SURFACE["groups"][group]["names"]}
        assert names <= known, f"{group}: api_present.json names outside the surface: {sorted(names - known)}"


def test_page_is_what_the_script_writes_from_the_recorded_names() -> None:
    groups = coverage.measure(SURFACE, _recorded())
    assert coverage.render(SURFACE, groups) == DOC, "docs/api-coverage.md was edited by hand or is stale"
    assert coverage.present_json(groups) == coverage.PRESENT.read_text()


def test_percentages_on_the_page_match_the_recorded_counts() -> None:
    rows = re.findall(r"^\| `([\w.]+)` \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| ([\d.]+) % \|$", DOC, re.M)
    assert [r[0] for r in rows] == list(coverage.GROUPS)
    for group, _total, device, counted, present, missing, percent in rows:
        data = SURFACE["groups"][group]
        n_device = sum(e["device_specific"] for e in data["exclusions"])
        recorded = PRESENT["groups"][group]
        assert int(device) == n_device
        assert int(counted) == len(data["names"]) - n_device == recorded["counted"]
        assert int(present) == recorded["present_counted"]
        assert int(present) + int(missing) == int(counted)
        assert float(percent) == round(100 * int(present) / int(counted), 1) == recorded["percent"]


def test_device_specific_exclusions_leave_only_the_denominator() -> None:
    surface = {"groups": {g: {"names": [], "exclusions": [], "left_out": []} for g in coverage.GROUPS}}
    surface["groups"]["Tensor"] = {
        "names": [{"name": n, "kind": "method"} for n in ("add", "cuda", "narrow", "to_sparse")],
        "exclusions": [
            {"name": "cuda", "rule": "cuda", "reason": "CUDA", "device_specific": True},
            {"name": "to_sparse", "rule": "to_sparse", "reason": "sparse", "device_specific": False},
        ],
        "left_out": [],
    }
    found = {g: set() for g in coverage.GROUPS} | {"Tensor": {"add", "cuda"}}
    group = coverage.measure(surface, found)["Tensor"]
    assert (group.present, group.missing, group.counted) == (["add"], ["narrow", "to_sparse"], 3)
    assert group.percent == 33.3
    assert group.device_found == ["cuda"]


def test_a_catch_all_getattr_does_not_make_names_present() -> None:
    fabricating = types.ModuleType("fabricating")
    fabricating.real = lambda: None
    fabricating.__getattr__ = lambda name: lambda: None
    assert coverage.has_name(fabricating, "real", "function")
    assert not coverage.has_name(fabricating, "narrow", "function")


def test_a_lazy_getattr_that_refuses_unknown_names_counts() -> None:
    lazy = types.ModuleType("lazy")

    def lazy_getattr(name: str) -> object:
        if name == "loaded_late":
            return len
        raise AttributeError(name)

    lazy.__getattr__ = lazy_getattr
    assert coverage.has_name(lazy, "loaded_late", "function")
    assert not coverage.has_name(lazy, "other", "function")


def test_placeholders_do_not_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lucid.nn, "Linear", lucid.nn.functional.linear)  # a function where a Module belongs
    assert not coverage.has_name(lucid.nn, "Linear", "class")
    monkeypatch.setattr(lucid, "cat", None)
    assert not coverage.has_name(lucid, "cat", "function")
    monkeypatch.delattr(lucid, "cat")
    assert not coverage.has_name(lucid, "cat", "function")


def test_tensor_properties_and_methods_are_found_on_an_instance() -> None:
    t = lucid.tensor([1.0])
    assert coverage.has_name(t, "shape", "property")
    assert coverage.has_name(t, "sum", "method")
    assert not coverage.has_name(t, "no_such_tensor_method", "method")
