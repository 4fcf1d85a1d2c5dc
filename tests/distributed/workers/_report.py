"""Workers report their verdict to a file per rank (launchers may interleave the ranks' stdout)."""

import os


def report(rank, line):
    """Print ``line`` and write it to ``$LUCID_TEST_OUT/rank<rank>.txt`` when the test asked for it."""
    print(line, flush=True)
    out = os.environ.get("LUCID_TEST_OUT")
    if out:
        with open(os.path.join(out, f"rank{rank}.txt"), "w") as f:
            f.write(line + "\n")
