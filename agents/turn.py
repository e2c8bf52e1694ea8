"""One support turn, the single entry point of every interface: ``run_turn``.

The engine owns the turn: a CrewAI ``Flow`` of crews (``agents/crewai/flow.py``) or an
AutoGen ``GraphFlow`` / ``SelectorGroupChat`` (``agents/autogen/engine.py``). Both run the
same steps (``agents/steps.py``) in the order of ``agents/topology.py``. Every turn has its
own ``TurnState`` and usage ledger, so concurrent turns never mix their traces.

Failures end in an honest result, never a crash: a store or search outage gives
``messages.connection_problem``; anything else is a bug, logged with its traceback, noted in
the trace and answered with ``messages.error``. Either way the result is ``verdict: error``
with its ``failure`` (kind and step), and the turn is stored as ``error``, never left
``pending``.

Usage::

    runtime = build_runtime(settings, data_dir)
    result = run_turn(TurnRequest(session_id="s", message="Refund time?"), runtime)
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextvars
import logging
import threading
import time
from collections.abc import Callable

from agents.deadline import turn_deadline
from agents.failures import RetrievalUnavailable, TurnFailed, is_outage, outage_errors
from agents.runtime import TurnRuntime, calls_a_model
from agents.steps import record_retrieval
from agents.tools.search import KnowledgeBaseSearch
from agents.usage import UsageLedger
from tasks.memory_context import claim_turn, save_turn_result
from tasks.message_kind import says_goodbye
from tasks.results import deadline_result
from tasks.schemas import LlmCallTrace, TurnFailure, TurnRequest, TurnResult
from tasks.state import STEP_LISTENER, TurnState

log = logging.getLogger(__name__)
StepCallback = Callable[[str], None]
HARD_STOP_S = 0.5  # past the deadline, this long for the engine to finish its cut-short call
POLL_S = 0.1
# before the deadline, model calls end: search, gate and quote need it (measured: 1.8-2.5 s
# beside a local model server still busy with the request the deadline cut)
EVIDENCE_RESERVE_S = 3.0
EXIT_WAIT_S = 15.0
_LIVE_TURNS: set[threading.Thread] = set()


@atexit.register
def _let_abandoned_turns_finish() -> None:
    """At exit, give turns cut off at their deadline a moment to stop (their model calls end at
    the deadline); a daemon thread killed inside native code would abort the process."""
    until = time.monotonic() + EXIT_WAIT_S
    for thread in list(_LIVE_TURNS):
        thread.join(max(0.0, until - time.monotonic()))


class TurnAbandoned(RuntimeError):
    """The turn's deadline passed and its result was already given; the late work stops."""


class TurnWatch:
    """Sees every step of one turn: tells the listener, keeps the live state for the deadline."""

    def __init__(self, state: TurnState, on_step: StepCallback | None) -> None:
        self.live, self.running, self.abandoned, self.cancelled = state, "start", False, False
        self.on_step = on_step

    def __call__(self, state: TurnState, name: str) -> None:
        if self.abandoned:
            raise TurnAbandoned(name)
        self.live, self.running = state, name
        if self.on_step is not None:
            try:
                self.on_step(name)
            except Exception:  # a listener that fails never breaks the turn
                log.exception("progress listener failed on step %s", name)

    def snapshot(self) -> TurnState:
        """A copy of the live state to finish from (the late worker keeps the original)."""
        for _ in range(3):
            try:
                return self.live.model_copy(deep=True)
            except RuntimeError:  # changed while copied: try again
                continue
        if self.live.request is None:
            return self.live
        fresh = TurnState.for_request(self.live.request)
        fresh.turn_index = self.live.turn_index
        return fresh


def _run_engine(
    runtime: TurnRuntime,
    state: TurnState,
    watch: TurnWatch,
    cancel: threading.Event,
    deadline: float,
    reserve: float | None = None,
) -> TurnState:
    """The engine's turn in a worker; past the deadline (or once cancelled, after the grace for
    a cut-short call), the best evidence-based outcome.

    ``reserve``: how long before ``deadline`` the turn's model calls end (None: no role
    calls a model). A framework still inside a model step a grace later (a manager retrying calls
    that fail at once, an executor reading an empty reply) is not waited for: the evidence
    path finishes the turn here, in the reserve, so how long the framework lingers never
    decides the turn's length or outcome."""

    def work() -> TurnState:
        STEP_LISTENER.set(watch)  # in the worker's own context: late steps stop there
        return runtime.engine.run(state, runtime)

    worker: concurrent.futures.Future[TurnState] = concurrent.futures.Future()
    context = contextvars.copy_context()

    def run() -> None:
        try:
            worker.set_result(context.run(work))
        except BaseException as exc:  # handed to the caller through the future
            worker.set_exception(exc)
        finally:
            _LIVE_TURNS.discard(threading.current_thread())

    # a daemon thread: a turn abandoned at its deadline never holds the process open long
    thread = threading.Thread(target=run, name="turn", daemon=True)
    _LIVE_TURNS.add(thread)
    thread.start()
    give_up = deadline - (reserve or 0.0) + HARD_STOP_S
    while True:
        if cancel.is_set() and not watch.cancelled:
            give_up = min(give_up, time.monotonic() + HARD_STOP_S)
            watch.cancelled = True
        try:
            return worker.result(timeout=max(0.0, min(POLL_S, give_up - time.monotonic())))
        except concurrent.futures.TimeoutError:
            if time.monotonic() >= give_up:
                break
    watch.abandoned = True
    late = watch.snapshot()
    why = "cancelled by the customer" if watch.cancelled else ""
    if not why and reserve is not None:
        timeout = runtime.settings.turn_timeout_s
        why = f"deadline: the model calls' time ({timeout - reserve:g} of {timeout:g} s) ran out"
    if not watch.cancelled:
        search_late(late, runtime)
    late.result = deadline_result(late, runtime.scorer, runtime.settings, watch.running, why)
    return late


def search_late(late: TurnState, runtime: TurnRuntime) -> None:
    """A turn whose deadline passed before its search gets the search the evidence path makes
    (the customer's words, with whatever this round resolved, and the conversation's page),
    so its outcome is the evidence's and not the machine's load: a slow model or a busy
    machine gives the same verdict as a quiet one."""
    if (
        late.retrieval is not None
        or late.route == "handoff"
        or late.request is None
        or late.nothing_asked
    ):
        return
    tool = KnowledgeBaseSearch.for_turn(
        runtime.retriever, late.slots, late.message, [e.value for e in late.entities[:8]]
    )
    tool.bind_round(late.queries, late.advisory)
    with late.step("retrieve", round=late.round_index, late=True) as info:
        try:
            record_retrieval(late, tool, 0, info, "the deadline passed before the turn searched")
        except RetrievalUnavailable as exc:
            info["failed"] = str(exc)[:200]


def run_turn(
    request: TurnRequest,
    runtime: TurnRuntime,
    on_step: StepCallback | None = None,
    cancel: threading.Event | None = None,
) -> TurnResult:
    """Answer one customer message; never raises for retrieval or model failures.

    ``on_step(name)`` is told when each step starts (progress for a waiting customer). The turn
    ends by ``turn_timeout_s`` (plus the time to quote an answer from the passages), or within
    ``HARD_STOP_S`` of ``cancel`` being set: model calls stop, and the turn ends with what the
    evidence gives (stored like any turn; its trace says it was cancelled).
    """
    started = time.perf_counter()
    state = TurnState.for_request(request)
    watch = TurnWatch(state, on_step)
    deadline = time.monotonic() + runtime.settings.turn_timeout_s
    cancel = cancel or threading.Event()
    # model calls stop early enough for the evidence path to finish the turn by its deadline
    reserve = min(EVIDENCE_RESERVE_S, runtime.settings.turn_timeout_s / 4)
    claimed = False
    with UsageLedger.activate() as ledger, turn_deadline(deadline - reserve, cancel):
        try:
            watch.running = "claim"
            state.turn_index = claim_turn(runtime.memory, request)
            claimed = True
            models = calls_a_model(runtime.settings, runtime.engine.process)
            state = _run_engine(runtime, state, watch, cancel, deadline, reserve if models else None)
            if state.result is None:
                raise RuntimeError("the engine ended the turn without a result")
            result = state.result
            result.turn_index = state.turn_index
            result.kind = state.kind
            result.closes = says_goodbye(state.kind)
        except TurnFailed as failed:
            state = failed.state
            result = _failure(failed.cause, state, request, runtime, watch.running)
        except Exception as exc:
            result = _failure(exc, state, request, runtime, watch.running)
    trace = state.trace
    trace.calls = [
        LlmCallTrace(
            role=c.role,
            prompt_tokens=c.prompt_tokens,
            completion_tokens=c.completion_tokens,
            ms=round(c.ms, 1),
            wait_ms=round(c.wait_ms, 1),
        )
        for c in ledger.calls
    ]
    trace.llm_calls = len(ledger.calls) + ledger.in_flight
    if ledger.in_flight:
        trace.notes.append(f"{ledger.in_flight} model request(s) still in flight at the turn's end")
    trace.prompt_tokens = ledger.prompt_tokens
    trace.completion_tokens = ledger.completion_tokens
    trace.duration_ms = round((time.perf_counter() - started) * 1000, 1)
    result.trace = trace
    if claimed:  # a turn whose slot was never claimed has nothing of its own to overwrite
        _store(runtime, request, state, result)
    return result


def _failure(
    exc: BaseException, state: TurnState, request: TurnRequest, runtime: TurnRuntime, step: str
) -> TurnResult:
    """The result of a turn stopped by ``exc`` during ``step``: an outage says so, a bug
    (logged with its traceback) says something went wrong on our side."""
    outage = is_outage(exc)
    if outage:
        state.note(f"store or search unavailable: {type(exc).__name__}: {str(exc)[:200]}")
    else:
        log.exception("turn %s failed on a bug in %s", request.session_id, step, exc_info=exc)
        state.note(f"internal error in {step}: {type(exc).__name__}: {str(exc)[:200]}")
    messages = runtime.settings.messages
    return TurnResult(
        session_id=request.session_id,
        verdict="error",
        answer=messages.connection_problem if outage else messages.error,
        failure=TurnFailure(kind="outage" if outage else "bug", step=step),
        turn_index=state.turn_index,
    )


def _store(runtime: TurnRuntime, request: TurnRequest, state: TurnState, result: TurnResult) -> None:
    """Store the finished turn (``done``, or ``error`` with its failure); a store outage is
    noted."""
    try:
        save_turn_result(runtime.memory, request, state.turn_index, result)
    except outage_errors() as exc:
        result.trace.notes.append(f"the finished turn could not be stored: {exc}")
