"""A retriever that calls any server speaking the watsonx custom-service search schema.

``vector_store: {type: custom_service, url: https://search.example/v1/search,
api_key_env: SEARCH_API_KEY}`` (or ``username`` + ``password_env`` for basic auth) lets the crew
use an existing search system. Enforced slots are sent as ``metadata.enforced_slots`` and
advisory filters as ``filter``: with a remote service, **the remote service enforces access**.

Usage::

    retriever = CustomServiceRetriever()
    retriever.connect({"url": "http://127.0.0.1:8000/v1/search", "api_key_env": "KEY"})
    found = await retriever.search("refund time", {"slots": {"tier": "basic"}})
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import httpx

from storage.qdrant.store import Hit
from storage.retrieval.fusion import fused_results, search_texts
from storage.retrieval.request import RetrievalRequest
from storage.retrieval.results import SearchResultList, tracker_slots

MAX_BYTES = 100_000


class CustomServiceError(RuntimeError):
    """The search service is unreachable or answered outside the schema."""


def _options(config: Any) -> dict[str, Any]:
    if isinstance(config, Mapping):
        return dict(config)
    extra = getattr(config, "model_extra", None) or getattr(config, "kwargs", None) or {}
    return dict(extra)


class CustomServiceRetriever:
    """Rasa-style retriever over a remote watsonx-schema search service."""

    def __init__(self, embeddings: Any = None, top_k: int = 5, timeout: float = 10.0) -> None:
        self.top_k = top_k
        self.timeout = timeout
        self.url = ""
        self._auth: Any = None
        self._headers: dict[str, str] = {}

    def connect(self, config: Any) -> None:
        options = _options(config)
        self.url = str(options.get("url") or "")
        if not self.url.startswith(("http://", "https://")):
            raise CustomServiceError("vector_store.url must be an http(s) URL of the search API")
        if options.get("api_key_env"):
            key = os.environ.get(options["api_key_env"], "")
            if not key:
                raise CustomServiceError(f"{options['api_key_env']} is not set")
            self._headers = {"Authorization": f"Bearer {key}"}
        elif options.get("username"):
            self._auth = (options["username"], os.environ.get(options.get("password_env", ""), ""))

    def _post(
        self, query: str, advisory: Mapping[str, Any], enforced: Mapping[str, Any]
    ) -> list[dict[str, Any]]:
        body = {"query": query, "filter": dict(advisory), "metadata": {"enforced_slots": dict(enforced)}}
        try:
            response = httpx.post(
                self.url, json=body, headers=self._headers, auth=self._auth, timeout=self.timeout
            )
        except httpx.HTTPError as exc:
            raise CustomServiceError(f"search service unreachable: {exc}") from None
        if response.status_code != 200 or len(response.content) > MAX_BYTES:
            raise CustomServiceError(
                f"search service answered {response.status_code} ({len(response.content)} bytes)"
            )
        try:
            results = response.json()["search_results"]
            assert isinstance(results, list)
        except (ValueError, KeyError, AssertionError):
            raise CustomServiceError("search service answered outside the schema") from None
        return results

    def search_queries(self, request: RetrievalRequest) -> SearchResultList:
        """Each phrasing posted once, with the enforced slots and the advisory filters; the
        rankings fused (``pipeline``, ``strict`` and ``entities`` are the service's concern)."""
        texts = search_texts(request.queries)
        rankings = []
        for text in texts:
            ranking = []
            for rank, item in enumerate(self._post(text, request.advisory, request.slots)):
                source = str(item.get("url") or item.get("title") or f"result-{rank}")
                body = str(item.get("body") or "")
                payload = {
                    "source_id": source,
                    "chunk_id": f"{source}#0",
                    "title": str(item.get("title") or ""),
                    "url": item.get("url"),
                    "text": body,
                    "answer": body,
                    "hit_text": body,
                    "highlight": (item.get("highlight") or {}).get("body") or [],
                }
                score = float((item.get("result_metadata") or {}).get("score") or 0.0)
                ranking.append(Hit(str(payload["chunk_id"]), score, payload))
            rankings.append(ranking)
        return fused_results(
            rankings,
            top_k=request.top_k or self.top_k,
            via="custom_service",
            queries=texts,
            filters={k: f"sent to the service: {v}" for k, v in request.slots.items()},
            threshold=request.threshold,
            pages=request.pages,
        )

    async def search(
        self, query: str, tracker_state: Any = None, threshold: float = 0.0
    ) -> SearchResultList:
        slots, _ = tracker_slots(tracker_state)
        return self.search_queries(RetrievalRequest([query], slots, threshold=threshold))

    def close(self) -> None:
        return None
