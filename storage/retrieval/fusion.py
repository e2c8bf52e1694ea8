"""Combining ranked lists: reciprocal rank fusion, and a word-piece budget for the context.

Usage::

    hits = fuse_rankings([hits_of_query_a, hits_of_query_b], k=5)
    passages = within_budget(results, budget=1500)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from storage.kb.chunking import estimate_tokens
from storage.qdrant.store import Hit
from storage.retrieval.results import SearchResult


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
