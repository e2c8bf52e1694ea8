"""The outcome report of one tenant: every conversation's label with its evidence, and the
rates per day (``tasks/outcomes.py`` labels; this module reads what the pilot stored in three
reads: the session headers, the tenant's turns and its feedback). Served at
``GET /v1/reports/outcomes`` (admin keys) and printed by ``main.py report outcomes``.

Usage::

    report = tenant_outcomes(memory, pilot_store, "acme", now=time.time(), pilot=settings.pilot)
    report.days[-1].resolution_rate, report.conversations[0].label
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pydantic import BaseModel, Field

from config.settings import PilotSettings
from tasks.outcomes import Label, Outcome, daily_rates, day_of, label, reopened, shared_pages

TURN_FIELDS = ("session_id", "turn_index", "user", "verdict", "status", "ts", "citations", "from")
DAY_S = 86_400.0


class DayRates(BaseModel):
    """One day's conversations by label and the rates over the decided ones (not pending)."""

    day: str
    involved: int
    confirmed: int
    confirmed_anonymous: int = 0  # of ``confirmed``: marked by anonymous visitors (unverified)
    assumed: int
    reopened: int
    suggested: int
    unanswered: int
    handed_off: int
    resolved_by_person: int
    pending: int
    resolution_rate: float | None
    handoff_rate: float | None
    unanswered_rate: float | None
    suggested_rate: float | None
    satisfaction: float | None
    feedback: int
    helpful: int


class ConversationOutcome(BaseModel):
    """One conversation's label and what justifies it (turn indices, feedback, timestamps)."""

    session_id: str
    customer_id: str
    day: str
    label: Label
    why: str
    questions: int
    started: float
    last_activity: float
    evidence: dict[str, Any]
    topic: list[str]  # the pages its answers cited that the reader's key may read
    first_question: str
    anonymous_mark: bool = False  # confirmed by an anonymous visitor: unverifiable


class OutcomeReport(BaseModel):
    tenant: str
    outcome_after_s: float
    reopen_within_s: float
    since_day: str
    days: list[DayRates]
    totals: dict[str, int | float | None]
    conversations: list[ConversationOutcome] = Field(default_factory=list)
    total_conversations: int = 0


def totals(days: list[dict[str, Any]]) -> dict[str, int | float | None]:
    """The window's counts and rates, the same definitions as a day's."""
    summed: dict[str, Any] = defaultdict(int)
    for row in days:
        for key, value in row.items():
            if isinstance(value, int) and not isinstance(value, bool):
                summed[key] += value
    decided = summed["involved"] - summed["pending"]

    def rate(*labels: str) -> float | None:
        return round(sum(summed[x] for x in labels) / decided, 3) if decided else None

    return {
        **summed,
        "resolution_rate": rate("confirmed", "assumed"),
        "handoff_rate": rate("handed_off", "resolved_by_person"),
        "unanswered_rate": rate("unanswered"),
        "suggested_rate": rate("suggested"),
        "satisfaction": round(summed["helpful"] / summed["feedback"], 3) if summed["feedback"] else None,
    }


def tenant_outcomes(
    memory: Any,
    pilot_store: Any,
    tenant: str,
    now: float,
    pilot: PilotSettings,
    days: int = 30,
    offset: int = 0,
    limit: int | None = None,
) -> OutcomeReport:
    """Every conversation of ``tenant`` labelled; the rates of the last ``days`` days and the
    conversations ``offset`` to ``offset + limit`` of them, newest first (all: no limit)."""
    turns: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for turn in memory.tenant_turns(tenant, TURN_FIELDS):
        turns[turn["session_id"]].append(turn)
    feedback = pilot_store.all_feedback(tenant)
    marks: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for mark in feedback:
        marks[mark["session_id"]].append(mark)
    labelled = []
    for header in pilot_store.sessions(tenant):
        mine = sorted(turns.get(header["session_id"], []), key=lambda t: t["turn_index"])
        found = label(header, mine, marks.get(header["session_id"], []), now, pilot.outcome_after_s)
        if found is not None:
            labelled.append(found)
    outcomes = reopened(labelled, shared_pages, pilot.reopen_within_s)
    since = window(now, days)[0]
    recent = [o for o in outcomes if o.day >= since]
    rates = daily_rates(recent, [f for f in feedback if day_of(float(f.get("ts", 0.0))) >= since])
    page = list(reversed(recent))[offset : None if limit is None else offset + limit]
    return outcome_report(tenant, pilot, since, rates, page)


def window(now: float, days: int) -> list[str]:
    """The ``days`` UTC days ending today, oldest first.

    >>> window(86_400.0 * 2, 2)
    ['1970-01-02', '1970-01-03']
    """
    return [day_of(now - (days - 1 - n) * DAY_S) for n in range(days)]


def outcome_report(
    tenant: str, pilot: PilotSettings, since_day: str, rows: list[dict[str, Any]], page: list[Outcome]
) -> OutcomeReport:
    """The report of the day ``rows`` (``tasks.outcomes.day_row``) and a ``page`` of outcomes."""
    return OutcomeReport(
        tenant=tenant,
        outcome_after_s=pilot.outcome_after_s,
        reopen_within_s=pilot.reopen_within_s,
        since_day=since_day,
        days=[DayRates(**row) for row in rows],
        totals=totals(rows),
        conversations=[ConversationOutcome(**o.row()) for o in page],
        total_conversations=sum(row["involved"] for row in rows),
    )
