"""The knowledge-gap report of one tenant, from what the pilot stored: every customer's refused
and handed-off turns, and the answers rated "not helpful" (``tasks/gap_report.py`` groups them).
Served at ``GET /v1/reports/gaps`` (admin keys, a page of clusters at a time, each report kept
for ``CACHE_S``) and printed by ``main.py report gaps``.

Usage::

    report = tenant_gap_report(memory, pilot_store, retriever, "acme", since=0.0,
                               slots={"access_level": "internal"},
                               answerable=runtime.scorer.answerable)
    reports = ReportCache()
    reports.get(("acme", 0.0), lambda: report)   # the same report for 60 s
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

from service.domain.topics import nearest_page
from storage.retrieval.filters import SlotError, admits
from tasks.gap_report import (
    Addressed,
    GapReport,
    cluster_gaps,
    failed_turns,
    gap_questions,
    mark_addressed,
    open_first,
)
from tasks.message_kind import load_message_kinds

if TYPE_CHECKING:
    from config.settings import SlotRule
    from service.domain.records import StoredArticle
    from service.stores.pilot_store import PilotStore
    from storage.memory import MemoryStore
    from storage.retrieval.protocol import Retriever

Report = TypeVar("Report")
CACHE_S = 60.0  # an admin polling the report reads one computation a minute
TOP = 100  # clusters kept per report, served a page at a time
FAILED_SHOWN = 20  # the most recent failed turns listed with the error count
# the cross-encoder's probability that the nearest passage answers, from which the report says
# the answer exists above the askers' access: more likely than not (a hidden API-key page
# reads 0.90 for "How do I rotate an API key without downtime?", a refund runbook 0.01 for
# "Do you offer a student discount?")
ANSWERS_AT = 0.5
Answerable = Callable[[str, Sequence[str]], list[float]]  # ``EvidenceScorer.answerable``


def published_articles(records: Sequence[StoredArticle]) -> dict[str, Addressed]:
    """The published ones of a tenant's article records (``service.stores.articles.Articles.all``),
    by source id, each with when it last went live.

    >>> published_articles([{"id": "articles/acme/mars", "title": "Mars", "status": "published",
    ...     "events": [{"action": "published", "at": 9.0}]}])["articles/acme/mars"].published_at
    9.0
    """
    found = {}
    for record in records:
        went_live = [e["at"] for e in record.get("events", []) if e.get("action") == "published"]
        if record.get("status") == "published" and went_live:
            found[record["id"]] = Addressed(
                source_id=record["id"], title=record.get("title", ""), published_at=max(went_live)
            )
    return found


def tenant_gap_report(
    memory: MemoryStore,
    pilot_store: PilotStore,
    retriever: Retriever,
    tenant: str,
    since: float,
    slots: dict[str, str],
    published: Mapping[str, Addressed] | None = None,
    *,
    answerable: Answerable | None = None,
) -> GapReport:
    """``slots``: the enforced slots the nearest article is searched under (the caller's);
    ``published``: the tenant's live articles (``published_articles``), which mark the gaps
    they answer addressed; ``answerable``: the turn's reading of whether passages answer a
    question (``EvidenceScorer.answerable``), without which no gap is said to be answered
    above its askers' access."""
    feedback = [f for f in pilot_store.all_feedback(tenant) if f.get("ts", 0.0) >= since]
    rated = sorted({f["session_id"] for f in feedback if f.get("rating") == "down"})
    turns = memory.gap_turns(tenant, since, rated)
    nearest = nearest_page(retriever, {**slots, "tenant": tenant} if tenant else dict(slots))
    kinds = load_message_kinds(memory.encoders)
    questions = gap_questions(turns, feedback, kinds.asks_for_person)
    report = cluster_gaps(questions, memory.encoders.dense.encode, nearest, top=TOP)
    failed = failed_turns(turns)
    report.errors, report.failed = len(failed), failed[-FAILED_SHOWN:]
    if answerable is not None:
        report = where_answered(report, memory.rules, answerable)
    return open_first(mark_addressed(report, published or {}))


def where_answered(
    report: GapReport, rules: Mapping[str, SlotRule], answerable: Answerable
) -> GapReport:
    """Each cluster whose nearest article answers its central question (``answerable`` reads
    at least :data:`ANSWERS_AT`): when no asker could read it, the fields that hide it
    (``above_askers``: the answer exists above these customers' access); when every asker
    could, ``answered_in_reach`` (nothing is missing: "How long does the refund take to reach
    my card?", written to a person after a hand-off, is answered by the refunds page). The
    article was found under the reader's own slots, so naming it leaks nothing; an article
    that is only the nearest ("Do you offer a student discount?" beside a refund runbook) is
    no answer, and the gap stays a gap."""
    for cluster in report.clusters:
        article = cluster.nearest_article
        passage = str(article.fields.get("hit_text") or "") if article else ""
        if article is None or not passage or not cluster.asker_slots:
            continue
        try:
            hidden = [admits(rules, slots, article.fields) for slots in cluster.asker_slots]
        except SlotError:  # slots stored under rules since changed: say nothing
            continue
        if any(hidden) and not all(hidden):  # some askers could read it, some not: say nothing
            continue
        if answerable(cluster.examples[0], [passage])[0] >= ANSWERS_AT:
            if all(hidden):
                cluster.above_askers = sorted({field for fields in hidden for field in fields})
            else:
                cluster.answered_in_reach = True
    return report


class ReportCache(Generic[Report]):
    """Reports kept for ``ttl_s`` per key (tenant, window, slots): polling costs one
    computation per minute. Computations run one at a time (an admin route, at most one a
    minute per key), so concurrent calls for one key compute it once, and the cache holds
    only live reports."""

    def __init__(self, ttl_s: float = CACHE_S) -> None:
        self.ttl_s = ttl_s
        self._kept: dict[Hashable, tuple[float, Report]] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], Report]) -> Report:
        with self._lock:
            now = time.monotonic()
            self._kept = {k: v for k, v in self._kept.items() if now - v[0] < self.ttl_s}
            if key not in self._kept:
                self._kept[key] = (now, compute())
            return self._kept[key][1]

    def clear(self) -> None:
        """Forget every kept report (the knowledge base changed: an article went live)."""
        with self._lock:
            self._kept.clear()

    def forget(self, tenant: str) -> None:
        """Forget the reports of ``tenant`` (keys whose first part it is): one of its
        conversations changed, so its next report counts it."""
        with self._lock:
            self._kept = {k: v for k, v in self._kept.items() if not _of_tenant(k, tenant)}


def _of_tenant(key: Hashable, tenant: str) -> bool:
    return isinstance(key, tuple) and bool(key) and key[0] == tenant
