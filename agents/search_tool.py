"""The knowledge-base search tool: a CrewAI BaseTool over the foundation's retriever.

Its argument schema offers queries and advisory filters only. Enforced slots are bound when
the tool is built for a turn and merged inside the retriever; a call that tries to set one
(``access_level``, ``tier``, ...) is ignored and recorded. The original customer message is
always searched too, so a bad rewrite can only add results.

Usage::

    tool = KnowledgeBaseSearchTool.for_turn(retriever, slots={"tier": "basic"}, original="...")
    output = tool.search(["refund time"], advisory={"product": "cloud"})   # RetrievalOutput
"""

from __future__ import annotations

import json
from typing import Any

from crewai.tools import BaseTool
from pydantic import BaseModel, Field, PrivateAttr

from storage.retrieval import QdrantRetriever
from tasks.schemas import Passage, RetrievalOutput


class SearchArgs(BaseModel):
    queries: list[str] = Field(description="one to three search queries", min_length=1,
                               max_length=3)
    filters: dict[str, str] = Field(default_factory=dict,
                                    description="optional advisory filters: product, language")


class KnowledgeBaseSearchTool(BaseTool):
    name: str = "search_knowledge_base"
    description: str = ("Search the CloudDesk help center. Give one to three queries; "
                        "optionally filters such as product or language.")
    args_schema: type[BaseModel] = SearchArgs
    _retriever: QdrantRetriever = PrivateAttr()
    _slots: dict[str, str] = PrivateAttr(default_factory=dict)
    _original: str = PrivateAttr(default="")
    _entities: list[str] = PrivateAttr(default_factory=list)
    calls: list[RetrievalOutput] = Field(default_factory=list, exclude=True)

    @classmethod
    def for_turn(cls, retriever: QdrantRetriever, slots: dict[str, str], original: str,
                 entities: list[str] | None = None) -> KnowledgeBaseSearchTool:
        """Bind the turn's enforced slots, original message and remembered entities."""
        tool = cls()
        tool._entities = list(entities or [])
        tool._retriever = retriever
        tool._slots = dict(slots)
        tool._original = original
        return tool

    def search(self, queries: list[str], advisory: dict[str, Any] | None = None,
               top_k: int | None = None) -> RetrievalOutput:
        """Search the original message plus ``queries``; enforced slots are the bound ones."""
        texts: list[str] = []
        for text in [self._original, *queries]:
            if text and text.strip() and text.strip() not in texts:
                texts.append(text.strip())
        found = self._retriever.search_queries(texts, self._slots, advisory, top_k=top_k,
                                               strict=False, entities=self._entities)
        passages = [
            Passage(pid=i, source_id=r.metadata["source_id"], chunk_id=r.metadata["chunk_id"],
                    title=r.metadata.get("title", ""), url=r.metadata.get("url"), text=r.text,
                    score=r.score, via=r.metadata.get("via", "search"))
            for i, r in enumerate(found.results, start=1)
        ]
        output = RetrievalOutput(queries=texts, passages=passages,
                                 entities=found.metadata.get("entities", []),
                                 filters=found.metadata["filters"],
                                 ignored_filters=found.metadata["ignored_filters"])
        self.calls.append(output)
        return output

    def _run(self, queries: list[str], filters: dict[str, str] | None = None) -> str:
        output = self.search(list(queries), filters or {})
        return json.dumps([{"id": p.pid, "title": p.title, "text": p.text[:600]}
                           for p in output.passages])
