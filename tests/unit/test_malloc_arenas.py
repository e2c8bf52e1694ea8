"""The pilot's cap on glibc malloc arenas (service/malloc_arenas.py)."""

from __future__ import annotations

import ctypes.util
import platform

import pytest

from service.malloc_arenas import limit_malloc_arenas


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt's arena cap is glibc's")
def test_glibc_takes_the_cap(monkeypatch):
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert limit_malloc_arenas() is True


def test_an_operators_own_setting_wins(monkeypatch):
    monkeypatch.setenv("MALLOC_ARENA_MAX", "8")
    assert limit_malloc_arenas() is False


def test_a_c_library_without_mallopt_changes_nothing(monkeypatch):
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: "libnothing-here.so.0")
    assert limit_malloc_arenas() is False
