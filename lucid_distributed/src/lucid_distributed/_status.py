"""What each rank tells ``lucid-run`` about itself: a small memory-mapped record per rank.

``lucid-run`` sets ``$LUCID_RUN_DIR`` to a fresh folder; ``init_process_group`` then maps
``rank<R>.status`` there and keeps in it the rank's pid, its state (running, exited through the
interpreter's shutdown, failed with an exception) and how many collectives it has started. The
launcher reads these records while the job runs: a rank that left (exited, was killed) after fewer
collectives than another rank has started will never join that collective, so the job is stopped
instead of waiting for a timeout. Writing the counter is one ``struct.pack_into`` per collective.
Only stdlib: the launcher imports this module without Lucid's tensors.
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KINDS", "RUN_DIR_ENV", "RUNNING", "EXITED", "FAILED", "RankRecord", "RankStatus", "read_records"]

#: the environment variable naming the folder of the records (set by lucid-run)
RUN_DIR_ENV = "LUCID_RUN_DIR"
RUNNING, EXITED, FAILED = 0, 1, 2
#: the collectives, in the order of their codes (in a record and in the process group's signatures)
KINDS = ("all_reduce", "broadcast", "all_gather_into_tensor", "reduce_scatter_tensor", "all_gather", "barrier",
         "all_gather_object", "broadcast_object_list")  # fmt: skip

# pid, state, collectives started, kind of the last one (an index into KINDS, -1 none), then a message
_HEAD = struct.Struct("<qqqq")
_COUNT = struct.Struct("<qq")  # (collectives started, kind): rewritten at every collective
_MESSAGE = 96
SIZE = _HEAD.size + _MESSAGE


@dataclass(frozen=True)
class RankRecord:
    """One rank's record as the launcher reads it."""

    rank: int
    pid: int
    state: int
    collectives: int
    kind: int
    message: str


class RankStatus:
    """The rank side: created by ``init_process_group`` when ``$LUCID_RUN_DIR`` names a folder."""

    def __init__(self, folder: str, rank: int, pid: int | None = None) -> None:
        path = Path(folder) / f"rank{rank}.status"
        with open(path, "w+b") as f:
            f.truncate(SIZE)
            self._map = mmap.mmap(f.fileno(), SIZE)
        _HEAD.pack_into(self._map, 0, os.getpid() if pid is None else pid, RUNNING, 0, -1)
        self.collectives = 0

    def started(self, kind: int) -> None:
        """Count one collective started (``kind``: its index in the process group's list of collectives)."""
        self.collectives += 1
        _COUNT.pack_into(self._map, 16, self.collectives, kind)

    def finish(self, state: int, message: str = "") -> None:
        """Record how the rank ends (``EXITED`` at interpreter shutdown, ``FAILED`` on an uncaught error)."""
        data = message.encode("utf-8", "replace")[: _MESSAGE - 1]
        self._map[_HEAD.size : SIZE] = data.ljust(_MESSAGE, b"\0")
        struct.pack_into("<q", self._map, 8, state)


def read_records(folder: str | Path) -> dict[int, RankRecord]:
    """Every rank's record in ``folder`` (ranks that have not opened their group yet are missing)."""
    out: dict[int, RankRecord] = {}
    for path in Path(folder).glob("rank*.status"):
        try:
            rank = int(path.name[4:].split(".")[0])
            raw = path.read_bytes()
        except (ValueError, OSError):
            continue
        if len(raw) < SIZE:
            continue
        pid, state, count, kind = _HEAD.unpack_from(raw, 0)
        message = raw[_HEAD.size : SIZE].split(b"\0", 1)[0].decode("utf-8", "replace")
        if pid:
            out[rank] = RankRecord(rank, pid, state, count, kind, message)
    return out
