"""The knowledge-base search tool the retriever agent holds, bound to one turn.

Its argument schema offers queries only. The turn's enforced slots, the customer's original
message, the round's reformulated queries and its advisory filters are bound when the turn
binds the tool (``for_turn`` then ``bind_round``); whatever the model asks for is searched
*in addition*, so retrieval never depends on the model choosing well, and nothing the model
writes can reach the enforced filters (they are merged inside the retriever). Every search is
kept in ``calls`` for the gates and the trace.

Usage::

    tool = KnowledgeBaseSearchTool.for_turn(retriever, slots={"tier": "basic"}, original="...")
    tool.bind_round(["refund time"], advisory={"product": "cloud"})
    output = tool.search(["money back"])          # RetrievalOutput: original + bound + these
    text = tool.run(queries=["money back"])       # what an agent sees: JSON passages
"""

from __future__ import annotations

import json
from typing import Any

from crewai.tools import BaseTool
from pydantic import BaseModel, Field, PrivateAttr

from tasks.schemas import Passage, RetrievalOutput

TOOL_NAME = "search_knowledge_base"
TOOL_DESCRIPTION = ("Search the help center for passages that answer the customer. Give one "
                    "to three short search queries.")
AGENT_TEXT_CHARS = 600


class SearchArgs(BaseModel):
    queries: list[str] = Field(description="one to three search queries", min_length=1,
                               max_length=3)


class KnowledgeBaseSearchTool(BaseTool):
    name: str = TOOL_NAME
    description: str = TOOL_DESCRIPTION
    args_schema: type[BaseModel] = SearchArgs
    result_as_answer: bool = True  # the passages are the retriever's answer: no second call
    _retriever: Any = PrivateAttr()
    _slots: dict[str, str] = PrivateAttr(default_factory=dict)
    _original: str = PrivateAttr(default="")
    _entities: list[str] = PrivateAttr(default_factory=list)
    _queries: list[str] = PrivateAttr(default_factory=list)
    _advisory: dict[str, str] = PrivateAttr(default_factory=dict)
    _unknown: list[str] = PrivateAttr(default_factory=list)
    calls: list[RetrievalOutput] = Field(default_factory=list, exclude=True)

    @classmethod
    def for_turn(cls, retriever: Any, slots: dict[str, str], original: str,
                 entities: list[str] | None = None) -> KnowledgeBaseSearchTool:
        """Bind the turn's enforced slots, original message and remembered entities."""
        tool = cls()
        tool._retriever = retriever
        tool._slots = dict(slots)
        tool._original = original
        tool._entities = list(entities or [])
        return tool

    def bind_round(self, queries: list[str], advisory: dict[str, str] | None = None) -> None:
        """The reformulated queries and advisory filters of this round; an advisory value no
        document has is dropped (and reported in the output's ``ignored_filters``)."""
        self._queries = list(queries)
        self._advisory, self._unknown = dict(advisory or {}), []
        if self._advisory and hasattr(self._retriever, "known_advisory"):
            self._advisory, self._unknown = self._retriever.known_advisory(self._advisory)

    def search(self, queries: list[str] | None = None, top_k: int | None = None
               ) -> RetrievalOutput:
        """Search the original message, the bound queries and ``queries``."""
        texts: list[str] = []
        for text in [self._original, *self._queries, *(queries or [])]:
            if text and text.strip() and text.strip() not in texts:
                texts.append(text.strip())
        found = self._retriever.search_queries(texts, self._slots, self._advisory, top_k=top_k,
                                               strict=False, entities=self._entities)
        passages = Passage.numbered(found.results)
        output = RetrievalOutput(queries=texts, passages=passages,
                                 entities=found.metadata.get("entities", []),
                                 filters=found.metadata["filters"],
                                 ignored_filters=[*found.metadata["ignored_filters"],
                                                  *self._unknown])
        self.calls.append(output)
        return output

    def _run(self, queries: list[str]) -> str:
        output = self.search([str(q) for q in queries][:3])
        return json.dumps([{"id": p.pid, "title": p.title, "text": p.text[:AGENT_TEXT_CHARS]}
                           for p in output.passages])
