"""The hand-off queue, worked by people: support agents' keys (role ``agent`` or ``admin``)
list the conversations handed to them, read one whole (transcript, citations shown, the
customer's entities), reply (the customer sees it, marked as from a person) and resolve it
(the resolution note becomes the customer's long-term memory). Only their tenant's sessions.

Usage (an agent key)::

    staff = {"Authorization": "Bearer <agent key>"}
    client.get("/v1/handoffs", headers=staff)              # {"handoffs": [{session, turns, ...}]}
    client.get(f"/v1/handoffs/{session_id}", headers=staff)
    client.post(f"/v1/sessions/{session_id}/agent-messages", json={"message": "..."},
                headers=staff)
    client.post(f"/v1/sessions/{session_id}/resolve", json={"note": "..."}, headers=staff)
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from service.context import Pilot, PilotContext, Staff
from service.errors import ApiError
from storage.memory import Scope
from tasks.memory_context import close_session
from tasks.schemas import StaffText

router = APIRouter(prefix="/v1", tags=["hand-offs"])


class AgentMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: StaffText = Field(min_length=1, max_length=8000)


class Resolution(BaseModel):
    model_config = ConfigDict(extra="forbid")
    note: StaffText = Field(min_length=1, max_length=2000)


def tenant_session(pilot: PilotContext, tenant: str, session_id: str) -> dict[str, Any]:
    """Any session of the tenant (staff see every key's), or 404."""
    header = pilot.store.session(tenant, session_id)
    if header is None:
        raise ApiError(404, "unknown_session", f"no session {session_id!r} in this tenant")
    return header


def conversation(pilot: PilotContext, header: dict[str, Any]) -> dict[str, Any]:
    """What a person needs to take a conversation over."""
    scope = Scope(header["customer_id"], header["tenant"])
    memory = pilot.runtime.memory
    turns = memory.session_turns(scope, header["session_id"])
    return {"session": header, "turns": turns,
            "citations": sorted({c for t in turns for c in t.get("citations", [])}),
            "entities": [e.model_dump(include={"type", "value", "attributes"})
                         for e in memory.entities(scope)],
            "feedback": pilot.store.feedback(header["tenant"], header["session_id"])}


def queue(pilot: PilotContext, tenant: str) -> list[dict[str, Any]]:
    rows = []
    for header in pilot.store.handoffs(tenant):
        whole = conversation(pilot, header)
        rows.append({**whole, "waiting": sum(t.get("status") == "waiting_for_agent"
                                             for t in whole["turns"])})
    return rows


@router.get("/handoffs")
async def handoffs(who: Staff, pilot: Pilot) -> dict[str, Any]:
    """Handed-off, unresolved conversations of the key's tenant, oldest hand-off first."""
    return {"handoffs": await run_in_threadpool(queue, pilot, who.tenant)}


@router.get("/handoffs/{session_id}")
async def handoff(session_id: str, who: Staff, pilot: Pilot) -> dict[str, Any]:
    header = await run_in_threadpool(tenant_session, pilot, who.tenant, session_id)
    return await run_in_threadpool(conversation, pilot, header)


@router.post("/sessions/{session_id}/agent-messages", status_code=201)
async def agent_message(session_id: str, body: AgentMessage, who: Staff, pilot: Pilot
                        ) -> dict[str, Any]:
    """A person's reply: stored in the session, shown to the customer as from our team."""
    header = await run_in_threadpool(tenant_session, pilot, who.tenant, session_id)
    if header.get("status") == "resolved":
        raise ApiError(409, "session_resolved", "this conversation is already resolved")
    if not header.get("handoff"):  # a person joining takes the conversation over
        header = await run_in_threadpool(pilot.store.mark_handoff, who.tenant, session_id,
                                         f"taken over by {who.key_name}")
    header = await run_in_threadpool(pilot.store.reopen, header)
    scope = Scope(header["customer_id"], who.tenant)
    record = {"user": "", "answer": body.message, "from": "agent", "agent": who.key_name}
    index = await run_in_threadpool(pilot.runtime.memory.claim_turn, scope, session_id,
                                    record, "agent_reply")
    return {"session_id": session_id, "turn_index": index, "from": "agent",
            "message": body.message}


@router.post("/sessions/{session_id}/resolve")
async def resolve(session_id: str, body: Resolution, who: Staff, pilot: Pilot
                  ) -> dict[str, Any]:
    """Close the conversation; its long-term memory is written with the note."""
    header = await run_in_threadpool(tenant_session, pilot, who.tenant, session_id)
    if header.get("status") == "resolved":
        raise ApiError(409, "session_resolved", "this conversation is already resolved")
    scope = Scope(header["customer_id"], who.tenant)
    remembered = await run_in_threadpool(close_session, pilot.runtime.memory, scope,
                                         session_id, body.note)
    header = await run_in_threadpool(pilot.store.resolve, who.tenant, session_id, body.note,
                                     who.key_name)
    return {"session": header, "remembered": remembered}
