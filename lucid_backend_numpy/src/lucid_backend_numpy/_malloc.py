"""glibc's malloc told to keep a training step's freed buffers, so the next step does not page-fault them in.

A train step allocates the same few-MB temporaries every step. With glibc's defaults, freeing them at
the end of a step leaves a large free block at the top of the heap, which glibc hands back to the
operating system once it exceeds the trim threshold (twice the largest buffer freed so far); the next
step gets fresh pages and pays a page fault per 4 KiB on first touch, which costs more than the
element-wise kernels writing them (W2's ReLU gradient: 4.2 ms against 1.2 ms with warm pages;
benchmarks/RESULTS.md). PyTorch's CPU allocator is the same ``posix_memalign`` into glibc, but its
steps allocate fewer temporaries.

On glibc (Linux, not musl or macOS) the backend therefore calls ``mallopt`` once when it loads:
buffers below :data:`MMAP_THRESHOLD` come from the heap (not a private ``mmap`` each), and up to
:data:`TRIM_THRESHOLD` of free memory at the heap's top stays mapped. The process's resident memory
then stays near its peak instead of dropping between steps; the peak itself barely moves (measured in
RESULTS.md). ``LUCID_MALLOC=system`` leaves malloc alone, and so does setting glibc's own
``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_`` or ``GLIBC_TUNABLES``.
"""

from __future__ import annotations

import os
import sys

__all__ = ["ENV", "MMAP_THRESHOLD", "TRIM_THRESHOLD", "tune_malloc"]

ENV = "LUCID_MALLOC"
MMAP_THRESHOLD = 256 << 20  # bytes: larger buffers are still their own mmap, returned when freed
TRIM_THRESHOLD = 512 << 20  # bytes of free heap top kept mapped (the bound on what is held back)
_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3
_GLIBC_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")

_done: list[str] = []


def tune_malloc() -> str:
    """Apply the thresholds once per process; returns what was done (for messages and tests)."""
    if not _done:
        _done.append(_tune())
    return _done[0]


def _tune() -> str:
    choice = os.environ.get(ENV, "").strip().lower()
    if choice == "system":
        return f"left alone ({ENV}=system)"
    if choice not in ("", "lucid"):
        raise ValueError(f"{ENV}={choice!r}: expected 'system' (glibc's defaults) or 'lucid' (the default)")
    if not sys.platform.startswith("linux"):
        return f"left alone (not glibc: {sys.platform})"
    user = [v for v in _GLIBC_SETTINGS if v in os.environ]
    if user:
        return f"left alone ({', '.join(user)} set in the environment)"
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        version = libc.gnu_get_libc_version  # glibc only: musl has no such symbol
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return "left alone (not glibc)"
    version.restype = ctypes.c_char_p
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    ok = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
    glibc = version().decode()
    if not ok:
        return f"left alone (glibc {glibc} refused mallopt)"
    return f"glibc {glibc}: mmap threshold {MMAP_THRESHOLD >> 20} MiB, trim threshold {TRIM_THRESHOLD >> 20} MiB"
