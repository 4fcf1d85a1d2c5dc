"""The PyTorch-to-Lucid rule: replace the word ``torch`` with ``lucid``, nothing else.

    python scripts/torch_to_lucid.py model.py > model_lucid.py
    python scripts/torch_to_lucid.py --in-place a.py b.py

Only the whole word changes: ``import torch.nn as nn`` becomes ``import lucid.nn as nn``, while
``torchvision`` and ``my_torch_utils`` stay as they are. The tests run PyTorch-idiom programs through
:func:`translate`.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

_WORD = re.compile(r"\btorch\b")


def translate(source: str) -> str:
    """``source`` with every whole word ``torch`` replaced by ``lucid``."""
    return _WORD.sub("lucid", source)


def main(argv: list[str] | None = None) -> int:
    """Translate the files named on the command line (to stdout, or in place with ``--in-place``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--in-place", action="store_true", help="rewrite the files instead of printing them")
    args = parser.parse_args(argv)
    for path in args.files:
        out = translate(path.read_text(encoding="utf-8"))
        if args.in_place:
            path.write_text(out, encoding="utf-8")
        else:
            sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
