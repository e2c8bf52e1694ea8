"""What the team's monitoring learns of each finished turn of the pilot: its metrics, its
spans (when traces are on) and one log line; the customer's words only where configured.

Usage (where a turn ends)::

    observe_turn(pilot, request, result, started_s, ended_s)
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from service.domain.records import JsonObject
from service.metrics import record_turn
from tasks.schemas import TurnRequest, TurnResult

if TYPE_CHECKING:
    from service.context import PilotContext

log = logging.getLogger("supportcrew.turns")


def observe_turn(
    pilot: PilotContext, request: TurnRequest, result: TurnResult, started_s: float, ended_s: float
) -> None:
    engine = getattr(pilot.runtime.engine, "name", "unknown")
    tenant = request.slots.get("tenant", "")
    record_turn(result, engine, ended_s - started_s, tenant)
    if pilot.tracer is not None:
        pilot.tracer.record(result, engine, tenant, started_s, ended_s)
    fields: JsonObject = {
        "session_id": request.session_id,
        "tenant": tenant,
        "turn_index": result.turn_index,
        "verdict": result.verdict,
        "engine": engine,
        "ms": round((ended_s - started_s) * 1000, 1),
        "llm_calls": result.trace.llm_calls,
    }
    if pilot.settings.observability.log_message_text:
        fields["customer_message"] = request.message
    log.info("turn finished: %s in %.0f ms", result.verdict, fields["ms"], extra={"fields": fields})
