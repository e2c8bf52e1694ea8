"""A store reopened (the pilot's start over a data dir that holds conversations) keeps the
vectors of its record collections on disk: collections that are filtered and counted, never
searched by meaning, cost no resident memory for vectors nobody reads."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from service.outcome_store import OUTCOMES, OutcomeStore
from service.pilot_store import FEEDBACK, PilotStore
from service.pilot_store import SESSIONS as HEADERS
from storage.memory import ENTITIES, SESSIONS, MemoryStore
from storage.qdrant.edge_store import EdgeStore

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="reads Linux's smaps"),
]
RECORDS = (HEADERS, FEEDBACK, OUTCOMES, SESSIONS, ENTITIES)
# records enough for the embedded engine to move them out of the segment that takes writes
# (its indexing threshold: 10 MB of vectors)
BATCH = 7200


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


def test_record_indexes_move_to_disk_and_compaction_keeps_every_record(tmp_path, example_kb):
    from storage.qdrant.edge_store import _on_disk
    from storage.qdrant.store import CollectionSpec, Match, PointData

    path = tmp_path / "qdrant"
    store = EdgeStore(path)
    # a store from before: the headers' indexes held in RAM
    old = CollectionSpec(
        dense_dim=example_kb.encoders.dense.dim,
        sparse=False,
        tokens=False,
        keyword_indexes=("tenant", "session_id"),
        in_ram=True,
    )
    store.create_collection(HEADERS, old)
    store.close()

    store = EdgeStore(path)
    try:
        pilot = PilotStore(store, example_kb.encoders)
        schema = store._shard(HEADERS).info().payload_schema
        assert sorted(schema) == ["session_id", "status", "tenant"]
        assert all(_on_disk(index) for index in schema.values())
        vector = example_kb.encoders.dense.encode(["session"])[0].dense
        headers = [
            PointData(
                id=str(uuid.uuid4()),
                dense=vector,
                payload={"tenant": "acme" if n % 3 else "globex", "session_id": f"s{n}"},
            )
            for n in range(BATCH)
        ]
        store.upsert(HEADERS, headers)
        assert store.compact() == 1  # the headers moved into a read-only segment
        assert store.compact() == 0  # nothing new since
        pilot.create_session("acme", "after", "c-after", "owner", {})  # written after
        assert pilot.session("acme", "s7") is not None
        assert pilot.session("globex", "s7") is None  # still in its tenant
        assert pilot.session("acme", "after") is not None
        assert store.count(HEADERS, Match("tenant", ("globex",))) == BATCH // 3
    finally:
        store.close()
    reopened = EdgeStore(path)
    try:
        assert reopened.count(HEADERS) == BATCH + 1
        assert reopened.compact() == 0  # nothing opened as records yet: nothing to do
    finally:
        reopened.close()
