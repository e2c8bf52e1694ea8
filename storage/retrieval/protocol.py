"""The retriever every caller uses: the built-in Qdrant one, the custom-service client, or a
user's class (adapted by ``integrations.rasa_interface``) all implement it.

Usage::

    def answer(retriever: Retriever) -> None:
        found = retriever.search_queries(RetrievalRequest(["refund time"], {"tier": "pro"}))
        found.results[0].text
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from storage.retrieval.request import RetrievalRequest
from storage.retrieval.results import SearchResultList


@runtime_checkable
class Retriever(Protocol):
    def connect(self, config: Any = None) -> None: ...

    async def search(
        self, query: str, tracker_state: Any = None, threshold: float = 0.0
    ) -> SearchResultList: ...

    def search_queries(self, request: RetrievalRequest) -> SearchResultList:
        """Search ``request.queries`` at once under its slots (see :class:`RetrievalRequest`)."""
        ...

    def close(self) -> None: ...
