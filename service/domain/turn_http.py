"""What a caller gets of a finished turn, as HTTP: the status (200; 500 for a bug of ours;
503 when the store or the model is unreachable, with the turn in ``result``), the trace a
customer-facing key may see (steps, times, cost; never filters, queries or passage ids), and
the turn as server-sent events (a ``step`` as each step starts, then ``result`` or
``error``).

Usage::

    status, body = await answered(pilot, request, who)
    StreamingResponse(turn_events(pilot, request, who), media_type="text/event-stream")
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping

from agents.progress import progress_label
from service.auth import Caller
from service.context import PilotContext
from service.domain.conversation import start_turn
from service.errors import error_body
from tasks.schemas import TurnRequest, TurnResult

Body = Mapping[str, object]  # a JSON object


def sse_event(name: str, data: Body) -> str:
    """One server-sent event."""
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


def customer_trace(result: TurnResult) -> Body:
    """What a key that is not a trusted backend sees of a turn's trace: the steps' names and
    times and the model's cost; no filters, entities, queries, passage ids or notes."""
    trace = result.trace
    return {
        "steps": trace.timeline(),
        "llm_calls": trace.llm_calls,
        "prompt_tokens": trace.prompt_tokens,
        "completion_tokens": trace.completion_tokens,
        "duration_ms": trace.duration_ms,
    }


def shown(pilot: PilotContext, result: TurnResult, who: Caller) -> tuple[int, Body]:
    """The status and body a caller gets for a finished turn."""
    payload = result.model_dump(mode="json")
    if not who.trust_customer_id:  # a customer-facing key sees costs, not internals
        payload["trace"] = customer_trace(result)
    if result.failure is not None and result.failure.kind == "bug":  # ours, not an outage: 500
        return 500, {**error_body("turn_failed", result.answer), "result": payload}
    if result.verdict == "error":
        return 503, {
            **error_body("unavailable", pilot.settings.messages.connection_problem),
            "result": payload,
        }
    return 200, payload


def turn_lock(who: Caller, request: TurnRequest) -> str:
    """The lock a session's turns take: one turn at a time per session."""
    return f"{who.tenant}/{request.session_id}"


async def answered(pilot: PilotContext, request: TurnRequest, who: Caller) -> tuple[int, Body]:
    """The turn run to its end (a client that goes away does not cancel it), as :func:`shown`."""
    result = await asyncio.shield(start_turn(pilot, request, who, turn_lock(who, request)))
    return shown(pilot, result, who)


async def turn_events(
    pilot: PilotContext, request: TurnRequest, who: Caller, lock: str | None = None
) -> AsyncIterator[str]:
    """Server-sent events: one ``step`` event as each step starts, then ``result``; the turn
    holds ``lock`` (the session's, :func:`turn_lock`, unless named) while it runs."""
    loop = asyncio.get_running_loop()
    steps: asyncio.Queue[str] = asyncio.Queue()

    def on_step(step: str) -> None:
        loop.call_soon_threadsafe(steps.put_nowait, step)

    turn = start_turn(pilot, request, who, lock or turn_lock(who, request), on_step)
    while not (turn.done() and steps.empty()):
        waiting = asyncio.ensure_future(steps.get())
        await asyncio.wait({turn, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if waiting.done():
            step = waiting.result()
            yield sse_event("step", {"step": step, "label": progress_label(step)})
        else:
            waiting.cancel()
    status, body = shown(pilot, turn.result(), who)
    yield sse_event("result" if status == 200 else "error", body)
