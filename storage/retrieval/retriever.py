"""Retrieval in Rasa's custom-information-retrieval shape, over the Qdrant knowledge base.

A retriever has ``connect(config)`` and ``async search(query, tracker_state, threshold)`` and
returns a :class:`SearchResultList` of :class:`SearchResult` (``text``, ``metadata``, ``score``).
``tracker_state`` carries ``slots``, ``sender_id``, ``events`` and ``latest_message``.

Enforced slot filters are built from the tracker's slots inside :class:`QdrantRetriever` on
every search; callers can only add advisory filters.

Usage::

    retriever = QdrantRetriever(settings=settings, data_dir=Path(".supportcrew"))
    retriever.connect(settings)
    found = await retriever.search("refund time", {"slots": {"tier": "basic"}})
    found = retriever.search_queries(
        RetrievalRequest(["refund time", "money back"], {"tier": "pro"}, advisory={"product": "cloud"})
    )
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from config.settings import Settings, load_settings
from storage.kb.entities import query_entities
from storage.kb.knowledge_base import KnowledgeBase
from storage.qdrant.store import Condition, Hit, Match, all_of
from storage.retrieval.filters import build_filters
from storage.retrieval.fusion import fuse_rankings, search_texts, within_budget
from storage.retrieval.request import RetrievalRequest
from storage.retrieval.results import SearchResult, SearchResultList, tracker_slots
from storage.retrieval.window import merge_chunks, window_ranges

PASSAGE_FIELDS = (
    "source_id",
    "title",
    "url",
    "product",
    "access",
    "tiers",
    "language",
    "section",
    "customer_id",
    "tenant",
)


class QdrantRetriever:
    """The built-in retriever: fused dense + BM25 + late interaction, filtered, windowed."""

    def __init__(
        self,
        embeddings: Any = None,
        settings: Settings | None = None,
        data_dir: Path | None = None,
        kb: KnowledgeBase | None = None,
    ) -> None:
        self.settings = settings
        self.data_dir = data_dir
        self.kb = kb

    def connect(self, config: Any = None) -> None:
        """Open the knowledge base. ``config`` may be Settings, a mapping, or an object with
        ``kwargs`` (Rasa's EndpointConfig); mapping keys ``config_file`` and ``data_dir``."""
        if self.kb is not None:
            return
        if isinstance(config, Settings):
            self.settings = config
        else:
            options = getattr(config, "kwargs", config) or {}
            if self.settings is None:
                self.settings = load_settings(options.get("config_file"))
            if options.get("data_dir"):
                self.data_dir = Path(options["data_dir"])
        data_dir = self.data_dir or Path(".supportcrew")
        self.kb = KnowledgeBase.open(self.settings, data_dir)

    def _kb(self) -> KnowledgeBase:
        if self.kb is None:
            self.connect(self.settings)
        assert self.kb is not None
        return self.kb

    async def search(
        self, query: str, tracker_state: Any = None, threshold: float = 0.0
    ) -> SearchResultList:
        slots, sender = tracker_slots(tracker_state)
        if sender is not None and "customer_id" not in slots:
            slots["customer_id"] = sender
        return self.search_queries(RetrievalRequest([query], slots, threshold=threshold, strict=False))

    def known_advisory(self, advisory: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """Advisory filters whose value some document has, and the rest described (a model may
        propose a product or language no document carries; that would only hide documents)."""
        kb = self._kb()
        kept: dict[str, Any] = {}
        dropped: list[str] = []
        for name, value in advisory.items():
            rule = kb.settings.slots.get(name)
            if (
                rule is not None
                and rule.mode == "advisory"
                and isinstance(value, str)
                and value not in kb.field_values(rule.field)
            ):
                dropped.append(f"{name}={value[:40]!r}: no document has this {rule.field}")
            else:
                kept[name] = value
        return kept, dropped

    def search_queries(self, request: RetrievalRequest) -> SearchResultList:
        """Search several phrasings at once; results are fused, thresholded and windowed.

        Knowledge-base entities named in the texts, plus ``request.entities`` (from the
        conversation or entity memory), pull in the chunks that mention them as one more ranked
        list. ``request.pages``: only these source ids (the enforced slots still apply: it only
        narrows).
        """
        kb = self._kb()
        settings = kb.settings
        texts = search_texts(request.queries)
        plan = build_filters(settings.slots, request.slots, request.advisory, strict=request.strict)
        if request.pages:
            pages = Match("source_id", tuple(request.pages))
            plan = replace(plan, advisory=all_of(plan.advisory, pages))
        top_k = request.top_k or settings.retrieval.top_k
        pipeline = request.pipeline or settings.retrieval.pipeline
        threshold = settings.retrieval.threshold if request.threshold is None else request.threshold
        started = time.perf_counter()
        rankings = [kb.query_chunks(t, pipeline, plan.condition, top_k * 2) for t in texts]
        hits = [h for h in fuse_rankings(rankings, settings.retrieval.rrf_k) if h.score >= threshold]
        linked: list[str] = []
        if settings.retrieval.entity_context:
            vocabulary = kb.vocabulary()
            linked = sorted(
                {
                    *query_entities(" ".join(texts), vocabulary),
                    *(e.lower() for e in request.entities if e.lower() in vocabulary),
                }
            )
            entity_hits = kb.entity_chunks(linked, plan.condition, top_k)
            # only entities of chunks this caller may see: the vocabulary spans every chunk,
            # and an entity named only in a hidden document must not be confirmed
            visible = {e for h in entity_hits for e in h.payload.get("entities") or []}
            linked = [e for e in linked if e in visible]
            if entity_hits:
                searched = {h.id for h in hits}
                hits = fuse_rankings([hits, entity_hits], settings.retrieval.rrf_k)
                via = {h.id: "entity" for h in entity_hits if h.id not in searched}
                hits = [Hit(h.id, h.score, {**h.payload, "_via": via.get(h.id, "search")}) for h in hits]
        results = self._expand(hits[:top_k], plan.condition, settings.retrieval.window)
        results = within_budget(results, settings.retrieval.context_budget)
        return SearchResultList(
            results=results,
            metadata={
                "queries": texts,
                "pipeline": pipeline,
                "filters": plan.applied,
                "ignored_filters": plan.ignored,
                "entities": linked,
                "ids": [r.metadata["chunk_id"] for r in results],
                "ms": round((time.perf_counter() - started) * 1000, 2),
            },
        )

    def _expand(self, hits: list[Hit], where: Condition | None, window: int) -> list[SearchResult]:
        by_source: dict[str, list[Hit]] = defaultdict(list)
        for hit in hits:
            by_source[hit.payload["source_id"]].append(hit)
        wanted: dict[str, set[int]] = {}
        groups: dict[str, list[tuple[int, int]]] = {}
        for source_id, source_hits in by_source.items():
            n_splits = int(source_hits[0].payload.get("n_splits", 1))
            ranges = window_ranges([h.payload["split_id"] for h in source_hits], window, n_splits)
            groups[source_id] = ranges
            wanted[source_id] = {s for first, last in ranges for s in range(first, last + 1)}
        chunks: dict[tuple[str, int], dict[str, Any]] = {
            (h.payload["source_id"], h.payload["split_id"]): h.payload for h in hits
        }
        if window > 0:
            for record in self._kb().neighbours(wanted, where):
                chunks[(record.payload["source_id"], record.payload["split_id"])] = record.payload
        results: list[SearchResult] = []
        done: set[tuple[str, int, int]] = set()
        for hit in hits:
            source_id, split_id = hit.payload["source_id"], hit.payload["split_id"]
            first, last = next((f, lo) for f, lo in groups[source_id] if f <= split_id <= lo)
            if (source_id, first, last) in done:
                continue
            done.add((source_id, first, last))
            members = [
                chunks[(source_id, s)] for s in range(first, last + 1) if (source_id, s) in chunks
            ]
            text = merge_chunks((m["split_idx_start"], m["text"]) for m in members)
            metadata = {k: hit.payload.get(k) for k in PASSAGE_FIELDS if hit.payload.get(k)}
            metadata.update(
                chunk_id=hit.payload["chunk_id"],
                split_id=split_id,
                window=[first, last],
                hit_text=hit.payload["text"],
                answer=text,
                score=hit.score,
                via=hit.payload.get("_via", "search"),
            )
            results.append(SearchResult(text=text, metadata=metadata, score=hit.score))
        return results

    def close(self) -> None:
        if self.kb is not None:
            self.kb.close()
            self.kb = None
