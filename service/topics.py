"""What a conversation is about, named the way the knowledge-gap report names its groups: the
article nearest its question, searched under the asker's own enforced slots (the pages that
customer could reach). A conversation whose answers cited a page is about that page
(``tasks.outcomes.label``); the others are named here when their outcome is stored.

Usage::

    nearest = nearest_page(runtime.retriever, {"access_level": "customer", "tenant": "acme"})
    nearest("Do you ship to Antarctica?")          # ("shipping.md", "Shipping", 0.41) or None
    name = topic_namer(runtime.retriever, "acme")
    name("Do you ship to Antarctica?", {"access_level": "customer"})   # "shipping.md" or ""
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from storage.retrieval.request import RetrievalRequest
from tasks.gap_report import Nearest

TopicNamer = Callable[[str, Mapping[str, Any]], str]


def nearest_page(retriever: Any, slots: Mapping[str, Any]) -> Callable[[str], Nearest | None]:
    """``text`` -> the best passage's page under ``slots`` (source id, title, score and its
    stored fields), or None."""

    def nearest(text: str) -> Nearest | None:
        found = retriever.search_queries(
            RetrievalRequest([text], slots, top_k=1, threshold=0.0, strict=False)
        )
        if not found.results:
            return None
        best = found.results[0]
        return Nearest(
            best.metadata["source_id"], best.metadata.get("title", ""), best.score, best.metadata
        )

    return nearest


def topic_namer(retriever: Any, tenant: str) -> TopicNamer:
    """(question, the asker's slots) -> the nearest page's id in ``tenant`` ("" for none)."""

    def name(question: str, slots: Mapping[str, Any]) -> str:
        scoped = {**slots, "tenant": tenant} if tenant else dict(slots)
        found = nearest_page(retriever, scoped)(question)
        return found.source_id if found else ""

    return name
