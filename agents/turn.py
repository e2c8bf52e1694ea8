"""One support turn, the single entry point of every interface: ``run_turn``.

The engine owns the turn: a CrewAI ``Flow`` of crews (``agents/crewai_flow.py``) or an
AutoGen ``GraphFlow`` / ``SelectorGroupChat`` (``agents/autogen_team.py``). Both call the same
evidence gates (``tasks/gates.py``). Every turn has its own ``TurnState`` and usage ledger,
so concurrent turns never mix their traces.

Failures end in an honest result, never a crash: a store or search outage gives
``messages.connection_problem``; anything else is a bug, logged with its traceback, noted in
the trace and returned as ``verdict: error`` with the same message.

Usage::

    runtime = build_runtime(settings, data_dir)
    result = run_turn(TurnRequest(session_id="s", message="Refund time?"), runtime)
"""

from __future__ import annotations

import logging
import time

from agents.runtime import TurnRuntime
from agents.turn_steps import TurnFailed, is_outage, outage_errors
from agents.usage import UsageLedger
from tasks.memory_context import save_result
from tasks.schemas import LlmCallTrace, TurnRequest, TurnResult
from tasks.state import TurnState

log = logging.getLogger(__name__)


def run_turn(request: TurnRequest, runtime: TurnRuntime) -> TurnResult:
    """Answer one customer message; never raises for retrieval or model failures."""
    started = time.perf_counter()
    state = TurnState.for_request(request)
    with UsageLedger.activate() as ledger:
        try:
            state = runtime.engine.run(state, runtime)
            result = state.result or TurnResult(
                session_id=request.session_id, verdict="error",
                answer=runtime.settings.messages.connection_problem)
            result.turn_index = state.turn_index
        except TurnFailed as failed:
            state, result = failed.state, _failure(failed.cause, failed.state, request, runtime)
        except Exception as exc:
            result = _failure(exc, state, request, runtime)
    trace = state.trace
    trace.calls = [LlmCallTrace(role=c.role, prompt_tokens=c.prompt_tokens,
                                completion_tokens=c.completion_tokens, ms=round(c.ms, 1),
                                wait_ms=round(c.wait_ms, 1)) for c in ledger.calls]
    trace.llm_calls = len(ledger.calls)
    trace.prompt_tokens = ledger.prompt_tokens
    trace.completion_tokens = ledger.completion_tokens
    trace.duration_ms = round((time.perf_counter() - started) * 1000, 1)
    result.trace = trace
    _store(runtime, request, state, result)
    return result


def _failure(exc: BaseException, state: TurnState, request: TurnRequest,
             runtime: TurnRuntime) -> TurnResult:
    if is_outage(exc):
        state.note(f"store or search unavailable: {type(exc).__name__}: {str(exc)[:200]}")
    else:
        log.exception("turn %s failed on a bug", request.session_id, exc_info=exc)
        state.note(f"internal error: {type(exc).__name__}: {str(exc)[:200]}")
    return TurnResult(session_id=request.session_id, verdict="error",
                      answer=runtime.settings.messages.connection_problem,
                      turn_index=state.turn_index)


def _store(runtime: TurnRuntime, request: TurnRequest, state: TurnState,
           result: TurnResult) -> None:
    """Store the finished turn (with its trace's call count); a store outage is noted."""
    if result.verdict == "error":
        return  # the pending turn stays as it was stored before the crew ran
    from tasks.memory_context import MemoryContext, scope_of

    context = MemoryContext(scope=scope_of(request), turn_index=state.turn_index)
    try:
        save_result(runtime.memory, request, context, result)
    except outage_errors() as exc:
        result.trace.notes.append(f"the finished turn could not be stored: {exc}")
