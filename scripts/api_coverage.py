"""Write docs/api-coverage.md: how much of PyTorch 2.13's public API the ``lucid`` face has, per group.

Reads tests/pytorch_face/fixtures/torch_api_surface.json (written once by scripts/torch_api_surface.py,
which imports torch; this script does not) and looks each name up in ``lucid``, ``lucid.Tensor``,
``lucid.nn.functional`` and ``lucid.nn``. The percentage of a group is present / (names - device-specific
exclusions). It also writes tests/pytorch_face/fixtures/api_present.json, the names found, which
tests/pytorch_face/test_api_coverage.py checks still exist.

    python scripts/api_coverage.py           # writes docs/api-coverage.md and api_present.json
    python scripts/api_coverage.py --check   # exits 1, printing the difference, when either is out of date
"""

from __future__ import annotations

import argparse
import difflib
import inspect
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "pytorch_face" / "fixtures"
SURFACE = FIXTURES / "torch_api_surface.json"
PRESENT = FIXTURES / "api_present.json"
DOC = ROOT / "docs" / "api-coverage.md"
GROUPS = ("torch", "Tensor", "nn.functional", "nn")
PREFIX = {"torch": "lucid.", "Tensor": "lucid.Tensor.", "nn.functional": "lucid.nn.functional.", "nn": "lucid.nn."}
GOAL = 95.0

# a name no module defines: if a namespace answers it, its __getattr__ fabricates and only real entries count
_PROBE = "lucid_api_coverage_probe_no_such_name"


def _spaces() -> dict[str, Any]:
    """The lucid objects each group's names are looked up on (imported here, not at module import)."""
    import lucid
    import lucid.nn
    import lucid.nn.functional

    return {
        "torch": lucid,
        "Tensor": lucid.tensor([1.0]),  # an instance, so attributes set per tensor are seen too
        "nn.functional": lucid.nn.functional,
        "nn": lucid.nn,
    }


def _answers_anything(space: Any) -> bool:
    """Whether ``space`` resolves a name it cannot have (a catch-all ``__getattr__``)."""
    try:
        getattr(space, _PROBE)
    except AttributeError:
        return False
    return True


def has_name(space: Any, name: str, kind: str) -> bool:
    """Whether ``name`` is a real attribute of ``space`` of a fitting kind.

    Real means defined on the object or its class (found without calling ``__getattr__``), or served by a
    lazy ``__getattr__`` that refuses unknown names. PyTorch's classes and functions must be matched by
    a callable (by a class in ``nn``), never by a module; ``None`` counts only for PyTorch's constants.
    """
    try:
        value = inspect.getattr_static(space, name)
    except AttributeError:
        if _answers_anything(space):
            return False
        try:
            value = getattr(space, name)
        except Exception:  # noqa: BLE001 - AttributeError, or a lazy loader that breaks: not provided
            return False
    if isinstance(value, ModuleType) or (value is None and kind != "constant"):  # torch.newaxis is None
        return False
    if kind == "class" and isinstance(space, ModuleType) and space.__name__ == "lucid.nn":
        return inspect.isclass(value)
    if kind in ("class", "function") and isinstance(space, ModuleType):
        return callable(value)
    return True


@dataclass
class Group:
    """One group's names split by status, as the page shows them."""

    name: str
    present: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    exclusions: list[dict[str, Any]] = field(default_factory=list)
    left_out: list[dict[str, Any]] = field(default_factory=list)
    device: set[str] = field(default_factory=set)
    device_found: list[str] = field(default_factory=list)  # device-specific names lucid has anyway

    @property
    def counted(self) -> int:
        """The denominator: every name except the device-specific exclusions."""
        return len(self.present) + len(self.missing)

    @property
    def percent(self) -> float:
        """Coverage in percent, one decimal."""
        return round(100.0 * len(self.present) / self.counted, 1) if self.counted else 100.0


def lookup(surface: dict[str, Any], spaces: dict[str, Any]) -> dict[str, set[str]]:
    """Per group, every surface name (device-specific ones included) that lucid has now."""
    return {
        gname: {e["name"] for e in surface["groups"][gname]["names"] if has_name(spaces[gname], e["name"], e["kind"])}
        for gname in GROUPS
    }


def measure(surface: dict[str, Any], found: dict[str, set[str]]) -> dict[str, Group]:
    """Each group's names split into present and missing by ``found``; device-specific ones are not counted."""
    groups: dict[str, Group] = {}
    for gname in GROUPS:
        data = surface["groups"][gname]
        group = Group(gname, exclusions=data["exclusions"], left_out=data["left_out"])
        group.device = {e["name"] for e in data["exclusions"] if e["device_specific"]}
        for entry in data["names"]:
            name = entry["name"]
            if name in group.device:
                continue
            (group.present if name in found[gname] else group.missing).append(name)
        group.device_found = sorted(group.device & found[gname])
        groups[gname] = group
    return groups


def _names(names: list[str], prefix: str) -> str:
    """A comma-separated line of code-formatted names (empty groups say so)."""
    return ", ".join(f"`{prefix}{n}`" for n in names) if names else "(none)"


def render(surface: dict[str, Any], groups: dict[str, Group]) -> str:
    """The whole page as markdown (deterministic: the same inputs give the same bytes)."""
    lines = [
        "# API coverage: the PyTorch face",
        "",
        "<!-- written by `python scripts/api_coverage.py`; do not edit by hand (`--check` in the tests) -->",
        "",
        f"How much of PyTorch {surface['torch_version']}'s public API `lucid` has, in four groups. PyTorch's",
        "names come from `tests/pytorch_face/fixtures/torch_api_surface.json`, which",
        "`scripts/torch_api_surface.py` wrote once from an installed PyTorch; its rules (what is left out",
        "of the surface, what is excluded, and why) are data in that script. A name is present when it is a",
        "real attribute of the matching `lucid` object (a catch-all `__getattr__` does not count).",
        "Coverage = present / (names - device-specific exclusions); other exclusions stay in the",
        f"denominator. The goal is {GOAL:.0f} % in each group.",
        "",
        "| group | PyTorch names | device-specific (not counted) | counted | present | missing | coverage |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for g in groups.values():
        total = g.counted + len(g.device)
        lines.append(
            f"| `{g.name}` | {total} | {len(g.device)} | {g.counted} | {len(g.present)} | "
            f"{len(g.missing)} | {g.percent:.1f} % |"
        )
    for g in groups.values():
        prefix = PREFIX[g.name]
        lines += ["", f"## `{g.name}`: {g.percent:.1f} %", ""]
        lines += [f"### Missing ({len(g.missing)})", "", _names(g.missing, prefix), ""]
        lines += [f"### Present ({len(g.present)})", "", _names(g.present, prefix), ""]
        lines += [f"### Exclusions ({len(g.exclusions)})", ""]
        if g.exclusions:
            lines += ["| name | reason | counted |", "| --- | --- | --- |"]
            for e in g.exclusions:
                counted = "no (device-specific)" if e["device_specific"] else "yes, as missing"
                lines.append(f"| `{e['name']}` | {e['reason']} | {counted} |")
        else:
            lines.append("(none)")
        if g.device_found:
            lines += ["", "Device-specific names `lucid` has anyway: " + _names(g.device_found, prefix)]
        lines += ["", f"### Left out of the surface ({len(g.left_out)})", ""]
        if g.left_out:
            lines += ["| name | reason |", "| --- | --- |"]
            lines += [f"| `{e['name']}` | {e['reason']} |" for e in g.left_out]
        else:
            lines.append("(none)")
    return "\n".join(lines) + "\n"


def present_json(groups: dict[str, Group]) -> str:
    """The machine-readable twin of the page: per group the names found and the percentages."""
    data = {
        "generated_by": "scripts/api_coverage.py",
        "groups": {
            g.name: {
                "present": sorted(g.present + g.device_found),
                "counted": g.counted,
                "present_counted": len(g.present),
                "percent": g.percent,
            }
            for g in groups.values()
        },
    }
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def load_surface(path: Path = SURFACE) -> dict[str, Any]:
    """The JSON written by scripts/torch_api_surface.py."""
    if not path.exists():
        raise SystemExit(f"api_coverage: {path} is missing; run scripts/torch_api_surface.py with PyTorch 2.13")
    return json.loads(path.read_text())


def outputs() -> dict[Path, str]:
    """What the script would write now: the page and the present-names file."""
    surface = load_surface()
    groups = measure(surface, lookup(surface, _spaces()))
    return {DOC: render(surface, groups), PRESENT: present_json(groups)}


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) docs/api-coverage.md and api_present.json; print the totals."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the files differ from a fresh run")
    args = parser.parse_args(argv)
    stale = 0
    for path, text in outputs().items():
        rel = path.relative_to(ROOT)
        if args.check:
            old = path.read_text() if path.exists() else ""
            if old != text:
                stale += 1
                sys.stdout.writelines(
                    difflib.unified_diff(old.splitlines(True), text.splitlines(True), str(rel), "now")
                )
        else:
            path.write_text(text)
            print(f"wrote {rel}")
    if stale:
        print(f"\napi_coverage: {stale} file(s) out of date; run `python scripts/api_coverage.py`")
        return 1
    if not args.check:
        totals = json.loads(PRESENT.read_text())["groups"]
        for name in GROUPS:
            g = totals[name]
            print(f"{name}: {g['present_counted']}/{g['counted']} = {g['percent']:.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
