"""The knowledge-base collection: its schema, its chunk points, and the query plans over it.

Usage::

    kb = KnowledgeBase.open(settings, data_dir)
    kb.ensure_collection()
    hits = kb.query_chunks("refund time", pipeline="hybrid+late", where=plan.condition, limit=10)
    kb.close()
"""

from __future__ import annotations

import math
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from config.settings import Settings
from storage.kb.chunking import Chunk
from storage.kb.documents import Document
from storage.kb.embeddings import Encoders, load_encoders
from storage.kb.entities import kb_entities
from storage.qdrant.backends import open_store
from storage.qdrant.store import (
    AllOf,
    AnyOf,
    CollectionSpec,
    Condition,
    Hit,
    Match,
    Nearest,
    PointData,
    Record,
    Rrf,
    Stage,
    Store,
    all_of,
)

KEYWORD_FIELDS = (
    "source_id",
    "tiers",
    "access",
    "product",
    "language",
    "customer_id",
    "tenant",
    "content_hash",
    "origin",
    "entities",
    "draft",
    "sync_source",
)
INTEGER_FIELDS = ("split_id",)
_NAMESPACE = uuid.UUID("5b0c6f3e-4a8e-4d8f-9a51-2f1f3c1e7a10")


def chunk_point_id(source_id: str, split_id: int) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"{source_id}#{split_id}"))


def embedding_text(doc: Document, chunk: Chunk) -> str:
    """What the encoders see: title and section give a chunk its context."""
    parts = [doc.title]
    if chunk.section and chunk.section != doc.title:
        parts.append(chunk.section)
    parts.append(chunk.text)
    return "\n".join(p for p in parts if p)


def chunk_payload(doc: Document, chunk: Chunk, n_splits: int) -> dict[str, Any]:
    payload: dict[str, Any] = {
        **{k: v for k, v in doc.metadata.items() if v is not None},
        "source_id": doc.source_id,
        "chunk_id": f"{doc.source_id}#{chunk.split_id}",
        "split_id": chunk.split_id,
        "split_idx_start": chunk.start,
        "n_splits": n_splits,
        "title": doc.title,
        "url": doc.url,
        "section": chunk.section,
        "text": chunk.text,
        "entities": kb_entities(f"{chunk.section}\n{chunk.text}"),
        "content_hash": doc.content_hash,
        "origin": doc.origin,
        **doc.validators,
        **({"sync_source": doc.sync_source} if doc.sync_source else {}),
    }
    payload.setdefault("access", "public")
    return payload


PRIVATE_FIELDS = ("tenant", "customer_id")  # chunk fields that scope a document to one party


@dataclass(frozen=True)
class TermStats:
    """Chunk count and per-term chunk frequency of a collection (BM25 term ids)."""

    chunks: int
    frequency: dict[int, int]

    def idf(self, term: int) -> float:
        """Inverse document frequency; a term no chunk has gets the highest weight."""
        return math.log((self.chunks + 1) / (self.frequency.get(term, 0) + 0.5))


class KnowledgeBase:
    """Chunks of documents with dense, BM25 and token vectors, in one collection."""

    def __init__(self, settings: Settings, store: Store, encoders: Encoders | None = None) -> None:
        self.settings = settings
        self.store = store
        self.collection = settings.qdrant.collection
        self._encoders = encoders
        self._field_values: dict[str, frozenset[str]] = {}
        self._term_stats: TermStats | None = None
        self._indexed = False

    @classmethod
    def open(cls, settings: Settings, data_dir: Path) -> KnowledgeBase:
        path = settings.qdrant.path or (Path(data_dir) / "qdrant")
        return cls(settings, open_store(settings.qdrant.url, path, settings.qdrant.api_key))

    @property
    def encoders(self) -> Encoders:
        if self._encoders is None:
            self._encoders = load_encoders(self.settings)
        return self._encoders

    def spec(self) -> CollectionSpec:
        return CollectionSpec(
            dense_dim=self.encoders.dense.dim,
            token_datatype=self.settings.qdrant.token_datatype,
            keyword_indexes=KEYWORD_FIELDS,
            integer_indexes=INTEGER_FIELDS,
        )

    def exists(self) -> bool:
        return self.store.has_collection(self.collection)

    def require_documents(self) -> None:
        """Raise a ValueError that says what to run when nothing has been ingested."""
        if not self.exists():
            raise ValueError(
                f"collection {self.collection!r} is empty; run `python main.py ingest examples/kb` first"
            )

    def ensure_collection(self, recreate: bool = False) -> None:
        if recreate and self.exists():
            self.store.delete_collection(self.collection)
        if not self.exists():
            self.store.create_collection(self.collection, self.spec())
        elif not self._indexed:  # a collection made before a field was indexed gets its index
            for key in KEYWORD_FIELDS:
                self.store.add_keyword_index(self.collection, key)
        self._indexed = True

    # -- writing ---------------------------------------------------------------------------
    def stored_sources(self) -> dict[str, Record]:
        """source_id → first-chunk record (content_hash, origin and, for a fetched page, its
        ``etag`` / ``last_modified`` and ``sync_source``) of every stored document."""
        if not self.exists():
            return {}
        records = self.store.scroll(
            self.collection,
            Match("split_id", (0,)),
            fields=("source_id", "content_hash", "origin", "etag", "last_modified", "sync_source"),
        )
        return {r.payload["source_id"]: r for r in records}

    def build_points(self, docs_chunks: Sequence[tuple[Document, list[Chunk]]]) -> list[PointData]:
        """Encode every chunk (one ONNX pass for dense + tokens, then BM25) into points."""
        texts, payloads, ids = [], [], []
        for doc, chunks in docs_chunks:
            for chunk in chunks:
                texts.append(embedding_text(doc, chunk))
                payloads.append(chunk_payload(doc, chunk, len(chunks)))
                ids.append(chunk_point_id(doc.source_id, chunk.split_id))
        dense = self.encoders.dense.encode(texts)
        sparse = self.encoders.bm25.encode_documents(texts)
        return [
            PointData(id=i, dense=d.dense, tokens=d.tokens, sparse=s, payload=p)
            for i, d, s, p in zip(ids, dense, sparse, payloads, strict=True)
        ]

    def write(self, points: Sequence[PointData], replaced_hashes: dict[str, str]) -> None:
        """Upsert new chunks first, then drop what is left of each replaced version."""
        self.store.upsert(self.collection, points)
        self._forget_statistics()
        for source_id, old_hash in replaced_hashes.items():
            self.remove(source_id, old_hash)

    def remove(self, source_id: str, content_hash: str | None = None) -> None:
        parts: list[Condition] = [Match("source_id", (source_id,))]
        if content_hash is not None:
            parts.append(Match("content_hash", (content_hash,)))
        self.store.delete(self.collection, AllOf(tuple(parts)))
        self._forget_statistics()

    def _forget_statistics(self) -> None:
        self._field_values = {}
        self._term_stats = None

    # -- reading ---------------------------------------------------------------------------
    def plan(self, query: str, pipeline: str, limit: int) -> Stage:
        """The Qdrant query for one text under one pipeline (the pipelines: docs/answering.md,
        "Retrieval quality and speed")."""
        r = self.settings.retrieval
        encoded = self.encoders.dense.encode([query])[0]
        dense = Stage(Nearest("dense", encoded.dense), r.candidates)
        if pipeline == "dense":
            return Stage(Nearest("dense", encoded.dense), limit)
        bm25 = Stage(Nearest("bm25", self.encoders.bm25.encode_query(query)), r.candidates)
        if pipeline == "bm25":
            return Stage(bm25.query, limit)
        if pipeline == "hybrid":
            weights: tuple[float, ...] = (r.weights.dense, r.weights.bm25)
            return Stage(Rrf(r.rrf_k, weights), limit, (dense, bm25))
        tokens = Nearest("tokens", encoded.tokens)
        if pipeline == "dense+late":
            return Stage(tokens, limit, (dense,))
        if pipeline == "hybrid+late":
            shortlist = (Stage(dense.query, r.rescore_depth), Stage(bm25.query, r.rescore_depth))
            late = Stage(tokens, 2 * r.rescore_depth, shortlist)
            weights = (r.weights.dense, r.weights.bm25, r.weights.tokens)
            return Stage(Rrf(r.rrf_k, weights), limit, (dense, bm25, late))
        raise ValueError(f"unknown pipeline {pipeline!r}")

    def query_chunks(self, query: str, pipeline: str, where: Condition | None, limit: int) -> list[Hit]:
        return self.store.query(self.collection, self.plan(query, pipeline, limit), where)

    def readable_sources(self, source_ids: Sequence[str], where: Condition | None) -> frozenset[str]:
        """The ``source_ids`` that have a chunk matching ``where`` (a caller's enforced
        filter): what that caller may read of a list of citations."""
        return frozenset(self.readable_titles(source_ids, where))

    def readable_titles(self, source_ids: Sequence[str], where: Condition | None) -> dict[str, str]:
        """source_id -> title of the ``source_ids`` that have a chunk matching ``where``."""
        return {source: title for source, (title, _) in self.readable_pages(source_ids, where).items()}

    def readable_pages(
        self, source_ids: Sequence[str], where: Condition | None
    ) -> dict[str, tuple[str, str | None]]:
        """source_id -> (title, url) of the ``source_ids`` that have a chunk matching ``where``."""
        if not source_ids or not self.exists():
            return {}
        wanted = all_of(Match("source_id", tuple(source_ids)), where)
        return {
            r.payload["source_id"]: (
                str(r.payload.get("title") or r.payload["source_id"]),
                r.payload.get("url") or None,
            )
            for r in self.store.scroll(self.collection, wanted, fields=("source_id", "title", "url"))
        }

    def vocabulary(self) -> frozenset[str]:
        """Every entity any chunk mentions (cached until the next write)."""
        return self.field_values("entities")

    def field_values(self, field_name: str) -> frozenset[str]:
        """Every value a payload field holds in the collection (cached until the next write)."""
        if field_name not in self._field_values:
            values: set[str] = set()
            if self.exists():
                for record in self.store.scroll(self.collection, fields=(field_name,)):
                    found = record.payload.get(field_name)
                    values.update(
                        found if isinstance(found, list) else [] if found is None else [str(found)]
                    )
            self._field_values[field_name] = frozenset(values)
        return self._field_values[field_name]

    def term_statistics(self) -> TermStats:
        """In how many chunks each BM25 term occurs (cached until the next write).

        Read once per process from the stored chunk texts; the evidence gates weigh a
        question's rare terms with it. Only shared documents count: a chunk of one tenant or
        one customer would make another tenant's gate (and its trace) move with what that
        tenant ingested, a side channel to its private vocabulary.
        """
        if self._term_stats is None:
            frequency: Counter[int] = Counter()
            chunks = 0
            if self.exists():
                records = self.store.scroll(self.collection, fields=("text", *PRIVATE_FIELDS))
                texts = [
                    str(r.payload.get("text") or "")
                    for r in records
                    if not any(r.payload.get(f) for f in PRIVATE_FIELDS)
                ]
                chunks = len(texts)
                for vector in self.encoders.bm25.encode_documents(texts):
                    frequency.update(set(vector.indices))
            self._term_stats = TermStats(chunks, dict(frequency))
        return self._term_stats

    def entity_chunks(self, entities: Sequence[str], where: Condition | None, limit: int) -> list[Hit]:
        """Chunks mentioning the entities (under the same filter), most entities first."""
        if not entities:
            return []
        selector: Condition = Match("entities", tuple(entities))
        condition = AllOf((selector, where)) if where is not None else selector
        wanted = set(entities)
        hits = [
            Hit(r.id, float(len(wanted & set(r.payload.get("entities") or []))), r.payload)
            for r in self.store.scroll(self.collection, condition)
        ]
        hits.sort(key=lambda h: (-h.score, len(h.payload.get("entities") or [])))
        return hits[:limit]

    def neighbours(self, wanted: dict[str, set[int]], where: Condition | None) -> list[Record]:
        """Chunks by (source_id, split_ids), under the same enforced condition as the search."""
        if not wanted:
            return []
        per_source = tuple(
            AllOf((Match("source_id", (sid,)), Match("split_id", tuple(sorted(ids)))))
            for sid, ids in wanted.items()
        )
        selector: Condition = per_source[0] if len(per_source) == 1 else AnyOf(per_source)
        condition = AllOf((selector, where)) if where is not None else selector
        return list(self.store.scroll(self.collection, condition))

    def close(self) -> None:
        self.store.close()
