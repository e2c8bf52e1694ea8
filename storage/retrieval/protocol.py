"""The retriever every caller uses: the built-in Qdrant one, the custom-service client, or a
user's class (adapted by ``integrations.rasa_interface``) all implement it.

Usage::

    def answer(retriever: Retriever) -> None:
        found = retriever.search_queries(["refund time"], {"tier": "pro"})
        found.results[0].text
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from storage.retrieval.results import SearchResultList


@runtime_checkable
class Retriever(Protocol):
    def connect(self, config: Any = None) -> None: ...

    async def search(
        self, query: str, tracker_state: Any = None, threshold: float = 0.0
    ) -> SearchResultList: ...

    def search_queries(
        self,
        queries: Sequence[str],
        slots: Mapping[str, Any] | None = None,
        advisory: Mapping[str, Any] | None = None,
        threshold: float | None = None,
        top_k: int | None = None,
        pipeline: str | None = None,
        strict: bool = True,
        entities: Sequence[str] = (),
        pages: Sequence[str] = (),
    ) -> SearchResultList: ...

    def close(self) -> None: ...
