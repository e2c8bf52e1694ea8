"""What a customer does in a session beside sending messages: rate a reply, answer (or
skip) the closing "did we solve your problem?", hand off, leave a conversation that waits
for a person, leave an email for the desk. Every route needs a key and only sees the
sessions of keys like it; the rules are :mod:`service.domain.closing` and
:mod:`service.domain.waiting`."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool

from service.context import Customer, Pilot
from service.domain import closing, waiting
from service.domain.conversation import Contact
from service.domain.records import StoredMark
from service.domain.views import FeedbackMark, HandedOff, SatisfactionAnswer, SessionChange
from service.routes.session_bodies import Feedback, Handoff, Satisfaction

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])


@router.post(
    "/{session_id}/feedback",
    status_code=201,
    response_model=FeedbackMark,
    response_model_exclude_unset=True,
)
async def feedback(session_id: str, body: Feedback, who: Customer, pilot: Pilot) -> StoredMark:
    return await run_in_threadpool(
        closing.rate_reply, pilot, who, session_id, body.turn_index, body.rating, body.comment
    )


@router.post("/{session_id}/satisfaction", response_model=SatisfactionAnswer)
async def satisfaction(
    session_id: str, body: Satisfaction, who: Customer, pilot: Pilot
) -> SatisfactionAnswer:
    """The customer's one closing answer, "Did we solve your problem today?", asked when a
    person resolved the conversation or the customer leaves after a reply. One per session:
    a later answer replaces the earlier (``replaced``), so a customer may change their mind
    and the report counts the conversation once. Taken in a resolved session too; refused
    (409) before the conversation had any reply."""
    return await run_in_threadpool(closing.answer_closing, pilot, who, session_id, body.solved)


@router.post("/{session_id}/satisfaction/skip", response_model=SatisfactionAnswer)
async def skip_satisfaction(session_id: str, who: Customer, pilot: Pilot) -> SatisfactionAnswer:
    """The customer closed the closing question without answering: kept, so the report can
    say how many were asked and how many answered (``csat_skipped``). An answer given before
    stays (the response says it, ``solved``); an answer given after replaces the skip."""
    return await run_in_threadpool(closing.skip_closing, pilot, who, session_id)


@router.post("/{session_id}/handoff", response_model=HandedOff, response_model_exclude_unset=True)
async def handoff(session_id: str, body: Handoff, who: Customer, pilot: Pilot) -> HandedOff:
    """The customer asks for a person: the session joins the tenant's hand-off queue."""
    return await run_in_threadpool(waiting.request_person, pilot, who, session_id, body.reason)


@router.post("/{session_id}/leave", response_model=SessionChange, response_model_exclude_unset=True)
async def leave(session_id: str, who: Customer, pilot: Pilot) -> SessionChange:
    """The customer leaves a conversation that waits for a person (the chat's "New
    conversation", asked first): the hand-off is closed as left by the customer, so the queue
    no longer shows it waiting for a reply that could never reach them; its memory is
    written as a resolve writes it. 409 ``not_handed_off`` for a conversation that does not
    wait for a person, ``session_resolved`` for one already closed."""
    return await run_in_threadpool(waiting.leave, pilot, who, session_id)


@router.post("/{session_id}/contact", response_model=SessionChange, response_model_exclude_unset=True)
async def contact(session_id: str, body: Contact, who: Customer, pilot: Pilot) -> SessionChange:
    """The customer leaves an email at the hand-off, so a person can answer after they left;
    the desk shows it with the conversation."""
    return await run_in_threadpool(waiting.leave_contact, pilot, who, session_id, body.email)
