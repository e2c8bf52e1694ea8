"""Reports for support leads (admin keys): the knowledge-gap report of the key's tenant."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool

from service.context import Admin, Pilot
from service.errors import ApiError
from service.gaps import tenant_gap_report
from tasks.gap_report import parse_since

router = APIRouter(prefix="/v1/reports", tags=["reports"])


@router.get("/gaps")
async def gaps(who: Admin, pilot: Pilot, since: str = "") -> dict[str, Any]:
    """What customers asked that the knowledge base could not answer, grouped by meaning;
    ``since``: ``7d``, ``24h`` or an ISO date."""
    try:
        start = parse_since(since, time.time())
    except ValueError as exc:
        raise ApiError(422, "invalid_request", str(exc)) from None
    report = await run_in_threadpool(tenant_gap_report, pilot.runtime.memory, pilot.store,
                                     pilot.runtime.retriever, who.tenant, start, who.slots)
    return report.model_dump()
