"""What the pilot's routes answer, as typed models: each route declares one, so
``/openapi.json`` (written to docs/openapi.json, checked by a test) tells a client what comes
back. A stored record (session header, turn, feedback mark) is answered as the model of its
reader: ``SessionPublic``/``TurnPublic`` for its customer, ``SessionStaff``/``TurnStaff`` for
staff, each declaring the stored fields that reader may see (any other stored field is left
out); routes answer them with ``response_model_exclude_unset`` so a field a record lacks
stays absent.

Usage::

    @router.get("/{session_id}", response_model=SessionDetail, response_model_exclude_unset=True)
    async def get_session(session_id: str) -> SessionDetail: ...
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from service.domain.records import JsonObject, Rating
from service.domain.session_state import Status
from storage.memory import TurnStatus
from tasks.gap_report import GapReport
from tasks.schemas import Citation, Verdict


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    ready: bool
    checks: dict[str, str]


class KeyInfo(BaseModel):
    key: str
    tenant: str
    role: str


class NewSessionView(BaseModel):
    session_id: str
    customer_id: str
    slots: dict[str, str]


class SessionPublic(BaseModel):
    """A session as its customer reads it: the stored header's
    (:class:`~service.domain.records.SessionHeader`) customer fields, none of the staff's."""

    session_id: str
    customer_id: str
    slots: dict[str, str] = {}
    created: float | None = None
    status: Status | None = None
    handoff_reason: str | None = None
    handoff_at: float | None = None
    resolved_at: float | None = None
    contact_email: str | None = None  # left by the customer at the hand-off
    csat_solved: bool | None = None  # "Did we solve your problem today?" (None: not answered)
    csat_at: float | None = None
    csat_skipped_at: float | None = None  # closed without an answer (an answer clears it)
    taken_at: float | None = None  # a person took the conversation (joined it)
    # who joined, as the customer reads it: the staff key's display name (None: "a person
    # from our support team"); staff read ``taken_by``, the key's name, instead
    agent_name: str | None = None
    # closed with no person's reply: by staff, or left by the customer (``left_at``)
    closed_without_reply: bool | None = None
    left_at: float | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def handoff(self) -> bool:
        """Whether the conversation was ever handed to people (read from ``handoff_at``: the
        stored flag it replaces is gone)."""
        return self.handoff_at is not None


class SessionStaff(SessionPublic):
    """A session as staff read it: its customer's fields, and who holds or closed it. Never the
    keys that own it (``owner``) or its revisions."""

    tenant: str | None = None
    taken_by: str | None = None  # the staff key's name
    resolution: str | None = None  # the resolving person's note
    resolved_by: str | None = None
    memory_written_at: float | None = None


class CitedPage(BaseModel):
    """A page a reply cited, as its reader may read it now."""

    source_id: str
    title: str
    url: str | None = None


class TurnPublic(BaseModel):
    """One stored turn (:data:`storage.memory.StoredTurn`) as its customer reads it: the message,
    the answer (or a person's reply, ``from`` "agent") and each citation as the page it showed,
    among those the reader's slots may read."""

    model_config = ConfigDict(populate_by_name=True)

    turn_index: int | None = None
    user: str | None = None
    answer: str | None = None
    verdict: Verdict | None = None
    status: TurnStatus | None = None
    kind: str | None = None  # what the message was (tasks.message_kind)
    citations: list[CitedPage] = []
    offers_handoff: bool | None = None
    from_: Literal["agent"] | None = Field(None, alias="from")
    ts: float | None = None


class TurnStaff(TurnPublic):
    """A stored turn as staff read it: also the slots it ran under, who replied, how sure the
    decision was, what failed, and what the reader's own slots withheld."""

    session_id: str | None = None
    slots: dict[str, str] | None = None
    claim: str | None = None
    agent: str | None = None  # the staff key that replied
    probability: float | None = None
    drafted: bool | None = None
    llm_calls: int | None = None
    failure: JsonObject | None = None
    withheld_citations: int | None = None  # citations the reader's slots may not see
    withheld_reply: bool | None = None  # a person's reply above the reader's slots
    access: str | None = None  # a person's reply: its conversation's reach (storage/replies.py)
    tiers: list[str] | None = None
    reach_kept: bool | None = None


class FeedbackMark(BaseModel):
    """A customer's mark on a reply, as customer and staff read it (stored as
    :class:`~service.domain.records.StoredMark`)."""

    turn_index: int
    rating: Rating
    comment: str = ""
    ts: float | None = None


class SatisfactionAnswer(BaseModel):
    """The conversation's closing answer as stored (one per session: a later one replaces it)."""

    solved: bool | None  # None: skipped, never answered
    ts: float
    replaced: bool  # an earlier answer of this session was replaced by this one
    skipped: bool = False  # the customer closed the question without answering (kept)
    reply: str = ""  # what the customer reads next (``tasks.polite_replies.closing_reply``)
    offers_person: bool = False  # a "no": the chat offers a person with the reply


class SessionDetail(BaseModel):
    session: SessionPublic
    turns: list[TurnPublic]
    feedback: list[FeedbackMark]


class HandedOff(BaseModel):
    session: SessionPublic
    message: str
    # the stored turn that says it, rateable like any reply (None: the session already waited)
    turn_index: int | None = None


class QueueRow(BaseModel):
    session: SessionStaff
    customer: str
    why: str
    # the customer's latest question nobody answered yet: what the person has to solve
    problem: str = ""
    urgent: bool = False
    urgent_why: str = ""
    first_message: str
    latest_message: str = ""  # the customer's last message: two customers' rows differ by it
    turns: int
    waiting: int  # messages since a person last replied that need an answer (not an email)


class QueuePage(BaseModel):
    handoffs: list[QueueRow]
    total: int
    limit: int
    offset: int


class SuggestedReply(BaseModel):
    for_turn: int
    message: str
    asked: str
    answer: str
    verdict: Verdict
    citations: list[Citation]


class Conversation(BaseModel):
    session: SessionStaff
    customer: str
    turns: list[TurnStaff]  # each reply's sources as the pages the key may read
    citations: list[str]
    entities: list[JsonObject]  # each entity's type, value and attributes
    memories: list[JsonObject]  # each earlier case's session_id, summary, resolution and ts
    feedback: list[FeedbackMark]
    suggestion: SuggestedReply | None


class SessionChange(BaseModel):
    """A customer's move on their session (left it, left an email): the session as they read it."""

    session: SessionPublic


class DeskChange(BaseModel):
    """A person's move on the desk (took, assigned): the session as staff read it."""

    session: SessionStaff


class Resolved(DeskChange):
    remembered: bool


class AgentReply(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    session_id: str
    turn_index: int
    from_: str = Field(alias="from")
    message: str


class GapReportPage(GapReport):
    total_clusters: int
    limit: int
    offset: int
    since: str


class WidgetSession(BaseModel):
    session_id: str
    customer_id: str
    token: str
    expires_at: float


class WidgetReady(BaseModel):
    ready: bool


class RenewedToken(BaseModel):
    session_id: str
    token: str
    expires_at: float


DraftedBy = Literal["replies", "model", "skeleton"]


class DraftProposal(BaseModel):
    title: str
    slug: str
    text: str
    sources: list[JsonObject]  # each sentence's conversation: its session_id and turn_index
    questions: list[str]
    drafted_by: DraftedBy = Field(
        description="who wrote the draft: people's replies, the model (where nobody replied "
        "and the responder is on the model path; checked against the knowledge base), or "
        "the skeleton of the questions"
    )
    unsupported: list[str] = Field(
        default_factory=list,
        description="the model's sentences the knowledge base does not support, each also "
        "marked in the text: check them before saving",
    )
    pages: list[str] = Field(
        default_factory=list, description="the knowledge-base pages the model's draft rests on"
    )
    access: str = Field(
        "public",
        description="the highest access level among the conversations whose replies it "
        "quotes: save and publish it at this level (lower is refused)",
    )


class BudgetRow(BaseModel):
    """One of a widget key's rolling budgets (``service/stores/key_budget.py``) and how much is left."""

    key: str
    limit: str
    share: Literal["shared", "newcomers"]
    capacity: float
    per_hour: float = Field(description="units that come back an hour")
    left: float = Field(description="the share left now, 0 to 1")
    low: bool = Field(description="below pilot.widget_budget.low_below: a key running low")


class BudgetReport(BaseModel):
    budgets: list[BudgetRow]
