"""The hand-off queue, worked by people: support agents' keys (role ``agent`` or ``admin``)
list the conversations handed to them (a page at a time, oldest first), take one (others see
who has it and cannot reply over them; an admin can reassign it), read it whole (transcript,
citations, the customer's entities), reply (the customer sees it, marked as from a person)
and resolve it (the note becomes the customer's long-term memory). Only their tenant's
sessions, and only what their key's enforced slots may read: an answer citing an article the
key cannot read is withheld, and says so. The queue's rules are :mod:`service.domain.queue`;
a route here parses, authorizes (its key's role), calls one of them and answers.

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

from fastapi import APIRouter, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from service.context import Admin, Pilot, Staff
from service.domain import queue
from service.domain.views import AgentReply, Conversation, DeskChange, QueuePage, Resolved
from service.web.etag import json_with_etag
from tasks.schemas import PlainText, StaffText

router = APIRouter(prefix="/v1", tags=["hand-offs"])


class AgentMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: StaffText = Field(min_length=1, max_length=8000)


class Resolution(BaseModel):
    model_config = ConfigDict(extra="forbid")
    note: StaffText = Field(min_length=1, max_length=2000)


class Assignment(BaseModel):
    model_config = ConfigDict(extra="forbid")
    agent: PlainText = Field(min_length=1, max_length=200)


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
    page = await run_in_threadpool(queue.queue_page, pilot, who.tenant, limit, offset)
    return json_with_etag(page, request.headers.get("if-none-match", ""))


@router.get("/handoffs/{session_id}", response_model=Conversation, response_model_exclude_unset=True)
async def handoff(session_id: str, who: Staff, pilot: Pilot) -> Conversation:
    return await run_in_threadpool(queue.read_conversation, pilot, who, session_id)


@router.post("/handoffs/{session_id}/take", response_model=DeskChange, response_model_exclude_unset=True)
async def take(session_id: str, who: Staff, pilot: Pilot) -> DeskChange:
    """This person takes the conversation: only they reply until it is resolved or an admin
    reassigns it (409 when another agent has it)."""
    return await run_in_threadpool(queue.take, pilot, who, session_id)


@router.post(
    "/handoffs/{session_id}/assign", response_model=DeskChange, response_model_exclude_unset=True
)
async def assign(session_id: str, body: Assignment, who: Admin, pilot: Pilot) -> DeskChange:
    """An admin gives the conversation to one of the tenant's staff keys."""
    return await run_in_threadpool(queue.assign, pilot, who, session_id, body.agent)


@router.post("/sessions/{session_id}/agent-messages", status_code=201, response_model=AgentReply)
async def agent_message(session_id: str, body: AgentMessage, who: Staff, pilot: Pilot) -> AgentReply:
    """A person's reply (they must have taken the conversation): stored in the session, shown
    to the customer as from our team."""
    index = await run_in_threadpool(queue.reply, pilot, who, session_id, body.message)
    return AgentReply(session_id=session_id, turn_index=index, from_="agent", message=body.message)


@router.post(
    "/sessions/{session_id}/resolve", response_model=Resolved, response_model_exclude_unset=True
)
async def resolve(session_id: str, body: Resolution, who: Staff, pilot: Pilot) -> Resolved:
    """Close the conversation (once: a second resolve, or one racing it, gets 409); its
    long-term memory is written with the note. A conversation no person replied in is closed
    without reply (``closed_without_reply``): its customer is told it was closed, never that
    it was resolved, and the report does not count it as resolved by a person."""
    return await run_in_threadpool(queue.resolve, pilot, who, session_id, body.note)
