"""Reports for support leads (admin keys): the knowledge-gap report and the outcome report of
the key's tenant."""

from __future__ import annotations

import json
import time
from typing import Any

from fastapi import APIRouter, Query
from fastapi.concurrency import run_in_threadpool

from service.context import Admin, Pilot
from service.errors import ApiError
from service.gaps import tenant_gap_report
from service.outcome_store import flush
from service.outcomes import OutcomeReport
from service.records import GapReportPage
from service.staff_reads import only_readable_topics, staff_slots
from tasks.gap_report import parse_since

router = APIRouter(prefix="/v1/reports", tags=["reports"])
DEFAULT_SINCE = "30d"


@router.get("/gaps", response_model=GapReportPage)
async def gaps(
    who: Admin,
    pilot: Pilot,
    since: str = DEFAULT_SINCE,
    limit: int = Query(10, ge=1, le=100),
    offset: int = Query(0, ge=0),
) -> dict[str, Any]:
    """What customers asked that the knowledge base could not answer, grouped by meaning,
    largest group first, a page of groups at a time; ``since``: ``30d`` (the default),
    ``24h`` or an ISO date. A report is computed at most once a minute per window."""
    now = time.time()
    try:
        start = parse_since(since, now)
    except ValueError as exc:
        raise ApiError(422, "invalid_request", str(exc), {"field": "since"}) from None
    minute = int(start // 60) * 60.0  # "7d" asked twice a second apart is one window
    key = (who.tenant, minute, json.dumps(sorted(who.slots.items())))
    report = await run_in_threadpool(
        pilot.gap_reports.get,
        key,
        lambda: tenant_gap_report(
            pilot.runtime.memory, pilot.store, pilot.runtime.retriever, who.tenant, minute, who.slots
        ),
    )
    body = report.model_dump()
    body["clusters"] = body["clusters"][offset : offset + limit]
    return {
        **body,
        "total_clusters": len(report.clusters),
        "limit": limit,
        "offset": offset,
        "since": since,
    }


@router.get("/outcomes", response_model=OutcomeReport)
async def outcomes(
    who: Admin,
    pilot: Pilot,
    days: int = Query(30, ge=1, le=366),
    limit: int = Query(100, ge=0, le=1000),
    offset: int = Query(0, ge=0),
) -> OutcomeReport:
    """What the assistant achieved per day over the last ``days`` days (resolution, hand-off,
    unanswered and suggested rates, satisfaction) and every conversation's label with the
    turns, feedback and timestamps that justify it, newest first, a page at a time. Read from
    the outcomes stored as conversations change (``service/outcome_store.py``), the ones
    touched since the last minute's sweep refreshed first. A conversation's ``topic`` names
    only the pages the key's slots may read."""
    now = time.time()
    await run_in_threadpool(flush, pilot, now)
    report = await run_in_threadpool(
        pilot.outcomes.report,
        who.tenant,
        now,
        pilot.settings.pilot,
        lambda day: pilot.store.feedback_counts(who.tenant, day),
        days,
        offset,
        limit,
    )
    return await run_in_threadpool(only_readable_topics, pilot.runtime, staff_slots(who), report)
