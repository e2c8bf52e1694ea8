"""Sessions: create, send a message (one turn; JSON or server-sent events), read. Every
route needs a key and only sees the sessions of keys like it; what a customer does beside
sending messages (rate a reply, answer the closing question, ask for a person, leave) is in
``session_actions.py``. The rules are the domain's (:mod:`service.domain.intake`,
:mod:`service.domain.turn_http`, :mod:`service.domain.customer_view`)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, StreamingResponse

from service.context import Customer, Pilot
from service.domain.customer_view import session_detail
from service.domain.intake import accept_message
from service.domain.intake import new_session as open_new_session
from service.domain.turn_http import answered, sse_event, turn_events
from service.domain.views import NewSessionView, SessionDetail
from service.routes.session_bodies import NewMessage, NewSession
from tasks.schemas import TurnResult

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])
EVENTS = "text/event-stream"


@router.post("", status_code=201, response_model=NewSessionView)
async def new_session(body: NewSession, who: Customer, pilot: Pilot) -> NewSessionView:
    return await run_in_threadpool(open_new_session, pilot, who, body.customer_id, dict(body.slots))


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
    accepted = await run_in_threadpool(accept_message, pilot, who, session_id, body.message)
    streaming = EVENTS in http.headers.get("accept", "")
    if isinstance(accepted, TurnResult):  # kept for the person the conversation waits for
        kept = accepted.model_dump(mode="json")
        if streaming:
            return StreamingResponse(iter([sse_event("result", kept)]), media_type=EVENTS)
        return JSONResponse(kept)
    if streaming:
        return StreamingResponse(
            turn_events(pilot, accepted, who),
            media_type=EVENTS,
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    status, payload = await answered(pilot, accepted, who)
    return JSONResponse(payload, status_code=status)


@router.get("/{session_id}", response_model=SessionDetail, response_model_exclude_unset=True)
async def get_session(session_id: str, who: Customer, pilot: Pilot) -> SessionDetail:
    return await run_in_threadpool(session_detail, pilot, who, session_id)
