"""Run the public corpus: each program with PyTorch, then renamed (``torch`` -> ``lucid``) with Lucid; compare.

    python scripts/corpus/run_corpus.py                 # every program; writes docs/corpus.md
    python scripts/corpus/run_corpus.py mnist vae -v    # some programs (merged into the stored results)

Each program's files come from its pinned commit in the local mirror (scripts/corpus/restore.py says which
``fetch`` sources are missing). Each run is its own process, in its own copy of the program's folder, with
``scripts/corpus/shim`` first on ``sys.path`` in both runs: synthetic data (torchvision, gymnasium,
requests and tiktoken stand-ins; data files made by ``corpus_data``) and the recorder ``_corpus_runner``.
The lucid run starts from the torch run's initial weights (copied in as each optimizer is built) and the same
seed; the comparison covers the gradients and parameters of each optimizer's first steps, the final
parameters, and every number the program printed. PyTorch runs from ``LUCID_CORPUS_TORCH_PYTHON``
(default /work/torchvenv/bin/python), Lucid from ``LUCID_CORPUS_LUCID_PYTHON`` (default this Python).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import (
    HERE,
    MAKERS,
    ROOT,
    SHIM,
    Program,
    apply_patches,
    compare_records,
    compare_stdout,
    load_manifest,
    translate_files,
)
from restore import missing, program_files

TORCH_PYTHON = os.environ.get("LUCID_CORPUS_TORCH_PYTHON", "/work/torchvenv/bin/python")
LUCID_PYTHON = os.environ.get("LUCID_CORPUS_LUCID_PYTHON", sys.executable)
RESULTS = HERE / "results.json"
DOC = ROOT / "docs" / "corpus.md"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SHIM)
    env["PYTHONHASHSEED"] = "0"
    # one thread each: reproducible sums in PyTorch, and the machine's cores are shared
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env.pop("LUCID_DEVICE", None)
    return env


def prepare(program: Program, folder: Path, framework: str) -> None:
    """Write the program's (patched; for lucid, renamed) files and its synthetic data into ``folder``."""
    files = program_files(program)
    if program.driver:
        files[program.entry] = (HERE / program.driver).read_text(encoding="utf-8")
    files = apply_patches(files, program.patches)
    if framework == "lucid":
        files = translate_files(files)
    for rel, text in files.items():
        dest = folder / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
    for maker in program.data:
        MAKERS[maker](folder)


def run_one(program: Program, folder: Path, framework: str, init: Path | None) -> dict[str, Any]:
    """Run ``before`` steps, then the entry under the recorder; the outcome (error, stdout, record)."""
    python = TORCH_PYTHON if framework == "torch" else LUCID_PYTHON
    env = _env()
    env["CORPUS_FRAMEWORK"] = framework
    start = time.monotonic()
    for step in program.before:
        done = subprocess.run(
            [python, *step], cwd=folder, env=env, capture_output=True, text=True, timeout=program.timeout
        )
        if done.returncode:
            last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
            return {"error": f"before `{' '.join(step)}`: {last}", "stdout": "", "record": {}, "seconds": 0.0}
    record = folder / "record.npz"
    cmd = [python, "-m", "_corpus_runner", "--framework", framework, "--record", str(record)]
    cmd += ["--steps", str(program.steps)] + (["--init-from", str(init)] if init else [])
    cmd += ["--dropout-off"] if program.dropout_off else []
    cmd += ["--default-dtype", program.dtype] if program.dtype else []
    cmd += [program.entry, "--", *program.args]
    try:
        done = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=program.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {program.timeout} s", "stdout": "", "record": {}, "seconds": 0.0}
    seconds = time.monotonic() - start
    (folder / "stdout.txt").write_text(done.stdout, encoding="utf-8")
    (folder / "stderr.txt").write_text(done.stderr, encoding="utf-8")
    info_path = record.with_suffix(".json")
    if done.returncode or not info_path.exists():
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        return {"error": f"runner exited {done.returncode}: {last}", "stdout": done.stdout, "record": {}}
    info = json.loads(info_path.read_text(encoding="utf-8"))
    error = None
    if info["error"]:
        e = info["error"]
        error = f"{e['type']}: {e['message']}" + (f" (at {e['where']})" if e.get("where") else "")
    return {
        "error": error,
        "stdout": done.stdout,
        "record": dict(np.load(record)),
        "path": str(record),
        "seconds": round(seconds, 1),
        "optimizers": info["optimizers"],
        "steps": info["steps"],
    }


def run_program(program: Program, base: Path) -> dict[str, Any]:
    """Both runs of one program and their comparison, as one result row."""
    row: dict[str, Any] = {"name": program.name, "kind": program.kind, "repo": program.repo}
    row["source"] = f"{program.repo}/{program.root or program.files[0]}"
    folders = {fw: base / program.name / fw for fw in ("torch", "lucid")}
    for folder in folders.values():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    try:
        for fw, folder in folders.items():
            prepare(program, folder, fw)
    except (OSError, KeyError, ValueError, subprocess.CalledProcessError) as exc:
        return {**row, "status": "harness", "detail": f"could not prepare: {exc}", "max_diff": None}
    theirs = run_one(program, folders["torch"], "torch", None)
    if theirs["error"]:
        return {**row, "status": "harness", "detail": f"torch run failed: {theirs['error']}", "max_diff": None}
    ours = run_one(program, folders["lucid"], "lucid", Path(theirs["path"]) if theirs["record"] else None)
    row.update(torch_s=theirs.get("seconds"), lucid_s=ours.get("seconds"), steps=theirs.get("steps"))
    if ours["error"]:
        return {**row, "status": "fail", "detail": ours["error"], "max_diff": None}
    rec = compare_records(theirs["record"], ours["record"], program.tol)
    out_diff, out_first = compare_stdout(theirs["stdout"], ours["stdout"], program.stdout_ignore, program.tol)
    row.update(seed_init_equal=rec.seed_init_equal, compared=rec.compared, stdout_ratio=out_diff)
    max_diff = rec.max_diff
    if rec.first or out_first:
        detail = rec.first or out_first
        return {**row, "status": "fail", "detail": f"wrong numbers: {detail}", "max_diff": max_diff}
    return {**row, "status": "pass", "detail": "", "max_diff": max_diff}


def _fmt_diff(d: float | None) -> str:
    if d is None:
        return ""
    return "inf" if math.isinf(d) else f"{d:.1e}"


def _blocker(row: dict[str, Any]) -> str:
    """The part of a failure's detail that names the blocker (the error, without where it was raised)."""
    detail = row.get("detail", "")
    if row["status"] == "harness":
        return f"harness: {detail}"
    if detail.startswith("wrong numbers"):
        return "wrong numbers (see the table)"
    if detail.startswith("before `"):
        detail = "in a `before` step: " + detail.split("`: ", 1)[-1]
    return detail.split(" (at ")[0]


def write_doc(results: dict[str, dict[str, Any]], programs: list[Program]) -> str:
    """docs/corpus.md: the table (program, kind, status, max difference) and the first blockers."""
    order = [p.name for p in programs if p.name in results]
    rows = [results[n] for n in order]
    passed = sum(r["status"] == "pass" for r in rows)
    lines = [
        "# The public corpus: PyTorch programs run renamed to Lucid",
        "",
        "Generated by `python scripts/corpus/run_corpus.py` (needs the mirrors: `python scripts/corpus/restore.py`",
        "prints the `fetch` sources missing). Each program of `scripts/corpus/manifest.toml` (public repository,",
        "pinned commit) runs twice in separate processes: as published with PyTorch 2.13 (CPU), and after the",
        "rule of `scripts/torch_to_lucid.py` (the word `torch` becomes `lucid`) with Lucid on the NumPy backend.",
        "Both runs get the same synthetic data (stand-ins in `scripts/corpus/shim`: no network, no dataset",
        "download), the same seed, the same few steps (harness arguments or patched constants listed in the",
        "manifest), and the same initial weights (the torch run's, copied in as each optimizer is built).",
        "",
        "Compared: the gradients before and the parameters after each optimizer's first steps, the final",
        "parameters, and every number the program printed (timings left out). *max diff* is the largest",
        "max|lucid - torch| / max|torch| over the compared arrays; a program passes when every array is within",
        "its tolerance (manifest `tol`, 1e-4 by default) and every printed number within one unit of its last",
        "digit plus `tol` relative. *seed init* says whether Lucid's own initialisation, from the same",
        "`manual_seed`, already gave PyTorch's initial weights bit for bit.",
        "",
        f"**{passed} of {len(rows)} pass.**",
        "",
        "| program | kind | source | status | max diff | seed init | first blocker |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        seed = {True: "same", False: "differs", None: ""}[r.get("seed_init_equal")]
        detail = r.get("detail", "").replace("|", "\\|").replace("\n", " ")
        lines.append(
            f"| {r['name']} | {r['kind']} | {r['source']} | {r['status']} | {_fmt_diff(r.get('max_diff'))} "
            f"| {seed} | {detail} |"
        )
    groups: dict[str, list[str]] = {}
    for r in rows:
        if r["status"] != "pass":
            groups.setdefault(_blocker(r), []).append(r["name"])
    lines += ["", "## First blockers, grouped", ""]
    lines += [f"- {blocker}: {', '.join(names)}" for blocker, names in sorted(groups.items())] or ["- none"]
    lines += ["", "## How each program is run", ""]
    for p in programs:
        how = " ".join([p.entry, *p.args])
        extra = []
        if p.data:
            extra.append("data: " + ", ".join(p.data))
        if p.patches:
            extra.append(f"{len(p.patches)} patch(es)")
        if p.driver:
            extra.append(f"driver {p.driver}")
        if p.dtype:
            extra.append(f"both runs in {p.dtype} (default dtype)")
        if p.notes:
            extra.append(p.notes)
        tail = f"; {'; '.join(extra)}" if extra else ""
        lines.append(f"- **{p.name}** (`{p.repo}` @ `{p.commit[:12]}`): `{how}`{tail}")
    text = "\n".join(lines) + "\n"
    DOC.write_text(text, encoding="utf-8")
    return text


def main(argv: list[str] | None = None) -> int:
    """Run the named programs (all by default), print the table, store results, write docs/corpus.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="programs to run (default: all)")
    parser.add_argument("--keep", type=Path, help="run in this folder and keep it (default: a temporary one)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each failure's detail in full")
    parser.add_argument("--no-doc", action="store_true", help="do not rewrite docs/corpus.md")
    parser.add_argument("--doc-only", action="store_true", help="rewrite docs/corpus.md from the stored results")
    args = parser.parse_args(argv)
    programs = load_manifest()
    if args.doc_only:
        write_doc(json.loads(RESULTS.read_text(encoding="utf-8")), programs)
        return 0
    chosen = [p for p in programs if not args.names or p.name in args.names]
    unknown = set(args.names) - {p.name for p in programs}
    if unknown:
        parser.error(f"unknown programs {sorted(unknown)}; the manifest has {[p.name for p in programs]}")
    absent = missing(chosen)
    if absent:
        print("mirrors missing; fetch these sources first:\n  " + "\n  ".join(absent))
        return 1
    results = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}
    results = {k: v for k, v in results.items() if k in {p.name for p in programs}}
    base = args.keep or Path(tempfile.mkdtemp(prefix="lucid-corpus-"))
    for program in chosen:
        row = run_program(program, base)
        results[program.name] = row
        print(
            f"{program.name:28s} {program.kind:11s} {row['status']:8s} {_fmt_diff(row.get('max_diff')):8s} "
            f"{row['detail'] if args.verbose else row['detail'][:110]}",
            flush=True,
        )
        RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    passed = sum(r["status"] == "pass" for r in results.values())
    print(f"{passed} of {len(results)} pass")
    if not args.no_doc:
        write_doc(results, programs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
