"""The knowledge-base search the retriever agent holds as its tool, bound to one turn;
framework-free (CrewAI's and AutoGen's adapters: ``agents/crewai/tools.py``,
``agents/autogen/tools.py``).

Its argument schema offers queries only. The turn's enforced slots, the customer's original
message, the round's reformulated queries and its advisory filters are bound when the turn
binds the tool (``for_turn`` then ``bind_round``); whatever the model asks for is searched
*in addition*, so retrieval never depends on the model choosing well, and nothing the model
writes can reach the enforced filters (they are merged inside the retriever). Every search is
kept in ``calls`` for the gates and the trace.

Usage::

    tool = KnowledgeBaseSearch.for_turn(retriever, slots={"tier": "basic"}, original="...")
    tool.bind_round(["refund time"], advisory={"product": "cloud"})
    output = tool.search(["money back"])          # RetrievalOutput: original + bound + these
    text = tool.run(queries=["money back"])       # what an agent sees: JSON passages
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from storage.retrieval.request import RetrievalRequest
from tasks.schemas import Passage, RetrievalOutput

TOOL_NAME = "search_knowledge_base"
TOOL_DESCRIPTION = (
    "Search the help center for passages that answer the customer. Give one "
    "to three short search queries."
)
AGENT_TEXT_CHARS = 600
PAGE_PASSAGES = 2  # passages of the conversation's page added to a follow-up's candidates


class SearchArgs(BaseModel):
    queries: list[str] = Field(description="one to three search queries", min_length=1, max_length=3)


class KnowledgeBaseSearch:
    """The turn's search: enforced slots, original message and remembered entities bound."""

    name = TOOL_NAME
    description = TOOL_DESCRIPTION
    args_schema: type[BaseModel] = SearchArgs

    def __init__(
        self, retriever: Any, slots: dict[str, str], original: str, entities: list[str] | None = None
    ) -> None:
        self._retriever = retriever
        self._slots = dict(slots)
        self._original = original
        self._entities = list(entities or [])
        self._queries: list[str] = []
        self._advisory: dict[str, str] = {}
        self._unknown: list[str] = []
        self.calls: list[RetrievalOutput] = []

    @classmethod
    def for_turn(
        cls, retriever: Any, slots: dict[str, str], original: str, entities: list[str] | None = None
    ) -> KnowledgeBaseSearch:
        """Bind the turn's enforced slots, original message and remembered entities."""
        return cls(retriever, slots, original, entities)

    def bind_round(self, queries: list[str], advisory: dict[str, str] | None = None) -> None:
        """The reformulated queries and advisory filters of this round; an advisory value no
        document has is dropped (and reported in the output's ``ignored_filters``)."""
        self._queries = list(queries)
        self._advisory, self._unknown = dict(advisory or {}), []
        if self._advisory and hasattr(self._retriever, "known_advisory"):
            self._advisory, self._unknown = self._retriever.known_advisory(self._advisory)

    def _texts(self, queries: list[str] | None = None) -> list[str]:
        texts: list[str] = []
        for text in [self._original, *self._queries, *(queries or [])]:
            if text and text.strip() and text.strip() not in texts:
                texts.append(text.strip())
        return texts

    def search(self, queries: list[str] | None = None, top_k: int | None = None) -> RetrievalOutput:
        """Search the original message, the bound queries and ``queries``."""
        texts = self._texts(queries)
        found = self._retriever.search_queries(
            RetrievalRequest(
                texts,
                self._slots,
                advisory=self._advisory,
                top_k=top_k,
                strict=False,
                entities=self._entities,
            )
        )
        passages = Passage.numbered(found.results)
        output = RetrievalOutput(
            queries=texts,
            passages=passages,
            entities=found.metadata.get("entities", []),
            filters=found.metadata["filters"],
            ignored_filters=[*found.metadata["ignored_filters"], *self._unknown],
        )
        self.calls.append(output)
        return output

    def page_passages(self, pages: Sequence[str], top_k: int = PAGE_PASSAGES) -> list[Passage]:
        """The passages of ``pages`` (the page the conversation is about) that read closest to
        this round's words, under the same enforced slots, whatever their score: so that page
        is always a candidate of the answer decision. Not counted as one of the turn's
        searches."""
        found = self._retriever.search_queries(
            RetrievalRequest(
                self._texts(), self._slots, threshold=0.0, top_k=top_k, strict=False, pages=pages
            )
        )
        return Passage.numbered(found.results)

    def run(self, queries: list[str]) -> str:
        """What an agent sees of a search: the passages as JSON."""
        output = self.search([str(q) for q in queries][:3])
        return json.dumps(
            [{"id": p.pid, "title": p.title, "text": p.text[:AGENT_TEXT_CHARS]} for p in output.passages]
        )
