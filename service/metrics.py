"""The pilot's Prometheus metrics (``prometheus-client``): turns by verdict and engine, turn and
step seconds, model calls and tokens, rate-limit refusals and sync counts, counted where they
happen (:mod:`service.metrics_scrape` reads them out, with the conversations waiting for a
person).

With several workers, set ``PROMETHEUS_MULTIPROC_DIR`` to an empty folder before they start
(``deploy/systemd`` does): each worker writes its samples there and a scrape of any worker
sums them all (the client's multiprocess mode). Without it, one process counts in memory.

Who reads what: the deployment (the metrics port, an admin key without a tenant) every
series; a tenant's admin key the series labelled with its own tenant (its turns by verdict,
their latencies, its conversations waiting, its widget keys' budgets), never the whole
deployment's (every tenant's names and traffic).

Usage::

    record_turn(result, engine="crewai", seconds=0.42, tenant="acme")
    record_refusal("messages")
    record_sync(report)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import Counter, Histogram

from tasks.schemas import TurnResult

if TYPE_CHECKING:
    from storage.kb.sync import SyncReport

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
SECONDS = (0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.5, 5.0, 10.0, 15.0, 30.0, 60.0)

TURNS = Counter(
    "supportcrew_turns", "Turns finished, by tenant, verdict and engine", ["tenant", "verdict", "engine"]
)
TURN_SECONDS = Histogram(
    "supportcrew_turn_seconds",
    "Wall time of a turn, message to answer, by tenant",
    ["tenant", "engine"],
    buckets=SECONDS,
)
# a tenant's admin reads these, its own tenant's series only (service/metrics_scrape.py)
TENANT_FAMILIES = ("supportcrew_turns", "supportcrew_turn_seconds")
STEP_SECONDS = Histogram(
    "supportcrew_step_seconds", "Wall time of a turn's step", ["step"], buckets=SECONDS
)
MODEL_CALLS = Counter("supportcrew_model_calls", "Calls to the chat model, by role", ["role"])
MODEL_TOKENS = Counter("supportcrew_model_tokens", "Tokens of chat model calls", ["kind"])
RATE_LIMITED = Counter(
    "supportcrew_rate_limit_refusals", "Requests refused with 429, by limit", ["limit"]
)
SYNCED = Counter(
    "supportcrew_sync_pages",
    "Pages of a knowledge-base sync, by source and change",
    ["source", "change"],
)
SYNC_FAILURES = Counter(
    "supportcrew_sync_failures", "Pages or sources a sync could not read", ["source"]
)


def record_turn(result: TurnResult, engine: str, seconds: float, tenant: str = "") -> None:
    TURNS.labels(tenant=tenant, verdict=result.verdict, engine=engine).inc()
    TURN_SECONDS.labels(tenant=tenant, engine=engine).observe(seconds)
    for step in result.trace.steps:
        if "skipped" not in step.detail:
            STEP_SECONDS.labels(step=step.name).observe(step.ms / 1000)
    for call in result.trace.calls:
        MODEL_CALLS.labels(role=call.role).inc()
    if result.trace.prompt_tokens:
        MODEL_TOKENS.labels(kind="prompt").inc(result.trace.prompt_tokens)
    if result.trace.completion_tokens:
        MODEL_TOKENS.labels(kind="completion").inc(result.trace.completion_tokens)


def record_refusal(limit: str) -> None:
    RATE_LIMITED.labels(limit=limit).inc()


def record_sync(report: SyncReport) -> None:
    """One source's :class:`storage.kb.sync.SyncReport`."""
    for change in ("added", "changed", "unchanged", "removed"):
        SYNCED.labels(source=report.source, change=change).inc(getattr(report, change))
    if report.failures:
        SYNC_FAILURES.labels(source=report.source).inc(len(report.failures))
