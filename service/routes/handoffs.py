"""The hand-off queue, worked by people: support agents' keys (role ``agent`` or ``admin``)
list the conversations handed to them (a page at a time, oldest first), take one (others see
who has it and cannot reply over them; an admin can reassign it), read it whole (transcript,
citations, the customer's entities), reply (the customer sees it, marked as from a person)
and resolve it (the note becomes the customer's long-term memory). Only their tenant's
sessions, and only what their key's enforced slots may read: an answer citing an article the
key cannot read is withheld, and says so.

Usage (an agent key)::

    staff = {"Authorization": "Bearer <agent key>"}
    client.get("/v1/handoffs?limit=20&offset=0", headers=staff)  # {"handoffs", "total", ...}
    client.post(f"/v1/handoffs/{session_id}/take", headers=staff)
    client.get(f"/v1/handoffs/{session_id}", headers=staff)
    client.post(f"/v1/sessions/{session_id}/agent-messages", json={"message": "..."},
                headers=staff)
    client.post(f"/v1/sessions/{session_id}/resolve", json={"note": "..."}, headers=staff)
    client.post(f"/v1/handoffs/{session_id}/assign", json={"agent": "ben"}, headers=admin)
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence

from fastapi import APIRouter, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from service.agent_assist import suggested_reply
from service.auth import Caller
from service.context import Admin, Pilot, PilotContext, Staff, found, staff_role
from service.domain.conversation import customer_label
from service.domain.records import SessionHeader
from service.errors import ApiError
from service.outcome_upkeep import touched
from service.records import (
    AgentReply,
    Conversation,
    QueuePage,
    Resolved,
    SessionChange,
    SessionView,
)
from service.session_state import waiting_for_a_person
from service.staff_reads import staff_slots, with_cited_pages, withhold_unreadable
from storage.memory import Scope, StoredTurn
from storage.replies import PersonReplies
from tasks.memory_context import close_session, messages_waiting, to_answer
from tasks.message_kind import asked_something, kind_of, load_message_kinds
from tasks.question_behind import pages_reader, question_behind
from tasks.schemas import PlainText, StaffText

router = APIRouter(prefix="/v1", tags=["hand-offs"])
QUEUE_FIELDS = (
    "session_id",
    "customer_id",
    "status",
    "handoff_reason",
    "handoff_at",
    "taken_by",
    "taken_at",
    "created",
    "contact_email",
)
URGENT_AFTER_S = 15 * 60  # handed off this long ago and no person has replied: urgent
URGENT_WAITING = 3  # this many messages wait for a person: urgent
# why a conversation waits when the customer said a bare "yes" to the offer of a person
ACCEPTED_OFFER = "accepted the offer of a person"


class AgentMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: StaffText = Field(min_length=1, max_length=8000)


class Resolution(BaseModel):
    model_config = ConfigDict(extra="forbid")
    note: StaffText = Field(min_length=1, max_length=2000)


class Assignment(BaseModel):
    model_config = ConfigDict(extra="forbid")
    agent: PlainText = Field(min_length=1, max_length=200)


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


def conversation(pilot: PilotContext, who: Caller, header: SessionHeader) -> dict[str, object]:
    """What a person needs to take a conversation over, as far as their key may read it: the
    transcript (each reply's sources as pages, title and link), the customer's marks and
    closing answer (in ``feedback`` and the session), what we know of the customer (entities,
    the earlier cases its slots may read) and a suggested reply to the question still open,
    under the key's own slots (``service/agent_assist.py``)."""
    scope = Scope(header["customer_id"], header["tenant"])
    memory = pilot.memory
    slots = staff_slots(who)
    stored = memory.session_turns(scope, header["session_id"])
    turns = withhold_unreadable(pilot.runtime, slots, stored, who.key_name)
    return {
        "session": header,
        "customer": customer_label(header["customer_id"]),
        "turns": with_cited_pages(pilot.runtime, slots, turns),
        "citations": sorted({c for t in turns for c in t.get("citations", [])}),
        "entities": [
            e.model_dump(include={"type", "value", "attributes"}) for e in memory.entities(scope)
        ],
        "memories": [
            m.model_dump(include={"session_id", "summary", "resolution", "ts"})
            for m in memory.memories(scope, slots=slots)
            if m.session_id != header["session_id"]
        ],
        "feedback": pilot.store.feedback(header["tenant"], header["session_id"]),
        "suggestion": suggested_reply(pilot.runtime, turns, slots, header["session_id"]),
    }


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


def queue_row(pilot: PilotContext, header: SessionHeader) -> dict[str, object]:
    """One line of the queue: enough to choose a conversation and to tell two customers'
    apart (who, their problem, why, their latest message, since when, who has it, whether it
    is urgent), none of its answers."""
    turns = pilot.memory.session_turns(
        Scope(header["customer_id"], header["tenant"]), header["session_id"]
    )
    said = [str(t["user"]) for t in turns if t.get("user")]
    urgent = urgency(header, turns, time.time())
    return {
        "session": {k: header.get(k) for k in QUEUE_FIELDS},
        "customer": customer_label(header["customer_id"]),
        "why": handoff_why(header, turns),
        "problem": problem_of(pilot, header, turns),
        "urgent": bool(urgent),
        "urgent_why": urgent,
        "first_message": said[0] if said else "",
        "latest_message": said[-1] if said else "",
        "turns": len(turns),
        "waiting": messages_waiting(turns, to_answer),
    }


def queue_page(pilot: PilotContext, tenant: str, limit: int, offset: int) -> dict[str, object]:
    waiting = pilot.store.handoffs(tenant)
    rows = [queue_row(pilot, h) for h in waiting[offset : offset + limit]]
    return {"handoffs": rows, "total": len(waiting), "limit": limit, "offset": offset}


def etag_matches(if_none_match: str, etag: str) -> bool:
    """Whether an ``If-None-Match`` header names ``etag``: a list, weak tags (``W/"..."``,
    compared weakly as RFC 9110 asks for this header) and ``*`` count.

    >>> etag_matches('"a", W/"b"', '"b"'), etag_matches("*", '"b"'), etag_matches('"a"', '"b"')
    (True, True, False)
    """
    tags = {t.strip().removeprefix("W/") for t in if_none_match.split(",")}
    return "*" in tags or etag in tags


@router.get(
    "/handoffs",
    response_class=Response,
    responses={
        200: {"model": QueuePage, "description": "a page of the queue, with its ETag"},
        304: {"description": "unchanged since the If-None-Match ETag"},
    },
)
async def handoffs(
    who: Staff,
    pilot: Pilot,
    request: Request,
    limit: int = Query(20, ge=1, le=100),
    offset: int = Query(0, ge=0),
) -> Response:
    """Handed-off, unresolved conversations of the key's tenant, oldest hand-off first, a page
    at a time with the total. The ETag lets the desk poll for changes (304 when none)."""
    page = await run_in_threadpool(queue_page, pilot, who.tenant, limit, offset)
    body = json.dumps(page, sort_keys=True).encode()
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    if etag_matches(request.headers.get("if-none-match", ""), etag):
        return Response(status_code=304, headers={"ETag": etag})
    return Response(body, media_type="application/json", headers={"ETag": etag})


@router.get("/handoffs/{session_id}", response_model=Conversation, response_model_exclude_unset=True)
async def handoff(session_id: str, who: Staff, pilot: Pilot) -> dict[str, object]:
    header = await run_in_threadpool(readable_session, pilot, who, session_id)
    return await run_in_threadpool(conversation, pilot, who, header)


@router.post(
    "/handoffs/{session_id}/take", response_model=SessionChange, response_model_exclude_unset=True
)
async def take(session_id: str, who: Staff, pilot: Pilot) -> SessionChange:
    """This person takes the conversation: only they reply until it is resolved or an admin
    reassigns it (409 when another agent has it)."""
    header = await run_in_threadpool(
        pilot.store.take, who.tenant, session_id, who.key_name, staff_role(who)
    )
    touched(pilot, who.tenant, session_id)
    return SessionChange(session=SessionView.model_validate(found(header, session_id)))


@router.post(
    "/handoffs/{session_id}/assign", response_model=SessionChange, response_model_exclude_unset=True
)
async def assign(session_id: str, body: Assignment, who: Admin, pilot: Pilot) -> SessionChange:
    """An admin gives the conversation to one of the tenant's staff keys."""
    staff = {
        k.name
        for k in pilot.settings.pilot.api_keys
        if k.role in ("agent", "admin") and k.tenant == who.tenant
    }
    if body.agent not in staff:
        raise ApiError(
            422, "unknown_agent", f"no staff key named {body.agent!r} in this tenant", field="agent"
        )
    header = await run_in_threadpool(pilot.store.take, who.tenant, session_id, body.agent, "admin")
    touched(pilot, who.tenant, session_id)
    return SessionChange(session=SessionView.model_validate(found(header, session_id)))


@router.post("/sessions/{session_id}/agent-messages", status_code=201, response_model=AgentReply)
async def agent_message(session_id: str, body: AgentMessage, who: Staff, pilot: Pilot) -> AgentReply:
    """A person's reply (they must have taken the conversation): stored in the session, shown
    to the customer as from our team."""
    header = found(
        await run_in_threadpool(
            pilot.store.reopen, who.tenant, session_id, "reply", staff_role(who), who.key_name
        ),
        session_id,
    )
    scope = Scope(header["customer_id"], who.tenant)
    # kept at the conversation's reach: a reader below it never reads the reply
    replies = PersonReplies(pilot.memory)
    index = await run_in_threadpool(
        replies.add, scope, session_id, body.message, who.key_name, staff_slots(who)
    )
    touched(pilot, who.tenant, session_id)
    return AgentReply(session_id=session_id, turn_index=index, from_="agent", message=body.message)


@router.post(
    "/sessions/{session_id}/resolve", response_model=Resolved, response_model_exclude_unset=True
)
async def resolve(session_id: str, body: Resolution, who: Staff, pilot: Pilot) -> Resolved:
    """Close the conversation (once: a second resolve, or one racing it, gets 409); its
    long-term memory is written with the note. A conversation no person replied in is closed
    without reply (``closed_without_reply``): its customer is told it was closed, never that
    it was resolved, and the report does not count it as resolved by a person."""
    before = await run_in_threadpool(tenant_session, pilot, who.tenant, session_id)
    scope = Scope(before["customer_id"], who.tenant)
    turns = await run_in_threadpool(pilot.memory.session_turns, scope, session_id)
    replied = any(t.get("from") == "agent" for t in turns)
    header = found(
        await run_in_threadpool(
            pilot.store.resolve,
            who.tenant,
            session_id,
            body.note,
            who.key_name,
            staff_role(who),
            replied,
        ),
        session_id,
    )
    # a note on a conversation nobody answered is no resolution to remember
    note = body.note if replied else ""
    remembered = await run_in_threadpool(close_session, pilot.memory, scope, session_id, note)
    touched(pilot, who.tenant, session_id)
    return Resolved(session=SessionView.model_validate(header), remembered=remembered)
