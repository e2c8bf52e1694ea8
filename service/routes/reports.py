"""Reports for support leads (admin keys): the knowledge-gap report and the outcome report of
the key's tenant."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import PlainTextResponse
from pydantic import BaseModel, Field

from service.auth import Caller
from service.breakdowns import (
    ROW_FIELDS,
    ArticleReport,
    OutcomeRow,
    TopicReport,
    by_article,
    by_topic,
    pages,
)
from service.context import Admin, Pilot, PilotContext
from service.domain.conversation import customer_label
from service.errors import JSON_ERRORS, ApiError
from service.gaps import published_articles, tenant_gap_report
from service.outcome_upkeep import flush
from service.outcomes import (
    ConversationFilter,
    ConversationOutcome,
    OutcomeReport,
    conversations_csv,
    window,
)
from service.records import CitedTurnRecord, FeedbackMark, GapReportPage, SessionView
from service.staff_reads import (
    only_readable_topics,
    readable,
    readable_outcomes,
    readable_titles,
    staff_slots,
    with_cited_pages,
    withhold_unreadable,
)
from storage.memory import Scope
from tasks.gap_report import parse_since
from tasks.outcomes import Label

router = APIRouter(prefix="/v1/reports", tags=["reports"])
DEFAULT_SINCE = "30d"


@router.get("/gaps", response_model=GapReportPage)
async def gaps(
    who: Admin,
    pilot: Pilot,
    since: str = DEFAULT_SINCE,
    limit: int = Query(10, ge=1, le=100),
    offset: int = Query(0, ge=0),
) -> dict[str, object]:
    """What customers asked that the knowledge base could not answer, grouped by meaning,
    largest group first (those that still need an article before those an article addressed
    or the knowledge base already answers), a page of groups at a time; ``since``: ``30d`` (the default),
    ``24h`` or an ISO date. A report is computed at most once a minute per window."""
    now = time.time()
    try:
        start = parse_since(since, now)
    except ValueError as exc:
        raise ApiError(422, "invalid_request", str(exc), field="since") from None
    minute = int(start // 60) * 60.0  # "7d" asked twice a second apart is one window
    key = (who.tenant, minute, json.dumps(sorted(who.slots.items())))
    report = await run_in_threadpool(
        pilot.gap_reports.get,
        key,
        lambda: tenant_gap_report(
            pilot.memory,
            pilot.store,
            pilot.runtime.retriever,
            who.tenant,
            minute,
            who.slots,
            published_articles(pilot.articles.all(who.tenant, staff_slots(who))),
            answerable=pilot.runtime.scorer.answerable,
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


class BudgetRow(BaseModel):
    """One of a widget key's rolling budgets (``service/key_budget.py``) and how much is left."""

    key: str
    limit: str
    share: Literal["shared", "newcomers"]
    capacity: float
    per_hour: float = Field(description="units that come back an hour")
    left: float = Field(description="the share left now, 0 to 1")
    low: bool = Field(description="below pilot.widget_budget.low_below: a key running low")


class BudgetReport(BaseModel):
    budgets: list[BudgetRow]


@router.get("/budgets", response_model=BudgetReport)
async def budgets(who: Admin, pilot: Pilot) -> BudgetReport:
    """How much is left of each of the tenant's widget keys' budgets (every tenant's for the
    deployment's admin key): the shared one and the share kept for new visitors, per limit.
    A key running low while many addresses spend it may be a crowd draining it."""
    rows = await run_in_threadpool(pilot.limits.budget_levels, who.tenant or None, time.time())
    return BudgetReport(
        budgets=[BudgetRow(**{k: v for k, v in asdict(r).items() if k != "tenant"}) for r in rows]
    )


class ConversationReport(BaseModel):
    """One conversation as a lead audits it: its outcome with the evidence behind the label,
    and its transcript and marks as far as the key may read them."""

    outcome: ConversationOutcome
    session: SessionView
    customer: str
    turns: list[CitedTurnRecord]  # each reply's sources as pages (title, link)
    feedback: list[FeedbackMark]


def drill_down(
    label: Label | None = None,
    topic: str | None = Query(None, max_length=500, description="the page it is about"),
    day: str | None = Query(None, pattern=r"^\d{4}-\d{2}-\d{2}$", description="UTC, ISO"),
    article: str | None = Query(None, max_length=500, description="a page its answers cited"),
    other: bool = Query(False, description="about no page the key may read (the topics report's other)"),
) -> ConversationFilter:
    return ConversationFilter(label=label, topic=topic, day=day, article=article, other=other)


Wanted = Annotated[ConversationFilter, Depends(drill_down)]


def listed(
    pilot: PilotContext, who: Caller, wanted: ConversationFilter, days: int, offset: int, limit: int
) -> OutcomeReport:
    """The report with the page of conversations ``wanted`` lists; a topic or article the key
    may not read lists nothing (whether it exists is not said)."""
    now = time.time()
    flush(pilot, now)
    slots = staff_slots(who)
    asked = [p for p in (wanted.topic, wanted.article) if p]
    if asked and len(readable(pilot.runtime, slots, asked)) < len(set(asked)):
        wanted, limit = ConversationFilter(label=wanted.label, day="none"), 0
    elif wanted.other:
        rows, titles = window_titles(pilot, who, days, now)  # flushed above
        unread = {str(r.get("topic_id") or "") for r in rows} - set(titles)
        wanted = wanted.model_copy(update={"topics": sorted(unread | {""})})
    report = pilot.outcomes.report(
        who.tenant,
        now,
        pilot.settings.pilot,
        lambda day: pilot.store.feedback_counts(who.tenant, day),
        days,
        offset,
        limit,
        wanted,
    )
    return only_readable_topics(pilot.runtime, slots, report)


@router.get("/outcomes", response_model=OutcomeReport)
async def outcomes(
    who: Admin,
    pilot: Pilot,
    wanted: Wanted,
    days: int = Query(30, ge=1, le=366),
    limit: int = Query(100, ge=0, le=1000),
    offset: int = Query(0, ge=0),
) -> OutcomeReport:
    """What the assistant achieved per day over the last ``days`` days (every label's count,
    the rates, satisfaction), ``tiles``: every label's count and share of all the window's
    conversations (pending included; each share rounded on its own), and the conversations the
    filters list (``label``, ``topic``, ``day``, ``article``; ``matching`` of them in all)
    with the turns, feedback and timestamps that justify each label, newest first, a page at
    a time. Read from the outcomes stored as conversations change
    (``service/outcome_store.py``), the ones touched since the last minute's sweep refreshed
    first. Topics and cited pages name only the pages the key's slots may read."""
    return await run_in_threadpool(listed, pilot, who, wanted, days, offset, limit)


@router.get(
    "/outcomes.csv",
    response_class=PlainTextResponse,
    responses={
        200: {
            "content": {"text/csv": {"schema": {"type": "string"}}},
            "description": "the listed conversations, one CSV row each",
        },
        **JSON_ERRORS,
    },
)
async def outcomes_csv(
    who: Admin,
    pilot: Pilot,
    wanted: Wanted,
    days: int = Query(30, ge=1, le=366),
    limit: int = Query(10_000, ge=0, le=100_000),
) -> PlainTextResponse:
    """The conversations the same filters list, as CSV (``service.outcomes.CSV_COLUMNS``)."""
    report = await run_in_threadpool(listed, pilot, who, wanted, days, 0, limit)
    return PlainTextResponse(
        conversations_csv(report.conversations),
        media_type="text/csv",
        headers={"Content-Disposition": 'attachment; filename="conversations.csv"'},
    )


def conversation_report(pilot: PilotContext, who: Caller, session_id: str) -> ConversationReport:
    flush(pilot, time.time())
    outcome = pilot.outcomes.get(who.tenant, session_id)
    header = pilot.store.session(who.tenant, session_id)
    if outcome is None or header is None:
        raise ApiError(404, "unknown_session", f"no conversation {session_id!r} with an outcome")
    slots = staff_slots(who)
    [shown] = readable_outcomes(pilot.runtime, slots, [ConversationOutcome(**outcome.row())])
    turns = pilot.memory.session_turns(Scope(header["customer_id"], who.tenant), session_id)
    return ConversationReport(
        outcome=shown,
        session=SessionView(**header),
        customer=customer_label(header["customer_id"]),
        turns=[
            CitedTurnRecord(**t)
            for t in with_cited_pages(
                pilot.runtime,
                slots,
                withhold_unreadable(pilot.runtime, slots, turns, who.key_name),
            )
        ],
        feedback=[FeedbackMark(**f) for f in pilot.store.feedback(who.tenant, session_id)],
    )


@router.get(
    "/outcomes/{session_id}", response_model=ConversationReport, response_model_exclude_unset=True
)
async def outcome_of(session_id: str, who: Admin, pilot: Pilot) -> ConversationReport:
    """One conversation's label, why and evidence, with its transcript and marks (an answer
    citing a page the key may not read is withheld and says so)."""
    return await run_in_threadpool(conversation_report, pilot, who, session_id)


def breakdown_titles(
    pilot: PilotContext, who: Caller, days: int
) -> tuple[list[OutcomeRow], dict[str, str]]:
    now = time.time()
    flush(pilot, now)
    return window_titles(pilot, who, days, now)


def window_titles(
    pilot: PilotContext, who: Caller, days: int, now: float
) -> tuple[list[OutcomeRow], dict[str, str]]:
    """The window's outcome rows (the breakdowns' fields) and the titles of the pages they
    name that the key may read."""
    rows = pilot.outcomes.window_rows(who.tenant, now, days, ROW_FIELDS)
    return rows, readable_titles(pilot.runtime, staff_slots(who), pages(rows))


@router.get("/topics", response_model=TopicReport)
async def topics(who: Admin, pilot: Pilot, days: int = Query(30, ge=1, le=366)) -> TopicReport:
    """Outcomes by topic: the page each conversation is about (the first its answers cited,
    else the article nearest its first question, as the gap report names its groups), the
    largest first; pages the key may not read are never named."""
    rows, titles = await run_in_threadpool(breakdown_titles, pilot, who, days)
    return TopicReport(since_day=window(time.time(), days)[0], topics=by_topic(rows, titles))


@router.get("/articles", response_model=ArticleReport)
async def articles(who: Admin, pilot: Pilot, days: int = Query(30, ge=1, le=366)) -> ArticleReport:
    """Per article: the conversations whose answers cited it, their outcomes, the marks on
    the answers that cited it and the hand-offs right after one; the articles that fail most
    first (a conversation fails an article when its last answer cited it)."""
    rows, titles = await run_in_threadpool(breakdown_titles, pilot, who, days)
    return ArticleReport(since_day=window(time.time(), days)[0], articles=by_article(rows, titles))
