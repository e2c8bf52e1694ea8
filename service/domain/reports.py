"""The lead's reports, as the routes (``service/routes/reports.py``) answer them: the gap
report's window (``since``, computed at most once a minute per window and key's slots) and
its paging, the outcome report with the conversations a filter lists (a page the key may not
read lists nothing; ``other``: the conversations about no page it may read), one
conversation's audit, the breakdowns by topic and by article, and the widget keys' budgets.

Usage::

    page = gap_page(pilot, who, "7d", limit=10, offset=0)
    report = listed(pilot, who, ConversationFilter(label="handoff"), 30, 0, 100)
    audit = conversation_report(pilot, who, session_id)
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict

from pydantic import BaseModel

from service.auth import Caller
from service.context import PilotContext
from service.domain.breakdowns import (
    ROW_FIELDS,
    ArticleReport,
    OutcomeRow,
    TopicReport,
    by_article,
    by_topic,
    pages,
)
from service.domain.conversation import customer_label
from service.domain.gaps import published_articles, tenant_gap_report
from service.domain.outcomes import ConversationFilter, ConversationOutcome, OutcomeReport, window
from service.domain.staff_reads import (
    only_readable_topics,
    readable,
    readable_outcomes,
    readable_titles,
    staff_slots,
    with_cited_pages,
    withhold_unreadable,
)
from service.domain.views import (
    BudgetReport,
    BudgetRow,
    FeedbackMark,
    GapReportPage,
    SessionStaff,
    TurnStaff,
)
from service.errors import ApiError
from service.outcome_upkeep import flush
from storage.memory import Scope
from tasks.gap_report import parse_since


class ConversationReport(BaseModel):
    """One conversation as a lead audits it: its outcome with the evidence behind the label,
    and its transcript and marks as far as the key may read them."""

    outcome: ConversationOutcome
    session: SessionStaff
    customer: str
    turns: list[TurnStaff]  # each reply's sources as pages (title, link)
    feedback: list[FeedbackMark]


def gap_page(pilot: PilotContext, who: Caller, since: str, limit: int, offset: int) -> GapReportPage:
    """A page of the gap report's groups since ``since`` (``30d``, ``24h`` or an ISO date;
    422 naming ``since`` for anything else), the key's slots applied."""
    now = time.time()
    try:
        start = parse_since(since, now)
    except ValueError as exc:
        raise ApiError(422, "invalid_request", str(exc), field="since") from None
    minute = int(start // 60) * 60.0  # "7d" asked twice a second apart is one window
    key = (who.tenant, minute, json.dumps(sorted(who.slots.items())))
    report = pilot.gap_reports.get(
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
    return GapReportPage(
        **report.model_dump(exclude={"clusters"}),
        clusters=report.clusters[offset : offset + limit],
        total_clusters=len(report.clusters),
        limit=limit,
        offset=offset,
        since=since,
    )


def budget_report(pilot: PilotContext, who: Caller) -> BudgetReport:
    """How much is left of each of the tenant's widget keys' budgets (every tenant's for the
    deployment's admin key)."""
    rows = pilot.limits.budget_levels(who.tenant or None, time.time())
    return BudgetReport(
        budgets=[BudgetRow(**{k: v for k, v in asdict(r).items() if k != "tenant"}) for r in rows]
    )


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
        session=SessionStaff.model_validate(header),
        customer=customer_label(header["customer_id"]),
        turns=[
            TurnStaff.model_validate(t)
            for t in with_cited_pages(
                pilot.runtime,
                slots,
                withhold_unreadable(pilot.runtime, slots, turns, who.key_name),
            )
        ],
        feedback=[FeedbackMark.model_validate(f) for f in pilot.store.feedback(who.tenant, session_id)],
    )


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


def topic_report(pilot: PilotContext, who: Caller, days: int) -> TopicReport:
    """Outcomes by the page each conversation is about, largest first (pages the key may not
    read never named)."""
    rows, titles = breakdown_titles(pilot, who, days)
    return TopicReport(since_day=window(time.time(), days)[0], topics=by_topic(rows, titles))


def article_report(pilot: PilotContext, who: Caller, days: int) -> ArticleReport:
    """Per article cited in the window: its conversations' outcomes and marks, the articles
    that fail most first."""
    rows, titles = breakdown_titles(pilot, who, days)
    return ArticleReport(since_day=window(time.time(), days)[0], articles=by_article(rows, titles))
