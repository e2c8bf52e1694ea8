"""The state of one support turn: what every step reads and writes, owned by that turn alone.

A CrewAI ``Flow`` holds it as its typed state; an AutoGen team's agents share one instance
built for the turn. Nothing turn-scoped lives on objects that sessions share.

Usage::

    state = TurnState.for_request(TurnRequest(session_id="s", message="Refund time?"))
    with state.step("retrieve", round=0) as info:
        info["ids"] = [...]
    state.trace.timeline()[-1]   # {"name": "retrieve", "ms": ...}
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel, Field

from storage.memory import RememberedCase, RememberedEntity
from tasks.schemas import (
    Decision,
    DraftAnswer,
    GateDecision,
    HistoryTurn,
    JudgeVerdict,
    MessageKind,
    RetrievalOutput,
    Route,
    Step,
    Trace,
    TurnRequest,
    TurnResult,
)

# Who watches a turn's steps (progress for the customer, the deadline's view of the live
# state): called with the state and the step's name whenever a step starts.
STEP_LISTENER: contextvars.ContextVar[Callable[[TurnState, str], None] | None] = contextvars.ContextVar(
    "step_listener", default=None
)


def search_slots(slots: Mapping[str, str], customer_id: str | None) -> dict[str, str]:
    """The slots a turn searches under: the request's, and its customer (a page written for
    one customer is that customer's alone).

    >>> search_slots({"tier": "pro"}, "c-1")
    {'tier': 'pro', 'customer_id': 'c-1'}
    """
    found = dict(slots)
    if customer_id and "customer_id" not in found:
        found["customer_id"] = customer_id
    return found


class TurnState(BaseModel):
    """Everything one turn knows; every step appends to ``trace``."""

    request: TurnRequest | None = None
    slots: dict[str, str] = Field(default_factory=dict)
    history: list[HistoryTurn] = Field(default_factory=list)
    entities: list[RememberedEntity] = Field(default_factory=list)
    memories: list[RememberedCase] = Field(default_factory=list)
    turn_index: int = 0
    round_index: int = 0
    asks_for_person: bool = False  # the hand-off intent read at intake
    nothing_asked: bool = False  # courtesy alone ("Thanks, bye") or a "no" to the offer: no search
    kind: MessageKind = "question"  # what the message was read as at intake
    reads_alone: bool = False  # read at intake as a whole question (``followups.stands_alone``)
    rewrite_failed: bool = False  # this round's reformulation gave nothing: no further round
    pointed_at: list[RememberedEntity] = Field(default_factory=list)
    follow_up: list[str] = Field(default_factory=list)  # [query, what it was resolved from]
    follow_up_leans: bool = False  # the message does not stand alone without the follow-up
    queries: list[str] = Field(default_factory=list)
    advisory: dict[str, str] = Field(default_factory=dict)
    hint: str = ""
    retrieval: RetrievalOutput | None = None
    evidence: Decision = Field(default_factory=Decision)
    route: Route | None = None
    verdict: JudgeVerdict = "insufficient"
    # the judge model answered undecided evidence: only a verified draft may answer then
    draft_required: bool = False
    draft: DraftAnswer | None = None
    revision_note: str = ""
    result: TurnResult | None = None
    trace: Trace = Field(default_factory=Trace)

    @classmethod
    def for_request(cls, request: TurnRequest) -> TurnState:
        return cls(request=request, slots=search_slots(request.slots, request.customer_id))

    @property
    def message(self) -> str:
        assert self.request is not None
        return self.request.message

    @property
    def question(self) -> str:
        """The phrasing the evidence supports best so far (the customer's own words at first)."""
        return self.evidence.question or (self.queries[0] if self.queries else self.message)

    @property
    def passages(self) -> list[Any]:
        return self.retrieval.passages if self.retrieval is not None else []

    @contextmanager
    def step(self, name: str, **detail: Any) -> Iterator[dict[str, Any]]:
        """Time a step and record it with the details the block adds to the yielded dict."""
        started, began_at = time.perf_counter(), time.time()
        info = dict(detail)
        listener = STEP_LISTENER.get()
        if listener is not None:
            listener(self, name)
        try:
            yield info
        finally:
            self.trace.steps.append(
                Step(
                    name=name,
                    detail=info,
                    ms=round((time.perf_counter() - started) * 1000, 1),
                    at=round(began_at, 4),
                )
            )

    def skip(self, name: str, reason: str, **detail: Any) -> None:
        """Record a step that did not run (and so made no model call), with the reason."""
        self.trace.steps.append(Step(name=name, detail={"skipped": reason, **detail}))

    def note(self, text: str) -> None:
        self.trace.notes.append(text)

    def decide(self, decision: GateDecision) -> GateDecision:
        """Record a step's decision in the trace (typed, for whoever reads the result)."""
        self.trace.decisions.append(decision)
        return decision
