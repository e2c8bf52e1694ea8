"""Who the caller's key is: its name, tenant and role (the agent desk shows what the role may)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool

from service.context import Authed, Pilot
from service.domain.views import KeyInfo

router = APIRouter(prefix="/v1", tags=["keys"])


@router.get("/me", response_model=KeyInfo)
async def me(who: Authed, pilot: Pilot) -> dict[str, str]:
    await run_in_threadpool(pilot.limits.spend, "reads", who)  # a widget visitor's only
    return {"key": who.key_name, "tenant": who.tenant, "role": who.role}
