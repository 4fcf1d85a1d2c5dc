"""Run by the tests under lucid-run: one rank misbehaves; lucid-run must name it and stop the others.

usage: launcher_faults.py MODE   (MODE: exit0, osexit0, kill, raise, stubborn, late)
Every rank writes its pid to $LUCID_TEST_OUT/pid<rank>, so the test can check nobody is left running.
"""

import os
import signal
import sys
import time

import lucid_core as lc
import lucid_distributed as dist

mode = sys.argv[1]
dist.init_process_group(timeout=120)  # far longer than the tests wait: lucid-run must end the job, not the timeout
rank = dist.get_rank()
with open(os.path.join(os.environ["LUCID_TEST_OUT"], f"pid{rank}"), "w") as f:
    f.write(str(os.getpid()))
t = lc.ones((4,))
dist.all_reduce(t)  # everyone is up
if rank == 0 and mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # only SIGKILL, after the grace period, ends it
if rank == 1:
    if mode in ("exit0", "stubborn"):
        sys.exit(0)  # leaves before the collective rank 0 waits in
    if mode == "osexit0":
        os._exit(0)
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "raise":
        raise RuntimeError("boom on rank 1")
dist.all_reduce(t)
if rank == 0 and mode == "late":
    time.sleep(1.5)  # rank 0 works on after the last collective while rank 1 has already exited: no fault
print(f"rank {rank} finished with {t.tolist()}", flush=True)
