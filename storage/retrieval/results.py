"""What a retriever returns: ranked passages with metadata (Rasa's shapes), and tracker slots.

Usage::

    found = SearchResultList([SearchResult(text="...", metadata={"source_id": "a.md"}, score=1.0)])
    slots, sender = tracker_slots({"slots": {"tier": "pro"}, "sender_id": "c-1"})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class SearchResult:
    text: str
    metadata: dict[str, Any]
    score: float


@dataclass
class SearchResultList:
    results: list[SearchResult]
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_document_list(cls, documents: Sequence[Any]) -> SearchResultList:
        """Build from objects with ``page_content``/``text``, ``metadata`` and ``score``."""
        results = []
        for doc in documents:
            text = getattr(doc, "page_content", None) or getattr(doc, "text", "")
            metadata = dict(getattr(doc, "metadata", {}) or {})
            score = float(metadata.get("score", getattr(doc, "score", 0.0)) or 0.0)
            results.append(SearchResult(text=str(text or ""), metadata=metadata, score=score))
        return cls(results=results, metadata={})


def tracker_slots(tracker_state: Any) -> tuple[dict[str, Any], str | None]:
    """Slots and sender id from a dict-shaped or attribute-shaped tracker state."""
    if tracker_state is None:
        return {}, None
    if isinstance(tracker_state, Mapping):
        slots, sender = tracker_state.get("slots") or {}, tracker_state.get("sender_id")
    else:
        slots, sender = (
            getattr(tracker_state, "slots", {}) or {},
            getattr(tracker_state, "sender_id", None),
        )
    if not isinstance(slots, Mapping):
        slots = {}
    slots = {k: (v.get("value") if isinstance(v, Mapping) else v) for k, v in slots.items()}
    return slots, sender
