"""Run by the tests under a launcher: ranks disagree on a collective; every rank must raise the same error.

usage: mismatch.py COMMUNICATOR DEVICE   (reports "ok <rank> <json of the messages, one per case>")
"""

import json
import sys

from _report import report

import lucid_core as lc
import lucid_distributed as dist
from lucid_distributed import CollectiveMismatchError, ReduceOp

comm_name, device = sys.argv[1], sys.argv[2]
dist.init_process_group(comm_name, timeout=30)
rank, n = dist.get_rank(), dist.get_world_size()
odd = rank == n - 1  # the last rank is the one that differs


def zeros(*shape, dtype=lc.float32):
    return lc.zeros(shape, dtype=dtype, device=device)


CASES = {
    "all_reduce shape": lambda: dist.all_reduce(zeros(4 if odd else 3, 3)),
    "all_reduce dtype": lambda: dist.all_reduce(zeros(3, dtype=lc.int32 if odd else lc.float32)),
    "all_reduce op": lambda: dist.all_reduce(zeros(3), op=ReduceOp.MAX if odd else ReduceOp.SUM),
    "all_reduce async": lambda: dist.all_reduce(zeros(2 if odd else 3), async_op=True),
    "broadcast shape": lambda: dist.broadcast(zeros(5 if odd else 2), 0),
    "broadcast src": lambda: dist.broadcast(zeros(2), 1 if odd else 0),
    "all_gather shape": lambda: dist.all_gather([zeros(2, 2 if odd else 1)] * n, zeros(2, 2 if odd else 1)),
    "all_gather_into_tensor dtype": lambda: dist.all_gather_into_tensor(
        zeros(n * 2, dtype=lc.int32 if odd else lc.float32), zeros(2, dtype=lc.int32 if odd else lc.float32)
    ),
    "reduce_scatter_tensor shape": lambda: dist.reduce_scatter_tensor(
        zeros(3 if odd else 2), zeros(n * (3 if odd else 2))
    ),
    "different collectives": lambda: dist.broadcast(zeros(3), 0) if odd else dist.all_reduce(zeros(3)),
    "barrier against all_reduce": lambda: dist.barrier() if odd else dist.all_reduce(zeros(3)),
}
messages = {}
for name, call in CASES.items():
    try:
        call()
    except CollectiveMismatchError as exc:
        messages[name] = str(exc)
    else:
        messages[name] = "no error"
# no data moved in any of them: the group still works, and agrees
t = lc.ones((3,), device=device) * (rank + 1)
dist.all_reduce(t)
assert t.tolist() == [n * (n + 1) / 2] * 3, t.tolist()
report(rank, "ok " + str(rank) + " " + json.dumps(messages))
