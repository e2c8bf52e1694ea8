"""AutoGen's Memory protocol on the Qdrant-backed long-term memory."""

from __future__ import annotations

import pytest
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.model_context import BufferedChatCompletionContext
from autogen_core.models import UserMessage

from agents.autogen.memory import QdrantAutoGenMemory
from storage.memory import MemoryStore, Scope
from storage.qdrant.edge_store import EdgeStore

pytestmark = pytest.mark.integration


@pytest.fixture
def memory_store(tmp_path, example_kb):
    store = EdgeStore(tmp_path / "autogen")
    yield MemoryStore(store, example_kb.encoders)
    store.close()


async def test_add_query_and_context_stay_with_the_customer(memory_store):
    mine = QdrantAutoGenMemory(memory_store, Scope("c-1"))
    theirs = QdrantAutoGenMemory(memory_store, Scope("c-2"))
    await mine.add(
        MemoryContent(
            content="Refund for ORD-55812 approved",
            mime_type=MemoryMimeType.TEXT,
            metadata={"sources": ["billing/refunds.md"]},
        )
    )
    await theirs.add(MemoryContent(content="Their SSO was set up", mime_type=MemoryMimeType.TEXT))
    found = await mine.query("where is my refund?")
    assert [r.content for r in found.results] == ["Refund for ORD-55812 approved"]
    assert found.results[0].metadata["sources"] == ["billing/refunds.md"]
    context = BufferedChatCompletionContext(buffer_size=10)
    await context.add_message(UserMessage(content="where is my refund?", source="user"))
    updated = await mine.update_context(context)
    messages = await context.get_messages()
    assert updated.memories.results and "ORD-55812" in messages[-1].content
    assert "SSO" not in messages[-1].content
    await mine.clear()
    assert (await mine.query("refund")).results == []
    assert (await theirs.query("sso")).results
