"""CrewAI's StorageBackend protocol on our Qdrant store: local embedder, customer-scoped."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from crewai.memory.types import MemoryRecord

from agents.crewai.memory import LocalEmbedder, QdrantMemoryBackend, support_memory
from agents.usage import UsageLedger
from storage.memory import Scope
from storage.qdrant.edge_store import EdgeStore
from tests.scripted_llm import ScriptedLLM

pytestmark = pytest.mark.integration


@pytest.fixture
def store(tmp_path):
    edge = EdgeStore(tmp_path / "crew")
    yield edge
    edge.close()


def record(content: str, scope: str = "/support", **extra) -> MemoryRecord:
    return MemoryRecord(content=content, scope=scope, categories=["support"], **extra)


def test_backend_saves_searches_and_scopes_per_customer(store, example_kb):
    mine = QdrantMemoryBackend(store, example_kb.encoders, Scope("c-1"))
    theirs = QdrantMemoryBackend(store, example_kb.encoders, Scope("c-2"))
    mine.save([record("prefers email contact"), record("order ORD-1 late", "/support/orders")])
    theirs.save([record("prefers phone contact")])
    query = LocalEmbedder(example_kb.encoders)(["how should we contact the customer"])[0]
    found = mine.search(query, limit=5)
    assert found[0][0].content == "prefers email contact"
    assert all("phone" not in r.content for r, _ in found)
    assert [r.content for r, _ in mine.search(query, scope_prefix="/support/orders")] == [
        "order ORD-1 late"
    ]
    assert mine.count() == 2 and theirs.count() == 1
    assert mine.list_scopes("/support") == ["/support/orders"]
    assert mine.list_categories() == {"support": 2}
    info = mine.get_scope_info("/support")
    assert info.record_count == 2 and info.child_scopes == ["/support/orders"]


def test_backend_updates_deletes_and_resets_only_its_customer(store, example_kb):
    mine = QdrantMemoryBackend(store, example_kb.encoders, Scope("c-1"))
    theirs = QdrantMemoryBackend(store, example_kb.encoders, Scope("c-2"))
    old = record("old note", created_at=datetime.utcnow() - timedelta(days=40))
    new = record("new note")
    mine.save([old, new])
    theirs.save([record("their note")])
    assert theirs.get_record(new.id) is None
    new.content = "new note, edited"
    mine.update(new)
    assert mine.get_record(new.id).content == "new note, edited"
    assert mine.delete(older_than=datetime.utcnow() - timedelta(days=30)) == 1
    assert [r.content for r in mine.list_records()] == ["new note, edited"]
    mine.reset()
    assert mine.count() == 0 and theirs.count() == 1


def test_support_memory_saves_and_recalls_without_any_llm_call(store, example_kb, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    spy = ScriptedLLM(model="scripted")
    memory = support_memory(store, example_kb.encoders, Scope("c-3"), llm=spy)
    with UsageLedger.activate() as ledger:
        memory.remember("The customer's workspace is on the Pro plan.")
        memory.remember("Refund RF-20931 was approved on 2 March.")
        recalled = memory.recall("which plan is the customer on?", depth="shallow")
    assert ledger.calls == [] and spy.seen == []
    assert "Pro plan" in recalled[0].record.content
