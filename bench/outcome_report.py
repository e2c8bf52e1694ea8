"""The outcome report at scale: its latency and memory over N recorded conversations.

N conversations of one tenant are written straight into an embedded store the way the pilot
stores them (a session header, a question and its answer, every fifth a hand-off, every
seventh a helpful mark, spread over 30 days); their outcomes are labelled and stored once
(``OutcomeStore.backfill``, what a pilot does at its first start on an older store; timed).
Then ``--calls`` times each: the report ``GET /v1/reports/outcomes`` serves (stored outcomes:
counts per day and label, the first page of 100 conversations), the lead's drill-down (the
handed-off conversations, a page of 20, with their count) and, beside it, the recompute
from every record that ``main.py report outcomes`` does: p50 / p95 seconds and the process's
RSS before and after.

    python -m bench.outcome_report [--conversations 10000,100000] [--calls 5]

Writes bench/results/outcome_report.{md,json}.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from bench._common import table, write_results
from config.settings import load_settings
from service.domain.outcomes import ConversationFilter, tenant_outcomes
from service.stores.outcome_store import OutcomeStore
from service.stores.pilot_store import FEEDBACK, SESSIONS, PilotStore
from storage.kb.knowledge_base import KnowledgeBase
from storage.memory import SESSIONS as TURNS
from storage.memory import MemoryStore
from storage.qdrant.store import PointData
from tasks.outcomes import day_of

TENANT = "acme"
BATCH = 2000
DAY = 86_400.0


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def record(store: object, vector: object, count: int, now: float) -> None:
    """``count`` conversations written in batches, as the pilot stores them."""
    headers, turns, marks = [], [], []

    def flush() -> None:
        for name, points in ((SESSIONS, headers), (TURNS, turns), (FEEDBACK, marks)):
            if points:
                store.upsert(name, points)  # type: ignore[attr-defined]
                points.clear()

    for number in range(count):
        session, customer = f"s{number}", f"c{number % (count // 3 + 1)}"
        started = now - (number % 30) * DAY - 3600
        handed = number % 5 == 0
        header = {
            "session_id": session,
            "tenant": TENANT,
            "customer_id": customer,
            "created": started,
            "status": "handoff" if handed else "open",
            "handoff": handed,
            **({"handoff_at": started + 60, "handoff_reason": "asked"} if handed else {}),
        }
        headers.append(PointData(id=str(uuid.uuid4()), dense=vector, payload=header))
        page = f"page-{number % 40}.md"
        for index, (user, verdict) in enumerate(
            (("How long does a refund take?", "answered"), ("and for annual plans?", "idk"))
        ):
            if index and number % 2:
                continue
            turns.append(
                PointData(
                    id=str(uuid.uuid4()),
                    dense=vector,
                    payload={
                        "tenant": TENANT,
                        "customer_id": customer,
                        "session_id": session,
                        "turn_index": index,
                        "user": user,
                        "verdict": verdict,
                        "status": "done",
                        "ts": started + 10 * (index + 1),
                        "citations": [page] if verdict == "answered" else [],
                    },
                )
            )
        if number % 7 == 0:
            mark = {"tenant": TENANT, "session_id": session, "turn_index": 0, "rating": "up"}
            marks.append(
                PointData(
                    id=str(uuid.uuid4()),
                    dense=vector,
                    payload={**mark, "ts": started + 30, "day": day_of(started + 30)},
                )
            )
        if len(turns) >= BATCH:
            flush()
    flush()


def measure(count: int, calls: int) -> dict[str, float]:
    settings = load_settings()
    with tempfile.TemporaryDirectory() as work:
        kb = KnowledgeBase.open(settings, Path(work))
        pilot_store = PilotStore(kb.store, kb.encoders)
        memory = MemoryStore(kb.store, kb.encoders)
        memory.ensure()
        vector = kb.encoders.dense.encode(["session"])[0].dense
        now = time.time()
        started = time.perf_counter()
        record(kb.store, vector, count, now)
        written = time.perf_counter() - started
        outcomes = OutcomeStore(kb.store, kb.encoders)
        started = time.perf_counter()
        outcomes.backfill(pilot_store, memory, now, settings.pilot)
        labelled = time.perf_counter() - started
        before = rss_mb()
        served, recomputed = [], []
        for _ in range(calls):
            started = time.perf_counter()
            report = outcomes.report(
                TENANT,
                now,
                settings.pilot,
                lambda day: pilot_store.feedback_counts(TENANT, day),
                limit=100,
            )
            served.append(time.perf_counter() - started)
        after_served = rss_mb()
        drill = []  # the lead's drill-down: one label's conversations, the first page
        for _ in range(calls):
            started = time.perf_counter()
            listed = outcomes.report(
                TENANT,
                now,
                settings.pilot,
                lambda day: pilot_store.feedback_counts(TENANT, day),
                limit=20,
                wanted=ConversationFilter(label="handed_off", article=None),
            )
            drill.append(time.perf_counter() - started)
        assert listed.matching and len(listed.conversations) == 20
        for _ in range(calls):
            started = time.perf_counter()
            tenant_outcomes(memory, pilot_store, TENANT, now, settings.pilot, limit=100)
            recomputed.append(time.perf_counter() - started)
        kb.close()
    return {
        "conversations": count,
        "in_report": report.total_conversations,
        "write_s": round(written, 1),
        "label_all_once_s": round(labelled, 1),
        "served_p50_s": round(statistics.median(served), 3),
        "served_p95_s": percentile95(served),
        "rss_growth_served_mb": round(after_served - before, 1),
        "drilldown_p50_s": round(statistics.median(drill), 3),
        "drilldown_p95_s": percentile95(drill),
        "recompute_p50_s": round(statistics.median(recomputed), 3),
        "rss_after_mb": round(rss_mb(), 1),
    }


def percentile95(values: list[float]) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 3)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--conversations", default="10000,100000")
    parser.add_argument("--calls", type=int, default=10)
    args = parser.parse_args()
    rows = [measure(int(n), args.calls) for n in args.conversations.split(",")]
    columns = tuple(rows[0])
    lines = [
        "# The outcome report at scale (embedded store, 2 cores, cache off)",
        "",
        "Target (issues 39, 50): report p95 <= 1 s at 100,000 conversations, flat memory;",
        "the drill-down list (one label's conversations, first page of 20) within 1 s.",
        "",
        *table(columns, ((r[c] for c in columns) for r in rows)),
        "",
    ]
    write_results("outcome_report", lines, rows)


if __name__ == "__main__":
    main()
