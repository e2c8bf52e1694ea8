"""A user's retriever with Rasa's interface, as the retriever the crew searches with.

``vector_store.type: package.module.Class`` names a class built as ``Class(embeddings=None)``
with ``connect(config)`` and ``async search(query, tracker_state, threshold)`` (Rasa's custom
information retrieval interface). The crew searches several phrasings at once; this adapter
asks the class once per phrasing, with the turn's slots (enforced and advisory) in the tracker
state, and fuses the rankings. The class is responsible for honouring the enforced slots.

Usage::

    retriever = RasaInterfaceRetriever(MyRetriever(embeddings=None), top_k=5)
    retriever.connect(settings.vector_store)
    found = retriever.search_queries(RetrievalRequest(["refund time"], {"tier": "pro"}))
"""

from __future__ import annotations

from typing import Any

from storage.coroutines import run_coroutine
from storage.qdrant.store import Hit
from storage.retrieval.fusion import fused_results, search_texts
from storage.retrieval.request import RetrievalRequest
from storage.retrieval.results import SearchResultList


class RasaInterfaceRetriever:
    """Adapts ``connect`` + ``async search`` to the crew's ``search_queries``."""

    def __init__(self, inner: Any, top_k: int = 5) -> None:
        self.inner = inner
        self.top_k = top_k
        self.name = f"{type(inner).__module__}.{type(inner).__name__}"

    def connect(self, config: Any = None) -> None:
        self.inner.connect(config)

    async def search(
        self, query: str, tracker_state: Any = None, threshold: float = 0.0
    ) -> SearchResultList:
        return await self.inner.search(query, tracker_state, threshold)

    def search_queries(self, request: RetrievalRequest) -> SearchResultList:
        """The class asked once per phrasing with the slots (advisory, then enforced over them)
        in the tracker state; the rankings fused."""
        texts = search_texts(request.queries)
        tracker = {"slots": {**request.advisory, **request.slots}}
        rankings = []
        for text in texts:
            found = run_coroutine(self.inner.search(text, tracker, request.threshold or 0.0))
            ranking = []
            for rank, result in enumerate(found.results):
                source = str(
                    result.metadata.get("source_id") or result.metadata.get("url") or f"result-{rank}"
                )
                chunk = str(result.metadata.get("chunk_id") or f"{source}#{rank}")
                ranking.append(
                    Hit(
                        chunk,
                        float(result.score),
                        {**result.metadata, "source_id": source, "chunk_id": chunk, "text": result.text},
                    )
                )
            rankings.append(ranking)
        return fused_results(
            rankings,
            top_k=request.top_k or self.top_k,
            via="search",
            queries=texts,
            filters={k: f"passed to {self.name}: {v}" for k, v in tracker["slots"].items()},
            pages=request.pages,
        )

    def close(self) -> None:
        closing = getattr(self.inner, "close", None)
        if callable(closing):
            closing()
