"""The hand-off queue's rules: what a waiting conversation is to the people who work it. Why
it waits (:func:`handoff_why`), the problem to solve (:func:`problem_of`), whether it is
urgent (:func:`urgency`), its line in the queue (:func:`queue_row`, a page of them in
:func:`queue_page`), which staff key may read it (:func:`readable_session`), what a person
reads to take it over (:func:`conversation`), who it may be given to (:func:`assign`), and
the reply and the resolution a person writes (:func:`reply`, :func:`resolve`). The routes
(``service/routes/handoffs.py``) parse, authorize, call one of these and answer.

Usage::

    page = queue_page(pilot, "acme", limit=20, offset=0)   # QueuePage: handoffs, total
    header = readable_session(pilot, who, session_id)      # 404/403 for another's
    whole = conversation(pilot, who, header)               # transcript, customer, suggestion
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from service.auth import Caller
from service.context import PilotContext, found, staff_role
from service.domain.agent_assist import suggested_reply
from service.domain.conversation import customer_label
from service.domain.records import SessionHeader
from service.domain.session_state import waiting_for_a_person
from service.domain.staff_reads import staff_slots, with_cited_pages, withhold_unreadable
from service.domain.views import (
    Conversation,
    DeskChange,
    FeedbackMark,
    QueuePage,
    QueueRow,
    Resolved,
    SessionStaff,
    SuggestedReply,
    TurnStaff,
)
from service.errors import ApiError
from service.outcome_upkeep import touched
from storage.memory import Scope, StoredTurn
from storage.replies import PersonReplies
from tasks.memory_context import close_session, messages_waiting, to_answer
from tasks.message_kind import asked_something, kind_of, load_message_kinds
from tasks.question_behind import pages_reader, question_behind

URGENT_AFTER_S = 15 * 60  # handed off this long ago and no person has replied: urgent
URGENT_WAITING = 3  # this many messages wait for a person: urgent
# why a conversation waits when the customer said a bare "yes" to the offer of a person
ACCEPTED_OFFER = "accepted the offer of a person"


def tenant_session(pilot: PilotContext, tenant: str, session_id: str) -> SessionHeader:
    """A session of the tenant (whichever key started it), or 404."""
    return found(pilot.store.session(tenant, session_id), session_id)


def readable_session(pilot: PilotContext, who: Caller, session_id: str) -> SessionHeader:
    """A session this staff key may read: an admin any of the tenant's; an agent one waiting
    in the queue or taken by them (404 otherwise, 403 when another agent has it)."""
    header = tenant_session(pilot, who.tenant, session_id)
    if who.role == "admin":
        return header
    holder = header.get("taken_by")
    if holder == who.key_name:
        return header
    if not waiting_for_a_person(header):
        raise ApiError(404, "unknown_session", f"no session {session_id!r} in the queue")
    if holder:
        raise ApiError(403, "taken", f"{holder} has this conversation; an admin can reassign it")
    return header


def conversation(pilot: PilotContext, who: Caller, header: SessionHeader) -> Conversation:
    """What a person needs to take a conversation over, as far as their key may read it: the
    transcript (each reply's sources as pages, title and link), the customer's marks and
    closing answer (in ``feedback`` and the session), what we know of the customer (entities,
    the earlier cases its slots may read) and a suggested reply to the question still open,
    under the key's own slots (``service/domain/agent_assist.py``)."""
    scope = Scope(header["customer_id"], header["tenant"])
    memory = pilot.memory
    slots = staff_slots(who)
    stored = memory.session_turns(scope, header["session_id"])
    turns = withhold_unreadable(pilot.runtime, slots, stored, who.key_name)
    suggestion = suggested_reply(pilot.runtime, turns, slots, header["session_id"])
    return Conversation(
        session=SessionStaff.model_validate(header),
        customer=customer_label(header["customer_id"]),
        turns=[TurnStaff.model_validate(t) for t in with_cited_pages(pilot.runtime, slots, turns)],
        citations=sorted({c for t in turns for c in t.get("citations", [])}),
        entities=[e.model_dump(include={"type", "value", "attributes"}) for e in memory.entities(scope)],
        memories=[
            m.model_dump(include={"session_id", "summary", "resolution", "ts"})
            for m in memory.memories(scope, slots=slots)
            if m.session_id != header["session_id"]
        ],
        feedback=[
            FeedbackMark.model_validate(m)
            for m in pilot.store.feedback(header["tenant"], header["session_id"])
        ],
        suggestion=SuggestedReply.model_validate(suggestion) if suggestion else None,
    )


def read_conversation(pilot: PilotContext, who: Caller, session_id: str) -> Conversation:
    """:func:`conversation` of a session this staff key may read (:func:`readable_session`)."""
    return conversation(pilot, who, readable_session(pilot, who, session_id))


def handoff_why(header: SessionHeader, turns: Sequence[StoredTurn]) -> str:
    """Why a conversation waits: the customer's message that asked for a person (a bare "yes"
    to the offer reads as accepting it), else the last question the assistant could not
    answer, else the reason given with the hand-off.

    >>> handoff_why({"handoff_reason": "button"}, [{"user": "Refund?", "verdict": "idk"},
    ...              {"user": "Can I talk to a human?", "verdict": "handoff"}])
    'Can I talk to a human?'
    >>> handoff_why({}, [{"user": "yes", "verdict": "handoff", "kind": "accept"}])
    'accepted the offer of a person'
    >>> handoff_why({"handoff_reason": "button"}, [{"user": "bye", "verdict": "idk", "kind": "goodbye"}])
    'button'
    """
    handed = [t for t in turns if t.get("user") and t.get("verdict") == "handoff"]
    if handed:
        return ACCEPTED_OFFER if kind_of(handed[-1]) == "accept" else str(handed[-1]["user"])
    # a goodbye or thanks got the polite reply, not "I could not find this": it is no question
    missed = [t for t in turns if asked_something(t) and t.get("verdict") in ("idk", "suggest", "error")]
    return str(missed[-1]["user"]) if missed else str(header.get("handoff_reason") or "")


def problem_of(pilot: PilotContext, header: SessionHeader, turns: Sequence[StoredTurn]) -> str:
    """What the person has to solve: the customer's message behind the hand-off
    (:func:`tasks.question_behind.question_behind`: a bare "yes please" to the offer, thanks,
    greetings and an email are never it), else why the conversation was handed off."""
    behind = question_behind(turns, pages_reader(load_message_kinds(pilot.memory.encoders)))
    return str(turns[behind.position]["user"]) if behind else handoff_why(header, turns)


def urgency(header: SessionHeader, turns: Sequence[StoredTurn], now: float) -> str:
    """Why the conversation is urgent ("" when it is not): the customer has waited for a
    person too long, or keeps writing.

    >>> urgency({"handoff_at": 100.0}, [], now=3700.0)
    'waiting 60 min for a person'
    """
    waiting = messages_waiting(turns, to_answer)
    if waiting >= URGENT_WAITING:
        return f"{waiting} messages wait for a person"
    replied = any(t.get("from") == "agent" for t in turns)
    since = header.get("handoff_at")
    if since is not None and not replied and now - float(since) >= URGENT_AFTER_S:
        return f"waiting {int((now - float(since)) // 60)} min for a person"
    return ""


def queue_row(pilot: PilotContext, header: SessionHeader) -> QueueRow:
    """One line of the queue: enough to choose a conversation and to tell two customers'
    apart (who, their problem, why, their latest message, since when, who has it, whether it
    is urgent), none of its answers."""
    turns = pilot.memory.session_turns(
        Scope(header["customer_id"], header["tenant"]), header["session_id"]
    )
    said = [str(t["user"]) for t in turns if t.get("user")]
    urgent = urgency(header, turns, time.time())
    return QueueRow(
        session=SessionStaff.model_validate(header),
        customer=customer_label(header["customer_id"]),
        why=handoff_why(header, turns),
        problem=problem_of(pilot, header, turns),
        urgent=bool(urgent),
        urgent_why=urgent,
        first_message=said[0] if said else "",
        latest_message=said[-1] if said else "",
        turns=len(turns),
        waiting=messages_waiting(turns, to_answer),
    )


def queue_page(pilot: PilotContext, tenant: str, limit: int, offset: int) -> QueuePage:
    """Handed-off, unresolved conversations of ``tenant``, oldest hand-off first: a page of
    :func:`queue_row` lines and the total."""
    waiting = pilot.store.handoffs(tenant)
    rows = [queue_row(pilot, h) for h in waiting[offset : offset + limit]]
    return QueuePage(handoffs=rows, total=len(waiting), limit=limit, offset=offset)


def take(pilot: PilotContext, who: Caller, session_id: str) -> DeskChange:
    """This person takes the conversation (409 when another agent has it): the header as
    staff read it."""
    header = pilot.store.take(who.tenant, session_id, who.key_name, staff_role(who))
    touched(pilot, who.tenant, session_id)
    return DeskChange(session=SessionStaff.model_validate(found(header, session_id)))


def staff_names(pilot: PilotContext, tenant: str) -> set[str]:
    """The names of the tenant's staff keys (agents and admins): who a conversation may go to."""
    return {
        k.name
        for k in pilot.settings.pilot.api_keys
        if k.role in ("agent", "admin") and k.tenant == tenant
    }


def assign(pilot: PilotContext, who: Caller, session_id: str, agent: str) -> DeskChange:
    """An admin gives the conversation to one of the tenant's staff keys (422 naming
    ``agent`` for any other name)."""
    if agent not in staff_names(pilot, who.tenant):
        raise ApiError(
            422, "unknown_agent", f"no staff key named {agent!r} in this tenant", field="agent"
        )
    header = pilot.store.take(who.tenant, session_id, agent, "admin")
    touched(pilot, who.tenant, session_id)
    return DeskChange(session=SessionStaff.model_validate(found(header, session_id)))


def reply(pilot: PilotContext, who: Caller, session_id: str, message: str) -> int:
    """A person's reply (they must have taken the conversation), stored at the conversation's
    reach (a reader below it never reads it): the index of its turn."""
    header = found(
        pilot.store.reopen(who.tenant, session_id, "reply", staff_role(who), who.key_name),
        session_id,
    )
    scope = Scope(header["customer_id"], who.tenant)
    index = PersonReplies(pilot.memory).add(scope, session_id, message, who.key_name, staff_slots(who))
    touched(pilot, who.tenant, session_id)
    return index


def resolve(pilot: PilotContext, who: Caller, session_id: str, note: str) -> Resolved:
    """Close the conversation (once: 409 for a second) and write its long-term memory with
    ``note``: the header as staff read it and whether a memory was written. A conversation
    no person replied in is closed without reply, and its note is no resolution to remember."""
    before = tenant_session(pilot, who.tenant, session_id)
    scope = Scope(before["customer_id"], who.tenant)
    turns = pilot.memory.session_turns(scope, session_id)
    replied = any(t.get("from") == "agent" for t in turns)
    header = found(
        pilot.store.resolve(who.tenant, session_id, note, who.key_name, staff_role(who), replied),
        session_id,
    )
    remembered = close_session(pilot.memory, scope, session_id, note if replied else "")
    touched(pilot, who.tenant, session_id)
    return Resolved(session=SessionStaff.model_validate(header), remembered=remembered)
