"""Restore the corpus programs' files at their pinned commits from the local mirrors (never from the network).

    python scripts/corpus/restore.py            # checks every program's mirror; prints the fetch sources missing
    python scripts/corpus/restore.py --to DIR   # writes each program's files under DIR/<name>/

The mirrors are bare git directories under ``/work/.mirror/<owner>+<name>/repo`` (``LUCID_CORPUS_MIRROR``
overrides the folder). The programs' code is never committed to this repository; only the manifest is.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Program, load_manifest

MIRROR = Path(os.environ.get("LUCID_CORPUS_MIRROR", "/work/.mirror"))


def git_dir(repo: str) -> Path:
    """The mirror of ``owner/name``."""
    return MIRROR / repo.replace("/", "+") / "repo"


def missing(programs: list[Program]) -> list[str]:
    """The ``fetch`` sources (``github:owner/name``) whose mirror is absent or lacks the pinned commit."""
    out = []
    for repo in sorted({p.repo for p in programs}):
        commits = {p.commit for p in programs if p.repo == repo}
        gd = git_dir(repo)
        ok = gd.is_dir() and all(
            subprocess.run(
                ["git", "--git-dir", str(gd), "cat-file", "-e", f"{c}^{{commit}}"], capture_output=True
            ).returncode
            == 0
            for c in commits
        )
        if not ok:
            out.append(f"github:{repo}")
    return out


def notebook_code(text: str) -> str:
    """The code cells of a Jupyter notebook, in order, as one script (IPython ``%``/``!`` lines dropped)."""
    cells = json.loads(text)["cells"]
    chunks = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        chunks.append("\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))))
    return "\n\n".join(chunks) + "\n"


def program_files(program: Program) -> dict[str, str]:
    """The program's files (path relative to its ``root`` -> text) at the pinned commit; a notebook becomes
    ``<stem>.py`` holding its code cells."""
    gd = git_dir(program.repo)
    out = {}
    prefix = program.root.rstrip("/") + "/" if program.root else ""
    for path in program.files:
        text = subprocess.run(
            ["git", "--git-dir", str(gd), "show", f"{program.commit}:{path}"],
            capture_output=True,
            check=True,
            text=True,
        ).stdout
        rel = path[len(prefix) :]
        if rel.endswith(".ipynb"):
            rel, text = rel[: -len(".ipynb")] + ".py", notebook_code(text)
        out[rel] = text
    return out


def main(argv: list[str] | None = None) -> int:
    """Check the mirrors (and write the files with ``--to``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--to", type=Path, help="write each program's files under this folder")
    args = parser.parse_args(argv)
    programs = load_manifest()
    absent = missing(programs)
    if absent:
        print("mirrors missing; fetch these sources first:\n  " + "\n  ".join(absent))
        return 1
    print(f"all {len(programs)} programs' mirrors are present under {MIRROR}")
    if args.to:
        for program in programs:
            for rel, text in program_files(program).items():
                dest = args.to / program.name / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_text(text, encoding="utf-8")
        print(f"wrote the programs under {args.to}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
