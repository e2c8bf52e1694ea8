"""What the pilot's start need not do again, and which runs did not stop cleanly.

A migration that found nothing left to migrate is marked done and never scanned for again.
Every run of the service marks itself while it runs and takes its mark away when it stops
cleanly (every touched outcome flushed, its start's catch-up finished); a start that finds
another run's mark left behind (that run crashed, or is another worker running now) looks for
conversations without an outcome, one read of every session id, as every start did before;
a start that finds none skips the look.

Usage::

    marks = UpkeepMarks(store, encoders)
    if not marks.done("handoff_flags"):
        ...                                  # migrate; then, once nothing was left:
        marks.mark("handoff_flags")
    run, others_left = marks.begin_run()     # at start
    marks.end_run(run)                       # at a clean stop
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING

from storage.qdrant.store import Match, PointData, Store, ensure_records

if TYPE_CHECKING:
    from storage.kb.embeddings import Encoders

UPKEEP = "pilot_upkeep"
DONE, RUN = "done", "run"  # the two kinds of mark
_NAMESPACE = uuid.UUID("3c5e7a9b-1d2f-4a6b-8c0e-2f4a6c8e0b1d")


class UpkeepMarks:
    """Marks in the pilot's store (``name``, ``kind``, ``at``): a few records, never searched."""

    def __init__(self, store: Store, encoders: Encoders) -> None:
        self.store = store
        self.vector = encoders.dense.encode(["upkeep"])[0].dense
        # a few records: filtered without an index (each index costs megabytes at every start)
        ensure_records(store, UPKEEP, encoders.dense.dim)

    def _put(self, name: str, kind: str) -> None:
        point = PointData(
            id=str(uuid.uuid5(_NAMESPACE, name)),
            dense=self.vector,
            payload={"name": name, "kind": kind, "at": time.time()},
        )
        self.store.upsert(UPKEEP, [point])

    def done(self, name: str) -> bool:
        """Whether the upkeep ``name`` is marked done."""
        return self.store.count(UPKEEP, Match("name", (name,))) > 0

    def mark(self, name: str) -> None:
        """Mark the upkeep ``name`` done."""
        self._put(name, DONE)

    def begin_run(self) -> tuple[str, bool]:
        """This run's mark, and whether another run's was there (a run that did not stop
        cleanly, or another worker running now)."""
        others_left = self.store.count(UPKEEP, Match("kind", (RUN,))) > 0
        run = f"run:{uuid.uuid4()}"
        self._put(run, RUN)
        return run, others_left

    def end_run(self, run: str) -> None:
        """This run stopped cleanly: its mark goes."""
        self.store.delete(UPKEEP, Match("name", (run,)))
