"""What happens in a customer's conversation beside the turn itself: the turn run under the
session's lock, the hand-off it may end in, the messages that wait for a person, an email the
customer typed, a new session. The routes (``service/routes/sessions.py``, the widget's) parse,
authorize, call these and answer.

Usage::

    task = start_turn(pilot, request, who, lock)        # the turn, its hand-off, its metrics
    result = wait_for_agent(pilot, who, header, "It is order 42")   # after a hand-off
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from typing import NoReturn

from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents.turn import run_turn
from service.auth import Caller
from service.context import PilotContext, owner_of
from service.domain.records import SessionHeader
from service.domain.session_slots import turn_slots
from service.domain.session_state import SessionConflict, waiting_for_a_person
from service.errors import ApiError
from service.outcome_upkeep import touched
from service.turn_observer import observe_turn
from storage.memory import ANONYMOUS, WAITING_FOR_AGENT, Scope
from tasks.memory_context import messages_waiting, remember_entities, save_turn_result
from tasks.message_kind import kind_for, load_message_kinds
from tasks.schemas import TurnRequest, TurnResult

log = logging.getLogger(__name__)


class Contact(BaseModel):
    """Where a person can answer a visitor who left: given by the customer at the hand-off."""

    model_config = ConfigDict(extra="forbid")
    email: str = Field(max_length=254, pattern=r"^[^@\s<>\"']+@[^@\s<>\"']+\.[^@\s<>\"']+$")


def typed_email(message: str) -> str | None:
    """The first word of a message that is an email address as :class:`Contact` takes it.

    >>> typed_email("you can reach me at jo@example.com, thanks")
    'jo@example.com'
    >>> typed_email("call me on 020 7946 0958") is None
    True
    """
    for word in message.split():
        try:
            return Contact(email=word.strip(".,;:!?()<>\"'")).email
        except ValidationError:
            continue
    return None


def keep_typed_email(pilot: PilotContext, tenant: str, session_id: str, message: str) -> None:
    """Contact details typed in the chat ("you can reach me at jo@example.com"): the email is
    kept on the session as the hand-off's form keeps it, so a person can answer later."""
    email = typed_email(message)
    if email is not None:
        pilot.store.apply(
            tenant, session_id, "message", "customer", "", lambda _h, _c: {"contact_email": email}
        )


def start_turn(
    pilot: PilotContext,
    request: TurnRequest,
    who: Caller,
    lock: str,
    on_step: Callable[[str], None] | None = None,
) -> asyncio.Task[TurnResult]:
    """The turn as a task of its own, holding the session's lock for as long as it runs: a
    client that disconnects (or a request that is cancelled) never lets the session's next
    message start beside it."""

    async def locked() -> TurnResult:
        async with pilot.locks[lock]:
            started = time.time()
            result = await run_in_threadpool(run_turn, request, pilot.runtime, on_step)
            if result.kind == "contact":
                await run_in_threadpool(
                    keep_typed_email, pilot, who.tenant, request.session_id, request.message
                )
            if result.handoff:  # the gate handed the conversation to people
                result = await run_in_threadpool(hand_off_after_turn, pilot, request, result, who)
            touched(pilot, who.tenant, request.session_id)
            observe_turn(pilot, request, result, started, time.time())
            return result

    task = asyncio.ensure_future(locked())
    pilot.running.add(task)  # a reference, so the task lives on without its caller
    task.add_done_callback(pilot.running.discard)
    return task


def hand_off_after_turn(
    pilot: PilotContext, request: TurnRequest, result: TurnResult, who: Caller
) -> TurnResult:
    """Queue the session for people unless someone resolved it while the turn ran. It counts
    against the key's hand-offs like the customer's own request: over that limit the session
    stays with the assistant, and the customer (and the stored turn) are told so."""
    try:
        pilot.limits.spend("handoffs", who)
    except ApiError as refused:
        busy = result.model_copy(
            update={
                "verdict": "idk",
                "handoff": False,
                "answer": pilot.settings.messages.handoff_busy,
            }
        )
        busy.trace.notes.append(f"hand-off refused: {refused.message}")
        save_turn_result(pilot.memory, request, result.turn_index or 0, busy)
        return busy
    try:
        pilot.store.mark_handoff(
            request.slots.get("tenant", ""),
            request.session_id,
            handoff_reason(request.message, result.kind),
            role="assistant",
        )
    except SessionConflict:
        log.info("session %s was resolved during its hand-off turn", request.session_id)
    return result


def hand_off_on_request(
    pilot: PilotContext, who: Caller, header: SessionHeader, reason: str
) -> tuple[SessionHeader | None, int | None]:
    """The customer asked for a person with the widget's button: the session joins the
    queue, and the first time the assistant's hand-off line is stored as a turn of its own
    (no customer words, ``kind`` person), so it can be rated like any other reply. Returns
    the header (None: no such session) and that turn's index (None: the session already
    waited, nothing new said)."""
    already = waiting_for_a_person(header)
    if not already:
        pilot.limits.spend("handoffs", who)
    changed = pilot.store.mark_handoff(who.tenant, header["session_id"], reason)
    if changed is None or already:
        return changed, None
    line = pilot.settings.messages.handoff
    record = {"user": "", "answer": line, "verdict": "handoff", "kind": "person"}
    scope = Scope(header["customer_id"], who.tenant)
    return changed, pilot.memory.claim_turn(scope, header["session_id"], record, status="done")


def handoff_reason(message: str, kind: str = "person", width: int = 200) -> str:
    """Why the assistant handed off, as the queue shows it: the customer's own words, or, for
    a bare "yes" to the offer of a person (``kind`` accept), that they accepted it.

    >>> handoff_reason("I want to   talk to a person")
    'the assistant handed off after: I want to talk to a person'
    >>> handoff_reason("yes", "accept")
    'the customer accepted the offer of a person'
    """
    if kind == "accept":
        return "the customer accepted the offer of a person"
    words = " ".join(message.split())
    return "the assistant handed off after: " + (
        words if len(words) <= width else words[: width - 1] + "…"
    )


def open_session(
    pilot: PilotContext, who: Caller, customer_id: str | None, slots: dict[str, str]
) -> SessionHeader:
    """A new session of the caller's (counted against its ``sessions`` limit): its header.
    Without a customer id the visitor is anonymous, named after the session."""
    pilot.limits.spend("sessions", who)
    session_id = uuid.uuid4().hex
    customer = customer_id or f"{ANONYMOUS}{session_id}"
    return pilot.store.create_session(who.tenant, session_id, customer, owner_of(who), slots)


def wait_for_agent(pilot: PilotContext, who: Caller, header: SessionHeader, message: str) -> TurnResult:
    """A message after the hand-off: stored for the person who takes the conversation, at
    most ``waiting_messages`` of them until a person replies. The first gets one short note
    (``messages.handoff_waiting``), later ones no reply: the canned hand-off line is said
    once. The cap holds for messages sent at once too: a message is kept only if it is within
    the cap among the waiting messages claimed before it (turn indices are claimed in order),
    else its claim is taken back."""
    scope = Scope(header["customer_id"], who.tenant)
    memory = pilot.memory
    session_id = header["session_id"]
    cap = pilot.settings.pilot.limits.waiting_messages
    before = memory.session_turns(scope, session_id)
    waiting = messages_waiting(before)
    if waiting >= cap:
        too_many_waiting(waiting)
    kind = kind_for(load_message_kinds(memory.encoders).read(message), offer_pending=False)
    index = memory.claim_turn(
        scope,
        session_id,
        {"user": message, "kind": kind, "slots": turn_slots(header, who)},
        status=WAITING_FOR_AGENT,
    )
    turns = memory.session_turns(scope, session_id)
    ahead = messages_waiting([t for t in turns if t["turn_index"] <= index])
    if ahead > cap:
        memory.release_turn(scope, session_id, index)
        too_many_waiting(ahead - 1)
    remember_entities(memory, scope, session_id, index, message)
    if kind == "contact":
        keep_typed_email(pilot, who.tenant, session_id, message)
    noted = any(t.get("status") == WAITING_FOR_AGENT for t in before)
    return TurnResult(
        session_id=header["session_id"],
        # one short note that a person will reply, then nothing: the messages are for them
        answer="" if noted else pilot.settings.messages.handoff_waiting,
        verdict="handoff",
        handoff=True,
        turn_index=index,
        kind=kind,
    )


def too_many_waiting(waiting: int) -> NoReturn:
    raise ApiError(
        429,
        "too_many_waiting",
        f"{waiting} messages already wait for a person "
        "in this conversation; please wait for their reply",
        {"limit": "waiting_messages"},
        headers={"Retry-After": "60"},
    )


def customer_label(customer_id: str) -> str:
    """How the desk names a customer: the id a trusted backend gave, or an anonymous visitor.

    >>> customer_label("c-001"), customer_label("anon-2876e7ddd0b1484ca3c26b3ea4cfc0e2")
    ('c-001', 'anonymous visitor 2876e7')
    """
    if customer_id.startswith(ANONYMOUS):
        return f"anonymous visitor {customer_id.removeprefix(ANONYMOUS)[:6]}"
    return customer_id
