"""Sessions: create, send a message (one turn; JSON or server-sent events), read, rate a
reply, answer the closing "did we solve your problem?", hand off, leave a conversation that
waits for a person. Every route needs a key and only sees the sessions of keys like it."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Mapping
from typing import Literal

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from agents.progress import progress_label
from service.auth import Caller
from service.context import Customer, Pilot, PilotContext, found, owned_session
from service.domain.conversation import (
    Contact,
    hand_off_on_request,
    open_session,
    start_turn,
    turn_slots,
    wait_for_agent,
)
from service.domain.records import SessionFields, SessionHeader, StoredMark
from service.errors import ApiError, error_body
from service.outcome_upkeep import touched
from service.records import (
    FeedbackMark,
    HandedOff,
    NewSessionView,
    SatisfactionAnswer,
    SessionChange,
    SessionDetail,
    SessionView,
)
from service.session_state import move, waiting_for_a_person
from service.staff_reads import with_cited_pages
from storage.memory import ANONYMOUS, Scope, ScopeError, check_id
from storage.retrieval.filters import SlotError, build_filters
from tasks.memory_context import close_session
from tasks.polite_replies import closing_reply
from tasks.schemas import CustomerMessage, PlainText, TurnRequest, TurnResult
from tasks.state import search_slots

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])
log = logging.getLogger(__name__)


class NewSession(BaseModel):
    model_config = ConfigDict(extra="forbid")
    customer_id: PlainText | None = Field(default=None, min_length=1, max_length=200)
    slots: dict[PlainText, PlainText] = Field(default_factory=dict)

    @field_validator("customer_id")
    @classmethod
    def _memory_accepts_it(cls, value: str | None) -> str | None:
        """The same rules the memory scope applies, so a session never outlives its id; ids of
        anonymous web visitors are the service's to give, never a caller's."""
        if value is not None:
            try:
                check_id("customer_id", value)
            except ScopeError as exc:
                raise ValueError(str(exc)) from None
            if value.startswith(ANONYMOUS):
                raise ValueError(
                    f"customer ids starting with {ANONYMOUS!r} name anonymous "
                    "web visitors and cannot be given"
                )
        return value


class NewMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: CustomerMessage


class Feedback(BaseModel):
    model_config = ConfigDict(extra="forbid")
    turn_index: int = Field(ge=0)
    rating: Literal["up", "down"]
    comment: PlainText = Field(default="", max_length=2000)


class Satisfaction(BaseModel):
    """The closing question, "Did we solve your problem today?": yes (true) or no (false)."""

    model_config = ConfigDict(extra="forbid")
    solved: StrictBool  # "yes", 1 or null are refused (422 naming ``solved``), not read as true


class Handoff(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: PlainText = Field(default="requested by the customer", max_length=500)


def sse_event(name: str, data: dict[str, object]) -> str:
    """One server-sent event."""
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


def customer_trace(result: TurnResult) -> dict[str, object]:
    """What a key that is not a trusted backend sees of a turn's trace: the steps' names and
    times and the model's cost; no filters, entities, queries, passage ids or notes."""
    trace = result.trace
    return {
        "steps": trace.timeline(),
        "llm_calls": trace.llm_calls,
        "prompt_tokens": trace.prompt_tokens,
        "completion_tokens": trace.completion_tokens,
        "duration_ms": trace.duration_ms,
    }


def shown(pilot: PilotContext, result: TurnResult, who: Caller) -> tuple[int, dict[str, object]]:
    """The status and body a caller gets for a finished turn."""
    payload = result.model_dump(mode="json")
    if not who.trust_customer_id:  # a customer-facing key sees costs, not internals
        payload["trace"] = customer_trace(result)
    if result.failure is not None and result.failure.kind == "bug":  # ours, not an outage: 500
        return 500, {**error_body("turn_failed", result.answer), "result": payload}
    if result.verdict == "error":
        return 503, {
            **error_body("unavailable", pilot.settings.messages.connection_problem),
            "result": payload,
        }
    return 200, payload


async def turn_events(
    pilot: PilotContext, request: TurnRequest, who: Caller, lock: str
) -> AsyncIterator[str]:
    """Server-sent events: one ``step`` event as each step starts, then ``result``."""
    loop = asyncio.get_running_loop()
    steps: asyncio.Queue[str] = asyncio.Queue()

    def on_step(step: str) -> None:
        loop.call_soon_threadsafe(steps.put_nowait, step)

    turn = start_turn(pilot, request, who, lock, on_step)
    while not (turn.done() and steps.empty()):
        waiting = asyncio.ensure_future(steps.get())
        await asyncio.wait({turn, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if waiting.done():
            step = waiting.result()
            yield sse_event("step", {"step": step, "label": progress_label(step)})
        else:
            waiting.cancel()
    status, body = shown(pilot, turn.result(), who)
    yield sse_event("result" if status == 200 else "error", body)


def accepted_slots(pilot: PilotContext, slots: Mapping[str, str]) -> None:
    """422 naming the slot, its value and the values it takes, when the rules (as the runtime
    applies them: listed, and named by the knowledge base's pages) refuse one of ``slots``: a
    request that would fail every turn is told so, never answered "trouble reaching"."""
    try:
        build_filters(pilot.runtime.settings.slots, slots, strict=False)
    except SlotError as exc:
        raise ApiError(422, "invalid_slot", str(exc), field="slots") from None


@router.post("", status_code=201, response_model=NewSessionView)
async def new_session(body: NewSession, who: Customer, pilot: Pilot) -> NewSessionView:
    rules = pilot.settings.slots
    for name in body.slots:
        if name not in rules:
            raise ApiError(
                422,
                "unknown_slot",
                f"unknown slot {name!r}",
                {"known": sorted(rules)},
                field=f"slots.{name}",
            )
        if rules[name].mode == "enforced":
            raise ApiError(
                403,
                "enforced_slot",
                f"slot {name!r} is set by your API key, not by requests",
                field=f"slots.{name}",
            )
    accepted_slots(pilot, {**body.slots, **who.slots})
    if body.customer_id and not who.trust_customer_id:
        raise ApiError(
            403, "customer_not_allowed", "this API key cannot name customers", field="customer_id"
        )
    if who.session_id is not None:
        raise ApiError(
            403,
            "session_token",
            "a widget session's token cannot open sessions: POST /v1/widget/sessions",
        )
    header = await run_in_threadpool(open_session, pilot, who, body.customer_id, dict(body.slots))
    return NewSessionView(
        session_id=header["session_id"], customer_id=header["customer_id"], slots=header["slots"]
    )


@router.post(
    "/{session_id}/messages",
    response_model=None,
    responses={
        200: {
            "model": TurnResult,
            "description": "the turn's result; with Accept: text/event-stream, `step` events "
            "and then `result` (a TurnResult) or `error`",
            "content": {"text/event-stream": {}},
        },
        503: {"description": "the store or the model is unreachable; `result` holds the turn"},
    },
)
async def message(
    session_id: str, body: NewMessage, who: Customer, pilot: Pilot, http: Request
) -> JSONResponse | StreamingResponse:
    """One turn. With ``Accept: text/event-stream``: progress events, then the result."""
    header = await run_in_threadpool(owned_session, pilot, who, session_id)
    streaming = "text/event-stream" in http.headers.get("accept", "")
    move(header, "message", "customer", "")  # 409 for a resolved session, before any count
    accepted_slots(pilot, turn_slots(header, who))  # 422 for slots the rules now refuse
    await run_in_threadpool(pilot.limits.spend, "message_bytes", who, len(body.message.encode()))
    header = found(
        await run_in_threadpool(pilot.store.reopen, who.tenant, session_id, "message", "customer"),
        session_id,
    )
    if waiting_for_a_person(header):
        result = await run_in_threadpool(wait_for_agent, pilot, who, header, body.message)
        touched(pilot, who.tenant, session_id)
        if streaming:
            return StreamingResponse(
                iter([sse_event("result", result.model_dump(mode="json"))]),
                media_type="text/event-stream",
            )
        return JSONResponse(result.model_dump(mode="json"))
    await run_in_threadpool(pilot.limits.spend, "turns", who)
    request = TurnRequest(
        session_id=session_id,
        customer_id=header["customer_id"],
        message=body.message,
        slots=turn_slots(header, who),
    )
    lock = f"{who.tenant}/{session_id}"
    if streaming:
        return StreamingResponse(
            turn_events(pilot, request, who, lock),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    result = await asyncio.shield(start_turn(pilot, request, who, lock))
    status, payload = shown(pilot, result, who)
    return JSONResponse(payload, status_code=status)


CUSTOMER_FIELDS = (
    "session_id",
    "customer_id",
    "slots",
    "created",
    "status",
    "handoff_reason",
    "handoff_at",
    "resolved_at",
    "contact_email",
    "csat_solved",
    "csat_at",
    "csat_skipped_at",
    "taken_at",  # a person joined (who: ``agent_name``, never the staff key's name)
    "closed_without_reply",
    "left_at",
)
# which staff key replied, the enforced slots the turn ran under, the turn's claim id, how
# sure the decision was, and a reply's reach
STAFF_ONLY_TURN_FIELDS = (
    *("agent", "slots", "claim", "probability", "drafted"),
    *("access", "tiers", "reach_kept"),  # a person's reply's reach (storage/replies.py)
)


def customer_view(header: SessionHeader, pilot: PilotContext) -> dict[str, object]:
    """A session header as its customer sees it: no owner hash, resolution note, resolving
    agent or memory bookkeeping (staff read those in /v1/handoffs); once a person took it,
    the name they chose to show (``agent_name``: the staff key's ``display_name``, None
    without one: "a person from our support team")."""
    fields: Mapping[str, object] = header
    view = {k: fields[k] for k in CUSTOMER_FIELDS if k in fields}
    if header.get("taken_at"):
        view["agent_name"] = display_name(pilot, header["tenant"], header.get("taken_by", ""))
    return view


def display_name(pilot: PilotContext, tenant: str, key_name: str) -> str | None:
    """The name a staff key shows customers (its ``display_name``), or None."""
    key = next(
        (k for k in pilot.settings.pilot.api_keys if k.name == key_name and k.tenant == tenant), None
    )
    return key.display_name if key is not None else None


def customer_turn(turn: Mapping[str, object]) -> dict[str, object]:
    return {k: v for k, v in turn.items() if k not in STAFF_ONLY_TURN_FIELDS}


@router.get("/{session_id}", response_model=SessionDetail, response_model_exclude_unset=True)
async def get_session(session_id: str, who: Customer, pilot: Pilot) -> dict[str, object]:
    await run_in_threadpool(pilot.limits.spend, "reads", who)  # a widget visitor's only
    header = await run_in_threadpool(owned_session, pilot, who, session_id)
    scope = Scope(header["customer_id"], who.tenant)
    turns = await run_in_threadpool(pilot.memory.session_turns, scope, session_id)
    feedback = await run_in_threadpool(pilot.store.feedback, who.tenant, session_id)
    # the sources each reply showed, as links again (a reload, another page of the site)
    slots = search_slots(turn_slots(header, who), header["customer_id"])  # as the turns searched
    shown = await run_in_threadpool(with_cited_pages, pilot.runtime, slots, turns)
    return {
        "session": customer_view(header, pilot),
        "turns": [customer_turn(t) for t in shown],
        "feedback": feedback,
    }


@router.post(
    "/{session_id}/feedback",
    status_code=201,
    response_model=FeedbackMark,
    response_model_exclude_unset=True,
)
async def feedback(session_id: str, body: Feedback, who: Customer, pilot: Pilot) -> StoredMark:
    header = await run_in_threadpool(owned_session, pilot, who, session_id)
    move(header, "feedback", "customer", "")  # a resolved conversation takes no more ratings
    await run_in_threadpool(pilot.limits.spend, "feedback", who)
    turns = await run_in_threadpool(
        pilot.memory.session_turns, Scope(header["customer_id"], who.tenant), session_id
    )
    turn = next((t for t in turns if t["turn_index"] == body.turn_index), None)
    if turn is None:
        raise ApiError(404, "unknown_turn", f"session has no turn {body.turn_index}", field="turn_index")
    # any reply of the assistant's (an answer, "I could not find this", "this article may
    # help", a hand-off line, a courtesy reply); not a person's reply, nor a message that waits
    if not turn.get("answer") or turn.get("from") == "agent":
        raise ApiError(
            409,
            "not_rateable",
            f"turn {body.turn_index} has no reply of the assistant to rate",
            field="turn_index",
        )
    mark = await run_in_threadpool(
        pilot.store.add_feedback, who.tenant, session_id, body.turn_index, body.rating, body.comment
    )
    touched(pilot, who.tenant, session_id)
    return mark


async def _closing_question_header(session_id: str, who: Caller, pilot: PilotContext) -> SessionHeader:
    """The session whose customer answers (or skips) the closing question: owned by ``who``,
    the move allowed, the spend counted; 409 before the conversation had any reply."""
    header = await run_in_threadpool(owned_session, pilot, who, session_id)
    move(header, "satisfaction", "customer", "")
    await run_in_threadpool(pilot.limits.spend, "feedback", who)
    turns = await run_in_threadpool(
        pilot.memory.session_turns, Scope(header["customer_id"], who.tenant), session_id
    )
    if not any(t.get("answer") for t in turns):
        raise ApiError(409, "nothing_to_rate", "this conversation has no reply yet to rate")
    return header


@router.post("/{session_id}/satisfaction", response_model=SatisfactionAnswer)
async def satisfaction(
    session_id: str, body: Satisfaction, who: Customer, pilot: Pilot
) -> SatisfactionAnswer:
    """The customer's one closing answer, "Did we solve your problem today?", asked when a
    person resolved the conversation or the customer leaves after a reply. One per session:
    a later answer replaces the earlier (``replaced``), so a customer may change their mind
    and the report counts the conversation once. Taken in a resolved session too; refused
    (409) before the conversation had any reply."""
    await _closing_question_header(session_id, who, pilot)
    now = time.time()
    before: dict[str, bool | None] = {}
    reply = closing_reply(pilot.settings.messages, body.solved)

    def answer(current: SessionHeader, _changes: SessionFields) -> SessionFields:
        before["solved"] = current.get("csat_solved")
        return {"csat_solved": body.solved, "csat_at": now, "csat_skipped_at": None}

    found(
        await run_in_threadpool(
            pilot.store.apply, who.tenant, session_id, "satisfaction", "customer", "", answer
        ),
        session_id,
    )
    touched(pilot, who.tenant, session_id)
    return SatisfactionAnswer(
        solved=body.solved,
        ts=now,
        replaced=before.get("solved") is not None,
        reply=reply.answer,
        offers_person=reply.offers_person,
    )


@router.post("/{session_id}/satisfaction/skip", response_model=SatisfactionAnswer)
async def skip_satisfaction(session_id: str, who: Customer, pilot: Pilot) -> SatisfactionAnswer:
    """The customer closed the closing question without answering: kept, so the report can
    say how many were asked and how many answered (``csat_skipped``). An answer given before
    stays (the response says it, ``solved``); an answer given after replaces the skip."""
    await _closing_question_header(session_id, who, pilot)
    now = time.time()

    def skip(current: SessionHeader, _changes: SessionFields) -> SessionFields:
        return {} if current.get("csat_solved") is not None else {"csat_skipped_at": now}

    header = found(
        await run_in_threadpool(
            pilot.store.apply, who.tenant, session_id, "satisfaction", "customer", "", skip
        ),
        session_id,
    )
    touched(pilot, who.tenant, session_id)
    solved = header.get("csat_solved")  # an answer given before stays
    return SatisfactionAnswer(solved=solved, ts=now, replaced=False, skipped=solved is None)


@router.post("/{session_id}/handoff", response_model=HandedOff, response_model_exclude_unset=True)
async def handoff(session_id: str, body: Handoff, who: Customer, pilot: Pilot) -> HandedOff:
    """The customer asks for a person: the session joins the tenant's hand-off queue."""
    header = await run_in_threadpool(owned_session, pilot, who, session_id)
    move(header, "hand_off", "customer", "")  # 409 for a resolved session, before any count
    changed, turn_index = await run_in_threadpool(hand_off_on_request, pilot, who, header, body.reason)
    header = found(changed, session_id)
    touched(pilot, who.tenant, session_id)
    view = SessionView.model_validate(customer_view(header, pilot))
    return HandedOff(session=view, message=pilot.settings.messages.handoff, turn_index=turn_index)


@router.post("/{session_id}/leave", response_model=SessionChange, response_model_exclude_unset=True)
async def leave(session_id: str, who: Customer, pilot: Pilot) -> SessionChange:
    """The customer leaves a conversation that waits for a person (the chat's "New
    conversation", asked first): the hand-off is closed as left by the customer, so the queue
    no longer shows it waiting for a reply that could never reach them; its memory is
    written as a resolve writes it. 409 ``not_handed_off`` for a conversation that does not
    wait for a person, ``session_resolved`` for one already closed."""
    header = await run_in_threadpool(owned_session, pilot, who, session_id)
    move(header, "leave", "customer", "")  # 409 before any read of the turns
    scope = Scope(header["customer_id"], who.tenant)
    turns = await run_in_threadpool(pilot.memory.session_turns, scope, session_id)
    replied = any(t.get("from") == "agent" for t in turns)
    left = found(await run_in_threadpool(pilot.store.leave, who.tenant, session_id, replied), session_id)
    await run_in_threadpool(close_session, pilot.memory, scope, session_id)
    touched(pilot, who.tenant, session_id)
    return SessionChange(session=SessionView.model_validate(customer_view(left, pilot)))


@router.post("/{session_id}/contact", response_model=SessionChange, response_model_exclude_unset=True)
async def contact(session_id: str, body: Contact, who: Customer, pilot: Pilot) -> SessionChange:
    """The customer leaves an email at the hand-off, so a person can answer after they left;
    the desk shows it with the conversation."""
    header = await run_in_threadpool(owned_session, pilot, who, session_id)
    move(header, "message", "customer", "")  # 409 for a resolved session
    await run_in_threadpool(pilot.limits.spend, "feedback", who)
    written = await run_in_threadpool(
        pilot.store.apply,
        who.tenant,
        session_id,
        "message",
        "customer",
        "",
        lambda _h, _c: {"contact_email": body.email},
    )
    touched(pilot, who.tenant, session_id)
    view = customer_view(found(written, session_id), pilot)
    return SessionChange(session=SessionView.model_validate(view))
