"""Tools whose results are evidence: what they find joins the retrieved passages.

An agent added to the retrieval step (see ``agents/crewai/crews.py`` and
``agents/autogen/engine.py``) holds such a tool; it is framework-free, each engine adapts it
(``agents/crewai/tools.py``, ``agents/autogen/tools.py``). Each record it returns becomes a
passage with its own source id, so the evidence gate, the support check and the citations
treat it exactly like a help-center passage. The tool gets the turn's state: it must scope its
lookups by the enforced slots (``state.slots["customer_id"]``, ``tenant``), as the knowledge
base does.

Usage::

    class OrderStatusTool(EvidenceTool):
        name: str = "order_status"
        description: str = "Look up an order by its id."

        def _run(self, order_id: str) -> str:
            record = orders.get(self.turn.slots.get("customer_id"), order_id)
            return self.add_evidence(f"orders/{order_id}", "Order status", record.text)
"""

from __future__ import annotations

import inspect
import typing
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from tasks.schemas import Passage


class EvidenceTool(BaseModel):
    """A tool whose results are passages of this turn; subclasses write ``_run``, whose
    signature is the tool's argument schema."""

    model_config = ConfigDict(arbitrary_types_allowed=True, ignored_types=(cached_property,))

    name: str
    description: str
    turn: Any = Field(default=None, exclude=True)
    found: list[Passage] = Field(default_factory=list, exclude=True)

    @cached_property
    def args_schema(self) -> type[BaseModel]:
        """The arguments of ``_run`` as a pydantic model (what the model is asked to fill)."""
        hints = typing.get_type_hints(self._run)
        fields: dict[str, Any] = {
            name: (
                hints.get(name, str),
                ... if param.default is inspect.Parameter.empty else param.default,
            )
            for name, param in inspect.signature(self._run).parameters.items()
        }
        return create_model(f"{type(self).__name__}Args", **fields)

    def run(self, **kwargs: Any) -> str:
        return self._run(**kwargs)

    def _run(self, **kwargs: Any) -> str:
        raise NotImplementedError("an evidence tool implements _run")

    def add_evidence(self, source_id: str, title: str, text: str, url: str | None = None) -> str:
        """Record one result as evidence of this turn; returns the text for the agent."""
        self.found.append(
            Passage(
                pid=0,
                source_id=source_id,
                chunk_id=f"{source_id}#{len(self.found)}",
                title=title,
                url=url,
                text=text,
                score=1.0,
                via=self.name,
            )
        )
        return text


def evidence_found(agents: list[Any]) -> list[Passage]:
    """Everything the evidence tools held by ``agents`` (or their framework adapters) recorded
    this turn."""
    tools = [getattr(t, "core", t) for a in agents for t in getattr(a, "tools", None) or []]
    return [p for t in tools if isinstance(t, EvidenceTool) for p in t.found]
