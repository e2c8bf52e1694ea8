"""The outcome report of one tenant: every conversation's label with its evidence, and the
rates per day (``tasks/outcomes.py`` labels; this module reads what the pilot stored in three
reads: the session headers, the tenant's turns and its feedback). Served at
``GET /v1/reports/outcomes`` (admin keys) and printed by ``main.py report outcomes``.

Usage::

    report = tenant_outcomes(memory, pilot_store, "acme", now=time.time(), pilot=settings.pilot)
    report.days[-1].resolution_rate, report.conversations[0].label
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, TypedDict

from pydantic import BaseModel, Field

from config.settings import PilotSettings
from storage.memory import TurnStatus
from tasks.outcomes import (
    LABELS,
    RESOLVED,
    Label,
    Outcome,
    OutcomeBase,
    daily_rates,
    day_of,
    day_row,
    label,
    reopened,
    shared_pages,
)
from tasks.schemas import Verdict

if TYPE_CHECKING:
    from service.domain.records import StoredMark
    from service.stores.pilot_store import PilotStore
    from storage.memory import MemoryStore, StoredTurn

# A stored turn (``storage.memory.StoredTurn``) as the outcome report reads it: the fields
# ``tasks.outcomes.label`` decides on, the only ones read of every turn of the tenant.
# (Functional form: ``from`` is a keyword.)
OutcomeTurn = TypedDict(
    "OutcomeTurn",
    {
        "session_id": str,
        "turn_index": int,
        "user": str,
        "verdict": Verdict,
        "status": TurnStatus,
        "ts": float,
        "citations": list[str],
        "from": Literal["agent"],
        "kind": str,
        "probability": float | None,
        "drafted": bool,
    },
    total=False,
)
DAY_S = 86_400.0


class DayRates(BaseModel):
    """One day's conversations by label and the rates over the decided ones (not pending)."""

    day: str
    involved: int
    confirmed: int
    confirmed_anonymous: int = 0  # of ``confirmed``: marked by anonymous visitors (unverified)
    verified: int = 0  # of ``confirmed`` and ``assumed``: trusted (``tasks.outcomes.VERIFIED_AT``)
    assumed: int
    reopened: int
    suggested: int
    unanswered: int
    handed_off: int
    resolved_by_person: int
    pending: int
    resolution_rate: float | None  # (confirmed + assumed) / decided, anonymous marks not in it
    anonymous_confirmed_rate: float | None = None  # confirmed by anonymous marks / decided
    handoff_rate: float | None
    unanswered_rate: float | None
    suggested_rate: float | None
    satisfaction: float | None
    feedback: int
    helpful: int
    # of the day's conversations: how many answered "Did we solve your problem today?", how
    # many said yes, and the share (None: none answered)
    csat_answers: int = 0
    csat_yes: int = 0
    csat_rate: float | None = None
    csat_skipped: int = 0  # asked, closed without an answer
    csat_response_rate: float | None = None  # answered / asked (None: nobody was asked)


class ConversationOutcome(OutcomeBase):
    """One conversation's outcome as a lead reads it: ``topic`` and ``topic_id`` name only the
    pages the reader's key may read (``service.domain.staff_reads.readable_outcomes``)."""

    topic_title: str = ""


class Tile(BaseModel):
    """One label's conversations of the window: a count and its whole-number share of all
    the window's conversations (pending included), rounded on its own: equal counts, equal
    shares (they may not add up to exactly 100)."""

    label: Label
    count: int
    percent: int


class ConversationFilter(BaseModel):
    """Which conversations a drill-down lists (every given field must match)."""

    label: Label | None = None
    topic: str | None = None  # the page the conversation is about (``topic_id``)
    day: str | None = None  # the UTC day it started, ISO
    article: str | None = None  # a page its answers cited
    # the topics report's "other": about no page the reader may read (``listed`` resolves it
    # to ``topics``, those pages' ids and "" for none named, read in the store's filter)
    other: bool = False
    topics: list[str] | None = None


class OutcomeReport(BaseModel):
    tenant: str
    outcome_after_s: float
    reopen_within_s: float
    since_day: str
    days: list[DayRates]
    totals: dict[str, int | float | None]
    conversations: list[ConversationOutcome] = Field(default_factory=list)
    total_conversations: int = 0
    tiles: list[Tile] = Field(default_factory=list)
    matching: int = 0  # conversations of the window the filter lists (all: no filter)


def tiles(counts: Mapping[str, int | float | None]) -> list[Tile]:
    """Every label's count and share of all of them, each rounded on its own (halves up), so
    equal counts read equal shares; the shares may not add up to exactly 100. No
    conversation: every share 0.

    >>> [(t.label, t.percent) for t in tiles({"assumed": 1, "pending": 2}) if t.count]
    [('assumed', 33), ('pending', 67)]
    >>> [t.percent for t in tiles({"assumed": 3, "unanswered": 3, "pending": 3}) if t.count]
    [33, 33, 33]
    """
    found = {name: int(counts.get(name, 0) or 0) for name in LABELS}
    whole = sum(found.values())
    return [
        Tile(label=name, count=n, percent=math.floor(100 * n / whole + 0.5) if whole else 0)
        for name, n in found.items()
    ]


CSV_COLUMNS = (
    "session_id",
    "customer_id",
    "day",
    "label",
    "topic_id",
    "topic_title",
    "first_question",
    "resolved_by",
    "csat",  # the closing answer: yes, no, skipped or empty
    "why",
    "questions",
    "evidence",
)


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet reads such a cell as a formula


def spreadsheet_safe(cell: object) -> object:
    """A CSV cell a spreadsheet shows as text: one beginning with a formula character (a
    customer's question "=HYPERLINK(...)") gets a leading apostrophe, as OWASP advises;
    numbers stay numbers.

    >>> [spreadsheet_safe(c) for c in ("=1+1", "-", "Refund?", -1)]
    ["'=1+1", "'-", 'Refund?', -1]
    """
    if isinstance(cell, str) and cell.startswith(FORMULA_STARTS):
        return "'" + cell
    return cell


def conversations_csv(conversations: list[ConversationOutcome]) -> str:
    """The listed conversations as CSV (``CSV_COLUMNS``; the evidence as JSON): what the API's
    ``/v1/reports/outcomes.csv`` serves and ``main.py report outcomes --csv`` prints. A text
    cell that a spreadsheet would run as a formula is escaped (``spreadsheet_safe``).

    >>> conversations_csv([]).strip()
    'session_id,customer_id,day,label,topic_id,topic_title,first_question,resolved_by,csat,why,questions,evidence'
    """
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for c in conversations:
        row = {**c.model_dump(), "resolved_by": c.evidence.get("resolved_by", "")}
        row["evidence"] = json.dumps(c.evidence, sort_keys=True)
        writer.writerow([spreadsheet_safe(row[k]) for k in CSV_COLUMNS])
    return out.getvalue()


def matches(outcome: Outcome, wanted: ConversationFilter) -> bool:
    """Whether ``wanted`` lists ``outcome`` (the store's filter, in Python, for the recompute)."""
    return (
        wanted.label in (None, outcome.label)
        and wanted.topic in (None, outcome.topic_id)
        and (wanted.topics is None or outcome.topic_id in wanted.topics)
        and wanted.day in (None, outcome.day)
        and (not wanted.article or wanted.article in outcome.topic)
    )


def totals(days: list[dict[str, object]]) -> dict[str, int | float | None]:
    """The window's counts summed and its rates by the same definitions as a day's
    (``day_row`` over the sums), with the share of resolutions a customer verified."""
    summed: dict[str, int] = defaultdict(int)
    for row in days:
        for key, value in row.items():
            if isinstance(value, int) and not isinstance(value, bool):
                summed[key] += value
    whole = day_row(
        "",
        summed,
        helpful=summed["helpful"],
        given=summed["feedback"],
        confirmed_anonymous=summed["confirmed_anonymous"],
        verified=summed["verified"],
        csat_yes=summed["csat_yes"],
        csat_answers=summed["csat_answers"],
        csat_skipped=summed["csat_skipped"],
    )
    del whole["day"]
    resolved = sum(summed[label] for label in RESOLVED)
    verified_rate = round(summed["verified"] / resolved, 3) if resolved else None
    return {**summed, **whole, "verified_rate": verified_rate}


def tenant_outcomes(
    memory: MemoryStore,
    pilot_store: PilotStore,
    tenant: str,
    now: float,
    pilot: PilotSettings,
    days: int = 30,
    offset: int = 0,
    limit: int | None = None,
    wanted: ConversationFilter | None = None,
) -> OutcomeReport:
    """Every conversation of ``tenant`` labelled; the rates of the last ``days`` days and the
    conversations ``offset`` to ``offset + limit`` of them ``wanted`` lists, newest first
    (all: no limit)."""
    turns: dict[str, list[StoredTurn]] = defaultdict(list)
    for turn in memory.tenant_turns(tenant, tuple(OutcomeTurn.__annotations__)):
        turns[turn["session_id"]].append(turn)
    feedback = pilot_store.all_feedback(tenant)
    marks: dict[str, list[StoredMark]] = defaultdict(list)
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
    listed = [o for o in reversed(recent) if matches(o, wanted or ConversationFilter())]
    page = listed[offset : None if limit is None else offset + limit]
    return outcome_report(tenant, pilot, since, rates, page, len(listed))


def window(now: float, days: int) -> list[str]:
    """The ``days`` UTC days ending today, oldest first.

    >>> window(86_400.0 * 2, 2)
    ['1970-01-02', '1970-01-03']
    """
    return [day_of(now - (days - 1 - n) * DAY_S) for n in range(days)]


def outcome_report(
    tenant: str,
    pilot: PilotSettings,
    since_day: str,
    rows: list[dict[str, object]],
    page: list[Outcome],
    matching: int | None = None,
) -> OutcomeReport:
    """The report of the day ``rows`` (``tasks.outcomes.day_row``) and a ``page`` of outcomes
    (of ``matching`` the filter lists; None: all of the window's)."""
    summed = totals(rows)
    involved = int(summed["involved"] or 0)
    return OutcomeReport(
        tenant=tenant,
        outcome_after_s=pilot.outcome_after_s,
        reopen_within_s=pilot.reopen_within_s,
        since_day=since_day,
        days=[DayRates(**row) for row in rows],
        totals=summed,
        conversations=[ConversationOutcome(**o.row()) for o in page],
        total_conversations=involved,
        tiles=tiles(summed),
        matching=involved if matching is None else matching,
    )
