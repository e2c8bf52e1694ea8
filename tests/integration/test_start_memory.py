"""A store reopened (the pilot's start over a data dir that holds conversations) keeps the
vectors of its record collections on disk: collections that are filtered and counted, never
searched by meaning, cost no resident memory for vectors nobody reads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from service.stores.outcome_store import OUTCOMES, OutcomeStore
from service.stores.pilot_store import FEEDBACK, PilotStore
from service.stores.pilot_store import SESSIONS as HEADERS
from storage.memory import ENTITIES, SESSIONS, MemoryStore
from storage.qdrant.edge_store import EdgeStore

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="reads Linux's smaps"),
]
RECORDS = (HEADERS, FEEDBACK, OUTCOMES, SESSIONS, ENTITIES)


def resident_vectors_kb(under: Path) -> int:
    """This process's resident memory mapped from vector files under ``under`` (KB)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            parts = line.split(maxsplit=5)
            mapped = parts[5] if len(parts) > 5 else ""
            inside = mapped.startswith(f"{under}/") and "/vector_storage" in mapped
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


def test_a_reopened_store_holds_no_record_vectors_in_memory(tmp_path, example_kb):
    path = tmp_path / "qdrant"
    store = EdgeStore(path)
    pilot = PilotStore(store, example_kb.encoders)
    MemoryStore(store, example_kb.encoders).ensure()
    OutcomeStore(store, example_kb.encoders)
    pilot.create_session("acme", "s1", "c1", "owner", {})
    store.close()

    reopened = EdgeStore(path)
    try:
        assert [r.payload["session_id"] for r in reopened.scroll(HEADERS)] == ["s1"]
        for name in RECORDS:
            list(reopened.scroll(name))  # opened and read, as a start does
        resident = {name: resident_vectors_kb(path / name) for name in RECORDS}
        # in RAM, each would hold a whole 32 MB chunk of vectors however few it stores
        assert all(kb < 1024 for kb in resident.values()), resident
    finally:
        reopened.close()
