"""The pilot HTTP service: sessions, messages (one ``run_turn`` each), feedback, hand-off,
health, and the watsonx-style ``/v1/search``; plus the web chat page at ``/``. The routes live
on ``APIRouter``s in ``service/routes/``; their dependencies in ``service/context.py``.

Every route but the health checks and the page needs an API key; the key decides the tenant and
the enforced slots. A request body can only add advisory slots.

Usage::

    app = create_app(settings, Path(".supportcrew"))
    uvicorn.run(app, host="127.0.0.1", port=8000)
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from config.settings import Settings
from service.auth import authenticate, check_key_slots
from service.context import PilotContext
from service.domain.session_state import SessionConflict
from service.domain.topics import topic_namer
from service.errors import ERROR_RESPONSES, ApiError, ErrorField, error_body, invalid_fields
from service.idle_sessions import sweep_forever
from service.limits import RequestLimits
from service.logs import SessionLogContext
from service.metrics_scrape import serve_metrics_port
from service.outcome_upkeep import catch_up, stop_cleanly
from service.routes import (
    articles,
    handoffs,
    health,
    help_articles,
    me,
    metrics,
    page,
    reports,
    search,
    session_actions,
    sessions,
    widget,
)
from service.routes.page import PAGE_HEADERS, STATIC
from service.scheduled_sync import sync_forever
from service.stores.articles import Articles
from service.stores.outcome_store import OutcomeStore
from service.stores.pilot_store import PilotStore
from service.stores.rate_limits import RateLimits
from service.stores.upkeep_marks import UpkeepMarks
from service.tracing import TurnTracer
from service.web.headers import SecurityHeaders
from service.widget_tokens import SessionTokens, SpentTokens
from storage.qdrant.store import StoreError
from storage.replies import PersonReplies

if TYPE_CHECKING:
    from agents.runtime import TurnRuntime

log = logging.getLogger(__name__)


def key_slots(settings: Settings, tenant: str, name: str) -> dict[str, str] | None:
    """The enforced slots of the tenant's key ``name`` (None: no such key configured)."""
    for key in settings.pilot.api_keys:
        if key.tenant == tenant and key.name == name:
            return dict(key.slots)
    return None


def keep_reach_of_old_records(pilot: PilotContext) -> None:
    memory = pilot.runtime.memory
    if memory is not None:
        memory.keep_reach_of_old_memories()
        PersonReplies(memory).keep_reach_of_old_replies()


def create_app(settings: Settings, data_dir: Path, runtime: TurnRuntime | None = None) -> FastAPI:
    """The service around one turn runtime (built at start unless given), routes included."""
    pilot = PilotContext(
        settings=settings,
        session_tokens=SessionTokens.from_environment(settings.pilot),
        tracer=TurnTracer.from_settings(settings.observability),
    )
    if runtime is not None:  # else built at start
        pilot.runtime = runtime

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if pilot.runtime is None:
            from agents.build import build_runtime

            pilot.runtime = await run_in_threadpool(build_runtime, settings, data_dir)
        # the rules as the runtime applies them: the listed values and those the pages name
        rules = pilot.runtime.settings.slots
        check_key_slots(settings.pilot.api_keys, rules)  # a key failing every request: no start
        kb = pilot.runtime.knowledge_base()
        pilot.store = PilotStore(kb.store, kb.encoders)
        pilot.limits = RateLimits(kb.store, kb.encoders, settings.pilot)
        pilot.articles = Articles(
            kb.store, kb.encoders, Path(data_dir) / "articles", rules, pilot.runtime.memory
        )
        await run_in_threadpool(  # the layout of this version
            pilot.articles.reconcile, kb, lambda tenant, name: key_slots(settings, tenant, name)
        )
        # outcomes live beside the conversations' turns (the memory's store)
        turns_store = pilot.runtime.memory.store if pilot.runtime.memory else kb.store
        pilot.outcomes = OutcomeStore(
            turns_store,
            kb.encoders,
            lambda tenant: topic_namer(
                pilot.runtime.retriever,
                kb.encoders.dense.encode,
                tenant,
                answerable=pilot.runtime.scorer.answerable,
            ),
        )
        pilot.upkeep = UpkeepMarks(turns_store, kb.encoders)
        pilot.run, pilot.others_left = pilot.upkeep.begin_run()
        if pilot.session_tokens is not None:  # no widget key: no customer tokens to spend
            pilot.spent_tokens = SpentTokens(kb.store, kb.encoders)
        pilot.caught_up = False
        catching_up = asyncio.create_task(run_in_threadpool(catch_up, pilot, time.time()))
        # memories and people's replies written before they kept their reach get it (hidden
        # from every staff read until then)
        reaching = asyncio.create_task(run_in_threadpool(keep_reach_of_old_records, pilot))
        # counters of windows that ended while the service was down (or stored before
        # counters expired) go once; the minute sweep deletes the rest as their hour passes
        expiring = asyncio.create_task(run_in_threadpool(pilot.limits.forget_expired, time.time(), True))
        sweeper = asyncio.create_task(sweep_forever(pilot))
        syncer = asyncio.create_task(sync_forever(pilot))
        scrape_port = serve_metrics_port(pilot)
        yield
        if scrape_port is not None:
            scrape_port.shutdown()
        if pilot.tracer is not None:
            pilot.tracer.close()
        sweeper.cancel()
        syncer.cancel()
        catching_up.cancel()
        reaching.cancel()
        expiring.cancel()
        try:
            await run_in_threadpool(stop_cleanly, pilot, time.time())
        except Exception:  # a stop goes on; the next start looks for what this one left
            log.exception("outcomes not flushed at stop")
        if runtime is None:
            pilot.runtime.close()

    # no /docs or /redoc: their pages load scripts from a CDN, which the page's CSP forbids
    app = FastAPI(
        title="supportcrew pilot",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        responses=ERROR_RESPONSES,  # one error shape, FastAPI's own 422 included
    )
    app.state.pilot = pilot
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    for router in (
        page.router,
        health.router,
        me.router,
        sessions.router,
        session_actions.router,
        handoffs.router,
        reports.router,
        articles.router,
        help_articles.router,
        search.router,
        widget.router,
        metrics.router,
    ):
        app.include_router(router)

    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)

    @app.exception_handler(SessionConflict)
    async def _conflict(_request: Request, exc: SessionConflict) -> JSONResponse:
        return JSONResponse(error_body(exc.code, exc.message), status_code=409)

    @app.exception_handler(StoreError)
    async def _store_down(_request: Request, exc: StoreError) -> JSONResponse:
        log.error("store unavailable: %s", exc)
        return JSONResponse(
            error_body("unavailable", settings.messages.connection_problem), status_code=503
        )

    @app.exception_handler(Exception)
    async def _bug(_request: Request, exc: Exception) -> JSONResponse:
        log.error("request failed on a bug", exc_info=exc)
        return JSONResponse(error_body("internal", "something went wrong on our side"), status_code=500)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        details = invalid_fields(exc.errors())
        return JSONResponse(
            error_body("invalid_request", "the request is not valid", details=details), status_code=422
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and isinstance(exc.__cause__, ValueError):
            # FastAPI could not decode the body (invalid UTF-8): a bad body, like bad JSON
            problem = f"the body is not valid JSON text: {exc.__cause__}"[:300]
            return JSONResponse(
                error_body(
                    "invalid_request",
                    "the request is not valid",
                    details=[ErrorField(field="body", problem=problem)],
                ),
                status_code=422,
            )
        code = {413: "too_large", 408: "body_timeout"}.get(exc.status_code, "http_error")
        return JSONResponse(error_body(code, str(exc.detail)), status_code=exc.status_code)

    def admit(headers: Mapping[str, str], path: str, client: str | None) -> None:
        """Before a body is read: a valid key (401 otherwise), and no spent rate limit for
        this route, the key's or its visitor's (429; the first request over a limit is
        counted in the route itself)."""
        who = authenticate(headers, settings.pilot.api_keys, pilot.session_tokens)
        if pilot.limits is not None:
            pilot.limits.refuse_spent_route(path, replace(who, address=client))

    app.add_middleware(
        RequestLimits,
        max_bytes=settings.pilot.max_request_bytes,
        check_key=admit,
        error_body=error_body,
        body_timeout_s=settings.pilot.body_timeout_s,
    )
    app.add_middleware(SecurityHeaders, headers=PAGE_HEADERS)
    app.add_middleware(SessionLogContext)
    # outermost: browsers on the sites that embed a widget read our answers, refusals included
    # (which key may be used from which origin is checked with the key: service/auth.py)
    app.add_middleware(
        CORSMiddleware,
        allow_origins=sorted({o for key in settings.pilot.api_keys for o in key.origins}),
        allow_methods=["GET", "POST"],
        allow_headers=["Authorization", "Content-Type", "Accept", "X-API-Key"],
        expose_headers=["Retry-After"],
        max_age=600,
    )
    return app
