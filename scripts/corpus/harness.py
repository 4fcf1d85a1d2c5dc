"""The corpus harness's logic, kept free of processes so a test can check it: the manifest, the rule, the
patches, and the comparison of a torch run with a lucid run (records and printed numbers).
"""

from __future__ import annotations

import importlib.util
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MANIFEST = HERE / "manifest.toml"
SHIM = HERE / "shim"

KINDS = ("vision", "language", "recurrent", "generative", "graph", "rl", "scientific")
_REQUIRED = {"name": str, "kind": str, "repo": str, "commit": str, "files": list, "entry": str}
_OPTIONAL = {
    "root": str,
    "args": list,
    "data": list,
    "before": list,
    "patches": list,
    "driver": str,
    "steps": int,
    "dropout_off": bool,
    "dtype": str,
    "tol": float,
    "stdout_ignore": str,
    "timeout": int,
    "notes": str,
}


def _load(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


translate = _load(ROOT / "scripts" / "torch_to_lucid.py", "torch_to_lucid").translate
MAKERS = _load(SHIM / "corpus_data.py", "corpus_data").MAKERS


@dataclass
class Program:
    """One manifest entry: where the code is (repo, pinned commit, files) and how it is run and compared."""

    name: str
    kind: str
    repo: str
    commit: str
    files: list[str]
    entry: str
    root: str = ""
    args: list[str] = field(default_factory=list)
    data: list[str] = field(default_factory=list)
    before: list[list[str]] = field(default_factory=list)
    patches: list[list[str]] = field(default_factory=list)
    driver: str = ""
    steps: int = 3
    dropout_off: bool = True
    #: the default floating dtype of both runs ("" = float32); "float64" where float32 rounding at ReLU-like
    #: kinks flips a mask in one framework and not the other, which then grows through the layers below
    dtype: str = ""
    tol: float = 1e-4
    stdout_ignore: str = r"time|ms/|\bms\b|elapsed|sec|tok/sec|it/s|s/it|mfu|dt "
    timeout: int = 600
    notes: str = ""


def validate(entry: dict[str, Any]) -> list[str]:
    """What is wrong with one manifest entry (empty when it is well-formed)."""
    problems = []
    name = entry.get("name", "?")
    for key, kind in _REQUIRED.items():
        if not isinstance(entry.get(key), kind):
            problems.append(f"{name}: `{key}` must be a {kind.__name__}")
    for key, value in entry.items():
        if key not in _REQUIRED and key not in _OPTIONAL:
            problems.append(f"{name}: unknown key `{key}`")
        elif key in _OPTIONAL and not isinstance(value, _OPTIONAL[key]):
            problems.append(f"{name}: `{key}` must be a {_OPTIONAL[key].__name__}")
    if entry.get("kind") not in KINDS:
        problems.append(f"{name}: kind {entry.get('kind')!r} is not one of {KINDS}")
    if not re.fullmatch(r"[0-9a-f]{40}", str(entry.get("commit", ""))):
        problems.append(f"{name}: commit must be 40 hex digits")
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", str(entry.get("repo", ""))):
        problems.append(f"{name}: repo must be owner/name")
    for patch in entry.get("patches", []):
        if not (isinstance(patch, list) and len(patch) == 3 and all(isinstance(p, str) for p in patch)):
            problems.append(f"{name}: a patch is [file, old, new], got {patch!r}")
    root = entry.get("root", "")
    for path in entry.get("files", []):
        if root and not str(path).startswith(root.rstrip("/") + "/"):
            problems.append(f"{name}: file {path} is outside root {root}")
    for maker in entry.get("data", []):
        if maker not in MAKERS:
            problems.append(f"{name}: data maker {maker!r} is not one of {sorted(MAKERS)}")
    if entry.get("driver") and not (HERE / entry["driver"]).is_file():
        problems.append(f"{name}: driver {entry['driver']} does not exist")
    return problems


def load_manifest(path: Path = MANIFEST) -> list[Program]:
    """The manifest's programs; raises ValueError listing every malformed entry."""
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    entries = raw.get("program", [])
    problems = [p for e in entries for p in validate(e)]
    names = [e.get("name") for e in entries]
    problems += [f"{n}: name used twice" for n in sorted({n for n in names if names.count(n) > 1})]
    if problems:
        raise ValueError("manifest problems:\n  " + "\n  ".join(problems))
    return [Program(**e) for e in entries]


def apply_patches(files: dict[str, str], patches: list[list[str]]) -> dict[str, str]:
    """``files`` (path -> text) with each ``[file, old, new]`` replacement made; a patch that matches
    nothing is an error (the pinned code changed, or the patch is wrong)."""
    out = dict(files)
    for path, old, new in patches:
        if path not in out:
            raise KeyError(f"patch names {path}, which is not one of the program's files {sorted(out)}")
        if old not in out[path]:
            raise ValueError(f"patch for {path}: text {old!r} not found")
        out[path] = out[path].replace(old, new)
    return out


def translate_files(files: dict[str, str]) -> dict[str, str]:
    """The lucid copy: every Python file through the rule (``torch`` -> ``lucid``), other files as they are."""
    return {p: translate(t) if p.endswith(".py") else t for p, t in files.items()}


# ----------------------------------------------------------------------------------------------- comparing

_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|nan|inf", re.IGNORECASE)


def numbers(stdout: str, ignore: str) -> list[tuple[int, str]]:
    """The numbers printed, each with its line index, from the lines that do not match ``ignore``."""
    skip = re.compile(ignore, re.IGNORECASE) if ignore else None
    out = []
    for k, line in enumerate(stdout.splitlines()):
        if skip and skip.search(line):
            continue
        out.extend((k, m.group()) for m in _NUMBER.finditer(line))
    return out


def _decimals(s: str) -> int:
    mantissa = s.lower().split("e")[0]
    return len(mantissa.split(".")[1]) if "." in mantissa else 0


def _unit(s: str) -> float:
    """One unit in the last printed digit of ``s`` (``1.2345`` -> 1e-4, ``3.1e-05`` -> 1e-6)."""
    exponent = int(s.lower().split("e")[1]) if "e" in s.lower() else 0
    return 10.0 ** (exponent - _decimals(s))


def compare_stdout(theirs: str, ours: str, ignore: str, tol: float) -> tuple[float, str]:
    """(largest difference in printed numbers relative to tolerance 1, first mismatch or ""): a printed number
    agrees when it is within one unit of its last digit plus ``tol`` relative."""
    a, b = numbers(theirs, ignore), numbers(ours, ignore)
    if len(a) != len(b):
        return math.inf, f"printed {len(b)} numbers, torch printed {len(a)}"
    worst, first = 0.0, ""
    for (line, x), (_, y) in zip(a, b):
        fx, fy = float(x), float(y)
        if (math.isnan(fx) and math.isnan(fy)) or fx == fy:
            continue
        allowed = _unit(x) * 1.01 + tol * abs(fx)
        ratio = abs(fx - fy) / allowed if allowed else math.inf
        if ratio > worst:
            worst = ratio
        if ratio > 1 and not first:
            first = f"stdout line {line + 1}: {y} vs torch {x}"
    return worst, first


def rel_diff(ours: np.ndarray, theirs: np.ndarray, floor: float = 0.0) -> float:
    """max |ours - theirs| / max(max |theirs|, floor) (a scale-relative error; 0 when equal, inf when shapes
    differ). ``floor`` keeps an array that is only rounding noise (the gradient of a bias before a BatchNorm,
    zero in exact arithmetic) from being judged on its own scale."""
    if ours.shape != theirs.shape:
        return math.inf
    if ours.size == 0:
        return 0.0
    a, b = ours.astype(np.float64), theirs.astype(np.float64)
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return 0.0 if np.array_equal(np.isnan(a), np.isnan(b)) and np.allclose(a, b, equal_nan=True) else math.inf
    scale = max(float(np.max(np.abs(b))), floor)
    return float(np.max(np.abs(a - b))) / (scale if scale > 0 else 1.0)


def _after_step(key: str) -> bool:
    return "/p/" in key or "/final/" in key


def _mostly_equal(ours: np.ndarray, theirs: np.ndarray, tol: float) -> bool:
    """Parameters after an adaptive step (Adam: lr * g / |g|) turn float32 noise in near-zero gradients into
    full-size updates of a few elements; such an array agrees when its mean relative difference is within
    ``tol`` and its largest within 50 ``tol``."""
    a, b = ours.astype(np.float64), theirs.astype(np.float64)
    mean = float(np.mean(np.abs(a - b))) / max(float(np.mean(np.abs(b))), 1e-30)
    return mean <= tol and rel_diff(ours, theirs) <= 50 * tol


@dataclass
class Comparison:
    """What differed between the runs: the largest relative difference, the first key over ``tol``."""

    max_diff: float
    first: str
    compared: int
    seed_init_equal: bool | None


def compare_records(theirs: dict[str, np.ndarray], ours: dict[str, np.ndarray], tol: float) -> Comparison:
    """Compare every recorded array (gradients, parameters after each recorded step, final parameters, driver
    outputs) but ``own_init`` (lucid's own initialisation, reported separately as ``seed_init_equal``)."""
    worst, first, compared = 0.0, "", 0
    keys = sorted(k for k in theirs if "/own_init/" not in k)

    def order(key: str) -> tuple[int, str]:
        # report the first step that differs, not the alphabetically first
        m = re.search(r"/s(\d+)/", key)
        return (int(m.group(1)) if m else (10**6 if "/final/" in key else -1), key)

    # an array's error is measured at least on 1e-3 of the largest value of its group (one step's gradients)
    group_scale: dict[str, float] = {}
    for key in keys:
        group = key.rsplit("/", 1)[0]
        peak = float(np.max(np.abs(theirs[key]))) if theirs[key].size else 0.0
        group_scale[group] = max(group_scale.get(group, 0.0), peak if np.isfinite(peak) else 0.0)
    # parameters whose gradient is only rounding noise (1e-6 of its step's largest gradient: a bias before a
    # BatchNorm) take an adaptive optimizer's random-signed steps; they are left out of the parameter checks
    noise = set()
    for key in keys:
        m = re.fullmatch(r"o(\d+)/s\d+/g/(\d+)", key)
        if m and float(np.max(np.abs(theirs[key]), initial=0.0)) <= 1e-6 * group_scale[key.rsplit("/", 1)[0]]:
            noise.add((m.group(1), m.group(2)))

    def noise_only(key: str) -> bool:
        m = re.fullmatch(r"o(\d+)/(?:s\d+/p|final)/(\d+)", key)
        return bool(m) and (m.group(1), m.group(2)) in noise

    keys = [k for k in keys if not noise_only(k)]
    for key in sorted(keys, key=order):
        if key not in ours:
            if not first:
                first = f"{key} missing in the lucid run"
            worst = math.inf
            continue
        d = rel_diff(ours[key], theirs[key], 1e-3 * group_scale[key.rsplit("/", 1)[0]])
        compared += 1
        worst = max(worst, d)
        if d > tol and not first and not (_after_step(key) and _mostly_equal(ours[key], theirs[key], tol)):
            first = f"{key}: rel diff {d:.2e}"
    extra = sorted(k for k in ours if k not in theirs and "/own_init/" not in k)
    if extra and not first:
        first, worst = f"{extra[0]} only in the lucid run", math.inf
    own = [k for k in ours if "/own_init/" in k]
    seed_equal = None
    if own:
        seed_equal = all(
            k.replace("own_init", "init") in theirs and rel_diff(ours[k], theirs[k.replace("own_init", "init")]) == 0
            for k in own
        )
    return Comparison(worst, first, compared, seed_equal)
