"""The knowledge-gap report at scale: one tenant with 10,000 recorded gap questions (and as
many answered turns beside them), the report computed again and again with its cache off.

Reports p50/p95 seconds per call and the process's peak memory, beside the reference of the
issue that asked for it (re-embedding every question per call: 0.27 s at 300 questions, 7.1 s
at 8,000; 290 MB at 4,000).

    python -m bench.gap_report [--questions 10000] [--calls 20]
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import tempfile
import time
from pathlib import Path

from bench._common import table, write_results
from config.settings import load_settings
from service.domain.gaps import tenant_gap_report
from service.stores.pilot_store import PilotStore
from storage.kb.ingest import ingest_paths
from storage.kb.knowledge_base import KnowledgeBase
from storage.memory import SESSIONS, MemoryStore, Scope
from storage.qdrant.store import PointData
from storage.retrieval.retriever import QdrantRetriever
from tasks.evidence import EvidenceScorer

TOPICS = [
    "ship to {p}",
    "a discount for {p}",
    "pay with {p}",
    "an app for {p}",
    "support hours in {p}",
    "an office in {p}",
    "data stored in {p}",
    "a gift card for {p}",
]
PLACES = [
    "Antarctica",
    "students",
    "Bitcoin",
    "Android",
    "Japan",
    "Berlin",
    "the EU",
    "charities",
    "iPhone",
    "Canada",
    "teachers",
    "PayPal Credit",
    "Linux",
    "Mexico",
]
ASKS = ["Do you have {t}?", "Is there {t}?", "can I get {t}", "What about {t}?", "I need {t}, possible?"]
REFERENCE = {"re-embed 300 q (s)": 0.27, "re-embed 8000 q (s)": 7.1, "4000 q (MB)": 290}


def questions(n: int, rng: random.Random) -> list[str]:
    return [rng.choice(ASKS).format(t=rng.choice(TOPICS).format(p=rng.choice(PLACES))) for _ in range(n)]


def record(memory: MemoryStore, texts: list[str], verdict: str, start: int) -> None:
    """Turns as the pilot stores them: the message's vector with its payload."""
    vectors = memory.encoders.dense.encode(texts)
    points = []
    for n, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
        scope = Scope(f"c-{(start + n) % 500}", "acme")
        session = f"s{start + n}"
        points.append(
            PointData(
                id=scope.key("turn", session, 0),
                dense=vector.dense,
                payload={
                    "user": text,
                    "answer": "",
                    "verdict": verdict,
                    "status": "done",
                    "session_id": session,
                    "turn_index": 0,
                    "ts": time.time(),
                    "customer_id": scope.customer_id,
                    "tenant": scope.tenant,
                    "citations": [],
                },
            )
        )
    for chunk in range(0, len(points), 1000):
        memory.store.upsert(SESSIONS, points[chunk : chunk + 1000])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    rng = random.Random(7)
    settings = load_settings()
    with tempfile.TemporaryDirectory() as tmp:
        kb = KnowledgeBase.open(settings, Path(tmp))
        ingest_paths(kb, [Path(__file__).resolve().parent.parent / "examples" / "kb"])
        memory = MemoryStore(kb.store, kb.encoders)
        memory.ensure()
        started = time.perf_counter()
        record(memory, questions(args.questions, rng), "idk", 0)
        record(memory, questions(args.questions, rng), "answered", args.questions)
        recorded_s = time.perf_counter() - started
        pilot = PilotStore(kb.store, kb.encoders)
        retriever = QdrantRetriever(kb=kb)
        scorer = EvidenceScorer(kb.encoders, settings.evidence)
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        times, rss_first = [], 0.0
        for _ in range(args.calls):
            began = time.perf_counter()
            report = tenant_gap_report(
                memory,
                pilot,
                retriever,
                "acme",
                0.0,
                {"access_level": "internal"},
                answerable=scorer.answerable,
            )
            times.append(time.perf_counter() - began)
            rss_first = rss_first or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        kb.close()
    p95 = sorted(times)[max(0, round(0.95 * len(times)) - 1)]
    row = {
        "questions": report.questions,
        "clustered": report.clustered,
        "clusters": len(report.clusters),
        "calls": args.calls,
        "p50_s": round(statistics.median(times), 3),
        "p95_s": round(p95, 3),
        "peak_rss_mb": round(rss_after),
        "first_call_mb": round(rss_first - rss_before),
        "growth_after_first_mb": round(rss_after - rss_first),
        "record_s": round(recorded_s, 1),
    }
    lines = [
        "# Knowledge-gap report at scale (cache off, one tenant)",
        "",
        *table(list(row), [list(row.values())]),
        "",
        "Reference (the issue's probe, before): "
        + ", ".join(f"{k} {v}" for k, v in REFERENCE.items())
        + f". p95 now / 7.1 s re-embedding 8,000: {p95 / 7.1:.2f}x.",
    ]
    write_results("gap_report", lines, {**row, "reference": REFERENCE})


if __name__ == "__main__":
    main()
