"""Tools whose results are evidence: what they find joins the retrieved passages.

An agent added to the retrieval step (see ``agents/crewai/crews.py`` and ``agents/autogen/engine.py``)
holds such a tool. Each record it returns becomes a passage with its own source id, so the
evidence gate, the support check and the citations treat it exactly like a help-center
passage. The tool gets the turn's state: it must scope its lookups by the enforced slots
(``state.slots["customer_id"]``, ``tenant``), as the knowledge base does.

Usage::

    class OrderStatusTool(EvidenceTool):
        name: str = "order_status"
        description: str = "Look up an order by its id."

        def _run(self, order_id: str) -> str:
            record = orders.get(self.turn.slots.get("customer_id"), order_id)
            return self.add_evidence(f"orders/{order_id}", "Order status", record.text)
"""

from __future__ import annotations

from typing import Any

from crewai.tools import BaseTool
from pydantic import Field

from tasks.schemas import Passage


class EvidenceTool(BaseTool):
    """A CrewAI tool (also usable by AutoGen agents) that records its results as passages."""

    result_as_answer: bool = True  # the records are the agent's answer: no second model call
    turn: Any = Field(default=None, exclude=True)
    found: list[Passage] = Field(default_factory=list, exclude=True)

    def add_evidence(self, source_id: str, title: str, text: str, url: str | None = None
                     ) -> str:
        """Record one result as evidence of this turn; returns the text for the agent."""
        self.found.append(Passage(pid=0, source_id=source_id,
                                  chunk_id=f"{source_id}#{len(self.found)}", title=title,
                                  url=url, text=text, score=1.0, via=self.name))
        return text


def evidence_found(agents: list[Any]) -> list[Passage]:
    """Everything the evidence tools held by ``agents`` recorded this turn."""
    return [p for a in agents for t in getattr(a, "tools", None) or []
            if isinstance(t, EvidenceTool) for p in t.found]
