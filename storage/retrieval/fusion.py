"""Combining ranked lists: reciprocal rank fusion, and a word-piece budget for the context.

Usage::

    texts = search_texts(queries)                 # non-blank, stripped; refuses none at all
    hits = fuse_rankings([hits_of_query_a, hits_of_query_b], k=5)
    passages = within_budget(results, budget=1500)
    found = fused_results(rankings, top_k=5, via="search", queries=texts, filters={})
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from storage.kb.chunking import estimate_tokens
from storage.qdrant.store import Hit
from storage.retrieval.results import SearchResult, SearchResultList

OUTSIDE_RRF_K = 60  # an outside search has no retrieval settings of its own: RRF's usual k


def search_texts(queries: Sequence[str]) -> list[str]:
    """The non-blank search texts of ``queries``, stripped; none at all is an error.

    >>> search_texts([" refund time ", "", "  "])
    ['refund time']
    """
    texts = [q.strip() for q in queries if q and q.strip()]
    if not texts:
        raise ValueError("empty query: give at least one non-blank search text")
    return texts


def within_budget(results: list[SearchResult], budget: int) -> list[SearchResult]:
    """Keep passages in rank order while their text fits ``budget`` word pieces (one at least)."""
    kept: list[SearchResult] = []
    used = 0
    for result in results:
        cost = estimate_tokens(result.text)
        if kept and used + cost > budget:
            break
        kept.append(result)
        used += cost
    return kept


def fuse_rankings(rankings: Sequence[Sequence[Hit]], k: int) -> list[Hit]:
    """Reciprocal rank fusion of several ranked hit lists (one per query)."""
    if len(rankings) == 1:
        return list(rankings[0])
    scores: dict[str, float] = defaultdict(float)
    first: dict[str, Hit] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking):
            scores[hit.id] += 1.0 / (k + rank + 1)
            first.setdefault(hit.id, hit)
    ordered = sorted(scores, key=lambda i: scores[i], reverse=True)
    return [Hit(i, scores[i], first[i].payload) for i in ordered]


def fused_results(
    rankings: Sequence[Sequence[Hit]],
    *,
    top_k: int,
    via: str,
    queries: Sequence[str],
    filters: Mapping[str, str],
    threshold: float | None = None,
    k: int = OUTSIDE_RRF_K,
    pages: Sequence[str] = (),
) -> SearchResultList:
    """An outside search's rankings (one per query text) as one result list: fused, the best
    ``top_k`` at or above ``threshold`` (of ``pages`` only, when given: an outside search
    cannot be narrowed to them), each result's metadata its payload and ``via``, with the
    trace a local search gives (no filter is ignored and no entity is linked there)."""
    fused = [h for h in fuse_rankings(rankings, k) if not pages or h.payload["source_id"] in pages]
    results = [
        SearchResult(
            text=h.payload["text"],
            score=h.score,
            metadata={**{key: v for key, v in h.payload.items() if key != "text"}, "via": via},
        )
        for h in fused[:top_k]
        if threshold is None or h.score >= threshold
    ]
    return SearchResultList(
        results,
        {
            "queries": list(queries),
            "filters": dict(filters),
            "ignored_filters": [],
            "entities": [],
            "ids": [r.metadata["chunk_id"] for r in results],
        },
    )
