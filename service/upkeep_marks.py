"""What the pilot's start need not do again: one record per finished piece of upkeep.

A migration that found nothing left to migrate is marked done and never scanned for again; a
stop that flushed every outcome marks itself clean, and the next start, finding that mark,
skips the look for conversations without an outcome (one read of every session header).
A start whose last stop was not clean (a crash) looks, as every start did before.

Usage::

    marks = UpkeepMarks(store, encoders)
    if not marks.done("handoff_flags"):
        ...                                  # migrate; then, once nothing was left:
        marks.mark("handoff_flags")
    marks.take("clean_stop")                 # -> True once after a clean stop, then False
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING

from storage.qdrant.store import Match, PointData, Store, ensure_records

if TYPE_CHECKING:
    from storage.kb.embeddings import Encoders

UPKEEP = "pilot_upkeep"
_NAMESPACE = uuid.UUID("3c5e7a9b-1d2f-4a6b-8c0e-2f4a6c8e0b1d")


class UpkeepMarks:
    """Named marks in the pilot's store (``name``, ``at``): a few records, never searched."""

    def __init__(self, store: Store, encoders: Encoders) -> None:
        self.store = store
        self.vector = encoders.dense.encode(["upkeep"])[0].dense
        ensure_records(store, UPKEEP, encoders.dense.dim, ("name",))

    def _id(self, name: str) -> str:
        return str(uuid.uuid5(_NAMESPACE, name))

    def done(self, name: str) -> bool:
        """Whether ``name`` is marked."""
        return self.store.count(UPKEEP, Match("name", (name,))) > 0

    def mark(self, name: str) -> None:
        """Mark ``name`` (again: the time moves on)."""
        payload = {"name": name, "at": time.time()}
        self.store.upsert(UPKEEP, [PointData(id=self._id(name), dense=self.vector, payload=payload)])

    def take(self, name: str) -> bool:
        """Whether ``name`` was marked; the mark is gone after (a mark read once)."""
        found = self.done(name)
        if found:
            self.store.delete(UPKEEP, Match("name", (name,)))
        return found
