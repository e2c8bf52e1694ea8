"""Reports for support leads (admin keys): the knowledge-gap report and the outcome report of
the key's tenant."""

from __future__ import annotations

from fastapi import APIRouter, Query
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import PlainTextResponse

from service.context import Admin, Pilot, Wanted
from service.domain import reports
from service.domain.breakdowns import ArticleReport, TopicReport
from service.domain.outcomes import OutcomeReport, conversations_csv
from service.domain.reports import ConversationReport
from service.domain.views import BudgetReport, GapReportPage
from service.errors import JSON_ERRORS

router = APIRouter(prefix="/v1/reports", tags=["reports"])
DEFAULT_SINCE = "30d"


@router.get("/gaps", response_model=GapReportPage)
async def gaps(
    who: Admin,
    pilot: Pilot,
    since: str = DEFAULT_SINCE,
    limit: int = Query(10, ge=1, le=100),
    offset: int = Query(0, ge=0),
) -> GapReportPage:
    """What customers asked that the knowledge base could not answer, grouped by meaning,
    largest group first (those that still need an article before those an article addressed
    or the knowledge base already answers), a page of groups at a time; ``since``: ``30d`` (the default),
    ``24h`` or an ISO date. A report is computed at most once a minute per window."""
    return await run_in_threadpool(reports.gap_page, pilot, who, since, limit, offset)


@router.get("/budgets", response_model=BudgetReport)
async def budgets(who: Admin, pilot: Pilot) -> BudgetReport:
    """How much is left of each of the tenant's widget keys' budgets (every tenant's for the
    deployment's admin key): the shared one and the share kept for new visitors, per limit.
    A key running low while many addresses spend it may be a crowd draining it."""
    return await run_in_threadpool(reports.budget_report, pilot, who)


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
    (``service/stores/outcome_store.py``), the ones touched since the last minute's sweep refreshed
    first. Topics and cited pages name only the pages the key's slots may read."""
    return await run_in_threadpool(reports.listed, pilot, who, wanted, days, offset, limit)


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
    """The conversations the same filters list, as CSV (``service.domain.outcomes.CSV_COLUMNS``)."""
    report = await run_in_threadpool(reports.listed, pilot, who, wanted, days, 0, limit)
    return PlainTextResponse(
        conversations_csv(report.conversations),
        media_type="text/csv",
        headers={"Content-Disposition": 'attachment; filename="conversations.csv"'},
    )


@router.get(
    "/outcomes/{session_id}", response_model=ConversationReport, response_model_exclude_unset=True
)
async def outcome_of(session_id: str, who: Admin, pilot: Pilot) -> ConversationReport:
    """One conversation's label, why and evidence, with its transcript and marks (an answer
    citing a page the key may not read is withheld and says so)."""
    return await run_in_threadpool(reports.conversation_report, pilot, who, session_id)


@router.get("/topics", response_model=TopicReport)
async def topics(who: Admin, pilot: Pilot, days: int = Query(30, ge=1, le=366)) -> TopicReport:
    """Outcomes by topic: the page each conversation is about (the first its answers cited,
    else the article nearest its first question, as the gap report names its groups), the
    largest first; pages the key may not read are never named."""
    return await run_in_threadpool(reports.topic_report, pilot, who, days)


@router.get("/articles", response_model=ArticleReport)
async def articles(who: Admin, pilot: Pilot, days: int = Query(30, ge=1, le=366)) -> ArticleReport:
    """Per article: the conversations whose answers cited it, their outcomes, the marks on
    the answers that cited it and the hand-offs right after one; the articles that fail most
    first (a conversation fails an article when its last answer cited it)."""
    return await run_in_threadpool(reports.article_report, pilot, who, days)
