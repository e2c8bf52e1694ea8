"""Who the caller's key is: its name, tenant and role (the agent desk shows what the role may)."""

from __future__ import annotations

from fastapi import APIRouter

from service.context import Authed
from service.records import KeyInfo

router = APIRouter(prefix="/v1", tags=["keys"])


@router.get("/me", response_model=KeyInfo)
async def me(who: Authed) -> dict[str, str]:
    return {"key": who.key_name, "tenant": who.tenant, "role": who.role}
