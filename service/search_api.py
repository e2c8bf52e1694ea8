"""The watsonx custom-service search schema over supportcrew's retriever.

Request ``{query, filter, metadata}``; response ``{search_results: [{title, body, url,
highlight: {body: [...]}, result_metadata: {score}}]}``; each at most 100 KB. ``filter`` maps to
advisory filters (a mapping, or ``"key:value, key:value"`` text); enforced slots come from the
API key, never from the request.

Usage::

    body = to_response(found, max_bytes=100_000)
"""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from service.domain.records import JsonObject
from storage.retrieval.results import SearchResultList
from tasks.schemas import PlainText


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: PlainText = Field(min_length=1, max_length=2000)
    filter: dict[PlainText, PlainText] | PlainText | None = None
    metadata: JsonObject = Field(default_factory=dict)

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query must not be blank")
        return value

    def advisory_filters(self) -> dict[str, str]:
        if self.filter is None:
            return {}
        if isinstance(self.filter, dict):
            return dict(self.filter)
        pairs = [p.partition(":") for p in self.filter.split(",") if p.strip()]
        return {k.strip(): v.strip() for k, sep, v in pairs if sep and k.strip()}


class SearchHit(BaseModel):
    """One result in watsonx's custom-service schema."""

    title: str
    body: str
    url: str | None = None
    highlight: dict[str, list[str]]
    result_metadata: JsonObject


class SearchResponse(BaseModel):
    search_results: list[SearchHit]


def _result(found: SearchResultList, index: int) -> JsonObject:
    result = found.results[index]
    meta = result.metadata
    return {
        "title": meta.get("title", ""),
        "body": result.text,
        "url": meta.get("url"),
        "highlight": {"body": [meta.get("hit_text", result.text)[:500]]},
        "result_metadata": {
            "score": result.score,
            "source_id": meta.get("source_id"),
            "chunk_id": meta.get("chunk_id"),
        },
    }


def to_response(found: SearchResultList, max_bytes: int) -> JsonObject:
    """Whole results in rank order while the JSON response stays within ``max_bytes``."""
    kept: list[JsonValue] = []
    size = len(json.dumps({"search_results": []}).encode())
    for index in range(len(found.results)):
        item = _result(found, index)
        cost = len(json.dumps(item).encode()) + 2
        if size + cost > max_bytes:
            break
        kept.append(item)
        size += cost
    return {"search_results": kept}
