"""``GET /metrics``: Prometheus text format (``service/metrics_scrape.py``): every series for the
deployment's admin key (one without a tenant), only its own tenant's for a tenant's admin
key; with ``observability.metrics_port`` the deployment's text is also served on that port
without a key."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.concurrency import run_in_threadpool

from service.context import Admin, Pilot
from service.errors import ApiError
from service.metrics_scrape import exposition

router = APIRouter(tags=["operations"])


@router.get("/metrics", response_class=Response)
async def metrics(who: Admin, pilot: Pilot) -> Response:
    if not pilot.settings.observability.metrics:
        raise ApiError(404, "metrics_off", "metrics are off (observability.metrics)")
    body, content_type = await run_in_threadpool(exposition, pilot, who.tenant or None)
    return Response(body, media_type=content_type)
