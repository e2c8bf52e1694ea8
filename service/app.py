"""The pilot HTTP service: sessions, messages (one ``run_turn`` each), feedback, hand-off,
health, and the watsonx-style ``/v1/search``; plus the web chat page at ``/``.

Every route but the health checks and the page needs an API key; the key decides the tenant and
the enforced slots. A request body can only add advisory slots.

Usage::

    app = create_app(settings, Path(".supportcrew"))
    uvicorn.run(app, host="127.0.0.1", port=8000)
"""


import asyncio
import hashlib
import json
import logging
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.exceptions import HTTPException as StarletteHTTPException

from agents.progress import progress_label
from agents.turn import run_turn
from config.settings import Settings
from service.auth import AuthError, Caller, authenticate
from service.limits import RequestLimits
from service.pilot_store import PilotStore
from service.search_api import SearchRequest, to_response
from storage.memory import Scope, ScopeError, check_id
from storage.qdrant.store import StoreError
from tasks.schemas import TurnRequest, TurnResult

STATIC = Path(__file__).resolve().parent / "static"
log = logging.getLogger(__name__)
# the page holds an API key: only its own script and styles run, links cannot be framed
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "connect-src 'self'; img-src 'self'; form-action 'self'; "
                               "base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, extra: dict | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra or {}


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **extra}}


class NewSession(BaseModel):
    model_config = ConfigDict(extra="forbid")
    customer_id: str | None = Field(default=None, min_length=1, max_length=200)
    slots: dict[str, str] = Field(default_factory=dict)

    @field_validator("customer_id")
    @classmethod
    def _memory_accepts_it(cls, value: str | None) -> str | None:
        """The same rules the memory scope applies, so a session never outlives its id."""
        if value is not None:
            try:
                check_id("customer_id", value)
            except ScopeError as exc:
                raise ValueError(str(exc)) from None
        return value


class NewMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message: str = Field(min_length=1, max_length=8000)


class Feedback(BaseModel):
    model_config = ConfigDict(extra="forbid")
    turn_index: int = Field(ge=0)
    rating: Literal["up", "down"]
    comment: str = Field(default="", max_length=2000)


class Handoff(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str = Field(default="requested by the customer", max_length=500)


def _field(error: dict[str, Any]) -> str:
    """Which part of the request is wrong; a JSON syntax error is the body's, not an offset."""
    if error.get("type") == "json_invalid":
        return "body"
    return ".".join(str(p) for p in error["loc"][1:]) or "body"


def sse_event(name: str, data: dict[str, Any]) -> str:
    """One server-sent event."""
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


def customer_trace(result: TurnResult) -> dict[str, Any]:
    """What a key that is not a trusted backend sees of a turn's trace: the steps' names and
    times and the model's cost; no filters, entities, queries, passage ids or notes."""
    trace = result.trace
    return {"steps": [{"name": s.name, "ms": s.ms} for s in trace.steps],
            "llm_calls": trace.llm_calls, "prompt_tokens": trace.prompt_tokens,
            "completion_tokens": trace.completion_tokens, "duration_ms": trace.duration_ms}


def owner_of(caller: Caller) -> str:
    """Who a session belongs to: keys with the same tenant, enforced slots and trust."""
    return hashlib.sha256(json.dumps([caller.tenant, sorted(caller.slots.items()),
                                      caller.trust_customer_id]).encode()).hexdigest()


def create_app(settings: Settings, data_dir: Path, runtime: Any = None) -> FastAPI:
    state: dict[str, Any] = {"runtime": runtime}
    locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if state["runtime"] is None:
            from agents.runtime import build_runtime

            state["runtime"] = await run_in_threadpool(build_runtime, settings, data_dir)
        kb = state["runtime"].knowledge_base()
        state["pilot"] = PilotStore(kb.store, kb.encoders)
        yield
        if runtime is None:
            state["runtime"].close()

    app = FastAPI(title="supportcrew pilot", version="0.1.0", lifespan=lifespan)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(error_body(exc.code, exc.message, **exc.extra), status_code=exc.status)

    @app.exception_handler(StoreError)
    async def _store_down(_request: Request, exc: StoreError) -> JSONResponse:
        log.error("store unavailable: %s", exc)
        return JSONResponse(error_body("unavailable", settings.messages.connection_problem),
                            status_code=503)

    @app.exception_handler(Exception)
    async def _bug(_request: Request, exc: Exception) -> JSONResponse:
        log.error("request failed on a bug", exc_info=exc)
        return JSONResponse(error_body("internal", "something went wrong on our side"),
                            status_code=500)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        details = [{"field": _field(e), "problem": e["msg"]} for e in exc.errors()]
        return JSONResponse(error_body("invalid_request", "the request is not valid",
                                       details=details), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = "too_large" if exc.status_code == 413 else "http_error"
        return JSONResponse(error_body(code, str(exc.detail)), status_code=exc.status_code)

    app.add_middleware(RequestLimits, max_bytes=settings.pilot.max_request_bytes,
                       check_key=lambda headers: authenticate(headers, settings.pilot.api_keys),
                       error_body=error_body)

    def caller(request: Request) -> Caller:
        try:
            return authenticate(request.headers, settings.pilot.api_keys)
        except AuthError as exc:
            raise ApiError(401, "unauthorized", str(exc)) from None

    Authed = Annotated[Caller, Depends(caller)]

    def owned_session(caller: Caller, session_id: str) -> dict[str, Any]:
        header = state["pilot"].session(caller.tenant, session_id)
        owner = header and (header.get("owner") or header.get("key"))
        if header is None or owner not in (owner_of(caller), caller.key_name):
            raise ApiError(404, "unknown_session", f"no session {session_id!r} for this key")
        return header

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers=PAGE_HEADERS)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz")
    async def readyz() -> JSONResponse:
        checks: dict[str, str] = {}
        current = state["runtime"]
        try:
            kb = current.knowledge_base()
            await run_in_threadpool(kb.store.check)  # reachable, and (embedded) still locked
            checks["qdrant"] = "ok" if await run_in_threadpool(kb.exists) else "empty"
        except Exception as exc:  # readiness reports any failure, it never raises
            checks["qdrant"] = f"down: {type(exc).__name__}: {str(exc)[:120]}"
        checks["model"] = "ok" if current is not None and current.engine is not None else "down"
        ready = all(v == "ok" for v in checks.values())
        return JSONResponse({"ready": ready, "checks": checks}, status_code=200 if ready else 503)

    @app.post("/v1/sessions", status_code=201)
    async def new_session(body: NewSession, who: Authed) -> dict[str, Any]:
        rules = settings.slots
        for name in body.slots:
            if name not in rules:
                raise ApiError(422, "unknown_slot", f"unknown slot {name!r}",
                               {"known": sorted(rules)})
            if rules[name].mode == "enforced":
                raise ApiError(403, "enforced_slot", f"slot {name!r} is set by your API key, "
                               "not by requests")
        if body.customer_id and not who.trust_customer_id:
            raise ApiError(403, "customer_not_allowed", "this API key cannot name customers")
        session_id = uuid.uuid4().hex
        customer = body.customer_id or f"anon-{session_id}"
        header = await run_in_threadpool(state["pilot"].create_session, who.tenant, session_id,
                                         customer, owner_of(who), dict(body.slots))
        return {"session_id": session_id, "customer_id": customer, "slots": header["slots"]}

    def shown(result: TurnResult, who: Caller) -> tuple[int, dict[str, Any]]:
        """The status and body a caller gets for a finished turn."""
        payload = result.model_dump(mode="json")
        if not who.trust_customer_id:  # a customer-facing key sees costs, not internals
            payload["trace"] = customer_trace(result)
        if result.verdict == "error":
            return 503, {**error_body("unavailable", settings.messages.connection_problem),
                         "result": payload}
        return 200, payload

    async def turn_events(request: TurnRequest, who: Caller, lock: str) -> AsyncIterator[str]:
        """Server-sent events: one ``step`` event as each step starts, then ``result``."""
        loop = asyncio.get_running_loop()
        steps: asyncio.Queue[str] = asyncio.Queue()

        def on_step(step: str) -> None:
            loop.call_soon_threadsafe(steps.put_nowait, step)

        async with locks[lock]:
            turn = asyncio.ensure_future(run_in_threadpool(run_turn, request, state["runtime"],
                                                           on_step))
            while not (turn.done() and steps.empty()):
                waiting = asyncio.ensure_future(steps.get())
                await asyncio.wait({turn, waiting}, return_when=asyncio.FIRST_COMPLETED)
                if waiting.done():
                    step = waiting.result()
                    yield sse_event("step", {"step": step, "label": progress_label(step)})
                else:
                    waiting.cancel()
            status, body = shown(turn.result(), who)
        yield sse_event("result" if status == 200 else "error", body)

    @app.post("/v1/sessions/{session_id}/messages", response_model=None)
    async def message(session_id: str, body: NewMessage, who: Authed, http: Request
                      ) -> JSONResponse | StreamingResponse:
        """One turn. With ``Accept: text/event-stream``: progress events, then the result."""
        header = await run_in_threadpool(owned_session, who, session_id)
        streaming = "text/event-stream" in http.headers.get("accept", "")
        if header.get("handoff"):
            result = TurnResult(session_id=session_id, answer=settings.messages.handoff,
                                verdict="handoff", handoff=True)
            if streaming:
                return StreamingResponse(iter([sse_event("result", result.model_dump(
                    mode="json"))]), media_type="text/event-stream")
            return JSONResponse(result.model_dump(mode="json"))
        slots = {**header["slots"], **who.slots}
        if who.tenant:
            slots["tenant"] = who.tenant
        request = TurnRequest(session_id=session_id, customer_id=header["customer_id"],
                              message=body.message, slots=slots)
        lock = f"{who.tenant}/{session_id}"
        if streaming:
            return StreamingResponse(turn_events(request, who, lock),
                                     media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache",
                                              "X-Accel-Buffering": "no"})
        async with locks[lock]:
            result = await run_in_threadpool(run_turn, request, state["runtime"])
        status, payload = shown(result, who)
        return JSONResponse(payload, status_code=status)

    @app.get("/v1/sessions/{session_id}")
    async def get_session(session_id: str, who: Authed) -> dict[str, Any]:
        header = await run_in_threadpool(owned_session, who, session_id)
        memory = state["runtime"].memory
        scope = Scope(header["customer_id"], who.tenant)
        turns = await run_in_threadpool(memory.session_turns, scope, session_id)
        feedback = await run_in_threadpool(state["pilot"].feedback, who.tenant, session_id)
        return {"session": header, "turns": turns, "feedback": feedback}

    @app.post("/v1/sessions/{session_id}/feedback", status_code=201)
    async def feedback(session_id: str, body: Feedback, who: Authed
                       ) -> dict[str, Any]:
        header = await run_in_threadpool(owned_session, who, session_id)
        turns = await run_in_threadpool(state["runtime"].memory.session_turns,
                                        Scope(header["customer_id"], who.tenant), session_id)
        if body.turn_index not in {t["turn_index"] for t in turns}:
            raise ApiError(404, "unknown_turn", f"session has no turn {body.turn_index}")
        return await run_in_threadpool(state["pilot"].add_feedback, who.tenant, session_id,
                                       body.turn_index, body.rating, body.comment)

    @app.post("/v1/sessions/{session_id}/handoff")
    async def handoff(session_id: str, body: Handoff, who: Authed
                      ) -> dict[str, Any]:
        await run_in_threadpool(owned_session, who, session_id)
        header = await run_in_threadpool(state["pilot"].mark_handoff, who.tenant, session_id,
                                         body.reason)
        return {"session": header, "message": settings.messages.handoff}

    @app.post("/v1/search")
    async def search(body: SearchRequest, who: Authed) -> JSONResponse:
        slots = dict(who.slots)
        if who.tenant:
            slots["tenant"] = who.tenant
        retriever = state["runtime"].retriever
        try:
            found = await run_in_threadpool(retriever.search_queries, [body.query], slots,
                                            body.advisory_filters(), None, None, None, False)
        except Exception as exc:
            raise ApiError(503, "unavailable", settings.messages.connection_problem,
                           {"reason": type(exc).__name__}) from None
        return JSONResponse(to_response(found, settings.pilot.max_response_bytes))

    return app
