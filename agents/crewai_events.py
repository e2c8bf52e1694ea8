"""What CrewAI reports on its event bus, attributed to the turn that caused it.

CrewAI runs event handlers in a thread pool with a copy of the emitting context, so a
context variable set for a turn tells a handler which turn an event belongs to.

- ``listen_to_crewai_llm_calls``: remote providers report token usage on
  ``LLMCallCompletedEvent``; it goes into the turn's usage ledger (our own backends record
  their calls themselves and are skipped).
- ``agents_at_work``: the roles of the agents that completed work (including coworkers a
  manager delegated to), for checking a hierarchical crew's delegation.

Usage::

    listen_to_crewai_llm_calls()
    with agents_at_work() as worked:
        crew.kickoff(inputs=...)
    worked   # ["Knowledge base retriever", "Support responder"]
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

from agents.usage import record_call

FLUSH_TIMEOUT_S = 5.0
_WORKED: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "supportcrew_agents_at_work", default=None)
_LISTENING: list[bool] = []


def _listen() -> None:
    if _LISTENING:
        return
    from crewai.events import crewai_event_bus
    from crewai.events.types.agent_events import AgentExecutionCompletedEvent
    from crewai.events.types.llm_events import LLMCallCompletedEvent

    def record_usage(source: object, event: LLMCallCompletedEvent) -> None:
        if getattr(source, "records_usage", False):
            return
        usage = event.usage or {}
        record_call(int(usage.get("prompt_tokens") or 0),
                    int(usage.get("completion_tokens") or 0), 0.0, "crewai")

    def record_agent(source: object, event: AgentExecutionCompletedEvent) -> None:
        worked = _WORKED.get()
        if worked is not None:
            worked.append(str(event.agent.role))

    crewai_event_bus.on(LLMCallCompletedEvent)(record_usage)
    crewai_event_bus.on(AgentExecutionCompletedEvent)(record_agent)
    _LISTENING.append(True)


def listen_to_crewai_llm_calls() -> None:
    """Start attributing CrewAI's LLM and agent events to turns (idempotent)."""
    _listen()


def flush_events() -> None:
    """Wait (bounded) until CrewAI's pending event handlers have run."""
    from crewai.events import crewai_event_bus

    crewai_event_bus.flush(timeout=FLUSH_TIMEOUT_S)


@contextmanager
def agents_at_work() -> Iterator[list[str]]:
    """Collect the roles of agents that complete work inside the block."""
    _listen()
    worked: list[str] = []
    token = _WORKED.set(worked)
    try:
        yield worked
        flush_events()
    finally:
        _WORKED.reset(token)
