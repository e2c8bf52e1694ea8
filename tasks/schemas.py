"""Shapes of a support turn: request, typed role outputs, citations, trace, result.

Usage::

    request = TurnRequest(session_id="s1", customer_id="c-001", message="Refund time?",
                          slots={"tier": "basic"})
    result: TurnResult = run_turn(request, runtime)
    result.verdict, result.citations[0].source_id, result.trace.llm_calls
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from tasks.decision_features import Candidate, GateFeatures, PhrasingReading


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("the message is empty (only spaces)")
    return text


def _valid_unicode(text: str) -> str:
    """Text that can be stored and shown: a lone surrogate (JSON ``"\\ud800"``) is refused."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("the text holds a lone surrogate: not valid Unicode") from None
    return text


_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _shown_as_written(text: str) -> str:
    """Text a person writes for others to read (an agent's reply, a resolution note): no
    control characters but line breaks and tabs (NUL, escape sequences, C1), no bidirectional
    overrides, and something visible (not only spaces and zero-width marks)."""
    for char in text:
        if (unicodedata.category(char) == "Cc" and char not in "\n\t") or char in _BIDI_CONTROLS:
            raise ValueError(f"the text holds the control character U+{ord(char):04X}")
    if not any(unicodedata.category(c)[0] in "LMNPS" for c in text):
        raise ValueError("the text has nothing visible")
    return text


PlainText = Annotated[str, AfterValidator(_valid_unicode)]
StaffText = Annotated[str, AfterValidator(_valid_unicode), AfterValidator(_shown_as_written)]
CustomerMessage = Annotated[
    str, Field(min_length=1, max_length=8000), AfterValidator(_valid_unicode), AfterValidator(_not_blank)
]

Verdict = Literal["answered", "suggest", "idk", "handoff", "error"]
JudgeVerdict = Literal["sufficient", "insufficient", "out_of_scope", "needs_human"]
DecisionAction = Literal["answer", "suggest", "refuse", "handoff"]
# where a gate sends the turn (``TurnState.route``), and where the other steps send it
Route = Literal["answer", "retry", "refuse", "handoff", "ask_judge"]
PlanRoute = Literal["rewrite", "as_is"]
DraftRoute = Literal["revise", "done"]
StepRoute = Literal[Route, PlanRoute, DraftRoute]
# what a customer message is, read at intake (``tasks/message_kind.py``): a question, a request
# for a person, courtesy alone, or a yes / no to the assistant's offer of a person
# courtesy: thanks (and every courtesy turn stored before greetings and goodbyes were read
# apart); goodbye: courtesy that takes leave ("bye"); greeting: courtesy that opens or asks for
# help without saying what
MessageKind = Literal[
    "question", "person", "greeting", "courtesy", "goodbye", "accept", "decline", "contact"
]


class HistoryTurn(BaseModel):
    user: str
    answer: str = ""
    sources: list[str] = Field(default_factory=list)  # the pages the answer cited
    offered_handoff: bool = False  # the answer offered a person: a "yes" next accepts it


class TurnRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    session_id: str = Field(min_length=1, max_length=200)
    customer_id: str | None = Field(default=None, max_length=200)
    message: CustomerMessage
    slots: dict[PlainText, PlainText] = Field(default_factory=dict)
    history: list[HistoryTurn] = Field(default_factory=list)


# ---- typed outputs of the four roles --------------------------------------------------------
class SlotValues(BaseModel):
    """Slots a model may propose: advisory ones only (enforced slots are never model-set)."""

    product: str | None = Field(default=None, max_length=40)
    language: str | None = Field(default=None, max_length=10)

    def as_dict(self) -> dict[str, str]:
        return {k: v for k, v in self.model_dump().items() if v}


class Reformulation(BaseModel):
    """The reformulator's output: a standalone query and at most two expansions."""

    standalone_query: str = Field(description="the customer's question, rewritten to stand alone")
    expansions: list[str] = Field(
        default_factory=list, max_length=2, description="up to two other phrasings"
    )
    advisory_filters: SlotValues = Field(default_factory=SlotValues)
    slot_updates: SlotValues = Field(default_factory=SlotValues)


class Passage(BaseModel):
    """One retrieved passage as the tool returns it; ``pid`` is its number in the prompt."""

    pid: int
    source_id: str
    chunk_id: str
    title: str = ""
    url: str | None = None
    text: str
    score: float
    via: str = "search"

    @classmethod
    def numbered(cls, results: Sequence[Any]) -> list[Passage]:
        """Passages from a retriever's results (``text``, ``score``, ``metadata``), from 1."""
        return [
            cls(
                pid=i,
                source_id=r.metadata["source_id"],
                chunk_id=r.metadata["chunk_id"],
                title=r.metadata.get("title", ""),
                url=r.metadata.get("url"),
                text=r.text,
                score=r.score,
                via=r.metadata.get("via", "search"),
            )
            for i, r in enumerate(results, start=1)
        ]


class RetrievalOutput(BaseModel):
    """The retriever's output: the tool's hits, and what the tool applied or refused."""

    queries: list[str]
    passages: list[Passage]
    entities: list[str] = Field(default_factory=list)
    filters: dict[str, str] = Field(default_factory=dict)
    ignored_filters: list[str] = Field(default_factory=list)


class Judgement(BaseModel):
    """The judge's output."""

    verdict: JudgeVerdict
    reason: str = ""
    rewrite_hint: str = ""


class DraftAnswer(BaseModel):
    """The responder's output: answer text, passage numbers it relies on, hand-off wish."""

    answer: str
    passage_ids: list[int] = Field(default_factory=list)
    handoff: bool = False


# ---- the result -------------------------------------------------------------------------------
class Citation(BaseModel):
    source_id: str
    chunk_id: str
    title: str = ""
    url: str | None = None
    snippet: str = ""
    score: float = 0.0


class Step(BaseModel):
    name: str
    ms: float = 0.0
    at: float = 0.0  # when it began (seconds since the epoch); 0 for a step that did not run
    detail: dict[str, Any] = Field(default_factory=dict)


class LlmCallTrace(BaseModel):
    role: str
    prompt_tokens: int
    completion_tokens: int
    ms: float
    wait_ms: float = 0.0


class Decision(BaseModel):
    """The answer decision (``tasks/decision.py``): its ``action`` (what the turn does: answer,
    suggest the page, refuse, hand off), the chosen page, its one calibrated probability,
    the gate's features and each one's contribution to the logit, the candidates the page
    choice weighed for the phrasing it settled on, every phrasing's reading (what training
    re-settles), and for an answer the sentences to quote."""

    action: DecisionAction = "refuse"
    probability: float = 0.0
    question: str = ""  # the phrasing it settled on
    source_id: str = ""  # the page the reading found answering (cited if the turn answers)
    passage_index: int | None = None  # its passage among the turn's passages
    features: GateFeatures = Field(default_factory=GateFeatures)
    contributions: dict[str, float] = Field(default_factory=dict)  # feature -> share of the logit
    relevance: list[float] = Field(default_factory=list)  # per passage, for that phrasing
    candidates: list[Candidate] = Field(default_factory=list)
    readings: list[PhrasingReading] = Field(default_factory=list)
    quote: list[str] = Field(default_factory=list)  # an answer's sentences, in the page's order
    why: str = ""  # what settled the action, in words (the trace's decided_by)

    @property
    def best(self) -> float:
        return max(self.relevance, default=0.0)

    @property
    def pages(self) -> dict[str, float]:
        """Each candidate page and the cross-encoder's probability for it."""
        found: dict[str, float] = {}
        for candidate in self.candidates:
            found[candidate.page] = max(found.get(candidate.page, 0.0), candidate.features.learned)
        return found


class GateDecision(BaseModel):
    """What a step decided: where the turn goes, why, and the evidence it read (if any).

    >>> GateDecision(gate="evidence_gate", route="answer", reason="evidence is sufficient").route
    'answer'
    """

    gate: str
    route: StepRoute
    reason: str = ""
    evidence: Decision | None = None
    unsupported: list[str] = Field(default_factory=list)  # the support check's failures


class Trace(BaseModel):
    steps: list[Step] = Field(default_factory=list)
    decisions: list[GateDecision] = Field(default_factory=list)
    queries: list[str] = Field(default_factory=list)  # everything the turn searched
    llm_calls: int = 0
    calls: list[LlmCallTrace] = Field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    duration_ms: float = 0.0
    notes: list[str] = Field(default_factory=list)

    def last_evidence(self) -> Decision | None:
        """The last evidence gate's reading, if a gate read the passages."""
        return next(
            (
                d.evidence
                for d in reversed(self.decisions)
                if d.gate == "evidence_gate" and d.evidence is not None
            ),
            None,
        )

    def ms_in(self, *names: str) -> float:
        """Wall time of the steps so named."""
        return round(sum(s.ms for s in self.steps if s.name in names), 1)

    def timeline(self) -> list[dict[str, Any]]:
        """Each step's name and milliseconds, in order (what the pilot's trace view shows)."""
        return [{"name": s.name, "ms": s.ms} for s in self.steps]


class TurnFailure(BaseModel):
    """Why a turn ended in ``verdict: error``: a store or search ``outage``, or a ``bug``, and
    the step it failed in."""

    kind: Literal["outage", "bug"]
    step: str = ""


class TurnResult(BaseModel):
    session_id: str
    turn_index: int | None = None
    answer: str
    verdict: Verdict
    judge_verdict: JudgeVerdict | None = None
    citations: list[Citation] = Field(default_factory=list)
    handoff: bool = False
    # the answer offers a person ("shall I connect you with a support agent?"): a "yes" to it
    # hands off, a "no" closes politely
    offers_handoff: bool = False
    kind: MessageKind = "question"  # what the customer's message was read as
    # the customer said goodbye or thanks, or no to the offer of a person: the chat asks its
    # closing "Did we solve your problem today?"
    closes: bool = False
    failure: TurnFailure | None = None  # set only when ``verdict`` is "error"
    trace: Trace = Field(default_factory=Trace)
