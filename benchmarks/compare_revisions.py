"""Lucid before/after a change, in one invocation: ``bench_workloads.py`` run alternately on two checkouts.

``--before DIR`` is a checkout of the older revision (``git archive <rev> | tar -x -C DIR``); its
``*/src`` folders go first on ``PYTHONPATH`` so its packages shadow the editable installs. The current
checkout runs as "after". Runs alternate (before, after, before, ...) so machine load hits both alike;
each run also times PyTorch in its process, so the Lucid/PyTorch ratios of one run stay comparable.
Other arguments go to ``bench_workloads.py``. Example (the W2/W5 numbers in RESULTS.md):
``python benchmarks/compare_revisions.py --before /tmp/lucid-before --rounds 2 -- --only W2,W5 --device numpy
--threads 1 --cycles 7``.
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="checkout of the older revision")
    parser.add_argument("--rounds", type=int, default=2, help="before/after pairs (default 2)")
    parser.add_argument("rest", nargs="*", help="arguments for bench_workloads.py (after --)")
    args = parser.parse_args()
    before_path = os.pathsep.join(sorted(glob.glob(os.path.join(os.path.abspath(args.before), "*", "src"))))
    if not before_path:
        sys.exit(f"compare_revisions: no */src folders under {args.before}")
    script = os.path.join(HERE, "bench_workloads.py")
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    for r in range(args.rounds):
        for label, path in (("before", before_path), ("after", "")):
            env = dict(os.environ)
            env["PYTHONPATH"] = path
            print(f"\n=== round {r + 1}, {label} (load {os.getloadavg()[0]:.1f}) ===", flush=True)
            subprocess.run([sys.executable, script, *args.rest], env=env, check=True)


if __name__ == "__main__":
    main()
