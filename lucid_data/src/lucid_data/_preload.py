"""Imported once by the forkserver process, before it forks DataLoader workers.

It loads the backends named in ``$LUCID_DATA_PRELOAD_BACKENDS`` (set by the main process: its default
device's backend, if eager), so each forked worker starts with them ready instead of importing NumPy and
SciPy again (about a second per worker on a busy machine). Lazy backends (MLX) are never named: a process
that forks must not have started their threads; a worker loads them itself.
"""

from __future__ import annotations

import os

import lucid_core as lc

for _name in filter(None, os.environ.get("LUCID_DATA_PRELOAD_BACKENDS", "").split(",")):
    try:
        lc.get_backend(_name)
    except Exception:  # noqa: BLE001 - a worker reports the error if it needs the backend
        continue
