"""The pilot's stored records, one definition each: a session header as the pilot store
writes it (and the fields a move may change), a customer's mark on a reply, and an article's
record (its text, slots, status, last check and history). Each record's family goes on in
:mod:`service.domain.views`: what a customer reads (``SessionPublic``, ``TurnPublic``) and
what staff read (``SessionStaff``, ``TurnStaff``), each a Pydantic model of the stored fields
that reader may see (a test holds them to the stored definitions).

The stored records are ``TypedDict``s: what Qdrant hands back is the payload as written, so a
record read is a plain dict and these say which keys it holds (mypy checks every read and
write of them). The stores parse every record they read (:func:`storage.records.parsed`):
a stored record that does not fit its definition is a :class:`~storage.records.BrokenRecord`
naming the record and the field, never a ``KeyError`` three calls later; records written by
older versions fit (their keys are optional here, or read into this version's shape after
parsing).

Usage::

    header = parsed(SESSION, payload, "pilot_sessions acme/abc")   # a SessionHeader
    header["status"]                      # "open" | "handoff" | "resolved"
    changes: SessionFields = {"taken_by": "ana", "taken_at": time.time()}
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Literal, Required, TypeAlias

from pydantic import ConfigDict, JsonValue, TypeAdapter, with_config

# typing_extensions': pydantic reads these in response models (``typing.TypedDict`` before 3.12
# it refuses)
from typing_extensions import TypedDict

from tasks.replay import ChangeKind
from tasks.schemas import Verdict

Rating = Literal["up", "down"]  # a customer's mark on a reply


class Status(StrEnum):
    """A session's status (stored, and answered by the API, as its value;
    :mod:`service.domain.session_state` says which move leads where)."""

    OPEN = "open"
    HANDOFF = "handoff"  # waiting for a person (taken or not)
    RESOLVED = "resolved"


# A JSON object: an error body, a free-form field of a record or an answer. mypy checks that
# every value is JSON; at run time it is a plain ``dict`` (validated and described in the
# schema as ``{"type": "object"}``, as before), so docs/openapi.json does not change.
if TYPE_CHECKING:
    JsonObject: TypeAlias = dict[str, JsonValue]
else:
    JsonObject = dict


@with_config(ConfigDict(extra="allow"))  # a field a newer version wrote is kept on rewrite
class SessionFields(TypedDict, total=False):
    """The fields of a session header that change over its life (each write one move of
    :mod:`service.domain.session_state`, or the fields a move brings with it)."""

    status: Status
    handoff: bool  # in headers written before ``status``; removed at start (drop_handoff_flags)
    handoff_reason: str
    handoff_at: float
    taken_by: str  # the staff key holding the conversation
    taken_at: float
    resolution: str  # the resolving person's note (staff only)
    resolved_by: str
    resolved_at: float
    # closed with no person's reply in it: by staff ("closed without reply"), or left by the
    # customer (``left_at``); the customer is never told it was resolved
    closed_without_reply: bool
    left_at: float  # the customer left it while it waited for a person (a new conversation)
    memory_written_at: float | None  # None: a message came since the memory was written
    contact_email: str  # left by the customer at the hand-off
    csat_solved: bool  # "Did we solve your problem today?"
    csat_at: float
    csat_skipped_at: float | None  # the question was closed unanswered (None: answered after)
    rev: str  # this write's revision (:mod:`storage.qdrant.revisions`)
    revs: list[str]  # the revisions it replaced, newest first


class SessionHeader(SessionFields, total=False):
    """Who owns a session (tenant, customer, the keys that may use it) and where it stands."""

    session_id: Required[str]
    tenant: Required[str]
    customer_id: Required[str]
    # the hash of the keys that may use it (same tenant, slots, trust); every header written
    # since ``owner`` existed has it, older ones name the ``key``
    owner: str
    slots: Required[dict[str, str]]  # the enforced slots its turns run under
    created: Required[float]
    key: str  # the owning key's name, in headers written before ``owner`` existed


class StoredMark(TypedDict, total=False):
    """A customer's thumbs up or down on one reply of a session."""

    tenant: Required[str]
    session_id: Required[str]
    turn_index: Required[int]
    rating: Required[Rating]
    comment: str
    ts: float
    day: str  # UTC day of ``ts`` (the outcome report counts marks by day; older marks lack it)


class ArticleEvent(TypedDict):
    """One thing a person did to an article (saved, checked, published)."""

    at: float
    by: str  # the staff key's name
    action: str
    detail: str


class CheckedQuestion(TypedDict, total=False):
    """One of the article's questions, asked under the draft's slots by its check (a check
    stored by an earlier version may lack a field)."""

    question: Required[str]
    verdict: Verdict
    answered_from_article: bool
    cited: list[str]
    answer: str


class ReplayedChange(TypedDict, total=False):
    """A recent customer question whose reply the article would change."""

    question: Required[str]
    slots: dict[str, str]
    change: Required[ChangeKind]
    before: JsonObject  # a :class:`tasks.replay.Reply` (verdict, pages, answer)
    after: JsonObject


class Replay(TypedDict, total=False):
    questions: Required[int]  # recent questions asked with and without the article
    summary: Required[dict[str, int]]  # how many each kind of change touched
    changes: Required[list[ReplayedChange]]  # those it changes
    # every question asked, its answer before and after ("same" too; a check stored before
    # this lacks it)
    asked: list[ReplayedChange]


class ArticleCheck(TypedDict, total=False):
    """The article's last check: its questions replayed, and recent questions near it (a
    check stored before the replay, or before it named who ran it, lacks those keys)."""

    at: float
    by: str
    rows: Required[list[CheckedQuestion]]
    answered: Required[int]  # of ``rows``, answered from the article
    replay: Replay


@with_config(ConfigDict(extra="allow"))  # a field a newer version wrote is kept on rewrite
class StoredArticle(TypedDict, total=False):
    """An article's record: the whole article (its file is written from it), where it stands
    and what was done to it."""

    tenant: Required[str]
    slug: Required[str]
    id: str  # its document id in the knowledge base (``articles/<tenant folder>/<slug>``)
    title: str
    text: str
    access: str
    tiers: list[str] | None
    product: str | None
    language: str | None
    questions: list[str]
    status: Literal["draft", "published"]
    url: str | None  # once published
    preview: str  # a draft's hidden ``draft`` value (only its check's search reads it)
    check: ArticleCheck | None  # as read: the last check the reader's slots reach (stored apart)
    check_hidden: bool  # as read: a last check ran under slots above the reader's
    events: list[ArticleEvent]
    updated_at: float


SESSION: TypeAdapter[SessionHeader] = TypeAdapter(SessionHeader)
MARK: TypeAdapter[StoredMark] = TypeAdapter(StoredMark)
ARTICLE: TypeAdapter[StoredArticle] = TypeAdapter(StoredArticle)
CHECK: TypeAdapter[ArticleCheck] = TypeAdapter(ArticleCheck)
REPLAYED: TypeAdapter[list[ReplayedChange]] = TypeAdapter(list[ReplayedChange])
