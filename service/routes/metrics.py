"""``GET /metrics``: Prometheus text format, for an admin key (``service/metrics.py``); with
``observability.metrics_port`` the same text is also served on that port without a key."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.concurrency import run_in_threadpool

from service.context import Admin, Pilot
from service.errors import ApiError
from service.metrics import exposition

router = APIRouter(tags=["operations"])


@router.get("/metrics", response_class=Response)
async def metrics(_who: Admin, pilot: Pilot) -> Response:
    if not pilot.settings.observability.metrics:
        raise ApiError(404, "metrics_off", "metrics are off (observability.metrics)")
    body, content_type = await run_in_threadpool(exposition, pilot)
    return Response(body, media_type=content_type)
