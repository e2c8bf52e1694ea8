"""What a scrape of the pilot's metrics reads (``prometheus-client``): every worker's samples
(multiprocess mode, ``PROMETHEUS_MULTIPROC_DIR``) or this process's, and the conversations
waiting for a person, read from the store when scraped; the deployment's scrape reads every
series, a tenant's admin key only its own tenant's (:mod:`service.metrics` counts them).

Usage::

    text, content_type = exposition(pilot)            # what the deployment's scrape reads
    text, content_type = exposition(pilot, "acme")    # what acme's admin key reads
    serve_metrics_port(pilot)                         # observability.metrics_port, if set
"""

from __future__ import annotations

import logging
import os
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

from service.metrics import MULTIPROCESS_ENV

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
