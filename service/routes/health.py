"""Liveness and readiness (no key needed)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from service.context import Pilot
from service.domain.views import Health, Readiness

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health)
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    response_model=Readiness,
    # the one answer outside the error envelope: a probe reads which check failed (docs/pilot.md)
    responses={503: {"model": Readiness, "description": "a check failed"}},
)
async def readyz(pilot: Pilot) -> JSONResponse:
    checks: dict[str, str] = {}
    current = pilot.runtime
    try:
        kb = current.knowledge_base()
        await run_in_threadpool(kb.store.check)  # reachable, and (embedded) still locked
        checks["qdrant"] = "ok" if await run_in_threadpool(kb.exists) else "empty"
    except Exception as exc:  # readiness reports any failure, it never raises
        checks["qdrant"] = f"down: {type(exc).__name__}: {str(exc)[:120]}"
    checks["model"] = "ok" if current is not None and current.engine is not None else "down"
    ready = all(v == "ok" for v in checks.values())
    return JSONResponse({"ready": ready, "checks": checks}, status_code=200 if ready else 503)
