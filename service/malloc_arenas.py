"""Fewer glibc malloc arenas for the pilot's threads (what ``MALLOC_ARENA_MAX=2`` does).

Under glibc each thread that allocates may get an arena of its own (up to eight per core);
the pilot answers turns on a pool of worker threads, and what the encoders and the
cross-encoder allocate in each of them stays resident. Over five rounds of
``bench/service.py``'s load (20 clients x 5 messages each) the service grew 164 MB with the
default and 34 MB with two arenas (2026-12-06). Applied when ``serve`` starts, before its
threads; an operator's own ``MALLOC_ARENA_MAX`` (or ``glibc.malloc.arena_max`` in
``GLIBC_TUNABLES``) wins, and elsewhere than glibc nothing changes.

Loading the models frees what only the load needed (the cross-encoder's int8 weights, once
folded into float ones: about 100 MB); :func:`return_freed_heap` hands those pages back, so
they do not count in the pilot's resident memory from its first request on.

Usage::

    limit_malloc_arenas()        # True where mallopt accepted the limit
    return_freed_heap()          # True where malloc_trim ran
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

M_ARENA_MAX = -8  # glibc's mallopt parameter number (malloc.h)
ARENAS = 2


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Cap the process's malloc arenas at ``arenas`` (call it before starting threads);
    False where the environment already sets the limit or the C library has no ``mallopt``."""
    if "MALLOC_ARENA_MAX" in os.environ or "malloc.arena_max" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        return bool(_libc().mallopt(M_ARENA_MAX, arenas))
    except (OSError, AttributeError):
        return False


def return_freed_heap() -> bool:
    """Give the heap's free pages back to the system (glibc's ``malloc_trim(0)``; call it once
    the runtime is loaded); False where the C library has no ``malloc_trim``."""
    try:
        _libc().malloc_trim(0)
    except (OSError, AttributeError):
        return False
    return True


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
