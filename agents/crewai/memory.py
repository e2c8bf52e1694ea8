"""CrewAI's memory ``StorageBackend`` on supportcrew's Qdrant store, scoped to one customer.

A crew's ``memory=`` can use it with the local 384-dim MiniLM embedder: no OpenAI key. Every
record is stamped with the customer scope and every query filtered by it (``storage.memory``).
:func:`support_memory` builds a CrewAI ``Memory`` that fills scope, categories and importance
itself and never consolidates, so saving makes no LLM call.

Usage::

    memory = support_memory(store, encoders, Scope("c-001"))
    memory.remember("Customer prefers email", scope="/support", categories=["preference"])
    crew = Crew(agents=..., tasks=..., memory=memory)
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from crewai.memory.types import MemoryRecord, ScopeInfo

from storage.kb.embeddings import Encoders
from storage.memory import Scope
from storage.qdrant.store import (
    AllOf,
    Condition,
    Match,
    Nearest,
    PointData,
    Stage,
    Store,
    ensure_records,
)

COLLECTION = "crew_memory"


def scope_ancestors(scope: str) -> list[str]:
    """``/a/b`` → ``["/", "/a", "/a/b"]``: prefix filtering by exact match."""
    ancestors, current = ["/"], ""
    for part in scope.strip("/").split("/"):
        if part:
            current = f"{current}/{part}"
            ancestors.append(current)
    return ancestors


class LocalEmbedder:
    """CrewAI's embedder callable (``list[str] -> list[list[float]]``) over local MiniLM."""

    def __init__(self, encoders: Encoders) -> None:
        self.encoders = encoders

    def __call__(self, texts: list[str]) -> list[list[float]]:
        return [e.dense.tolist() for e in self.encoders.dense.encode(list(texts))]


class QdrantMemoryBackend:
    """Implements ``crewai.memory.storage.backend.StorageBackend`` for one customer."""

    def __init__(self, store: Store, encoders: Encoders, scope: Scope) -> None:
        self.store = store
        self.encoders = encoders
        self.customer = scope
        indexes = ("customer_id", "tenant", "record_id", "scope_ancestors", "categories")
        ensure_records(store, COLLECTION, encoders.dense.dim, indexes, searched=True)

    # -- helpers -----------------------------------------------------------------------------
    def _where(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> Condition:
        parts: list[Condition] = [self.customer.condition()]
        if scope_prefix and scope_prefix != "/":
            parts.append(Match("scope_ancestors", (scope_prefix.rstrip("/"),)))
        if categories:
            parts.append(Match("categories", tuple(categories)))
        for key, value in (metadata_filter or {}).items():
            parts.append(Match(f"metadata.{key}", (value,)))
        return AllOf(tuple(parts))

    @staticmethod
    def _record(payload: dict[str, Any]) -> MemoryRecord:
        return MemoryRecord(
            id=payload["record_id"],
            content=payload["content"],
            scope=payload["scope"],
            categories=payload.get("categories", []),
            metadata=payload.get("metadata", {}),
            importance=payload.get("importance", 0.5),
            created_at=datetime.fromisoformat(payload["created_at"]),
            last_accessed=datetime.fromisoformat(payload["last_accessed"]),
            source=payload.get("source"),
            private=payload.get("private", False),
        )

    def _records(self, where: Condition) -> list[MemoryRecord]:
        records = [self._record(r.payload) for r in self.store.scroll(COLLECTION, where)]
        return sorted(records, key=lambda r: r.created_at, reverse=True)

    # -- the protocol ------------------------------------------------------------------------
    def save(self, records: list[MemoryRecord]) -> None:
        missing = [r for r in records if not r.embedding]
        vectors = (
            dict(
                zip(
                    (r.id for r in missing),
                    LocalEmbedder(self.encoders)([r.content for r in missing]),
                    strict=True,
                )
            )
            if missing
            else {}
        )
        points = []
        for record in records:
            payload = {
                "record_id": record.id,
                "content": record.content,
                "scope": record.scope,
                "scope_ancestors": scope_ancestors(record.scope),
                "categories": list(record.categories),
                "metadata": dict(record.metadata),
                "importance": record.importance,
                "created_at": record.created_at.isoformat(),
                "last_accessed": record.last_accessed.isoformat(),
                "source": record.source,
                "private": record.private,
                "customer_id": self.customer.customer_id,
                "tenant": self.customer.tenant,
            }
            points.append(
                PointData(
                    id=self.customer.key("crew", record.id),
                    dense=record.embedding or vectors[record.id],
                    payload=payload,
                )
            )
        self.store.upsert(COLLECTION, points)

    def search(
        self,
        query_embedding: list[float],
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[MemoryRecord, float]]:
        hits = self.store.query(
            COLLECTION,
            Stage(Nearest("dense", query_embedding), limit),
            self._where(scope_prefix, categories, metadata_filter),
        )
        return [(self._record(h.payload), h.score) for h in hits if h.score >= min_score]

    def delete(
        self,
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        record_ids: list[str] | None = None,
        older_than: datetime | None = None,
        metadata_filter: dict[str, Any] | None = None,
    ) -> int:
        where = self._where(scope_prefix, categories, metadata_filter)
        doomed = [
            r
            for r in self._records(where)
            if (record_ids is None or r.id in record_ids)
            and (older_than is None or r.created_at < older_than)
        ]
        if doomed:
            self.store.delete(
                COLLECTION,
                AllOf((self.customer.condition(), Match("record_id", tuple(r.id for r in doomed)))),
            )
        return len(doomed)

    def update(self, record: MemoryRecord) -> None:
        self.save([record])

    def get_record(self, record_id: str) -> MemoryRecord | None:
        found = self._records(AllOf((self.customer.condition(), Match("record_id", (record_id,)))))
        return found[0] if found else None

    def list_records(
        self, scope_prefix: str | None = None, limit: int = 200, offset: int = 0
    ) -> list[MemoryRecord]:
        return self._records(self._where(scope_prefix))[offset : offset + limit]

    def get_scope_info(self, scope: str) -> ScopeInfo:
        records = self._records(self._where(scope))
        stamps = [r.created_at for r in records]
        return ScopeInfo(
            path=scope,
            record_count=len(records),
            categories=sorted({c for r in records for c in r.categories}),
            oldest_record=min(stamps, default=None),
            newest_record=max(stamps, default=None),
            child_scopes=self.list_scopes(scope),
        )

    def list_scopes(self, parent: str = "/") -> list[str]:
        depth = len(scope_ancestors(parent))
        children = set()
        for record in self._records(self._where(parent)):
            ancestors = scope_ancestors(record.scope)
            if len(ancestors) > depth:
                children.add(ancestors[depth])
        return sorted(children)

    def list_categories(self, scope_prefix: str | None = None) -> dict[str, int]:
        counts: dict[str, int] = {}
        for record in self._records(self._where(scope_prefix)):
            for category in record.categories:
                counts[category] = counts.get(category, 0) + 1
        return counts

    def count(self, scope_prefix: str | None = None) -> int:
        return self.store.count(COLLECTION, self._where(scope_prefix))

    def reset(self, scope_prefix: str | None = None) -> None:
        self.store.delete(COLLECTION, self._where(scope_prefix))

    async def asave(self, records: list[MemoryRecord]) -> None:
        self.save(records)

    async def asearch(
        self,
        query_embedding: list[float],
        scope_prefix: str | None = None,
        categories: list[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        limit: int = 10,
        min_score: float = 0.0,
    ) -> list[tuple[MemoryRecord, float]]:
        return self.search(query_embedding, scope_prefix, categories, metadata_filter, limit, min_score)

    async def adelete(self, **kwargs: Any) -> int:
        return self.delete(**kwargs)


def support_memory(store: Store, encoders: Encoders, scope: Scope, llm: Any = None) -> Any:
    """A CrewAI ``Memory`` on this backend whose saves never call an LLM."""
    from crewai.memory.unified_memory import Memory

    backend = QdrantMemoryBackend(store, encoders, scope)
    embedder = LocalEmbedder(encoders)

    class SupportMemory(Memory):
        def _encode_batch(
            self,
            contents: list[str],
            scope: str | None = None,
            categories: list[str] | None = None,
            metadata: Any = None,
            importance: float | None = None,
            source: str | None = None,
            private: bool = False,
            root_scope: str | None = None,
        ) -> list[MemoryRecord]:
            # a plain insert: CrewAI's encoding flow would ask an LLM for missing fields
            # and for consolidation; support memory keeps what it is given
            path = "/".join(p.strip("/") for p in (root_scope or "", scope or "support") if p)
            records = [
                MemoryRecord(
                    content=c,
                    scope=f"/{path}",
                    categories=categories or ["support"],
                    metadata=dict(metadata or {}),
                    importance=0.5 if importance is None else importance,
                    source=source,
                    private=private,
                    embedding=vector,
                )
                for c, vector in zip(contents, embedder(contents), strict=True)
            ]
            backend.save(records)
            return records

    return SupportMemory(storage=backend, embedder=embedder, llm=llm or "local")
