"""lucid-run across "hosts" (here two names of this machine): --hostfile and --hosts start ranks through mpiexec."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from lucid_distributed import run as lucid_run

from ._launch import clean_env

SCRIPT = """\
import os, lucid_core as lc, lucid_distributed as d
d.init_process_group()
t = lc.asarray([float(d.get_rank() + 1)])
d.all_reduce(t)
print(f"rank {d.get_rank()} of {d.get_world_size()} on {os.environ['PMI_HOSTNAME']} "
      f"with {os.environ['MPI_LOCALNRANKS']} local ranks sum {t.item():g}", flush=True)
d.destroy_process_group()
"""


def test_a_hostfile_with_two_local_hosts_places_ranks_by_its_counts(tmp_path) -> None:
    script, hosts = tmp_path / "where.py", tmp_path / "hosts"
    script.write_text(SCRIPT)
    hosts.write_text("# two names of this machine\nlocalhost:3\n127.0.0.1 slots=1\n")  # MPICH's and Open MPI's syntax
    proc = subprocess.run(
        [sys.executable, "-m", "lucid_distributed.run", "--hostfile", str(hosts), str(script)],
        capture_output=True, text=True, timeout=120, env=clean_env(),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # MPICH's proxies relay each rank's output in chunks, so two ranks' lines can meet on one line: match, not split
    lines = sorted(re.findall(r"rank \d+ of \d+ on \S+ with \d+ local ranks sum \d+", proc.stdout))
    assert lines == [
        "rank 0 of 4 on localhost with 3 local ranks sum 10",
        "rank 1 of 4 on localhost with 3 local ranks sum 10",
        "rank 2 of 4 on localhost with 3 local ranks sum 10",
        "rank 3 of 4 on 127.0.0.1 with 1 local ranks sum 10",
    ], proc.stdout + proc.stderr


def test_hosts_option_and_hostfile_command_lines(tmp_path, capsys) -> None:
    assert lucid_run.main(["--dry-run", "--hosts", "localhost:2,127.0.0.1:2", "t.py"]) == 0
    line = capsys.readouterr().out.split()
    assert line[1:7] == ["-n", "4", "-hosts", "localhost:2,127.0.0.1:2", "-launcher", "fork"], line
    lucid_run.main(["--dry-run", "--nproc-per-node", "3", "--hosts", "node-a,node-b:5", "t.py"])
    line = capsys.readouterr().out.split()
    assert line[1:5] == ["-n", "6", "-hosts", "node-a:3,node-b:3"] and "-launcher" not in line, line  # remote: ssh
    hosts = tmp_path / "hosts"
    hosts.write_text("node-a:2\nnode-b:1\n")
    lucid_run.main(["--dry-run", "--hostfile", str(hosts), "t.py"])
    assert capsys.readouterr().out.split()[1:5] == ["-n", "3", "-f", str(hosts)]
    for bad, why in (("a:0", "positive integer"), (",", "names no host")):
        with pytest.raises(SystemExit, match=why):
            lucid_run.main(["--dry-run", "--hosts", bad, "t.py"])
