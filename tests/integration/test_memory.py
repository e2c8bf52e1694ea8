"""Customer memory in real Qdrant: scoping, merging, forgetting, concurrency, persistence."""

from __future__ import annotations

import threading

import pytest

from storage.memory import COLLECTIONS, Entity, MemoryStore, Scope, ScopeError
from storage.qdrant.edge_store import EdgeStore

pytestmark = pytest.mark.integration


def everything(memory: MemoryStore) -> list[dict]:
    """Every record of every memory collection, read around the scope (test only)."""
    return [r.payload for name in COLLECTIONS for r in memory.store.scroll(name)]


@pytest.mark.parametrize("customer", ["", "   ", "x" * 500, "c-1\x00", "c\n1"])
def test_bad_customer_ids_are_refused(customer):
    with pytest.raises(ScopeError):
        Scope(customer)


def test_entities_merge_and_keep_their_history(memory):
    scope = Scope("c-1")
    memory.upsert_entities(scope, [Entity("order", "ORD-1", {"status": "paid"})], "s1#0")
    first = memory.entities(scope)[0]
    memory.upsert_entities(scope, [Entity("order", "ORD-1", {"carrier": "ups"})], "s2#0")
    [merged] = memory.entities(scope)
    assert merged.first_seen == first.first_seen <= merged.last_seen
    assert merged.attributes == {"status": "paid", "carrier": "ups"}
    assert merged.source_turns == ["s1#0", "s2#0"]


def test_no_query_reaches_another_customer_or_tenant(memory):
    mine, theirs, other_tenant = Scope("c-1"), Scope("c-2"), Scope("c-1", "acme")
    for scope in (mine, theirs, other_tenant):
        memory.add_turn(scope, "s1", 0, {"user": f"hello from {scope}", "status": "done"})
        memory.upsert_entities(scope, [Entity("email", f"{scope.customer_id}@x.io")], "s1#0")
        memory.remember(scope, "s1", f"refund question of {scope}", "answered", ["a.md"])
    assert [t["user"] for t in memory.session_turns(mine, "s1")] == [f"hello from {mine}"]
    assert {e.value for e in memory.entities(theirs)} == {"c-2@x.io"}
    recalled = memory.recall(mine, f"refund question of {theirs}", limit=10)
    assert [m.summary for m in recalled] == [f"refund question of {mine}"]
    assert all(m.tenant == "acme" for m in memory.recall(other_tenant, "refund", limit=10))
    hostile = Scope('c-1" OR customer_id != "')
    assert memory.export(hostile) == {name: [] for name in COLLECTIONS}


def test_forget_leaves_nothing_of_the_customer_and_everything_else(memory):
    gone, kept = Scope("c-9"), Scope("c-10")
    for scope in (gone, kept):
        memory.add_turn(scope, "s", 0, {"user": "hi", "status": "done"})
        memory.add_turn(scope, "s", 1, {"user": "again", "status": "done"})
        memory.upsert_entities(scope, [Entity("order", "ORD-77")], "s#0")
        memory.remember(scope, "s", "summary", "answered", [])
    counts = memory.forget(gone)
    assert counts == {"sessions": 2, "entities": 1, "memories": 1}
    left = everything(memory)
    assert not [p for p in left if p["customer_id"] == "c-9"]
    assert len([p for p in left if p["customer_id"] == "c-10"]) == 4


def test_concurrent_writers_lose_no_records(memory):
    scope = Scope("c-busy")
    errors: list[Exception] = []

    def writer(worker: int) -> None:
        try:
            for turn in range(10):
                memory.add_turn(scope, f"s{worker}", turn, {"user": f"{worker}/{turn}"})
                memory.upsert_entities(
                    scope,
                    [Entity("order", f"ORD-{worker}{turn:02d}"), Entity("plan", "pro")],
                    f"s{worker}#{turn}",
                )
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    exported = memory.export(scope)
    assert len(exported["sessions"]) == 60
    assert len(exported["entities"]) == 61  # 60 orders + one merged plan
    [plan] = [e for e in exported["entities"] if e["type"] == "plan"]
    assert len(plan["source_turns"]) == 20  # the most recent 20 of 60 sightings


def test_memory_survives_a_restart(tmp_path, example_kb):
    store = EdgeStore(tmp_path / "m")
    MemoryStore(store, example_kb.encoders).remember(Scope("c-1"), "s", "sum", "res", ["a.md"])
    store.close()
    store = EdgeStore(tmp_path / "m")
    assert MemoryStore(store, example_kb.encoders).recall(Scope("c-1"), "sum")[0].summary == ("sum")
    store.close()


WRITER = """
import sys
from qdrant_client import QdrantClient
from config.settings import load_settings
from storage.kb.embeddings import load_encoders
from storage.memory import Entity, MemoryStore, Scope
from storage.qdrant.server_store import ServerStore
import os
store = ServerStore(url=os.environ["QDRANT_URL"], api_key=os.environ.get("QDRANT_API_KEY"))
memory = MemoryStore(store, load_encoders(load_settings()))
worker = sys.argv[1]
for turn in range(10):
    memory.add_turn(Scope("c-multi"), f"s{worker}", turn, {"user": f"{worker}/{turn}"})
"""


@pytest.mark.skipif(
    not __import__("os").environ.get("QDRANT_URL"),
    reason="several processes share memory only through a Qdrant server "
    "(set QDRANT_URL); embedded stores are single-process by design",
)
def test_several_processes_write_through_a_server_without_loss(example_kb):
    import os
    import subprocess
    import sys

    from storage.qdrant.server_store import ServerStore

    store = ServerStore(url=os.environ["QDRANT_URL"], api_key=os.environ.get("QDRANT_API_KEY"))
    memory = MemoryStore(store, example_kb.encoders)
    memory.forget(Scope("c-multi"))
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(w)],
            cwd=str(__import__("pathlib").Path(__file__).parents[2]),
        )
        for w in range(4)
    ]
    assert all(w.wait(timeout=300) == 0 for w in workers)
    assert len(memory.export(Scope("c-multi"))["sessions"]) == 40
    memory.forget(Scope("c-multi"))
    store.close()


def test_a_stored_turn_that_does_not_parse_names_itself(memory):
    """A turn written by something else (an older version, a hand edit) with a field of the
    wrong kind fails where it is read, naming the turn and the field; the good ones still read
    through other sessions."""
    from storage.records import BrokenRecord

    scope = Scope("c-1", "acme")
    memory.add_turn(scope, "s1", 0, {"user": "Where is my refund?", "status": "done"})
    memory.add_turn(scope, "s2", 0, {"user": "Hello", "status": "done", "probability": "high"})
    assert [t["user"] for t in memory.session_turns(scope, "s1")] == ["Where is my refund?"]
    with pytest.raises(BrokenRecord, match=r"sessions acme/c-1/s2/0 .*probability"):
        memory.session_turns(scope, "s2")
