"""What a scrape of the pilot's metrics reads (``prometheus-client``): every worker's samples
(multiprocess mode, ``PROMETHEUS_MULTIPROC_DIR``) or this process's, the conversations waiting
for a person and the widget keys' budgets left, read from the store when scraped; the
deployment's scrape reads every series, a tenant's admin key only the series labelled with its
own tenant (:mod:`service.metrics` counts them).

Usage::

    text, content_type = exposition(pilot)            # what the deployment's scrape reads
    text, content_type = exposition(pilot, "acme")    # what acme's admin key reads
    serve_metrics_port(pilot)                         # observability.metrics_port, if set
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING
from wsgiref.simple_server import WSGIServer

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    generate_latest,
    multiprocess,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from service.metrics import MULTIPROCESS_ENV, TENANT_FAMILIES

if TYPE_CHECKING:
    from service.context import PilotContext

log = logging.getLogger(__name__)


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


class WidgetBudgets(Collector):
    """How much is left of each widget key's budgets (``service/stores/key_budget.py``), per
    tenant (every tenant's, or only ``tenant``'s), read when scraped."""

    def __init__(self, pilot: PilotContext, tenant: str | None = None) -> None:
        self.pilot = pilot
        self.tenant = tenant

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "supportcrew_widget_budget_left_ratio",
            "Share left of a widget key's rolling budget (shared, or kept for newcomers)",
            labels=["tenant", "key", "limit", "share"],
        )
        limits = getattr(self.pilot, "limits", None)
        if limits is not None:
            for level in limits.budget_levels(self.tenant, time.time()):
                family.add_metric([level.tenant, level.key, level.limit, level.share], level.left)
        yield family


class OwnTenant(Collector):
    """The per-tenant families of ``source`` (``TENANT_FAMILIES``: turns by verdict, their
    latencies), only the samples labelled with ``tenant``."""

    def __init__(self, source: Collector, tenant: str) -> None:
        self.source = source
        self.tenant = tenant

    def collect(self) -> Iterator[Metric]:
        for family in self.source.collect():
            if family.name not in TENANT_FAMILIES:
                continue
            mine = Metric(family.name, family.documentation, family.type, family.unit)
            mine.samples = [s for s in family.samples if s.labels.get("tenant") == self.tenant]
            yield mine


def registry_for(pilot: PilotContext, tenant: str | None = None) -> CollectorRegistry:
    """What a scrape reads: every worker's samples (multiprocess mode) or this process's,
    the waiting conversations and the widget keys' budgets; for one ``tenant``, only the
    series labelled with it."""
    registry = CollectorRegistry()
    counted: Collector = (
        multiprocess.MultiProcessCollector(None) if os.environ.get(MULTIPROCESS_ENV) else _Process()
    )
    registry.register(counted if tenant is None else OwnTenant(counted, tenant))
    registry.register(WaitingForAPerson(pilot, tenant))
    registry.register(WidgetBudgets(pilot, tenant))
    return registry


class _Process(Collector):
    """This process's own metrics (one worker, no multiprocess folder)."""

    def collect(self) -> Iterator[Metric]:
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
