"""What CrewAI reports on its event bus, attributed to the turn that caused it.

CrewAI runs event handlers in a thread pool with a copy of the emitting context, so a
context variable set for a turn tells a handler which turn an event belongs to.

- ``listen_to_crewai_llm_calls``: remote providers report token usage on
  ``LLMCallCompletedEvent``; it goes into the turn's usage ledger (our own backends record
  their calls themselves and are skipped).
- every CrewAI agent's LLM call is attributed to that agent (its ``agents.yaml`` key), also
  inside a hierarchical crew where the manager delegates (a ``before_llm_call`` hook).

Usage::

    listen_to_crewai_llm_calls()
    crew.kickoff(inputs=...)
    flush_events()      # a remote model's usage has reached the turn's ledger
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from agents.usage import attribute_calls_to, record_call

FLUSH_TIMEOUT_S = 5.0
_LISTENING: list[bool] = []


def _listen() -> None:
    if _LISTENING:
        return
    from crewai.events import crewai_event_bus
    from crewai.events.types.llm_events import LLMCallCompletedEvent
    from crewai.hooks import register_before_llm_call_hook

    def record_usage(source: object, event: LLMCallCompletedEvent) -> None:
        if getattr(source, "records_usage", False):
            return
        usage = event.usage or {}
        record_call(
            int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0), 0.0, "crewai"
        )

    def attribute(context: Any) -> None:
        role = getattr(getattr(context, "agent", None), "role", None)
        if role:
            attribute_calls_to(role_keys().get(role, role))

    crewai_event_bus.on(LLMCallCompletedEvent)(record_usage)
    register_before_llm_call_hook(attribute)
    _LISTENING.append(True)


def role_keys() -> dict[str, str]:
    """``agents.yaml`` role text -> agent key ("Evidence judge" -> "judge")."""
    import agents.roles

    return _role_keys(agents.roles.CONFIG_DIR)


@lru_cache(maxsize=4)
def _role_keys(config_dir: Path) -> dict[str, str]:
    from agents.crewai.crews import MANAGER_ROLE
    from agents.roles import load_role_specs

    keys = {
        spec["role"]: key
        for key, spec in load_role_specs(config_dir).agents.items()
        if isinstance(spec, dict) and "role" in spec
    }
    return {**keys, MANAGER_ROLE: "manager"}


def listen_to_crewai_llm_calls() -> None:
    """Start attributing CrewAI's LLM and agent events to turns (idempotent)."""
    _listen()


def flush_events() -> None:
    """Wait (bounded) until CrewAI's pending event handlers have run."""
    from crewai.events import crewai_event_bus

    crewai_event_bus.flush(timeout=FLUSH_TIMEOUT_S)
