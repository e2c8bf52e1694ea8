"""The pilot's cap on glibc malloc arenas (service/malloc_arenas.py)."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import subprocess
import sys

import pytest

from service.malloc_arenas import limit_malloc_arenas, return_freed_heap
from tests.conftest import REPO

glibc_only = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc arenas")

# eight threads hold allocations at once; glibc's malloc_stats prints one "Arena N:" per arena
ARENAS_IN_USE = """
import ctypes, sys, threading
from service.malloc_arenas import limit_malloc_arenas
if sys.argv[1] == "capped":
    limit_malloc_arenas()
libc = ctypes.CDLL("libc.so.6")
held = threading.Barrier(9)
def allocate():
    kept = [libc.malloc(4096) for _ in range(64)]
    held.wait()
    held.wait()
threads = [threading.Thread(target=allocate) for _ in range(8)]
for thread in threads:
    thread.start()
held.wait()
libc.malloc_stats()
held.wait()
"""


def arenas_in_use(mode: str) -> int:
    env = {k: v for k, v in os.environ.items() if k not in ("MALLOC_ARENA_MAX", "GLIBC_TUNABLES")}
    done = subprocess.run(
        [sys.executable, "-c", ARENAS_IN_USE, mode],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return sum(line.startswith("Arena ") for line in done.stderr.splitlines())


@glibc_only
def test_threads_share_two_arenas_once_capped():
    assert arenas_in_use("default") > 2
    assert arenas_in_use("capped") == 2


@pytest.mark.parametrize(
    ("variable", "value"),
    [("MALLOC_ARENA_MAX", "8"), ("GLIBC_TUNABLES", "glibc.malloc.arena_max=8")],
)
def test_an_operators_own_setting_wins(monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)
    assert limit_malloc_arenas() is False


def test_a_missing_c_library_changes_nothing(monkeypatch):
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: "libnothing-here.so.0")
    assert limit_malloc_arenas() is False


def test_a_c_library_without_mallopt_changes_nothing(monkeypatch):
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    monkeypatch.setattr(ctypes, "CDLL", lambda name: object())
    assert limit_malloc_arenas() is False


@glibc_only
def test_freed_heap_goes_back_to_the_system():
    assert return_freed_heap() is True


def test_no_malloc_trim_leaves_the_heap_alone(monkeypatch):
    monkeypatch.setattr(ctypes, "CDLL", lambda name: object())
    assert return_freed_heap() is False
