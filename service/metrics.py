"""The pilot's Prometheus metrics (``prometheus-client``): turns by verdict and engine, turn and
step seconds, model calls and tokens, rate-limit refusals, sync counts, and the conversations
waiting for a person (read from the store when scraped).

With several workers, set ``PROMETHEUS_MULTIPROC_DIR`` to an empty folder before they start
(``deploy/systemd`` does): each worker writes its samples there and a scrape of any worker
sums them all (the client's multiprocess mode). Without it, one process counts in memory.

Who reads what: the deployment (the metrics port, an admin key without a tenant) every
series; a tenant's admin key only the series of its own tenant (the others are the whole
deployment's: every tenant's names and traffic).

Usage::

    record_turn(result, engine="crewai", seconds=0.42)
    text, content_type = exposition(pilot)            # what the deployment's scrape reads
    text, content_type = exposition(pilot, "acme")    # what acme's admin key reads
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from tasks.schemas import TurnResult

if TYPE_CHECKING:
    from service.context import PilotContext
    from storage.kb.sync import SyncReport

log = logging.getLogger(__name__)
MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
SECONDS = (0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.5, 5.0, 10.0, 15.0, 30.0, 60.0)

TURNS = Counter("supportcrew_turns", "Turns finished, by verdict and engine", ["verdict", "engine"])
TURN_SECONDS = Histogram(
    "supportcrew_turn_seconds", "Wall time of a turn, message to answer", ["engine"], buckets=SECONDS
)
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


def record_turn(result: TurnResult, engine: str, seconds: float) -> None:
    TURNS.labels(verdict=result.verdict, engine=engine).inc()
    TURN_SECONDS.labels(engine=engine).observe(seconds)
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


class WaitingForAPerson(Collector):
    """Conversations handed off and not yet resolved, per tenant (every tenant's, or only
    ``tenant``'s), read when scraped."""

    def __init__(self, pilot: PilotContext, tenant: str | None = None) -> None:
        self.pilot = pilot
        self.tenant = tenant

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "supportcrew_handoffs_waiting", "Conversations waiting for a person", labels=["tenant"]
        )
        store = self.pilot.store
        if store is not None:
            for tenant in store.tenants() if self.tenant is None else [self.tenant]:
                family.add_metric([tenant], len(store.handoffs(tenant)))
        yield family


def registry_for(pilot: PilotContext, tenant: str | None = None) -> CollectorRegistry:
    """What a scrape reads: every worker's samples (multiprocess mode) or this process's,
    and the waiting conversations; for one ``tenant``, only that tenant's series."""
    registry = CollectorRegistry()
    if tenant is None:
        if os.environ.get(MULTIPROCESS_ENV):
            multiprocess.MultiProcessCollector(registry)
        else:
            registry.register(_Process())
    registry.register(WaitingForAPerson(pilot, tenant))
    return registry


class _Process(Collector):
    """This process's own metrics (one worker, no multiprocess folder)."""

    def collect(self) -> Iterator[Any]:
        yield from REGISTRY.collect()


def exposition(pilot: PilotContext, tenant: str | None = None) -> tuple[bytes, str]:
    """The text a scrape reads: the deployment's (``tenant`` None) or one tenant's."""
    return generate_latest(registry_for(pilot, tenant)), CONTENT_TYPE_LATEST


def serve_metrics_port(pilot: PilotContext) -> WSGIServer | None:
    """``observability.metrics_port``: the metrics without a key on a port of their own. With
    several workers the first to bind it serves them all (multiprocess mode); the others skip."""
    observability = pilot.settings.observability
    if not observability.metrics or observability.metrics_port is None:
        return None
    try:
        server, _thread = start_http_server(
            observability.metrics_port, observability.metrics_host, registry_for(pilot)
        )
    except OSError as exc:
        log.info("metrics port %s not bound here (%s)", observability.metrics_port, exc)
        return None
    return server
