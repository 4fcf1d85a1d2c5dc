"""Run by the tests under a launcher: one rank misbehaves; the job must end with a clear error, not hang.

usage: faults.py MODE   (MODE: raise, die, hang, mismatch, abort_stalls)
"""

import os
import signal
import sys
import time

import lucid_core as lc
import lucid_distributed as dist
import lucid_nn as nn

mode = sys.argv[1]
dist.init_process_group(timeout=float(os.environ.get("FAULT_TIMEOUT", "3")))
rank = dist.get_rank()
t = lc.ones((4,))
dist.all_reduce(t)  # everyone is up
if mode == "abort_stalls":  # rank 0's MPI_Abort never returns: its backstop must still end the job
    if rank == 0:
        from lucid_distributed import _group

        class _StalledAbort:
            def Abort(self, code: int) -> None:
                time.sleep(100)

        _group._state.comm.comm = _StalledAbort()
        _group._state.comm.abort(3)
    time.sleep(60)
    sys.exit(0)
if mode == "mismatch":
    model = nn.Linear(3, 4 if rank == 0 else 5)
    try:
        dist.DistributedDataParallel(model)
    except ValueError as exc:
        print(f"rank {rank} ValueError: {exc}", flush=True)
        sys.exit(0)
    raise AssertionError("mismatched models must raise at construction")
if rank == 1:
    if mode == "raise":
        raise RuntimeError("boom on rank 1")
    if mode == "die":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "hang":
        time.sleep(60)
        sys.exit(0)
dist.all_reduce(t)  # rank 0 waits here for the rank that misbehaved
print(f"rank {rank} finished the all_reduce it should not have", flush=True)
