"""AutoGen's ``Memory`` protocol on the customer's long-term memories in Qdrant.

Records live in the ``memories`` collection of :mod:`storage.memory`, scoped to one customer
exactly like the rest of supportcrew's memory; recall uses the local MiniLM embedder.

Usage::

    memory = QdrantAutoGenMemory(MemoryStore(store, encoders), Scope("c-001"))
    await memory.add(MemoryContent(content="Prefers email", mime_type=MemoryMimeType.TEXT))
    agent = AssistantAgent("responder", model_client=client, memory=[memory])
"""

from __future__ import annotations

import uuid
from typing import Any

from autogen_core import CancellationToken
from autogen_core.memory import (
    Memory,
    MemoryContent,
    MemoryMimeType,
    MemoryQueryResult,
    UpdateContextResult,
)
from autogen_core.model_context import ChatCompletionContext
from autogen_core.models import SystemMessage

from storage.memory import MemoryStore, Scope


class QdrantAutoGenMemory(Memory):
    """Long-term memories of one customer, as AutoGen memory."""

    def __init__(self, store: MemoryStore, scope: Scope, limit: int = 3) -> None:
        self._store = store
        self._scope = scope
        self._limit = limit

    async def add(
        self, content: MemoryContent, cancellation_token: CancellationToken | None = None
    ) -> None:
        metadata = dict(content.metadata or {})
        session = str(metadata.get("session_id") or f"autogen-{uuid.uuid4().hex[:12]}")
        self._store.remember(
            self._scope,
            session,
            summary=str(content.content),
            resolution=str(metadata.get("resolution", "")),
            sources=list(metadata.get("sources", [])),
        )

    async def query(
        self,
        query: str | MemoryContent,
        cancellation_token: CancellationToken | None = None,
        **kwargs: Any,
    ) -> MemoryQueryResult:
        text = query if isinstance(query, str) else str(query.content)
        found = self._store.recall(self._scope, text, limit=int(kwargs.get("limit", self._limit)))
        return MemoryQueryResult(
            results=[
                MemoryContent(
                    content=m.summary,
                    mime_type=MemoryMimeType.TEXT,
                    metadata={
                        "session_id": m.session_id,
                        "score": m.score,
                        "resolution": m.resolution,
                        "sources": m.sources,
                    },
                )
                for m in found
            ]
        )

    async def update_context(self, model_context: ChatCompletionContext) -> UpdateContextResult:
        messages = await model_context.get_messages()
        last = next(
            (str(m.content) for m in reversed(messages) if getattr(m, "type", "") == "UserMessage"), ""
        )
        if not last:
            return UpdateContextResult(memories=MemoryQueryResult(results=[]))
        result = await self.query(last)
        if result.results:
            lines = [f"{i}. {r.content!s}" for i, r in enumerate(result.results, start=1)]
            await model_context.add_message(
                SystemMessage(
                    content="What we know from this customer's earlier conversations:\n"
                    + "\n".join(lines)
                )
            )
        return UpdateContextResult(memories=result)

    async def clear(self) -> None:
        self._store.clear_memories(self._scope)

    async def close(self) -> None:
        return None
