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


def test_a_service_stopped_by_sigterm_flushes_its_store(tmp_path):
    """``main.py serve`` stopped the way a service manager stops it (SIGTERM): it exits 0
    and its embedded store is flushed, each write-ahead log acknowledged (else every start
    replays the log of every write since the store was made, and reads it whole)."""
    import signal

    import httpx

    from bench._common import start_serving
    from service.auth import hash_key

    repo = Path(__file__).resolve().parents[2]
    data = tmp_path / "data"
    keys = [{"name": "acme", "sha256": hash_key("acme-key"), "tenant": "acme", "slots": {}}]
    base, server = start_serving(repo, data, keys)
    try:
        made = httpx.post(
            f"{base}/v1/sessions",
            json={},
            headers={"Authorization": "Bearer acme-key"},
            timeout=30,
        )
        assert made.status_code in (200, 201), made.text
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0  # not killed by the signal uvicorn raises again
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    wal = data / "qdrant" / HEADERS / "wal"
    assert (wal / "first-index").exists(), sorted(p.name for p in wal.iterdir())
    reopened = EdgeStore(data / "qdrant")
    try:
        stored = [r.payload["session_id"] for r in reopened.scroll(HEADERS)]
        assert stored == [made.json()["session_id"]]
    finally:
        reopened.close()
