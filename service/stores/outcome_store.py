"""Each conversation's outcome, stored when it changes, so the report counts instead of
reading every conversation.

A conversation is (re)labelled (``tasks/outcomes.label``) when something happens to it: a
customer turn, a rating, a hand-off, a person's reply, a resolution (``refresh``); a
``pending`` one past ``pilot.outcome_after_s`` is relabelled by the service's minute sweep
(``relabel_quiet``); a labelled one of the same customer on the same topic is marked
``reopened`` when the customer comes back within ``pilot.reopen_within_s``. The report reads
counts per day and label (indexed) and the page of conversations it shows: its cost does not
grow with the number of conversations read whole. A store whose conversations have no stored
outcome yet (a pilot older than this) is labelled once at start (``backfill``).

Usage::

    outcomes = OutcomeStore(store, encoders)
    outcomes.refresh(pilot_store, memory, "acme", ["s1"], now, settings.pilot)
    outcomes.report("acme", now, settings.pilot, days=30, offset=0, limit=100)
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from itertools import islice
from typing import TYPE_CHECKING

from pydantic import TypeAdapter

from config.settings import PilotSettings
from service.domain.breakdowns import OutcomeRow
from service.domain.outcomes import ConversationFilter, OutcomeReport, outcome_report, window
from service.domain.topics import TopicNamer, conversation_topic
from storage.memory import Scope
from storage.qdrant.store import AllOf, Condition, Match, PointData, Store, ensure_records
from storage.records import parsed
from tasks.message_kind import load_message_kinds
from tasks.outcomes import LABELS, RESOLVED, Outcome, day_row, label, reopened, shared_pages
from tasks.question_behind import pages_reader

if TYPE_CHECKING:
    from service.stores.pilot_store import PilotStore
    from storage.kb.embeddings import Encoders
    from storage.memory import MemoryStore

OUTCOMES = "pilot_outcomes"
ANONYMOUS_MARK = "anonymous"  # confirmed by an anonymous visitor's mark
_NAMESPACE = uuid.UUID("9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b")
BACKFILL_PAGE = 2000  # session ids checked for a stored outcome at a time (at start)


INDEXED = (
    "tenant",
    "day",
    "label",
    "customer_id",
    "session_id",
    "topic_id",
    "topic",
    "trust",
    "csat",
)
VERIFIED = "verified"  # the ``trust`` keyword of a verified resolution
OUTCOME: TypeAdapter[Outcome] = TypeAdapter(Outcome)
ROW: TypeAdapter[OutcomeRow] = TypeAdapter(OutcomeRow)  # the fields a breakdown reads


def conditions(tenant: str, days: list[str], wanted: ConversationFilter) -> AllOf:
    """The store's filter for ``wanted`` conversations of ``tenant`` started on ``days``."""
    parts: list[Condition] = [Match("tenant", (tenant,)), Match("day", tuple(days))]
    if wanted.label:
        parts.append(Match("label", (wanted.label,)))
    if wanted.topic is not None:
        parts.append(Match("topic_id", (wanted.topic,)))
    if wanted.topics is not None:
        parts.append(Match("topic_id", tuple(wanted.topics)))
    if wanted.article:
        parts.append(Match("topic", (wanted.article,)))
    return AllOf(tuple(parts))


class OutcomeStore:
    """``name_topic(question, slots)``: the page a conversation none of whose answers cited
    one is about (``service.domain.topics.topic_namer``, read by
    ``service.domain.topics.conversation_topic``); None: such conversations have no topic."""

    def __init__(
        self, store: Store, encoders: Encoders, name_topic: Callable[[str], TopicNamer] | None = None
    ) -> None:
        self.store, self.encoders = store, encoders
        self.name_topic = name_topic  # tenant -> its namer
        self.vector = encoders.dense.encode(["outcome"])[0].dense
        ensure_records(store, OUTCOMES, encoders.dense.dim, INDEXED)
        for key in INDEXED:  # a store from before a field was indexed
            store.add_keyword_index(OUTCOMES, key)

    def _write(self, tenant: str, outcomes: list[Outcome]) -> None:
        points = [
            PointData(
                id=str(uuid.uuid5(_NAMESPACE, f"{tenant}/{o.session_id}")),
                dense=self.vector,
                # a keyword to count the flagged ones by (Qdrant matches words, not booleans)
                payload={
                    **o.row(),
                    "tenant": tenant,
                    "mark": ANONYMOUS_MARK if o.anonymous_mark else "",
                    "trust": VERIFIED if o.verified else "",
                },
            )
            for o in outcomes
        ]
        if points:
            self.store.upsert(OUTCOMES, points)

    def _stored(self, where: Condition) -> list[Outcome]:
        return [
            parsed(
                OUTCOME, r.payload, f"{OUTCOMES} {r.payload.get('tenant')}/{r.payload.get('session_id')}"
            )
            for r in self.store.scroll(OUTCOMES, where)
        ]

    def refresh(
        self,
        pilot_store: PilotStore,
        memory: MemoryStore,
        tenant: str,
        session_ids: list[str],
        now: float,
        pilot: PilotSettings,
    ) -> None:
        """Label these conversations anew, and their customers' earlier ones as reopened
        where they came back on the same topic."""
        fresh: dict[str, list[Outcome]] = {}
        for session_id in dict.fromkeys(session_ids):
            header = pilot_store.session(tenant, session_id)
            if header is None:
                continue
            turns = memory.session_turns(Scope(header["customer_id"], tenant), session_id)
            found = label(
                header, turns, pilot_store.feedback(tenant, session_id), now, pilot.outcome_after_s
            )
            if found is not None:
                if not found.topic_id and self.name_topic is not None:
                    pages_of = pages_reader(load_message_kinds(self.encoders))
                    found.topic_id = conversation_topic(turns, pages_of, self.name_topic(tenant))
                fresh.setdefault(found.customer_id, []).append(found)
        for customer, mine in fresh.items():
            known = {
                o.session_id: o
                for o in self._stored(
                    AllOf((Match("tenant", (tenant,)), Match("customer_id", (customer,))))
                )
            }
            for outcome in mine:
                known[outcome.session_id] = outcome
            for earlier in known.values():  # reopened is decided again from the conversations
                if earlier.label == "reopened":
                    earlier.label = earlier.evidence.pop("was", "assumed")
                    earlier.evidence.pop("reopened_by", None)
            self._write(tenant, reopened(known.values(), shared_pages, pilot.reopen_within_s))

    def relabel_quiet(
        self, pilot_store: PilotStore, memory: MemoryStore, now: float, pilot: PilotSettings
    ) -> int:
        """Conversations still ``pending`` whose last activity is past the window: labelled."""
        quiet = [
            r.payload
            for r in self.store.scroll(OUTCOMES, Match("label", ("pending",)))
            if now - float(r.payload.get("last_activity", now)) >= pilot.outcome_after_s
        ]
        by_tenant: dict[str, list[str]] = {}
        for payload in quiet:
            by_tenant.setdefault(payload["tenant"], []).append(payload["session_id"])
        for tenant, sessions in by_tenant.items():
            self.refresh(pilot_store, memory, tenant, sessions, now, pilot)
        return len(quiet)

    def backfill(
        self, pilot_store: PilotStore, memory: MemoryStore, now: float, pilot: PilotSettings
    ) -> int:
        """Label, once, every conversation that has no stored outcome yet. The tenant's session
        ids are read a page at a time (the id alone) and each page's stored outcomes looked up
        by id: what a start holds does not grow with the conversations stored, and a store
        whose conversations are labelled has none of its turns read."""
        done = 0
        for tenant in pilot_store.tenants():
            ids = iter(pilot_store.session_ids(tenant))
            while page := list(islice(ids, BACKFILL_PAGE)):
                where = AllOf((Match("tenant", (tenant,)), Match("session_id", tuple(page))))
                stored = {
                    r.payload["session_id"]
                    for r in self.store.scroll(OUTCOMES, where, fields=("session_id",))
                }
                missing = [session_id for session_id in page if session_id not in stored]
                if missing:
                    self.refresh(pilot_store, memory, tenant, missing, now, pilot)
                    done += len(missing)
        return done

    def get(self, tenant: str, session_id: str) -> Outcome | None:
        """One conversation's stored outcome (None: none stored in ``tenant``)."""
        found = self._stored(AllOf((Match("tenant", (tenant,)), Match("session_id", (session_id,)))))
        return found[0] if found else None

    def window_rows(
        self, tenant: str, now: float, days: int, fields: tuple[str, ...]
    ) -> list[OutcomeRow]:
        """``fields`` of every stored outcome of ``tenant`` started in the last ``days`` days
        (the per-topic and per-article breakdowns: one read, only the fields they need)."""
        where = conditions(tenant, window(now, days), ConversationFilter())
        return [
            parsed(ROW, r.payload, f"{OUTCOMES} {tenant}/{r.payload.get('session_id')}")
            for r in self.store.scroll(OUTCOMES, where, fields=fields)
        ]

    def _count(self, tenant: str, day: str, *more: Condition) -> int:
        """The tenant's conversations started on ``day`` that match ``more``."""
        return self.store.count(
            OUTCOMES, AllOf((Match("tenant", (tenant,)), Match("day", (day,)), *more))
        )

    def report(
        self,
        tenant: str,
        now: float,
        pilot: PilotSettings,
        feedback_counts: Callable[[str], tuple[int, int]],
        days: int = 30,
        offset: int = 0,
        limit: int = 100,
        wanted: ConversationFilter | None = None,
    ) -> OutcomeReport:
        """Rates per day from counts, and the conversations ``offset`` to ``offset + limit``
        newest first that ``wanted`` lists (read a day at a time, from today back; how many
        it lists in all is counted); ``feedback_counts(day)``: the day's (helpful, all) marks."""
        wanted = wanted or ConversationFilter()
        rows = []
        for day in window(now, days):
            counts: dict[str, int] = {
                name: self._count(tenant, day, Match("label", (name,))) for name in LABELS
            }
            helpful, given = feedback_counts(day)
            if sum(counts.values()) or given:
                anonymous = self._count(
                    tenant, day, Match("label", ("confirmed",)), Match("mark", (ANONYMOUS_MARK,))
                )
                verified = self._count(
                    tenant, day, Match("label", RESOLVED), Match("trust", (VERIFIED,))
                )
                csat = [
                    self._count(tenant, day, Match("csat", said))
                    for said in (("yes",), ("yes", "no"), ("skipped",))
                ]
                rows.append(
                    day_row(
                        day,
                        counts,
                        helpful,
                        given,
                        anonymous,
                        verified,
                        csat_yes=csat[0],
                        csat_answers=csat[1],
                        csat_skipped=csat[2],
                    )
                )
        listed = [d for d in window(now, days) if wanted.day in (None, d)]
        matching = self.store.count(OUTCOMES, conditions(tenant, listed, wanted)) if listed else 0
        page: list[Outcome] = []
        seen = 0
        for day in reversed(listed):
            if len(page) >= limit:
                break
            todays = self._stored(conditions(tenant, [day], wanted))
            if seen + len(todays) <= offset:  # a whole day before the page: skipped unsorted
                seen += len(todays)
                continue
            for outcome in sorted(todays, key=lambda o: -o.started):
                if seen >= offset and len(page) < limit:
                    page.append(outcome)
                seen += 1
        return outcome_report(tenant, pilot, window(now, days)[0], rows, page, matching)
